"""The S3D HowTo100M network, its ``s3d:PATH`` encoder and its text tower.

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
from pathlib import Path

import numpy as np
import pytest
import torch

from kepp_core.video.s3d import S3D
from kepp_core.errors import KeppError
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.s3d import SMALL, write_release

TOL = 1e-4
ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread in this worker (the suite runs two workers on two cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
    net = S3D.load(release, release.parent / "s3d_dict.npy", device="cpu")
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
    """A 'files' dataset of two short rendered videos (1.5 s at 24 fps, 1.5 s at 10 fps)."""
    from kepp_core.video import write_video

    root = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    for name, n, fps, (h, w) in (("a", 36, 24, (72, 128)), ("b", 15, 10, (96, 64))):
        base = rng.integers(0, 200, (1, h, w, 3))
        write_video(root / "videos" / f"{name}.mp4", (base + 2 * np.arange(n)[:, None, None, None]).astype(np.uint8), fps)
    return root


@pytest.mark.slow
def test_features_extract_files_with_s3d_writes_per_second_512_d_features(two_videos, release):
    spec = f"s3d:{release}"
    r = run_kepp("features", "extract", "--root", two_videos, "--dataset", "files", "--encoder", spec, "--json",
                 env=ENV)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["written"] == 2 and summary["D"] == 512
    shapes = {p.stem: np.load(p).shape for p in (two_videos / "features").glob("*.npy")}
    assert shapes == {"a": (2, 512), "b": (2, 512)}  # ceil(1.5 s) each, the last window padded
    assert all(np.isfinite(np.load(p)).all() for p in (two_videos / "features").glob("*.npy"))
    manifest = json.loads((two_videos / "features" / "features.json").read_text())
    assert manifest["dim"] == 512 and manifest["encoder"].startswith("s3d:video_embedding:16fps-16f-224px:")
    # resumable: a second run encodes nothing
    from kepp_core.data.extract import extract_features

    again = extract_features(two_videos, spec, progress=False)
    assert again.skipped == 2 and not again.written


@pytest.fixture(scope="module")
def world(s3d_world):
    """The small synthetic world with S3D features (a 32-px crop), its release and the dataset."""
    from kepp_core.data import load_dataset

    root, weights = s3d_world
    return root, weights, load_dataset("demo", root)


@pytest.fixture(scope="module")
def official(s3d_official) -> Path:
    """Official-format checkpoints for the world's actions and 3 s x 512 observations, imported."""
    return s3d_official


@pytest.mark.slow
def test_kepp_plan_with_the_s3d_encoder_and_imported_official_models(world, official, tmp_path):
    root, weights, ds = world
    video = next(v for v in ds.split("test") if v.video_file is not None)
    r = run_kepp("plan", video.video_file, "--start", 0, 3, "--goal", 5, 8, "-T", 3, "--models", official,
                 "--encoder", f"s3d:{weights},{SMALL}", "--json", env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["plan"]) == 3 and all(label in ds.actions for label in out["plan_labels"])


