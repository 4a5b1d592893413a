"""Structured training through the graph (docs, How to use the graph): a real short training run of the
structured planner, its folder and role, its evaluation row, and resume with a learned scale."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.training import kepp, tiny_cfg, tiny_world

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from kepp_core.data import load_dataset
    from kepp_core.training.suite import train_horizon

    root = tmp_path_factory.mktemp("struct")
    world = tiny_world(root / "world", seed=3)
    ds = load_dataset("demo", world)
    train_horizon(ds, tiny_cfg(horizon=3, train_steps=40), root / "models", ["step"], progress=False,
                  log=lambda s: None)
    return world, ds, root / "models"


@pytest.mark.slow
def test_structured_planner_trains_through_the_cli_and_is_its_own_role(trained):
    from kepp_core.models.spec import load_spec
    from kepp_core.catalog import ModelRole, parse_model_folder

    world, _, models = trained
    out = models / "T3" / "plan-graph-R1-struct"
    r = kepp("train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--preset", "demo",
             "--train-steps", "40", "--diffusion-steps", "10", "--dim", "16", "--val-every", "20",
             "--step-model", models / "T3" / "step", "--structured-weight", "0.1", "--structured-learn-scale",
             "--out", out, "--no-progress", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["steps"] == 40 and summary["structured_scale"] != 1.0  # the scale was learned
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["structured"] == {"weight": 0.1, "learn_scale": True}
    spec = load_spec(out)
    assert spec.structured_weight == 0.1 and spec.structured_learn_scale and spec.folder_name == out.name
    assert parse_model_folder(out.name) == ModelRole("plan", "graph", 1, structured=True)
    # its evaluation rows run through the registry
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--methods",
             "kepp-R1-struct", "kepp-R1-struct+dec", "--strict", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [x["method"] for x in rows] == ["kepp-R1-struct", "kepp-R1-struct+dec"]


@pytest.mark.cpu
def test_structured_loss_goes_down_and_a_resumed_run_ends_where_an_uninterrupted_one_does(trained, tmp_path):
    from dataclasses import replace

    from kepp_core.training import train_plan_model

    _, ds, models = trained
    cfg = replace(tiny_cfg(horizon=3, train_steps=40, val_every=20, log_every=10), structured_weight=0.1,
                  structured_learn_scale=True)
    step = models / "T3" / "step"
    full = train_plan_model(ds, cfg, tmp_path / "full", step, progress=False)
    half = train_plan_model(ds, replace(cfg, train_steps=20), tmp_path / "resumed", step, progress=False)
    assert half["steps"] == 20
    # resume the 20-step run to 40 steps: the state (model, optimiser, learned scale) continues
    state = json.loads((tmp_path / "resumed" / "state.json").read_text())
    assert state["step"] == 20
    resumed = train_plan_model(ds, cfg, tmp_path / "resumed", step, resume=True, progress=False)
    assert resumed["rank_digests"] == full["rank_digests"]
    assert resumed["structured_scale"] == pytest.approx(full["structured_scale"])
    losses = [json.loads(x)["loss"] for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert losses[-1] < losses[0]


@pytest.mark.slow
def test_a_negative_structured_weight_is_refused(trained):
    world, _, models = trained
    r = kepp("train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--step-model", models / "T3" / "step",
             "--structured-weight", "-1", "--out", models / "bad")
    assert r.returncode == 2 and "structured_weight=-1.0 must be a finite number >= 0" in r.stderr
