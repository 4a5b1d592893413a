"""Feature extraction speed (decoding included) on the demo world, in video-seconds per
wall-second. Target: at least 100x real time on a 2-core machine, one process.

    python benchmarks/bench_features.py                       # the cached default demo world
    python benchmarks/bench_features.py --root /tmp/world --limit 100

Side by side: decoding alone (decord, at the encoder's size) and decoding + the builtin
encoder, over the same videos, written to a temporary feature folder (the world's own cache
is left untouched).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kepp_core.data.synth import ensure_world  # noqa: E402
from kepp_core.data import extract_features  # noqa: E402
from kepp_core.video import BuiltinEncoder, find_videos  # noqa: E402
from kepp_core.video.encode import decode_for  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="a world folder (default: the cached demo world, built if needed)")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N videos")
    args = ap.parse_args()
    root = Path(args.root) if args.root else ensure_world()
    videos = find_videos(root / "videos")[: args.limit]
    work = Path(tempfile.mkdtemp(prefix="kepp-feat-"))
    try:
        (work / "videos").mkdir()
        for v in videos:
            os.symlink(v.resolve(), work / "videos" / v.name)
        load = os.getloadavg()[0]
        enc = BuiltinEncoder()
        t0 = time.perf_counter()
        seconds = 0.0
        for v in videos:
            frames, fps = decode_for(v, enc)
            seconds += len(frames) / fps
        decode_wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        summary = extract_features(work, enc, progress=False)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"feature extraction on {len(videos)} videos, {seconds:.0f} video-seconds, encoder {enc.name} "
          f"(D={summary.dim}), one process, load average {load:.1f} at start")
    print(f"{'stage':<32} {'wall s':>8} {'video-s per wall-s':>19} {'vs 100x target':>15}")
    print(f"{'decode only':<32} {decode_wall:>8.2f} {seconds / decode_wall:>19.0f} {seconds / decode_wall / 100:>14.2f}x")
    print(f"{'decode + features (extract)':<32} {wall:>8.2f} {summary.video_seconds / wall:>19.0f} "
          f"{summary.video_seconds / wall / 100:>14.2f}x")


if __name__ == "__main__":
    main()