@pytest.mark.slow
def test_a_models_folder_of_another_observation_width_is_refused_before_any_decoding(world, official, tmp_path):
    from kepp_core import api

    root, weights, ds = world
    video = tmp_path / "not-even-read.mp4"
    video.write_bytes(b"a file no decoder could open")
    r = run_kepp("plan", video, "--start", 0, 3, "--goal", 5, 8, "-T", 3, "--models", official, "--encoder",
                 f"s3d:{weights},output=mixed_5c", env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
    assert_one_line_error(r, "1536 values", "512-d", "1024-d")
    planner = api.load_planner(official, 3, decode=False)
    with pytest.raises(KeppError, match="1536 values .* 512-d .* 'builtin' gives 256-d"):
        planner.check_encoder("builtin")
    planner.check_encoder(f"s3d:{weights}")  # 3 s x 512: fits


@pytest.mark.slow
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


# --- bad input: one line `kepp: error:` naming the file, key or value; nothing written ----------------------
def _bad_release(kind: str, release: Path, folder: Path) -> str:
    """An ``s3d:`` spec whose weights or word list is broken in one way (``kind``)."""
    from kepp_core.video.s3d import rule_state_dict

    folder.mkdir()
    weights = folder / "s3d_howto100m.pth"
    shutil.copy(release.parent / "s3d_dict.npy", folder / "s3d_dict.npy")
    state = rule_state_dict(21)
    if kind == "truncated":
        data = release.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
        return f"s3d:{weights}"
    if kind == "not a checkpoint":
        weights.write_text("these are not weights\n")
        return f"s3d:{weights}"
    if kind == "another network":
        state = {"conv1.weight": torch.zeros(64, 3, 7, 7), "fc.weight": torch.zeros(1000, 512),
                 "text_module.word_embd.weight": torch.zeros(21, 300)}
    elif kind == "missing key":
        del state["mixed_4c.conv_b0.bn1.running_var"]
    elif kind == "extra key":
        state["mixed_5c.conv_b4.conv1.weight"] = torch.zeros(1)
    elif kind == "wrong shape":
        state["fc.weight"] = torch.zeros(512, 1000)
    elif kind == "short word list":
        np.save(folder / "s3d_dict.npy", np.array(["open", "door"]))
    elif kind == "missing word list":
        (folder / "s3d_dict.npy").unlink()
    torch.save(state, weights)
    return f"s3d:{weights}"


BAD_RELEASES = {
    "truncated": ["s3d_howto100m.pth", "weights_only=True"],
    "not a checkpoint": ["s3d_howto100m.pth", "weights_only=True"],
    "another network": ["s3d_howto100m.pth", "not the S3D HowTo100M state dict", "missing"],
    "missing key": ["'mixed_4c.conv_b0.bn1.running_var'", "1 keys missing"],
    "extra key": ["'mixed_5c.conv_b4.conv1.weight'", "unexpected"],
    "wrong shape": ["'fc.weight'", "[512, 1000]", "[512, 1024]"],
    "short word list": ["s3d_dict.npy", "2 words", "embed 20"],
    "missing word list": ["s3d_dict.npy", "not found"],
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(BAD_RELEASES))
def test_a_broken_release_is_one_line_naming_the_file_or_key(kind, release, two_videos, tmp_path):
    spec = _bad_release(kind, release, tmp_path / "s3d")
    out = tmp_path / "out.npy"
    r = run_kepp("features", "encode", two_videos / "videos" / "a.mp4", "--out", out, "--encoder", spec, env=ENV)
    assert_one_line_error(r, *BAD_RELEASES[kind])
    assert not out.exists() and not list(tmp_path.glob("*.kepp-tmp-*"))


@pytest.mark.slow
@pytest.mark.parametrize("option, words", [
    ("output=pool5", ["output='pool5'", "video_embedding, mixed_5c"]),
    ("size=33", ["size='33'", "even"]),
    ("batch=0", ["batch='0'"]),
    ("device=tpu", ["device='tpu'"]),
    ("colour=red", ["unknown option 'colour'"]),
])
def test_a_bad_spec_option_is_one_line_naming_it(option, words, release, two_videos, tmp_path):
    r = run_kepp("features", "encode", two_videos / "videos" / "a.mp4", "--out", tmp_path / "o.npy", "--encoder",
                 f"s3d:{release},{option}", env=ENV)
    assert_one_line_error(r, *words)


@pytest.mark.slow
def test_a_video_shorter_than_one_window_is_refused(release, tmp_path):
    from kepp_core.video import write_video

    short = write_video(tmp_path / "short.mp4", np.zeros((12, 64, 64, 3), np.uint8), 24)  # 0.5 s
    r = run_kepp("features", "encode", short, "--out", tmp_path / "o.npy", "--encoder", f"s3d:{release},{SMALL}",
                 env=ENV)
    assert_one_line_error(r, "short.mp4", "0.50 s long", "shorter than one window")
    assert not (tmp_path / "o.npy").exists()


def test_odd_sizes_and_empty_step_lists_are_refused_by_the_api(release):
    from kepp_core import api

    net = S3D.load(release, device="cpu")
    for shape in ((1, 3, 15, 32, 32), (1, 3, 16, 33, 32), (1, 3, 16, 32)):
        with pytest.raises(KeppError, match=r"even|expected \[B, 3, T, H, W\]"):
            net.video(torch.zeros(shape))
    with pytest.raises(KeppError, match=r"values in \[255, 255\], expected \[0, 1\]"):
        net.video(torch.full((1, 3, 2, 2, 2), 255.0))
    with pytest.raises(KeppError, match="uint8|floats"):
        net.video(torch.zeros((1, 3, 2, 2, 2), dtype=torch.uint8))
    with pytest.raises(KeppError, match="step list is empty"):
        api.text_grounding(f"s3d:{release}", [])
    with pytest.raises(KeppError, match="empty"):
        net.text([])


def test_an_empty_step_list_on_the_command_line_is_one_line(release, two_videos):
    r = run_kepp("features", "ground", two_videos / "videos" / "a.mp4", "--encoder", f"s3d:{release}", "--steps",
                 env=ENV)
    assert_one_line_error(r, "--steps", "empty")


@pytest.mark.slow
def test_text_endpoints_serve_where_endpoint_distributions_do(world, official):
    """The text tower's distributions have the endpoint model's interface: a planner decodes jointly
    with them (mode dist, a +jdec-text row's decoding); the result keeps them under the text tower's
    name (``text_probs``), the step model's apart, and its why-table and decoding record say so."""
    from kepp_core import api
    from kepp_core.catalog import TEXT
    from kepp_core.graph.decoding import DecodeChoice
    from kepp_core.planner import PlannerDecoding

    root, weights, ds = world
    grounding = api.text_grounding(f"s3d:{weights},{SMALL}", dataset=ds)
    assert grounding.temperature != 1.0  # fitted on the world's training episodes (S3D features)
    planner = api.load_planner(official, 3, decode=False)
    decoding = PlannerDecoding(choice=DecodeChoice("dist", 1.0), method="kepp-R1+jdec-text", kept_in="test",
                               endpoints_from=TEXT)
    with pytest.raises(KeppError, match="text tower's distributions: give its text endpoints"):
        planner.use_decoding(decoding)
    planner.use_decoding(decoding, text=grounding)
    assert planner.endpoint_model is None and planner.text_endpoints is grounding
    video = next(v for v in ds.split("test") if v.video_file is not None)
    feats = api.video_features(video)
    result, v_start, v_goal = api.plan_clips(planner, feats, (0, 3), (5, 8), 3)
    probs = np.exp(grounding.endpoint_log_probs(v_start.reshape(1, -1), v_goal.reshape(1, -1)))[0]
    assert result.decoding["mode"] == "dist" and result.decoding["endpoints"] == "text tower"
    assert np.allclose(result.text_probs, probs) and result.endpoint_model_probs is None
    assert result.decoded_ends_from == TEXT and result.path_ends[0] == "predicted"  # paths: the step model's ends
    assert result.step_probs is not None and not np.allclose(result.step_probs, probs)
    assert result.why[0]["endpoint"] == round(float(probs[0, result.plan[0]]), 4)


@pytest.mark.slow
def test_the_jdec_text_rows_decode_with_the_text_towers_distributions(world, official, tmp_path, monkeypatch):
    """kepp-R1+jdec-text: KEPP R=1's action block decoded jointly with the text tower's distributions
    (no endpoint model), λ chosen on the held-out training video with the temperature fitted on the other
    training videos, the choice kept with the tower's weights and word list."""
    from kepp_core.catalog import JOINT_DECODING
    from kepp_core.evaluation.methods import EvalContext, EvalOptions, get_method
    from kepp_core.evaluation.methods.choice import choose, row_endpoint_probs, stored_choice, validation_context
    from kepp_core.graph.build import build_graph
    from kepp_core.graph.decoding import decode_block, transition_log_probs
    from kepp_core.training.data import episode_tensors

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    root, weights, ds = world
    ctx = EvalContext(ds, 3, episode_tensors(ds, 3, "test"), build_graph(ds, "train"), official / "T3",
                      EvalOptions(encoder=f"s3d:{weights},{SMALL}"))
    method = get_method("kepp-R1+jdec-text")
    assert method.requires == get_method("kepp-R1").requires and method.entry.decoder is JOINT_DECODING
    assert method.entry.text
    probs = row_endpoint_probs(ctx, method.entry)
    assert np.allclose(probs, np.exp(ctx.text_log_probs())) and np.allclose(probs.sum(-1), 1.0)
    out = method.plan(ctx)
    choice = choose(ctx, method)
    assert choice.mode == "dist" and out.decoding == {"mode": "dist", "lam": choice.lam, "k": choice.k, "samples": 1}
    block = ctx.cache.outputs["kepp-R1"].action_block
    assert (out.plans == decode_block(block, transition_log_probs(ctx.graph), choice, probs)).all()
    entry, where = stored_choice(ctx, method)
    assert where.is_relative_to(tmp_path / "home") and entry["val_episodes"] > 0
    assert entry["models"]["text"].startswith("s3d_howto100m.pth@") and "+s3d_dict.npy@" in entry["models"]["text"]
    vctx = validation_context(ctx, method)  # its training episodes: the training videos but the held-out one
    assert vctx.cache.texts is ctx.cache.texts and len(vctx.train_tensors()) < len(ctx.train_tensors())
    assert vctx.text_endpoints().temperature != ctx.text_endpoints().temperature


@pytest.mark.slow
def test_the_jdec_text_rows_need_the_text_tower_in_kepp_eval_and_the_protocol(world, official, tmp_path):
    from kepp_core.experiments.protocol import parse_spec

    root, weights, ds = world
    r = run_kepp("eval", "--root", root, "--models", official, "-T", 3, "--methods", "kepp-R1+jdec-text", "--json",
                 env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    assert "--encoder s3d:PATH" in json.loads(r.stdout)["skipped"]["T=3 conventional kepp-R1+jdec-text"]
    spec = {"dataset": "demo", "root": str(root), "methods": ["kepp-R1+jdec-text"], "seeds": 1, "horizons": [3],
            "out": str(tmp_path / "protocol")}
    with pytest.raises(KeppError, match="'kepp-R1[+]jdec-text' needs the S3D text tower: add encoder"):
        parse_spec(dict(spec), "spec.toml")
    assert parse_spec({**spec, "encoder": f"s3d:{weights}"}, "spec.toml").methods == ("kepp-R1+jdec-text",)
    defaults = parse_spec({k: v for k, v in spec.items() if k != "methods"}, "spec.toml").methods
    assert not any(m.endswith("+jdec-text") for m in defaults)


@pytest.mark.slow
def test_kepp_plan_with_graph_text_plans_between_the_text_towers_endpoints(world, tmp_path):
    """``--planning-model graph-text``: no models folder; the world's graph and the text tower of
    --encoder; the JSON names the text tower's endpoints (text_endpoints), never the step model's."""
    from kepp_core import api
    from kepp_core.graph.build import build_graph

    root, weights, ds = world
    video = next(v for v in ds.split("test") if v.video_file is not None)
    spec = f"s3d:{weights},{SMALL}"
    args = ("plan", video.feature_file, "--start", 0, 3, "--goal", 5, 8, "-T", 3, "--planning-model", "graph-text",
            "--root", root)
    r = run_kepp(*args, "--encoder", spec, "--json", env={**ENV, "KEPP_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["models"] is None and out["planning_model"] == "graph-text" and out["decoding"] is None
    assert "endpoints" not in out and "endpoint_labels" not in out
    planner = api.text_planner(spec, build_graph(ds), ds, 3)
    result, _, _ = api.plan_clips(planner, api.video_features(video), (0, 3), (5, 8), 3)
    assert out["text_endpoints"] == list(result.text_endpoints) and out["plan"] == list(result.plan)
    assert out["text_endpoint_labels"] == [ds.actions[a] for a in result.text_endpoints]
    assert out["plan"][0] == out["text_endpoints"][0] and out["plan"][-1] == out["text_endpoints"][1]
    assert out["endpoint_top"]["first"][0]["action"] == out["text_endpoints"][0]
    r = run_kepp(*args, env=ENV)  # no text tower named: one line, before anything is loaded
    assert_one_line_error(r, "--planning-model graph-text", "--encoder s3d:PATH", "no --encoder")
    r = run_kepp(*args, "--encoder", spec, "--models", tmp_path, "--save-decoding", env=ENV)  # nothing they could do
    assert_one_line_error(r, "--models / --save-decoding", "no trained model")


@pytest.mark.slow
def test_graph_text_runs_in_a_protocol_with_its_encoder_key(world, tmp_path):
    from kepp_core.experiments.protocol import parse_spec, run_protocol

    root, weights, ds = world
    spec = {"dataset": "demo", "root": str(root), "methods": ["graph-text", "graph-gt"], "seeds": 1,
            "horizons": [3], "out": str(tmp_path / "protocol"), "pairs": [["graph-text", "graph-gt"]]}
    with pytest.raises(KeppError, match="'graph-text' needs the S3D text tower: add encoder"):
        parse_spec(dict(spec), "spec.toml")
    assert "graph-text" not in parse_spec({k: v for k, v in spec.items() if k not in ("methods", "pairs")},
                                          "spec.toml").methods  # a spec's default methods: none needs it
    result = run_protocol(parse_spec({**spec, "encoder": f"s3d:{weights},{SMALL}"}, "spec.toml"), log=lambda s: None)
    rows = {r["method"]: r for r in result["summary"]}
    assert set(rows) == {"graph-text", "graph-gt"} and rows["graph-text"]["text_first_acc"] is not None
    assert "text tower (S3D)" in (tmp_path / "protocol" / "results.md").read_text()


@pytest.mark.parametrize("shape", [(2, 8, 56, 56, 3), (1, 7, 55, 54, 2), (1, 3, 7, 7, 2), (1, 2, 2, 2, 1)])
def test_same_pool_equals_the_zero_padded_pool_of_the_reference(shape):
    """TensorFlow "SAME" pooling as the reference code does it (zeros padded, then a ceil-mode
    pool) against the network's (the pool's own ceil mode where the result is the same)."""
    from torch.nn import functional as F

    from kepp_core.video.s3d import POOL_BEFORE, same_pool

    x = torch.rand(shape)
    assert len(POOL_BEFORE) == 4  # the reference's four max-pools: before conv_2b, mixed_3b, mixed_4b, mixed_5b
    for kernel, stride in POOL_BEFORE.values():
        pad = [0, 0]
        for k, s in zip(reversed(kernel), reversed(stride)):
            pad += [max(k - s, 0) // 2, max(k - s, 0) - max(k - s, 0) // 2]
        ref = F.max_pool3d(F.pad(x, pad).permute(0, 4, 1, 2, 3), kernel, stride, ceil_mode=True).permute(0, 2, 3, 4, 1)
        assert torch.equal(same_pool(x, kernel, stride), ref)
