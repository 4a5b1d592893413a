"""A graph with no path between the endpoints gives no plan: ``kepp plan --planning-model graph-text``
says "no path" (it printed the graph's fallback variation as a plan of probability 0), and its
result carries the flag the app reads (``PlanResult.no_path``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers.cli import run_kepp
from tests.helpers.s3d import write_release

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}
STEPS = ["crack egg", "whisk egg", "fry egg"]  # one chain, no cycle: no path of 6 steps between any two


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = tmp_path_factory.mktemp("no-path")
    with open(folder / "plans.jsonl", "w") as f:
        for k in range(12):
            f.write(json.dumps({"video": f"v{k}", "task": "eggs", "steps": STEPS,
                                "split": "train" if k < 9 else "test"}) + "\n")
    np.save(folder / "clip.npy", np.random.default_rng(0).standard_normal((12, 512)).astype(np.float32))
    release = write_release(folder / "s3d", ["crack", "egg", "whisk", "fry"])
    return folder, release


def _plan(case, horizon: int, *extra):
    folder, release = case
    return run_kepp("plan", folder / "clip.npy", "--start", 0, 3, "--goal", 8, 11, "-T", horizon,
                    "--planning-model", "graph-text", "--encoder", f"s3d:{release}", "--dataset", "plans",
                    "--root", folder / "plans.jsonl", *extra, env=ENV)


@pytest.mark.slow
def test_no_path_is_said_and_the_fallback_is_not_shown_as_a_plan(case):
    r = _plan(case, 6)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("no path (T=6): the graph has no path of 6 steps from ") and "makes no plan" in first
    assert "plan (T=6)" not in r.stdout
    assert "fallback variation (not a plan)" in r.stdout


@pytest.mark.slow
def test_no_line_after_the_no_path_line_shows_the_fallback_as_a_plan_or_a_graph_path(case):
    r = _plan(case, 6, "-R", "3")
    assert r.returncode == 0, r.stderr
    for words in ("graph path 1", "why this plan", "the planning model's own plan"):
        assert words not in r.stdout, (words, r.stdout)
    assert "fallback variation's steps (not a plan)" in " ".join(r.stdout.split())


@pytest.mark.slow
def test_the_result_carries_no_path_for_the_app(case):
    r = _plan(case, 6, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["no_path"] is True and out["fallback"] is True


@pytest.mark.slow
def test_a_path_of_the_chains_length_is_a_plan(case):
    r = _plan(case, 3, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    if out["text_endpoint_labels"] == ["crack egg", "fry egg"]:  # the one pair the chain joins in 3 steps
        assert out["no_path"] is False and out["plan_labels"] == STEPS
    else:
        assert out["no_path"] is True
