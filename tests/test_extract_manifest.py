"""One feature folder, one encoder: ``features.json`` names the encoder (spec, weights digest, crop,
frames) before the first feature file is written, so a ``kepp features extract`` killed halfway and
resumed with another encoder or crop is refused naming both, and a resume with the same encoder
ends byte for byte as an uninterrupted run."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.s3d import write_release

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """A 'files' dataset of three short videos (a, b, c)."""
    from kepp_core.video import write_video

    root = tmp_path_factory.mktemp("files")
    for k, name in enumerate("abc"):
        frames = np.full((24 + 12 * k, 40, 56, 3), 40 + 60 * k, np.uint8)
        write_video(root / "videos" / f"{name}.mp4", frames, 24)
    return root


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("s3d"), ["crack", "egg"])


def _extract(root, encoder, *extra, fault: str | None = None):
    env = {**ENV, **({"KEPP_FAULT_AT": fault} if fault else {})}
    return run_kepp("features", "extract", "--root", root, "--dataset", "files", "--encoder", encoder, *extra, env=env)


def _killed_after_one_video(videos, tmp_path, encoder):
    """A copy of the dataset whose extraction with ``encoder`` was killed before its second file."""
    root = tmp_path / "killed"
    shutil.copytree(videos, root)
    r = _extract(root, encoder, fault="before-rename:b.npy")
    assert r.returncode == 137, r.stderr
    assert sorted(p.name for p in (root / "features").glob("*.npy")) == ["a.npy"]
    return root


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


@pytest.mark.slow
@pytest.mark.parametrize("second", ["size=64", "builtin"], ids=["another-crop", "another-encoder"])
def test_a_killed_extraction_resumed_with_another_encoder_is_refused_naming_both(second, videos, release, tmp_path):
    first = f"s3d:{release},size=32"
    root = _killed_after_one_video(videos, tmp_path, first)
    other = "builtin" if second == "builtin" else f"s3d:{release},{second}"
    r = _extract(root, other)
    line = assert_one_line_error(r, "features.json", "s3d:video_embedding:16fps-16f-32px:", "32 px crop",
                                 "this run's encoder is", "--force")
    assert ("64px" in line and "64 px crop" in line) if second != "builtin" else "builtin-v1" in line
    assert sorted(p.name for p in (root / "features").glob("*.npy")) == ["a.npy"]  # nothing mixed in


@pytest.mark.slow
def test_a_killed_extraction_resumed_with_its_encoder_ends_as_an_uninterrupted_run(videos, release, tmp_path):
    spec = f"s3d:{release},size=32"
    root = _killed_after_one_video(videos, tmp_path, spec)
    manifest = json.loads((root / "features" / "features.json").read_text())
    assert manifest["encoder"].startswith("s3d:video_embedding:16fps-16f-32px:") and manifest["dim"] is None
    assert manifest["crop"] == 32 and manifest["frames"] == 16 and manifest["fps"] == 16.0
    assert manifest["weights"].startswith("s3d_howto100m.pth@") and manifest["spec"] == spec
    r = _extract(root, spec)
    assert r.returncode == 0, r.stderr
    whole = tmp_path / "whole"
    shutil.copytree(videos, whole)
    assert _extract(whole, spec).returncode == 0
    assert _files(root / "features") == _files(whole / "features")
    assert json.loads((whole / "features" / "features.json").read_text())["dim"] == 512


@pytest.mark.slow
def test_a_stopped_forced_replacement_is_finished_only_by_force(videos, release, tmp_path):
    root = tmp_path / "forced"
    shutil.copytree(videos, root)
    assert _extract(root, "builtin").returncode == 0
    spec = f"s3d:{release},size=32"
    r = _extract(root, spec, "--force", fault="before-rename:b.npy")
    assert r.returncode == 137  # a.npy is S3D's now, b and c still the built-in encoder's
    manifest = json.loads((root / "features" / "features.json").read_text())
    assert manifest["replacing"] == "builtin-v1"
    for encoder in (spec, "builtin"):
        assert_one_line_error(_extract(root, encoder), "features.json", "stopped before it finished", "--force")
    r = _extract(root, spec, "--force")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((root / "features" / "features.json").read_text())
    assert "replacing" not in manifest and manifest["dim"] == 512
    assert {np.load(p).shape[1] for p in (root / "features").glob("*.npy")} == {512}
