"""Kill training (a real ``kepp train`` process, ``os._exit(137)``) at each write point of its
save path, resume with ``--resume`` and check that the result equals an uninterrupted run.

The kills are injected with ``KEPP_FAULT_AT=<point>@<n>`` (``kepp_core.io.fault_point``): the
process dies the ``n``-th time it reaches that point, with no clean-up, like ``kill -9``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.training import tiny_world
from kepp_core.paths import REPO_ROOT


REPO = REPO_ROOT
TRAIN = ["--train-steps", "30", "--val-every", "10", "--log-every", "5", "--diffusion-steps", "6", "--dim", "8",
         "--batch-size", "16", "--sampler", "ddim", "--sampler-steps", "2", "--lr", "3e-3", "--warmup", "5",
         "--decay", "20:0.5", "--seed", "0", "--no-progress", "--json", "--threads", "1",
         "--device", "cpu"]  # a resumed run ends bit for bit where an uninterrupted one does: a CPU promise


def kepp(*args, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KEPP_FAULT_AT"}
    env.update(KEPP_THREADS="1", OMP_NUM_THREADS="1", **({"KEPP_FAULT_AT": fault} if fault else {}))
    return subprocess.run([sys.executable, "-m", "kepp_core", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, env=env, timeout=300)


def train(world: Path, out: Path, *extra: str, fault: str | None = None) -> subprocess.CompletedProcess:
    return kepp("train", "step", "--dataset", "demo", "--root", world, "--out", out, *TRAIN, *extra, fault=fault)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from kepp_core.models.checkpoint import load_checkpoint

    model, _ = load_checkpoint(folder, "step")  # also checks that weights and config belong together
    return model.state_dict()


def log_steps(folder: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".kepp-tmp-" in p.name)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return tiny_world(tmp_path_factory.mktemp("fault-world"), videos=60)


@pytest.fixture(scope="module")
def uninterrupted(world, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    r = train(world, out)
    assert r.returncode == 0, r.stderr[-2000:]
    log = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    scores, saves, best = [], [], float("-inf")
    for rec in log:
        if "val" in rec:
            scores.append(rec["val"]["score"])
            if rec["val"]["score"] > best:
                best = rec["val"]["score"]
                saves.append(rec["step"])
    # the kill points below are hit on the second checkpoint save: the run must make one
    assert len(saves) >= 2, f"validation scores {scores} improve only once; change TRAIN"
    return {"summary": json.loads(r.stdout), "weights": weights(out), "log": log_steps(out), "out": out}


# Every write of the save path, in the order a validation round writes them; "@2": the second
# time (so the run has a complete earlier state to fall back to).
KILL_POINTS = [
    "checkpoint-weights@2",                   # model.safetensors new, config.json old
    "before-rename:config.json@2",            # config.json complete in a temporary file
    "checkpoint-config@2",                    # checkpoint complete, not yet logged
    "metrics-torn@3",                         # half a line in metrics.jsonl
    "metrics-line@3",                         # logged, state not saved
    "before-rename:state-00000020.safetensors",  # state tensors in a temporary file
    "state-tensors@2",                        # new state tensors, state.json names the old ones
    "before-rename:state.json@2",             # state.json complete in a temporary file
    "state-json@2",                           # state complete, old state file not yet removed
]


@pytest.mark.slow
@pytest.mark.parametrize("point", KILL_POINTS)
def test_resume_after_a_kill_equals_an_uninterrupted_run(world, uninterrupted, tmp_path, point):
    out = tmp_path / "run"
    killed = train(world, out, fault=point)
    assert killed.returncode == 137, f"the run was not killed at {point}: {killed.stderr[-1500:]}"
    resumed = train(world, out, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "Traceback" not in resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["rank_digests"] == uninterrupted["summary"]["rank_digests"]
    assert summary["best"] == uninterrupted["summary"]["best"]
    got = weights(out)
    assert got.keys() == uninterrupted["weights"].keys()
    assert all(torch.equal(got[k], uninterrupted["weights"][k]) for k in got)
    assert log_steps(out) == uninterrupted["log"]
    assert leftovers(out) == []  # temporaries of the killed run are removed
    assert sorted(p.name for p in out.glob("state-*.safetensors")) == ["state-00000030.safetensors"]


@pytest.mark.slow
def test_kill_between_weights_and_config_is_detected_not_loaded(world, tmp_path):
    from kepp_core.errors import KeppError
    from kepp_core.models.checkpoint import load_checkpoint

    out = tmp_path / "run"
    assert train(world, out, fault="checkpoint-weights@2").returncode == 137
    with pytest.raises(KeppError, match="come from different saves"):
        load_checkpoint(out, "step")


@pytest.mark.slow
def test_kill_after_state_tensors_resumes_from_the_previous_state(world, tmp_path):
    out = tmp_path / "run"
    assert train(world, out, fault="state-tensors@2").returncode == 137
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 10 and (out / "state-00000020.safetensors").is_file()
    r = train(world, out, "--resume", "--train-steps", "10")  # nothing left to train: only the resume itself
    assert r.returncode == 0, r.stderr[-2000:]
    assert not (out / "state-00000020.safetensors").exists()  # the unreferenced newer state is gone


@pytest.mark.slow
def test_torn_last_metrics_line_does_not_stop_resume(world, tmp_path):
    out = tmp_path / "run"
    assert train(world, out, fault="metrics-torn@3").returncode == 137
    assert not (out / "metrics.jsonl").read_text().endswith("\n")
    r = train(world, out, "--resume")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert log_steps(out) == [5, 10, 15, 20, 25, 30]


@pytest.mark.slow
def test_kill_before_the_first_state_leaves_nothing_to_resume_but_a_clear_error(world, tmp_path):
    out = tmp_path / "run"
    assert train(world, out, fault="checkpoint-weights").returncode == 137
    r = train(world, out, "--resume")
    assert r.returncode == 2 and "nothing to resume" in r.stderr and "Traceback" not in r.stderr
    r = train(world, out)  # starting over works and clears what the killed run left
    assert r.returncode == 0, r.stderr[-2000:]
    assert leftovers(out) == []


def test_synthetic_world_build_removes_temporaries_of_a_killed_build(tmp_path):
    out = tmp_path / "world"
    args = ["data", "synth", "--out", out, "--videos", "2", "--size", "32", "--workers", "1",
            "--step-min", "1", "--step-max", "1.5", "--idle", "0.3"]
    killed = kepp(*args, fault="before-rename:videos_val.csv")
    assert killed.returncode == 137
    assert [p.name for p in out.glob(".videos_val.csv.kepp-tmp-*")]  # the kill left its temporary file
    r = kepp(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p for p in out.rglob("*") if ".kepp-tmp-" in p.name] == []
    assert (out / "videos_val.csv").is_file()
