"""Evaluation: the methods table, prediction records and bad input (through the CLI)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.training import kepp, tiny_cfg, tiny_world

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from kepp_core.data import load_dataset
    from kepp_core.training.suite import MEMBERS, train_horizon

    root = tmp_path_factory.mktemp("eval")
    world = tiny_world(root / "world", seed=2)
    ds = load_dataset("demo", world)
    train_horizon(ds, tiny_cfg(horizon=3, train_steps=60), root / "models", MEMBERS, progress=False,
                  log=lambda s: None)
    return world, ds, root / "models"


@pytest.mark.slow
def test_eval_cli_writes_the_methods_table_and_per_episode_records(trained, tmp_path):
    world, ds, models = trained
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3",
             "--records", tmp_path / "pred.jsonl", "--out", tmp_path / "table.json")
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "table.json").read_text())["rows"]
    from kepp_core.evaluation.methods import DEFAULT_METHODS

    assert [x["method"] for x in rows] == list(DEFAULT_METHODS)
    by = {x["method"]: x for x in rows}
    assert by["random"]["SR"] < by["kepp-R1"]["SR"]
    assert by["graph-gt"]["SR"] >= by["graph-pred"]["SR"] - 5
    assert 0 <= by["kepp-R1"]["first_acc"] <= 100
    recs = [json.loads(x) for x in (tmp_path / "pred.jsonl").read_text().splitlines()]
    n = by["kepp-R1"]["episodes"]
    assert len(recs) == n
    rec = recs[0]
    assert {"episode", "video", "task", "start_time", "goal_time", "gt", "endpoints", "paths", "plans",
            "success", "acc"} <= set(rec)
    assert len(rec["paths"]) == 2 and set(rec["plans"]) == set(DEFAULT_METHODS)
    sr = 100 * np.mean([x["success"]["kepp-R1"] for x in recs])
    assert sr == pytest.approx(by["kepp-R1"]["SR"])
    assert 100 * np.mean([x["acc"]["kepp-R1"] for x in recs]) == pytest.approx(by["kepp-R1"]["mAcc"])


@pytest.mark.slow
def test_retrieval_returns_the_plan_of_the_nearest_training_episode(trained):
    from kepp_core.evaluation.methods import nearest_episode_plans
    from kepp_core.training import episode_tensors

    ds = trained[1]
    train = episode_tensors(ds, 3, "train")
    probe = train.subset(list(range(5)))
    assert (nearest_episode_plans(train, probe) == train.actions[:5].numpy()).all()


@pytest.mark.slow
def test_missing_models_are_skipped_or_fail_with_strict(trained, tmp_path):
    world, ds, models = trained
    part = tmp_path / "models"
    shutil.copytree(models / "T3" / "step", part / "T3" / "step")
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", part, "-T", "3", "--json",
             "--methods", "random", "graph-pred", "kepp-R1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [x["method"] for x in out["rows"]] == ["random", "graph-pred"]
    assert "T=3 conventional kepp-R1" in out["skipped"]
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", part, "-T", "3", "--strict",
             "--methods", "kepp-R1")
    assert r.returncode == 2 and "plan-graph-R1" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "garbage-config", "untrained-horizon", "vocabulary", "features"])
def test_bad_checkpoints_fail_with_one_line_and_exit_2(trained, tmp_path, damage):
    world, ds, models = trained
    bad = tmp_path / "models"
    shutil.copytree(models, bad)
    root, horizon = world, "3"
    if damage == "truncate":
        w = bad / "T3" / "step" / "model.safetensors"
        w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
        expect = "corrupt or truncated"
    elif damage == "garbage-config":
        (bad / "T3" / "plan-graph-R1" / "config.json").write_text("{not json")
        expect = "corrupt checkpoint config"
    elif damage == "untrained-horizon":
        horizon, expect = "4", "T3"
        shutil.rmtree(bad / "T3" / "plan-none")
        (bad / "T4").mkdir()
        shutil.copytree(models / "T3" / "plan-none", bad / "T4" / "plan-none")
        expect = "trained for horizon T=3, not T=4"
    elif damage == "vocabulary":
        root = tiny_world(tmp_path / "other", seed=3, tasks=4)
        expect = "vocabulary"
    else:
        root = tiny_world(tmp_path / "other", seed=3, dim=5)
        expect = "observations of size"
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", bad, "-T", horizon, "--strict",
             "--methods", "kepp-nograph" if damage == "untrained-horizon" else "kepp-R1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert expect in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_empty_test_split_is_a_kepp_error(trained, tmp_path):
    from kepp_core.data import load_dataset
    from kepp_core.errors import KeppError
    from kepp_core.evaluation.methods import evaluate_horizon

    world = tiny_world(tmp_path / "w", seed=2)
    (world / "videos_val.csv").write_text("")  # an explicit split without test videos
    ds = load_dataset("demo", world)
    with pytest.raises(KeppError, match="no episodes of T=3 in its test split"):
        evaluate_horizon(ds, trained[2], 3, methods=["random"])


@pytest.mark.slow
def test_eval_samples_reports_nll_kl_and_modes_next_to_the_plan_metrics(trained, tmp_path):
    world, ds, models = trained
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--samples", "6",
             "--methods", "random", "retrieval", "pdpp", "kepp-nograph", "kepp-R1", "--json")
    assert r.returncode == 0, r.stderr
    by = {x["method"]: x for x in json.loads(r.stdout)["rows"]}
    assert "NLL" not in by["retrieval"]  # deterministic: no samples, no uncertainty
    for name in ("random", "pdpp", "kepp-nograph", "kepp-R1"):
        row = by[name]
        assert row["K"] == 6 and row["NLL"] >= row["KL"] >= 0, row
        assert 0 <= row["ModePrec"] <= 100 and 0 <= row["ModeRec"] <= 100 and 1 <= row["pred_modes"] <= 6
        assert {"SR", "mAcc", "mIoU"} <= set(row)
    assert by["random"]["ModePrec"] < by["kepp-R1"]["ModePrec"]
    assert by["random"]["NLL"] > by["kepp-R1"]["NLL"]
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--samples", "1",
             "--methods", "random")
    assert r.returncode == 2 and "K from 2 to" in r.stderr and "Traceback" not in r.stderr


def test_sampled_plans_are_the_repeated_queries_sampled_in_one_batch(trained):
    from kepp_core.diffusion.sampling import sample_actions, sample_plans
    from kepp_core.evaluation.methods import EvalOptions, evaluate_horizon
    from kepp_core.evaluation.uncertainty import episode_uncertainty
    from kepp_core.training import episode_tensors
    from kepp_core.models.checkpoint import load_checkpoint

    _world, ds, models = trained
    model, _ = load_checkpoint(models / "T3" / "plan-none", "plan")
    test = episode_tensors(ds, 3, "test").subset(list(range(4)))
    drawn = sample_plans(model, test.obs_start, test.obs_goal, None, 5, "ddpm", seed=7, batch_size=8)
    assert drawn.shape == (4, 5, 3)
    # copy j of episode i is row 5·i + j of the repeated batch, with the same noise stream
    x0 = sample_actions(model, test.obs_start.repeat_interleave(5, 0), test.obs_goal.repeat_interleave(5, 0),
                        None, "ddpm", seed=7, batch_size=8)
    assert (model.decode(x0).numpy().reshape(4, 5, 3) == drawn).all()
    assert len({tuple(p) for p in drawn.reshape(-1, 3).tolist()}) > 1  # different noise, different plans
    ev = evaluate_horizon(ds, models, 3, ["kepp-R1"], EvalOptions(samples=4))
    out = ev.outputs["kepp-R1"]
    assert out.samples.shape == (len(ev.data), 4, 3)
    expect = episode_uncertainty(out.samples, ev.data.episodes, ds.num_actions)
    assert out.uncertainty.nll == pytest.approx(expect.nll) and out.uncertainty.samples == 4


def test_a_method_is_one_registered_object_that_says_what_it_needs():
    from kepp_core.evaluation.methods import ALL_METHODS, LLM_METHODS, REGISTRY, SAMPLED, get_method
    from kepp_core.errors import KeppError
    from kepp_core.catalog import model_folder

    assert tuple(REGISTRY) == ALL_METHODS and set(LLM_METHODS) == {n for n, m in REGISTRY.items() if m.needs_llm}
    assert [model_folder(r) for r in get_method("kepp-R2").requires] == ["step", "plan-graph-R2"]
    assert [model_folder(r) for r in get_method("pdpp").requires] == ["plan-task", "task-classifier"]
    assert "retrieval" not in SAMPLED and "kepp-gt" in SAMPLED
    with pytest.raises(KeppError, match="unknown method 'kepp-R3'; closest known: 'kepp-R2'"):
        get_method("kepp-R3")


def test_a_checkpoint_config_with_a_bad_field_names_the_file(tmp_path):
    from kepp_core.errors import KeppError
    from kepp_core.models.spec import ModelSpec
    from kepp_core.paths import DEMO_ASSETS

    cfg = json.loads((DEMO_ASSETS / "T3" / "plan-graph-R2" / "config.json").read_text())
    with pytest.raises(KeppError, match=r"m/config.json: 'R' must be a number of paths \(expected an integer >= 1"):
        ModelSpec.from_config({**cfg, "R": 0}, tmp_path / "m")
    with pytest.raises(KeppError, match=r"m/config.json: 'dataset' .*got null at 'dataset.horizon'"):
        ModelSpec.from_config({**cfg, "dataset": {**cfg["dataset"], "horizon": None}}, tmp_path / "m")


@pytest.mark.slow
def test_eval_metrics_report_each_codes_columns_named_after_the_code(trained, tmp_path):
    from kepp_core.evaluation.records import read_records
    from kepp_core.catalog.benchmark import protocol_metrics

    world, ds, models = trained
    base = ("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--methods", "random",
            "graph-pred")
    wide = {"COLUMNS": "240"}  # a wide terminal: the tables' headers whole (pytest-xdist's workers say 80)
    r = kepp(*base, "--metrics", "pdpp", "vpn", "--records", tmp_path / "p.jsonl", "--out", tmp_path / "t.json", env=wide)
    assert r.returncode == 0, r.stderr
    for header in ("SR (PDPP)", "mIoU (PDPP, per batch)", "mIoU (PDPP, per episode)", "first step (PDPP)",
                   "SR (ViterbiPlanNet)", "mIoU (ViterbiPlanNet acc_iou)", "mIoU (ViterbiPlanNet, classic)"):
        assert header in r.stdout, header
    assert "PDPP's utils/accuracy.py" in r.stdout and "ViterbiPlanNet's metrics.py" in r.stdout
    rows = {x["method"]: x for x in json.loads((tmp_path / "t.json").read_text())["rows"]}
    recs = read_records(tmp_path / "p.jsonl")
    gt = [rec["gt"] for rec in recs]
    for method, row in rows.items():
        plans = [rec["plans"][method] for rec in recs]
        for code in ("pdpp", "vpn"):
            for key, value in protocol_metrics(plans, gt, code).items():
                assert row[f"{code}_{key}"] == pytest.approx(value)
        assert row["SR"] == pytest.approx(protocol_metrics(plans, gt, "kepp")["sr"])
    # the default table is the kepp family's, as before: no other code's column, nothing published
    plain = kepp(*base, "--json")
    assert plain.returncode == 0
    assert not any(k.startswith(("pdpp_", "vpn_")) for x in json.loads(plain.stdout)["rows"] for k in x)


@pytest.mark.slow
def test_eval_benchmark_prints_published_numbers_apart_from_the_measured_rows(trained):
    world, ds, models = trained
    base = ("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--methods", "random")
    r = kepp(*base, "--metrics", "pdpp", "--benchmark", "niv", env={"COLUMNS": "240"})  # headers whole
    assert r.returncode == 0, r.stderr
    measured, published = r.stdout.split("published on niv")
    assert "random" in measured and "KEPP (published)" not in measured
    assert "KEPP (published)" in published and "24.44" in published and "Table 3 (NIV)" in published
    assert "never averaged" in published
    hint = kepp(*base, "--benchmark", "niv")
    assert "show them with --metrics pdpp" in hint.stdout and "KEPP (published)" not in hint.stdout


@pytest.mark.slow
def test_eval_benchmark_names_the_codes_its_metrics_hide_and_marks_unconfirmed_published_rows(trained):
    from kepp_core.catalog.benchmark import LITERATURE_UNCONFIRMED
    from kepp_core.evaluation.literature import literature_rows

    world, ds, models = trained
    base = ("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3", "--methods", "random",
            "--benchmark", "crosstask-133")
    hidden = kepp(*base, "--metrics", "kepp", "pdpp", env={"COLUMNS": "240"})
    assert hidden.returncode == 0, hidden.stderr
    said = [line for line in hidden.stdout.splitlines() if "ViterbiPlanNet's code (vpn)" in line]
    assert len(said) == 1 and "show them with --metrics vpn" in said[0] and "(published" not in hidden.stdout
    shown = kepp(*base, "--metrics", "vpn", env={"COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr
    published = shown.stdout.split("published on crosstask-133", 1)[1]
    rows = literature_rows("crosstask-133", 3, "vpn")
    assert all(r.label in published for r in rows) and "show them with" not in shown.stdout
    assert published.count("(published, unconfirmed)") == 5 and "ViterbiPlanNet (published) " in published
    assert LITERATURE_UNCONFIRMED in published


def test_of_the_unified_benchmarks_published_rows_only_viterbiplannets_own_are_confirmed():
    from kepp_core.evaluation.literature import read_literature

    unified = [r for r in read_literature() if r.split == "unified"]
    assert [(r.method, r.dataset) for r in unified if not r.confirmed] == [
        ("KEPP", "crosstask-133"), ("PDPP", "crosstask-133"), ("PlanLLM", "crosstask-133"), ("SCHEMA", "crosstask-133"),
        ("CEFITO", "crosstask-133")]
    own = [r for r in unified if r.method == "ViterbiPlanNet"]
    assert {(r.dataset, r.T, r.code): r.metrics for r in own} == {("crosstask-133", 3, "vpn"): {"sr": 38.45},
                                                                  ("niv", 3, "vpn"): {"sr": 32.37},
                                                                  ("coin", 3, "vpn"): {"sr": 33.99}}
    assert all(r.confirmed and r.paper.startswith("ViterbiPlanNet (Seminara et al.") for r in own)
    assert all(r.confirmed for r in read_literature() if r.split == "paper")  # KEPP's tables, read from its paper


# --- non-finite checkpoint weights ------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "one-nan", "one-inf"])
def test_eval_refuses_a_checkpoint_with_non_finite_weights_naming_the_file(tmp_path, value):
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    shutil.copytree(REPO_ROOT / "assets" / "demo", tmp_path / "m")
    path = tmp_path / "m" / "T3" / "step" / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    name = sorted(k for k, v in tensors.items() if v.is_floating_point() and v.numel() > 1)[-1]
    bad = float(value.removeprefix("one-"))
    if value.startswith("one-"):
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[0] = bad
    else:
        tensors = {k: torch.full_like(v, bad) if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(tensors, str(path), metadata=meta)
    r = run_kepp("eval", "--models", "m", "-T", "3", "--methods", "kepp-R1", cwd=tmp_path)
    assert_one_line_error(r, "model.safetensors", "non-finite")
