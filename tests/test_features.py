"""Feature encoders (builtin, Python callable, TorchScript), encode_video, the feature cache
and ``kepp features``."""

from __future__ import annotations

import json
import shutil
import textwrap

import numpy as np
import pytest
import torch

from kepp_core.cli import main
from kepp_core.data import extract_features, load_dataset
from kepp_core.errors import KeppError
from kepp_core.video import (BuiltinEncoder, encode_video, get_encoder, read_frames,
                             seconds_of, write_video)


def _moving_square(seconds: int = 3, fps: int = 8, size: int = 48, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frames = np.full((seconds * fps, size, size, 3), 90, np.uint8)
    for i in range(len(frames)):
        x = (i * 3) % (size - 10)
        frames[i, 10:20, x:x + 10] = rng.integers(100, 255, 3)
    return frames


@pytest.fixture()
def small_root(tmp_path):
    """A folder with videos/ holding three short mp4 files."""
    for k in range(3):
        write_video(tmp_path / "videos" / f"clip{k}.mp4", _moving_square(2 + k, seed=k), fps=8)
    return tmp_path


def test_builtin_encoder_gives_one_256_row_per_second():
    frames = _moving_square(3)
    feats = BuiltinEncoder()(frames, 8.0)
    assert feats.shape == (3, 256) and feats.dtype == np.float32 and np.isfinite(feats).all()
    assert BuiltinEncoder()(frames[:17], 8.0).shape == (3, 256)  # a partial last second counts
    np.testing.assert_array_equal(feats, BuiltinEncoder()(frames.copy(), 8.0))  # deterministic


def test_builtin_encoder_sees_motion_where_things_move():
    still = np.repeat(_moving_square(1)[:1], 8, axis=0)
    moving = _moving_square(1)
    energy = slice(108, 144)
    assert BuiltinEncoder()(still, 8.0)[0, energy].sum() == 0
    assert BuiltinEncoder()(moving, 8.0)[0, energy].sum() > 0.1


def test_seconds_of_counts_partial_seconds():
    assert [seconds_of(n, 8.0) for n in (1, 8, 9, 16)] == [1, 1, 2, 2]


def test_encode_video_matches_encoding_the_decoded_frames(small_root):
    path = small_root / "videos" / "clip1.mp4"
    feats = encode_video(path)
    assert feats.shape == (3, 256)
    frames = read_frames(path, size=(64, 64))
    np.testing.assert_array_equal(feats, BuiltinEncoder()(frames, 8.0))


def test_callable_encoder_is_loaded_from_module_and_function(tmp_path, monkeypatch, small_root):
    (tmp_path / "my_encoder.py").write_text(textwrap.dedent("""
        import numpy as np

        def mean_colour(frames, fps):
            seconds = int(np.ceil(len(frames) / fps - 1e-6))
            sec = np.minimum(np.arange(len(frames)) // int(fps), seconds - 1)
            return np.stack([frames[sec == k].mean(axis=(0, 1, 2)) for k in range(seconds)])
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    enc = get_encoder("my_encoder:mean_colour")
    assert enc.name == "callable:my_encoder:mean_colour"
    feats = encode_video(small_root / "videos" / "clip0.mp4", enc)
    assert feats.shape == (2, 3) and (feats > 80).all()
    with pytest.raises(KeppError, match="has no attribute 'nope'"):
        get_encoder("my_encoder:nope")
    with pytest.raises(KeppError, match="cannot import module"):
        get_encoder("no_such_module_kepp:fn")


class _PerSecondMean(torch.nn.Module):
    def forward(self, frames: torch.Tensor, fps: float) -> torch.Tensor:
        step = int(fps)
        seconds = (frames.shape[0] + step - 1) // step
        x = frames.float() / 255.0
        rows = [x[k * step:(k + 1) * step].mean(dim=(0, 1, 2)) for k in range(seconds)]
        return torch.stack(rows)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torchscript_encoder_file_fills_the_cache(tmp_path, small_root):
    pt = tmp_path / "enc.pt"
    torch.jit.script(_PerSecondMean()).save(str(pt))
    summary = extract_features(small_root, str(pt), progress=False)
    assert summary.dim == 3 and len(summary.written) == 3
    feats = np.load(small_root / "features" / "clip2.npy")
    assert feats.shape == (4, 3) and feats.dtype == np.float32
    manifest = json.loads((small_root / "features" / "features.json").read_text())
    assert manifest["encoder"].startswith("torchscript:enc.pt@") and manifest["dim"] == 3


def test_encoder_output_of_the_wrong_shape_is_a_clear_error(small_root):
    with pytest.raises(KeppError, match=r"returned shape \(5,\), expected \[2, D\]"):
        encode_video(small_root / "videos" / "clip0.mp4", get_encoder(lambda frames, fps: np.zeros(5)))


def test_extract_features_skips_cached_and_recomputes_with_force(small_root):
    first = extract_features(small_root, progress=False)
    assert len(first.written) == 3 and first.skipped == 0 and first.video_seconds == 9.0
    again = extract_features(small_root, progress=False)
    assert again.written == [] and again.skipped == 3
    forced = extract_features(small_root, force=True, progress=False)
    assert len(forced.written) == 3


def test_cache_of_another_encoder_needs_force(small_root):
    extract_features(small_root, progress=False)
    other = get_encoder(lambda frames, fps: np.zeros((seconds_of(len(frames), fps), 4)))
    with pytest.raises(KeppError, match="force a recompute"):
        extract_features(small_root, other, progress=False)


def test_precomputed_features_without_manifest_are_kept(small_root):
    (small_root / "features").mkdir()
    s3d = np.ones((2, 512), np.float32)
    np.save(small_root / "features" / "clip0.npy", s3d)
    summary = extract_features(small_root, progress=False)
    assert summary.skipped == 1
    np.testing.assert_array_equal(np.load(small_root / "features" / "clip0.npy"), s3d)


@pytest.mark.slow
def test_synth_world_features_are_those_of_the_decoded_video(synth_world):
    ds = load_dataset("demo", synth_world)
    v = ds.videos[0]
    np.testing.assert_array_equal(np.load(v.feature_file), encode_video(v.video_file))


def test_cli_extract_fills_the_cache_of_a_dataset(tmp_path, synth_world, capsys):
    root = tmp_path / "world"
    shutil.copytree(synth_world, root, ignore=shutil.ignore_patterns("features"))
    assert main(["features", "extract", "--root", str(root), "--dataset", "demo"]) == 0
    out = capsys.readouterr().out
    ds = load_dataset("demo", root)
    assert all(v.feature_file is not None for v in ds.videos)
    assert f"{len(ds.videos)} written" in out
    assert main(["features", "extract", "--root", str(root)]) == 0
    assert "0 written" in capsys.readouterr().out


def test_cli_extract_on_a_corrupt_video_exits_2_naming_it(small_root, capsys):
    (small_root / "videos" / "clip1.mp4").write_bytes(b"\x00\x01not a video" * 100)
    code = main(["features", "extract", "--root", str(small_root), "--dataset", "files"])
    err = capsys.readouterr().err
    assert code == 2
    last = err.strip().splitlines()[-1]  # after the progress bar
    assert last.startswith("kepp: error: ") and "clip1.mp4" in last and "Traceback" not in err
    leftovers = [p.name for p in (small_root / "features").iterdir()] if (small_root / "features").exists() else []
    assert "clip1.npy" not in leftovers and not [n for n in leftovers if n.endswith(".tmp") or n.startswith(".")]


def test_cli_extract_without_videos_exits_2(tmp_path, capsys):
    assert main(["features", "extract", "--root", str(tmp_path), "--dataset", "files"]) == 2
    assert "no video files found" in capsys.readouterr().err


def test_cli_info_prints_video_metadata(small_root, capsys):
    assert main(["features", "info", str(small_root / "videos" / "clip0.mp4"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["fps"] == 8.0 and info["frames"] == 16 and info["width"] == 48


def test_cli_encode_writes_one_feature_file(small_root, capsys):
    out = small_root / "one.npy"
    assert main(["features", "encode", str(small_root / "videos" / "clip2.mp4"), "--out", str(out)]) == 0
    assert np.load(out).shape == (4, 256)
    assert main(["features", "encode", str(small_root / "missing.mp4"), "--out", str(out)]) == 2
    assert "missing.mp4: video file not found" in capsys.readouterr().err
