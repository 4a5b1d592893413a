"""Official KEPP checkpoints imported with ``kepp models import`` compute what the official code
computes (the reference outputs in ../shared/data/official-kepp), and plan through ``kepp eval``
and the API like this package's own models."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from kepp_core.diffusion import ProjectedDiffusion
from kepp_core.diffusion.official import OfficialDiffusion
from kepp_core.errors import KeppError
from kepp_core.models.checkpoint import build_model, load_checkpoint
from kepp_core.models.folders import read_config
from kepp_core.models.official import import_official
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import in_process

REPO = REPO_ROOT
PLAN, STEP = "official-kepp-plan-T3.pth.tar", "official-kepp-step-T3.pth.tar"
TOL = 1e-4


def kepp(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "kepp_core", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, env=env, timeout=300)


def write_dataset(root: Path, actions: int = 12, dim: int = 16, videos: int = 16) -> Path:
    """A plans-JSONL dataset with per-second features: integer labels ``0..actions-1`` (the
    official action ids), 4 timed steps per video, the last 6 videos in the test split."""
    rng = np.random.default_rng(0)
    (root / "features").mkdir(parents=True)
    with open(root / "plans.jsonl", "w") as f:
        for k in range(videos):
            np.save(root / "features" / f"v{k}.npy", rng.standard_normal((9, dim)).astype(np.float32))
            f.write(json.dumps({"video": f"v{k}", "task": "t", "split": "train" if k < videos - 6 else "test",
                                "steps": [(k + i) % actions for i in range(4)],
                                "segments": [[2 * i, 2 * i + 2] for i in range(4)], "duration": 9}) + "\n")
    return root / "plans.jsonl"


@pytest.fixture(scope="module")
def imported(official_kepp, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("official") / "models"
    import_official(official_kepp / PLAN, official_kepp / STEP, out, horizon=3, seconds=1)
    return out


def reference(official_kepp: Path, kind: str) -> dict[str, torch.Tensor]:
    return load_file(str(official_kepp / f"official-kepp-{kind}-T3-reference.safetensors"))


def folder(imported: Path, kind: str) -> Path:
    return imported / "T3" / ("plan-graph-R1" if kind == "plan" else "step")


@pytest.mark.parametrize("kind", ["plan", "step"])
def test_imported_denoiser_reproduces_the_official_output(imported, official_kepp, kind):
    model, cfg = load_checkpoint(folder(imported, kind), kind)
    ref = reference(official_kepp, kind)
    assert isinstance(model, OfficialDiffusion) and cfg["architecture"] == "official"
    with torch.no_grad():
        out = model.model(ref["denoiser_x"], ref["denoiser_t"])
    assert (out - ref["denoiser_out"]).abs().max().item() <= TOL


@pytest.mark.parametrize("sampler", ["ddpm", "ddim"])
@pytest.mark.parametrize("kind", ["plan", "step"])
def test_imported_sampling_fed_the_recorded_draws_reproduces_the_official_run(imported, official_kepp, kind, sampler):
    model, _ = load_checkpoint(folder(imported, kind), kind)
    ref = reference(official_kepp, kind)
    draws = iter(ref[f"{sampler}_noise"])
    with torch.no_grad():
        x = model.run(ref["obs_start"], ref["obs_goal"], ref.get("pkg_rows"), ref.get("llm_rows"), sampler,
                      draw=lambda shape: next(draws))
    assert next(draws, None) is None  # every recorded draw used, in order
    assert (x - ref[f"{sampler}_x0"]).abs().max().item() <= TOL
    a0, n = model.action_offset, model.layout.num_actions
    assert torch.equal(x[..., a0:a0 + n].argmax(-1), ref[f"{sampler}_actions"])


def test_import_reads_the_sizes_from_the_tensor_shapes(imported):
    cfg = read_config(folder(imported, "plan"))
    sizes = {"dim": 32, "dim_mults": [1, 2, 4], "n_steps": 20, "num_actions": 12, "obs_dim": 16, "graph_dim": 12,
             "llm_dim": 12, "horizon": 3}
    assert {k: cfg["model"][k] for k in sizes} == sizes
    assert cfg["feature_layout"].startswith("[0:12] graph rows | [12:24] LLM rows")
    assert cfg["dataset"]["num_actions"] == 12 and cfg["dataset"]["feature_dim"] == 16
    assert cfg["source"]["weights"] == "ema" and cfg["source"]["imported_from"].endswith(PLAN)
    assert read_config(folder(imported, "step"))["feature_layout"] == "[0:12] actions | observations (16)"


def test_model_weights_differ_from_ema_and_are_imported_on_request(official_kepp, tmp_path):
    import_official(official_kepp / PLAN, official_kepp / STEP, tmp_path, horizon=3, weights="model", seconds=1)
    model, cfg = load_checkpoint(tmp_path / "T3" / "plan-graph-R1", "plan")
    raw = torch.load(official_kepp / PLAN, weights_only=True, map_location="cpu")["model"]
    assert cfg["source"]["weights"] == "model"
    assert torch.equal(model.state_dict()["model.final_conv.1.weight"], raw["module.model.final_conv.1.weight"])


def test_own_models_keep_their_own_network():
    cfg = read_config(REPO / "assets" / "demo" / "T3" / "step")
    assert type(build_model(cfg)) is ProjectedDiffusion


def test_import_refuses_swapped_checkpoints_naming_both_files(official_kepp, tmp_path):
    with pytest.raises(KeppError, match="is --plan a planning model and --step a step model"):
        import_official(official_kepp / STEP, official_kepp / PLAN, tmp_path, horizon=3, seconds=1)


def test_import_refuses_a_checkpoint_without_the_weights_asked_for(official_kepp, tmp_path):
    bad = tmp_path / "noema.pth.tar"
    torch.save({"epoch": 1, "model": {}}, bad)
    with pytest.raises(KeppError, match=r"noema.pth.tar: no key 'ema'"):
        import_official(official_kepp / PLAN, bad, tmp_path / "m", horizon=3, seconds=1)


def test_import_names_the_file_and_key_a_broken_state_dict_lacks(official_kepp, tmp_path):
    ck = torch.load(official_kepp / STEP, weights_only=True, map_location="cpu")
    del ck["ema"]["module.model.mid_block2.time_mlp.1.bias"]
    bad = tmp_path / "broken.pth.tar"
    torch.save(ck, bad)
    with pytest.raises(KeppError, match=r"broken.pth.tar: key 'model.mid_block2.time_mlp.1.bias' missing"):
        import_official(official_kepp / PLAN, bad, tmp_path / "m", horizon=3, seconds=1)


@pytest.mark.slow
def test_import_refuses_an_observation_width_that_is_not_m_seconds_of_features(official_kepp, tmp_path):
    r = kepp("models", "import", "--plan", official_kepp / PLAN, "--step", official_kepp / STEP, "-T", "3",
             "--out", tmp_path / "m")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "observation width 16 is not a multiple of --seconds 3" in r.stderr


@pytest.fixture(scope="module")
def eval_world(official_kepp, tmp_path_factory) -> tuple[Path, Path]:
    """A dataset of the fixture's sizes and the official models imported for it (command line)."""
    base = tmp_path_factory.mktemp("official-eval")
    plans = write_dataset(base / "data")
    r = kepp("models", "import", "--plan", official_kepp / PLAN, "--step", official_kepp / STEP, "-T", "3",
             "--seconds", "1", "--dataset", "plans", "--root", plans, "--out", base / "models", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["graph"].endswith("graph.json")
    return plans, base / "models"


@pytest.mark.slow
def test_imported_models_plan_the_test_episodes_through_kepp_eval(eval_world):
    plans, models = eval_world
    r = kepp("eval", "--dataset", "plans", "--root", plans, "--models", models, "-T", "3",
             "--methods", "kepp-R1", "kepp-gt", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["method"]: row for row in json.loads(r.stdout)["rows"]}
    assert set(rows) == {"kepp-R1", "kepp-gt"} and rows["kepp-R1"]["episodes"] == 12


@pytest.mark.slow
@pytest.mark.parametrize("actions, dim, expected", [
    (10, 16, r"vocabulary \(10 actions\) does not match .* \(trained on 12 actions\)"),
    (12, 20, r"expects observations of size 16 \(1 × 16\), the dataset gives 20"),
])
def test_eval_refuses_a_dataset_of_another_size_naming_both_numbers(eval_world, tmp_path, actions, dim, expected):
    plans = write_dataset(tmp_path / "data", actions=actions, dim=dim)
    r = kepp("eval", "--dataset", "plans", "--root", plans, "--models", eval_world[1], "-T", "3",
             "--methods", "kepp-R1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert re.search(expected, r.stderr), r.stderr


@pytest.mark.slow
def test_the_api_planner_plans_with_imported_models(eval_world):
    from kepp_core.api.planning import load_planner

    planner = load_planner(eval_world[1], 3)
    result = planner.plan(np.zeros(16, np.float32), np.ones(16, np.float32))
    assert len(result.plan) == 3 and all(0 <= a < 12 for a in result.plan)
    assert result.plan_labels == [str(a) for a in result.plan]



@pytest.fixture(scope="module")
def video_world(official_kepp, tmp_path_factory) -> tuple[Path, Path]:
    """A small rendered world (mp4 videos) of the fixture's sizes: 12 actions, its per-second
    features replaced by 16-dimensional ones, and the official models imported for it."""
    from kepp_core.data.synth import generate_world

    base = tmp_path_factory.mktemp("official-world")
    plans = base / "plans.jsonl"
    plans.write_text("".join(json.dumps({"video": f"v{k}", "task": "t", "split": "train" if k < 7 else "test",
                                         "steps": [str((k + i) % 12) for i in range(4)]}) + "\n" for k in range(10)))
    world = generate_world(base / "world", seed=0, videos=10, from_plans=plans, progress=False, step_min=1.0,
                           step_max=1.5, idle=0.3, size=32)
    rng = np.random.default_rng(0)
    for f in sorted((world / "features").glob("*.npy")):
        np.save(f, rng.standard_normal((np.load(f).shape[0], 16)).astype(np.float32))
    r = kepp("models", "import", "--plan", official_kepp / PLAN, "--step", official_kepp / STEP, "-T", "3",
             "--seconds", "1", "--dataset", "demo", "--root", world, "--out", base / "models")
    assert r.returncode == 0, r.stderr
    return world, base / "models"


@pytest.mark.slow
def test_the_plan_page_plans_with_imported_models(video_world, monkeypatch):
    from streamlit.testing.v1 import AppTest

    world, models = video_world
    # started on the world alone; the imported models folder is opened from the sidebar's panel
    for key, value in {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": world, "KEPP_APP_ALLOW_ROOTS": models,
                       "KEPP_THREADS": "1"}.items():
        monkeypatch.setenv(key, str(value))
    for key in ("KEPP_APP_PREDICTIONS", "KEPP_APP_GRAPH", "KEPP_APP_CONFIG", "KEPP_APP_CHECKPOINTS"):
        monkeypatch.delenv(key, raising=False)
    at = AppTest.from_file(str(REPO / "app" / "Home.py"), default_timeout=180)
    at.switch_page("views/1_Plan.py")
    at.run()
    at.session_state["kepp_panel_open"] = True
    at.run()
    at.text_input(key="cfg_checkpoints").set_value(str(models)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.button(key="plan_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    cards = " ".join(m.value for m in at.markdown if "kepp-plan" in m.value)
    assert cards.count("kepp-card") >= 3  # the imported planner's plan of T = 3 steps (and the truth)


# --- one writer per folder: what a killed writer left half-written goes with the next run -------------
def test_what_a_killed_import_left_is_removed_by_the_next(capsys, tmp_path):
    out = tmp_path / "m"
    (out / "T3" / "step").mkdir(parents=True)
    left = out / "T3" / "step" / ".model.safetensors.kepp-tmp-abc123.safetensors"
    left.write_bytes(b"half")
    in_process(capsys, "models", "import", "--plan", tmp_path / "none.pth.tar", "--step", tmp_path / "none.pth.tar",
               "-T", 3, "--out", out)
    assert not left.exists()
