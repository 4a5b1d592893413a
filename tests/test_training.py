"""Training: presets, schedules, checkpoints, resume, the JSONL log and DDP on two CPU processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.helpers.app_env import REPO
from tests.helpers.training import kepp, tiny_cfg, tiny_world


torch.set_num_threads(1)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tiny_world(tmp_path_factory.mktemp("tiny-world"))


@pytest.fixture(scope="module")
def ds(world):
    from kepp_core.data import load_dataset

    return load_dataset("demo", world)


def test_presets_follow_the_paper_schedules():
    from kepp_core.training import lr_at, preset

    ct = preset("crosstask")
    assert (ct.n_steps, ct.train_steps, ct.batch_size) == (200, 12000, 256)
    assert lr_at(ct, 0) == pytest.approx(8e-4 / 4000) and lr_at(ct, 5000) == pytest.approx(8e-4)
    assert lr_at(ct, 10000) == pytest.approx(4e-4)
    niv = preset("niv")
    assert (niv.n_steps, niv.train_steps) == (50, 6500) and lr_at(niv, 6000) == pytest.approx(1.5e-4)
    coin = preset("coin")
    assert lr_at(coin, 30000) == pytest.approx(2.5e-6)
    assert preset("demo", horizon=5, lr=1e-3).horizon == 5


def test_bad_training_option_is_a_kepp_error():
    from kepp_core.errors import KeppError
    from kepp_core.training import preset

    with pytest.raises(KeppError, match="batch_size"):
        preset("demo", batch_size=0)
    with pytest.raises(KeppError, match="unknown preset"):
        preset("crosstsk")


@pytest.mark.slow
def test_step_training_writes_checkpoint_config_and_jsonl_log(ds, tmp_path):
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.training import train_step_model

    out = tmp_path / "step"
    summary = train_step_model(ds, tiny_cfg(), out, progress=False)
    model, cfg = load_checkpoint(out, "step")
    assert cfg["kind"] == "step" and cfg["dataset"]["vocabulary_hash"] == ds.vocabulary_hash()
    assert cfg["dataset"]["obs_dim"] == 3 * 8 and cfg["model"]["layout"]["horizon"] == 3
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [10, 20, 30, 40]
    assert {"step", "epoch", "loss", "lr", "time"} <= set(lines[0])
    assert "val" in lines[1] and "first_acc" in lines[1]["val"]
    assert lines[-1]["loss"] < lines[0]["loss"]
    assert summary["best"]["step"] in (20, 40) and cfg["train_step"] == summary["best"]["step"]


@pytest.mark.cpu
def test_resume_continues_a_killed_run_to_the_same_weights(ds, tmp_path):
    from kepp_core.training import train_step_model
    from kepp_core.models.checkpoint import load_tensors

    full = train_step_model(ds, tiny_cfg(), tmp_path / "full", progress=False)
    # "killed" after the validation at step 20: train 20 steps, then resume to 40
    train_step_model(ds, tiny_cfg(train_steps=20), tmp_path / "cut", progress=False)
    resumed = train_step_model(ds, tiny_cfg(), tmp_path / "cut", resume=True, progress=False)
    assert resumed["rank_digests"] == full["rank_digests"]
    a = load_tensors(tmp_path / "full" / "model.safetensors")
    b = load_tensors(tmp_path / "cut" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    log = [json.loads(x)["step"] for x in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()]
    assert log == [10, 20, 30, 40]


def test_resume_without_saved_state_is_a_kepp_error(ds, tmp_path):
    from kepp_core.errors import KeppError
    from kepp_core.training import train_step_model

    with pytest.raises(KeppError, match="nothing to resume"):
        train_step_model(ds, tiny_cfg(), tmp_path / "none", resume=True, progress=False)


def test_plan_model_trains_on_predicted_endpoints_and_saves_graph(ds, tmp_path):
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.training import train_plan_model, train_step_model

    train_step_model(ds, tiny_cfg(), tmp_path / "step", progress=False)
    train_plan_model(ds, tiny_cfg(R=2, gt_augment=True), tmp_path / "plan", step_dir=tmp_path / "step",
                     progress=False)
    model, cfg = load_checkpoint(tmp_path / "plan", "plan")
    assert cfg["condition"] == "graph" and cfg["R"] == 2 and (tmp_path / "plan" / "graph.json").is_file()
    assert [r.name for r in model.layout.rows] == ["graph"]
    assert 0 <= cfg["train_endpoint_acc"]["first"] <= 100


def test_early_stopping_stops_after_patience_validations(ds, tmp_path):
    from kepp_core.training import train_task_classifier

    # the classifier reaches 100% at once on this world, so later validations cannot improve
    s = train_task_classifier(ds, tiny_cfg(patience=1, classifier_epochs=200), tmp_path / "cls", progress=False)
    planned = json.loads((tmp_path / "cls" / "config.json").read_text())["train"]["train_steps"]
    assert s["stopped_early"] and s["steps"] < planned


@pytest.mark.slow
def test_cli_train_plan_with_graph_needs_the_step_model(world, tmp_path):
    r = kepp("train", "plan", "--dataset", "demo", "--root", world, "--out", tmp_path / "p", "--train-steps", 5)
    assert r.returncode == 2 and "step model" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.cpu
def test_torchrun_two_cpu_processes_finish_with_identical_weights(world, tmp_path):
    """Two CPU ranks, gloo, also on a machine with GPUs (--device cpu: before, any CUDA made them take NCCL)."""
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "kepp_core", "train", "step", "--dataset", "demo", "--root", str(world), "--out", str(out),
           "--train-steps", "12", "--val-every", "6", "--log-every", "6", "--diffusion-steps", "10", "--dim", "16",
           "--batch-size", "16", "--sampler", "ddim", "--sampler-steps", "3", "--no-progress", "--device", "cpu"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    cfg = json.loads((out / "config.json").read_text())
    digests = cfg["training"]["rank_digests"]
    assert cfg["training"]["world_size"] == 2 and len(digests) == 2 and digests[0] == digests[1]
    assert cfg["training"]["device"] == "cpu"


def test_out_of_fold_endpoints_cover_every_training_episode(ds, tmp_path):
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.training import train_plan_model
    from kepp_core.training.data import episode_tensors
    from kepp_core.training.trainers import out_of_fold_endpoints

    cfg = tiny_cfg(endpoint_folds=2, train_steps=20)
    data = episode_tensors(ds, 3, "train")
    ends = out_of_fold_endpoints(ds, data, cfg)
    assert ends.shape == (len(data), 2) and int(ends.max()) < ds.num_actions
    train_plan_model(ds, cfg, tmp_path / "plan", step_dir=None, progress=False)
    _, c = load_checkpoint(tmp_path / "plan", "plan")
    assert c["endpoint_folds"] == 2 and c["step_model"] is None


@pytest.mark.slow
def test_train_and_eval_run_on_plans_jsonl_and_crosstask_formats(world, tmp_path):
    from kepp_core.data import load_dataset

    ds = load_dataset("crosstask", world)
    lines = []
    for v in ds.videos:
        lines.append(json.dumps({"video": f"{v.task}_{v.id}", "task": v.task, "split": v.split,
                                 "steps": ds.labels(v.plan), "segments": [[s.start, s.end] for s in v.steps],
                                 "features": f"feats/{v.task}_{v.id}.npy"}))
    (tmp_path / "feats").symlink_to(world / "features")
    (tmp_path / "plans.jsonl").write_text("\n".join(lines) + "\n")
    fast = ["--train-steps", "10", "--val-every", "10", "--diffusion-steps", "5", "--dim", "16", "--batch-size", "16",
            "--sampler", "ddim", "--sampler-steps", "2", "--no-progress"]
    from kepp_core.catalog import models_dir

    trained = {}
    for fmt, root in (("plans", tmp_path / "plans.jsonl"), ("crosstask", world)):
        out = tmp_path / fmt
        r = kepp("train", "all", "--dataset", fmt, "--root", root, "--out", out, "--horizons", "3",
                 "--only", "step", "plan-graph-R1", *fast)
        assert r.returncode == 0, r.stderr[-2000:]
        r = kepp("eval", "--dataset", fmt, "--root", root, "--models", out, "-T", "3", "--json",
                 "--methods", "random", "kepp-R1")
        assert r.returncode == 0, r.stderr[-2000:]
        assert [x["method"] for x in json.loads(r.stdout)["rows"]] == ["random", "kepp-R1"]
        trained[fmt] = sorted(p.name for p in models_dir(out, 3).iterdir() if p.is_dir())
    assert trained == {"plans": ["plan-graph-R1", "step"], "crosstask": ["plan-graph-R1", "step"]}  # from either format


@pytest.mark.slow
def test_train_and_eval_run_on_the_coin_format_with_a_feature_folder(world, tmp_path):
    from kepp_core.data import load_dataset

    ds = load_dataset("crosstask", world)
    db, feats = {}, tmp_path / "feats"
    feats.mkdir()
    for v in ds.videos:
        vid = f"{v.task}-{v.id}"
        db[vid] = {"class": v.task, "recipe_type": 0, "duration": v.duration,
                   "subset": "training" if v.split == "train" else "testing",
                   "annotation": [{"id": str(s.action), "label": ds.actions[s.action], "segment": [s.start, s.end]}
                                  for s in v.steps]}
        (feats / f"{vid}.npy").symlink_to(v.feature_file)
    (tmp_path / "COIN.json").write_text(json.dumps({"database": db}))
    fast = ["--train-steps", "10", "--val-every", "10", "--diffusion-steps", "5", "--dim", "16", "--batch-size", "16",
            "--sampler", "ddim", "--sampler-steps", "2", "--no-progress"]
    out = tmp_path / "models"
    common = ["--dataset", "coin", "--root", tmp_path / "COIN.json", "--features", feats]
    r = kepp("train", "all", *common, "--out", out, "--horizons", "3", "--only", "step", "plan-graph-R1", *fast)
    assert r.returncode == 0, r.stderr[-2000:]
    r = kepp("eval", *common, "--models", out, "-T", "3", "--json", "--methods", "kepp-R1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["rows"][0]["method"] == "kepp-R1"
