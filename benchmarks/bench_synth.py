"""How long does the default synthetic world take to build (generation + encoding + features)?

Target: at most 2 minutes on a 2-core machine for the default world (300 videos).

    python benchmarks/bench_synth.py                 # the default world, into a temporary folder
    python benchmarks/bench_synth.py --videos 60 --workers 1

Prints the wall time of the whole build, video-seconds built per wall-second, and a
per-stage breakdown (render / H.264 encode / decode + features) measured in-process on a few
videos, side by side. The machine is shared: the 1-minute load average is printed too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kepp_core.data.synth import generate_world, knobs_for, look_of, render_video  # noqa: E402
from kepp_core.data.synth.world import _builtin_specs  # noqa: E402
from kepp_core.video import BuiltinEncoder, encode_video, write_video  # noqa: E402


def stage_breakdown(n: int = 10, difficulty: str = "default") -> dict[str, float]:
    """Milliseconds per video-second of each stage, on the first ``n`` videos of the world."""
    knobs = knobs_for(difficulty)
    tasks, specs = _builtin_specs(0, n, knobs)
    looks = {s: look_of(s, knobs.similarity) for _, _, steps in tasks for s in steps}
    tmp = Path(tempfile.mkdtemp(prefix="kepp-bench-"))
    t = {"render": 0.0, "encode": 0.0, "features": 0.0}
    seconds = 0
    try:
        for sp in specs:
            t0 = time.perf_counter()
            frames = render_video(sp.segments, sp.duration, looks, knobs, np.random.default_rng(sp.index), sp.task)
            t1 = time.perf_counter()
            write_video(tmp / "v.mp4", frames, knobs.fps)
            t2 = time.perf_counter()
            encode_video(tmp / "v.mp4", BuiltinEncoder())
            t3 = time.perf_counter()
            t["render"] += t1 - t0
            t["encode"] += t2 - t1
            t["features"] += t3 - t2
            seconds += sp.duration
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {k: v * 1000 / seconds for k, v in t.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=None, help="default: the default world (300)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--difficulty", default="default")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    out = Path(tempfile.mkdtemp(prefix="kepp-world-")) / "world"
    t0 = time.perf_counter()
    generate_world(out, videos=args.videos, difficulty=args.difficulty, workers=args.workers, progress=False)
    wall = time.perf_counter() - t0
    import json

    meta = json.loads((out / "world.json").read_text())
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    shutil.rmtree(out.parent, ignore_errors=True)
    stages = stage_breakdown()
    per_s = sum(stages.values())
    print(f"synthetic world build: {meta['num_videos']} videos, {meta['video_seconds']:.0f} video-seconds "
          f"({meta['video_seconds'] / meta['num_videos']:.1f} s each), {size / 2**20:.0f} MiB, "
          f"{os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(f"{'measure':<38} {'value':>10} {'target':>10} {'ratio':>8}")
    print(f"{'wall time of the whole build (s)':<38} {wall:>10.1f} {120:>10} {120 / wall:>7.2f}x")
    print(f"{'video-seconds built per wall-second':<38} {meta['video_seconds'] / wall:>10.1f}")
    print("per-stage cost, one process, ms per video-second (10 videos):")
    for k, v in stages.items():
        print(f"  {k:<36} {v:>10.2f} {'':>10} {v / per_s:>7.0%}")
    print(f"  {'total':<36} {per_s:>10.2f}")


if __name__ == "__main__":
    main()
