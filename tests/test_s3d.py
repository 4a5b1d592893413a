"""The S3D HowTo100M network, its ``s3d:PATH`` encoder and its text tower (issue 30).

The reference outputs in ../shared/data/official-s3d were made by the reference code with weights
drawn by a rule from each key; the rule rebuilds them here, so a faithful network reproduces the
fixture to float32 round-off. Everything else runs the same fixture network (random weights: the
numbers mean nothing, the plumbing is what is checked) on tiny inputs: two short rendered videos,
a small synthetic world re-encoded with a 32-px crop, official-format checkpoints whose
observation is three S3D seconds.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from kepp_core.errors import KeppError
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.s3d import SMALL, official_checkpoints, write_release

TOL = 1e-4
ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def fixture_dir(official_s3d) -> Path:
    return official_s3d


@pytest.fixture(scope="module")
def fixture_words(fixture_dir) -> list[str]:
    return [str(w) for w in np.load(fixture_dir / "s3d_dict-fixture.npy")]


@pytest.fixture(scope="module")
def release(fixture_words, tmp_path_factory) -> Path:
    """The fixture's weights rebuilt from the rule, saved with torch.save beside its word list."""
    return write_release(tmp_path_factory.mktemp("s3d"), fixture_words)


def rel_error(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_the_reference_fixture_is_reproduced_from_its_rule_through_the_public_api(fixture_dir, release):
    from safetensors import safe_open
    from safetensors.numpy import load_file

    from kepp_core import api
    from kepp_core.video.s3d import expected_shapes

    keys = json.loads((fixture_dir / "keys.json").read_text())
    assert {k: tuple(v) for k, v in keys.items()} == expected_shapes(len(np.load(release.parent / "s3d_dict.npy")) + 1)
    ref = load_file(str(fixture_dir / "s3d-reference.safetensors"))
    sentences = json.loads(safe_open(str(fixture_dir / "s3d-reference.safetensors"), "np").metadata()["sentences"])
    net = api.s3d_model(release, release.parent / "s3d_dict.npy", device="cpu")
    video = torch.from_numpy(ref["video_u8"]).float() / 255
    out = net.video(video)
    assert rel_error(out["video_embedding"], ref["video_embedding"]) < TOL
    assert rel_error(out["mixed_5c"], ref["mixed_5c"]) < TOL
    v32 = torch.from_numpy(ref["video_u8"][:1].repeat(2, axis=2).repeat(2, axis=3).repeat(2, axis=4)).float() / 255
    out32 = net.video(v32)
    assert rel_error(out32["video_embedding"], ref["video32_embedding"]) < TOL
    assert rel_error(out32["mixed_5c"], ref["video32_mixed_5c"]) < TOL
    assert rel_error(net.text(sentences), ref["text_embedding"]) < TOL
    # a wrong layer shows: the two videos' embeddings differ by far more than the tolerance
    assert rel_error(out["video_embedding"][0], ref["video_embedding"][1]) > 100 * TOL


def test_a_rule_state_dict_saved_with_torch_save_loads_through_an_s3d_spec(release):
    from kepp_core.video import get_encoder
    from kepp_core.video.encoders import encoder_dim, encoder_name

    spec = f"s3d:{release},{SMALL},batch=2"
    enc = get_encoder(spec)
    assert enc.name == encoder_name(spec) and enc.name.startswith("s3d:video_embedding:16fps-16f-32px:")
    assert enc.dim == encoder_dim(spec) == 512 and encoder_dim(f"s3d:{release},output=mixed_5c") == 1024
    frames = (np.arange(40)[:, None, None, None] * 6 + np.zeros((1, 48, 64, 3))).astype(np.uint8)
    feats = enc(frames, 16.0)  # 40 frames at 16 fps: 2.5 s -> 3 windows, the last padded
    assert feats.shape == (3, 512) and np.isfinite(feats).all()
    # a second depends only on its own 16 frames: the first two windows alone give the same rows
    assert np.allclose(enc(frames[:32], 16.0), feats[:2], rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def two_videos(tmp_path_factory) -> Path:
    """A 'files' dataset of two short rendered videos (2.1 s at 24 fps, 1.5 s at 10 fps)."""
    from kepp_core.video import write_video

    root = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    for name, n, fps, (h, w) in (("a", 50, 24, (72, 128)), ("b", 15, 10, (96, 64))):
        base = rng.integers(0, 200, (1, h, w, 3))
        write_video(root / "videos" / f"{name}.mp4", (base + 2 * np.arange(n)[:, None, None, None]).astype(np.uint8), fps)
    return root


def test_features_extract_files_with_s3d_writes_per_second_512_d_features(two_videos, release):
    spec = f"s3d:{release}"
    r = run_kepp("features", "extract", "--root", two_videos, "--dataset", "files", "--encoder", spec, "--json",
                 env=ENV)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["written"] == 2 and summary["D"] == 512
    shapes = {p.stem: np.load(p).shape for p in (two_videos / "features").glob("*.npy")}
    assert shapes == {"a": (3, 512), "b": (2, 512)}  # ceil(2.08 s), ceil(1.5 s)
    assert all(np.isfinite(np.load(p)).all() for p in (two_videos / "features").glob("*.npy"))
    manifest = json.loads((two_videos / "features" / "features.json").read_text())
    assert manifest["dim"] == 512 and manifest["encoder"].startswith("s3d:video_embedding:16fps-16f-224px:")
    # resumable: a second run encodes nothing
    r = run_kepp("features", "extract", "--root", two_videos, "--dataset", "files", "--encoder", spec, "--json",
                 env=ENV)
    assert r.returncode == 0 and json.loads(r.stdout)["cached"] == 2, r.stderr


@pytest.fixture(scope="module")
def world(s3d_world):
    """The small synthetic world with S3D features (a 32-px crop), its release and the dataset."""
    from kepp_core.data import load_dataset

    root, weights = s3d_world
    return root, weights, load_dataset("demo", root)


@pytest.fixture(scope="module")
def official(world, tmp_path_factory) -> Path:
    """Official-format checkpoints for the world's actions and 3 s x 512 observations, imported."""
    root, _, ds = world
    folder = tmp_path_factory.mktemp("official")
    plan, step = official_checkpoints(folder, ds.num_actions, 3 * 512)
    r = run_kepp("models", "import", "--plan", plan, "--step", step, "-T", 3, "--out", folder / "models",
                 "--dataset", "demo", "--root", root, env=ENV)
    assert r.returncode == 0, r.stderr
    return folder / "models"


def test_kepp_plan_with_the_s3d_encoder_and_imported_official_models(world, official, tmp_path):
    root, weights, ds = world
    video = next(v for v in ds.split("test") if v.video_file is not None)
    r = run_kepp("plan", video.video_file, "--start", 0, 3, "--goal", 5, 8, "-T", 3, "--models", official,
                 "--encoder", f"s3d:{weights},{SMALL}", "--json", env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["plan"]) == 3 and all(label in ds.actions for label in out["plan_labels"])


def test_a_models_folder_of_another_observation_width_is_refused_before_any_decoding(world, official, tmp_path):
    root, weights, ds = world
    video = tmp_path / "not-even-read.mp4"
    video.write_bytes(b"a file no decoder could open")
    for spec, width in ((f"s3d:{weights},output=mixed_5c", "1024-d"), ("builtin", "256-d")):
        r = run_kepp("plan", video, "--start", 0, 3, "--goal", 5, 8, "-T", 3, "--models", official, "--encoder", spec,
                     env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
        assert_one_line_error(r, "1536 values", "512-d", width)


def test_graph_text_runs_in_kepp_eval_on_a_world_of_s3d_features(world, tmp_path):
    root, weights, ds = world
    (tmp_path / "models").mkdir()
    args = ("eval", "--root", root, "--models", tmp_path / "models", "-T", 3, "--methods", "graph-text", "graph-gt",
            "--json")
    r = run_kepp(*args, "--encoder", f"s3d:{weights},{SMALL}", env=ENV)
    assert r.returncode == 0, r.stderr
    rows = {x["method"]: x for x in json.loads(r.stdout)["rows"]}
    assert set(rows) == {"graph-text", "graph-gt"}
    assert 0 <= rows["graph-text"]["SR"] <= 100 and rows["graph-text"]["episodes"] == rows["graph-gt"]["episodes"]
    assert rows["graph-text"]["text_first_acc"] is not None
    r = run_kepp(*args, env=ENV)  # no text tower: the row is skipped, saying why
    assert r.returncode == 0, r.stderr
    assert "--encoder s3d:PATH" in json.loads(r.stdout)["skipped"]["T=3 conventional graph-text"]
