"""``kepp features extract`` shared by several processes (RANK/WORLD_SIZE, as torchrun sets
them): disjoint shares, resumable, and byte for byte the files of a single-process run, with the
built-in encoder and with the S3D encoder (``s3d:PATH``, the reference fixture's rule weights)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kepp_core.data.extract import Shard
from kepp_core.errors import KeppError
from kepp_core.video import write_video
from tests.helpers.cli import run_ranks

pytestmark = pytest.mark.xdist_group("extract-shards")  # two CPU processes of its own


def _clip(seconds: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frames = np.full((seconds * 8, 40, 40, 3), 80, np.uint8)
    for i in range(len(frames)):
        x = (i * 3 + seed) % 30
        frames[i, 8:18, x:x + 10] = rng.integers(100, 255, 3)
    return frames


@pytest.fixture()
def videos(tmp_path) -> Path:
    """A tiny world of five short mp4 files in ``videos/`` (no annotations: ``--dataset files``)."""
    root = tmp_path / "single"
    for k in range(5):
        write_video(root / "videos" / f"clip{k}.mp4", _clip(1 + k % 3, k), fps=8)
    return root


def _run_ranks(root: Path, world: int, *extra: str) -> list[subprocess.CompletedProcess]:
    """``kepp features extract`` (``extra``: more arguments) as ``world`` processes with the variables
    torchrun sets."""
    return run_ranks(world, "features", "extract", "--root", root, "--dataset", "files", *extra)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_shards_are_disjoint_cover_everything_and_keep_same_names_together():
    jobs = [(f"v{k}", Path(f"videos/{name}.mp4")) for k, name in enumerate("dbacbe")]
    shares = [Shard(r, 3).take(jobs) for r in range(3)]
    assert sorted(j for s in shares for j in s) == sorted(jobs)
    assert all({p.stem for _, p in a}.isdisjoint(p.stem for _, p in b)
               for i, a in enumerate(shares) for b in shares[i + 1:])
    assert [v for v, _ in shares[1]] == ["v1", "v4", "v5"]  # names b (twice) and e, in input order
    assert Shard(0, 1).take(jobs) == jobs


def test_shard_comes_from_the_launcher_variables():
    assert Shard.from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == Shard(3, 4, 1)
    assert Shard.from_env({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}) == Shard(1, 2, 0)
    assert Shard.from_env({}) == Shard(0, 1, 0)
    with pytest.raises(KeppError, match="RANK=2 is not within WORLD_SIZE=2"):
        Shard.from_env({"RANK": "2", "WORLD_SIZE": "2"})


@pytest.mark.slow
def test_two_ranks_write_byte_for_byte_the_files_of_one_process(videos, tmp_path):
    shared = tmp_path / "two-ranks"
    shutil.copytree(videos, shared)
    single = subprocess.run([sys.executable, "-m", "kepp_core.cli", "features", "extract", "--root", str(videos),
                             "--dataset", "files"], capture_output=True, text=True, env={**os.environ})
    assert single.returncode == 0, single.stderr
    runs = _run_ranks(shared, 2)
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert "5 written by 2 ranks" in runs[0].stdout
    assert runs[1].stdout == ""  # rank 0 prints the one summary
    expected = _files(videos / "features")
    assert sorted(expected) == ["clip0.npy", "clip1.npy", "clip2.npy", "clip3.npy", "clip4.npy", "features.json"]
    assert _files(shared / "features") == expected
    again = _run_ranks(shared, 2)  # resume: everything is there already
    assert [r.returncode for r in again] == [0, 0] and "0 written by 2 ranks, 5 cached" in again[0].stdout


@pytest.mark.slow
def test_a_resumed_run_encodes_only_what_is_missing(videos, tmp_path):
    shared = tmp_path / "resume"
    shutil.copytree(videos, shared)
    runs = _run_ranks(shared, 2)
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    before = _files(shared / "features")
    (shared / "features" / "clip3.npy").unlink()  # as if its rank had been killed
    runs = _run_ranks(shared, 2)
    assert "1 written by 2 ranks, 4 cached" in runs[0].stdout
    assert _files(shared / "features") == before


@pytest.mark.slow
def test_two_ranks_extract_with_the_s3d_encoder_as_one_process_does(videos, tmp_path):
    """``kepp features extract --encoder s3d:PATH`` under two ranks: each loads the network and encodes
    its share; together the files of a single process, byte for byte (one thread each), 512 values per
    second, and a features.json that names the network."""
    import json

    import torch

    from kepp_core.data.extract import extract_features
    from tests.helpers.s3d import SMALL, write_release

    weights = write_release(tmp_path / "s3d", ["crack", "egg", "whisk"])
    spec = f"s3d:{weights},{SMALL}"
    shared = tmp_path / "two-ranks"
    shutil.copytree(videos, shared)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank runs
    try:
        assert len(extract_features(videos, spec, progress=False).written) == 5  # one process: this one
    finally:
        torch.set_num_threads(threads)
    runs = _run_ranks(shared, 2, "--encoder", spec)
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert "5 written by 2 ranks" in runs[0].stdout and runs[1].stdout == ""
    expected = _files(videos / "features")
    assert _files(shared / "features") == expected
    assert {p.stem: np.load(p).shape for p in (shared / "features").glob("*.npy")} == \
        {f"clip{k}": (1 + k % 3, 512) for k in range(5)}
    manifest = json.loads((shared / "features" / "features.json").read_text())
    assert manifest["dim"] == 512 and manifest["encoder"].startswith("s3d:video_embedding:16fps-16f-32px:")


def test_ranks_without_a_rendezvous_address_stop_before_encoding(videos, monkeypatch):
    from kepp_core.data import extract_features

    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(KeppError, match="MASTER_ADDR/MASTER_PORT are not set"):
        extract_features(videos, shard=Shard(0, 2), progress=False)
    assert not (videos / "features").exists()
