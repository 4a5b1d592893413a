"""Videos decoded in parallel threads while the network encodes (kepp_core.video.encode.encode_files):
real mp4 files (H.264 with B-frames and a GOP that does not line up with the chunks) through decord, the
S3D encoder (the reference fixture's rule weights, 32-px crop) and the built-in one. The features are
those of the serial path byte for byte, however many threads decode and however a video is split among
them; extraction with workers is resumable and sharded as before; an error comes at its video's turn."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.video import write_video
from kepp_core.video.encode import encode_files
from kepp_core.video.encoders import get_encoder
from kepp_core.video.s3d import DECODE_WORKERS_CPU
from tests.helpers.cli import run_ranks
from tests.helpers.s3d import SMALL, one_torch_thread, write_release

pytestmark = pytest.mark.cpu  # byte-for-byte equality of two network runs is a CPU promise
# x264 with B-frames and 50-frame GOPs: a part of a video that starts at a chunk (16 s) starts mid-GOP
GOP_OPTIONS = {"preset": "ultrafast", "crf": "23", "threads": "1", "g": "50", "bf": "2"}
SECONDS = (37, 18, 5)


def _frames(seconds: int, seed: int, fps: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frames = np.full((seconds * fps, 40, 48, 3), 60, np.uint8)
    for i in range(len(frames)):
        frames[i, :, :, 0] = (i * 5 + seed * 40) % 256
        x, y = (i * 3 + seed) % 36, (i * 2 + seed) % 28
        frames[i, y:y + 12, x:x + 12] = rng.integers(90, 255, 3)
    return frames


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    """``videos/`` of three mp4 files of 37, 18 and 5 s (8 fps, 48×40): three, two and one S3D chunk."""
    root = tmp_path_factory.mktemp("pipeline-videos")
    for k, seconds in enumerate(SECONDS):
        write_video(root / "videos" / f"v{k}.mp4", _frames(seconds, k), fps=8, options=GOP_OPTIONS)
    return root


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> str:
    return f"s3d:{write_release(tmp_path_factory.mktemp('release'), ['open', 'door'])},{SMALL},device=cpu"


@pytest.fixture(autouse=True)
def one_thread():
    with one_torch_thread():
        yield


def _encoded(paths, encoder, workers) -> list[tuple[str, bytes, float]]:
    return [(p.name, f.tobytes(), s) for p, f, s in encode_files(paths, encoder, workers)]


@pytest.mark.slow
def test_parallel_decoding_gives_the_serial_paths_features_byte_for_byte(videos, spec):
    enc = get_encoder(spec)
    assert enc.decode_workers == DECODE_WORKERS_CPU == 2 and enc.chunk_seconds == 16  # on the CPU: 2 decoding threads
    paths = sorted((videos / "videos").glob("*.mp4"))
    serial = _encoded(paths, enc, 1)
    assert [(n, len(b) // (4 * 512), s) for n, b, s in serial] == [("v0.mp4", 37, 37.0), ("v1.mp4", 18, 18.0),
                                                                   ("v2.mp4", 5, 5.0)]
    for workers in (2, 3, 5):  # every video split over the idle threads once fewer videos than threads are left
        assert _encoded(paths, enc, workers) == serial, workers
    one = paths[:1]  # one video on three threads: parts from 12 s and 28 s, inside a chunk and inside a GOP
    assert _encoded(one, enc, 3) == serial[:1]


def test_an_encoder_without_chunks_gets_whole_videos_from_the_threads(videos):
    paths = sorted((videos / "videos").glob("*.mp4")) * 2
    enc = get_encoder("builtin")
    assert _encoded(paths, enc, 4) == _encoded(paths, enc, 1)


def test_a_bad_video_is_its_own_error_at_its_turn_and_the_threads_stop(videos, spec, tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 500)
    paths = [videos / "videos" / "v1.mp4", bad, videos / "videos" / "v2.mp4"]
    before = threading.active_count()
    got = []
    with pytest.raises(KeppError, match="bad.mp4: cannot decode video"):
        for path, _, _ in encode_files(paths, get_encoder(spec), 3):
            got.append(path.name)
    assert got == ["v1.mp4"]  # what came before it, as on the serial path
    stream = encode_files(sorted((videos / "videos").glob("*.mp4")), get_encoder(spec), 3)
    next(stream)
    stream.close()  # a consumer that stops early
    assert threading.active_count() == before


def _extract(root: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kepp_core", "features", "extract", "--root", str(root), "--dataset",
                           "files", *extra], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "KEPP_THREADS": "1", **(env or {})})


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.slow
def test_extraction_with_workers_is_resumable_and_sharded_as_the_serial_one(videos, spec, tmp_path):
    serial, threads, ranks = (tmp_path / name for name in ("serial", "threads", "ranks"))
    for root in (serial, threads, ranks):
        shutil.copytree(videos, root)
    r = _extract(serial, "--encoder", spec, "--workers", "1")
    assert r.returncode == 0, r.stderr
    expected = _files(serial / "features")
    r = _extract(threads, "--encoder", spec, "--workers", "3")
    assert r.returncode == 0 and "3 written" in r.stdout, r.stderr
    assert _files(threads / "features") == expected
    (threads / "features" / "v0.npy").unlink()  # as if killed before it was written
    r = _extract(threads, "--encoder", spec, "--workers", "2")
    assert "1 written, 2 cached" in r.stdout and _files(threads / "features") == expected
    runs = run_ranks(2, "features", "extract", "--root", ranks, "--dataset", "files", "--encoder", spec,
                     "--workers", "2", env={"KEPP_THREADS": "1"})  # two ranks, two decoding threads each
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert "3 written by 2 ranks" in runs[0].stdout and _files(ranks / "features") == expected
