"""Every run's numbers counted at once (``kepp eval --from-records``, the method × T table): each evaluation code's
whole-array, grouped computation gives, bit for bit, what the code's function gives on each run's plans cut out and
scored alone (the computation they replace, kept as the reference here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kepp_core.catalog.benchmark import FAMILIES, family
from kepp_core.evaluation.runs import Runs
from kepp_core.evaluation.store import PlanArrays, plans_frame
from kepp_core.paths import DEMO_ASSETS
from tests.helpers.cli import run_kepp

RECORDS = DEMO_ASSETS / "predictions.jsonl"


def runs_alone(preds, code: str) -> dict[tuple, dict]:
    """The reference: per (method, T, seed), the code's function on that run's rows cut out, in the records' order
    (pandas' groups, each scored by itself, as the command did before)."""
    plans = PlanArrays(preds)
    groups = preds.groupby([preds["method"], preds["horizon"], preds["seed"].fillna(-1)], sort=True).indices
    return {key: family(code).scores(*plans.of(idx)) for key, idx in sorted(groups.items())}


@pytest.mark.parametrize("code", list(FAMILIES))
def test_each_codes_runs_counted_at_once_are_each_run_scored_alone_on_the_demo_records(code):
    whole = plans_frame([RECORDS])  # 84 runs of 312 to 585 episodes: each run two or three batches of 256
    some = whole[np.random.default_rng(0).random(len(whole)) < 0.9]  # a tenth left out: runs of many lengths
    for preds in (whole, some):
        want = runs_alone(preds, code)
        runs = Runs(preds, keep=True)
        runs.values(family("vpn"))  # another code first: each T's plans in run order kept, then counted on again
        got = runs.values(family(code))
        assert runs.keys == list(want)  # the runs in the same order
        for r, key in enumerate(runs.keys):
            assert {k: v[r] for k, v in got.items()} == want[key], key  # equal, not close
    assert len({len(rows) for rows in runs.rows}) > 20  # each mean and sum taken on its own run's length


def brute_runs(rng: np.random.Generator, sizes: list[int], horizon: int, actions: int) -> tuple:
    """Plans of several runs (``sizes`` rows each, one after another) and truths, most steps right."""
    n = sum(sizes)
    gt = rng.integers(0, actions, (n, horizon))
    pred = np.where(rng.random((n, horizon)) < 0.6, gt, rng.integers(0, actions, (n, horizon)))
    return pred, gt, np.concatenate(([0], np.cumsum(sizes)[:-1]))


@pytest.mark.parametrize("batch_size", [1, 7, 256])
def test_runs_at_once_equal_runs_alone_for_any_lengths_batches_and_action_ids(batch_size):
    """Runs of any lengths (one row, equal ones, longer than a batch), ids from a handful to 2^25 (the growing sets
    kept by pairs, not a table), each code's run path against its function on each run alone."""
    rng = np.random.default_rng(batch_size)
    compared = 0
    for sizes, horizon, actions in (([1, 1, 2], 1, 3), ([300] * 4, 3, 20), ([513, 1, 256, 257, 40], 4, 133),
                                    ([90, 700, 12], 6, 1 << 25)):
        pred, gt, starts = brute_runs(rng, sizes, horizon, actions)
        for code in FAMILIES.values():
            got = code.run_scores(pred, gt, starts, batch_size)
            for r, (s, size) in enumerate(zip(starts, sizes)):
                alone = code.scores(pred[s:s + size], gt[s:s + size], batch_size)
                assert {k: v[r] for k, v in got.items()} == alone, (code.name, sizes, r)
                compared += 1
    assert compared == 15 * len(FAMILIES) >= 15 * 4  # every run of the four sets, under every built-in code


def test_a_code_without_a_run_path_is_counted_run_by_run():
    """A code that counts no runs at once (its ``runs`` None) still gives each run's numbers, its own function's."""
    from dataclasses import replace

    vpn = family("vpn")
    pred, gt, starts = brute_runs(np.random.default_rng(0), [5, 300], 3, 10)
    assert replace(vpn, runs=None).run_scores(pred, gt, starts) == vpn.run_scores(pred, gt, starts)


@pytest.mark.slow
def test_a_missing_seed_is_a_run_of_its_own_in_the_json_and_seed_zero_in_the_table(tmp_path):
    """Records without a seed beside records of seed 0: two runs in --json's runs (seed null first, as pandas
    sorts a missing seed filled with -1), one cell in the table (a missing seed counted as 0), as before."""
    rows = [{"T": 3, "episode": "t/v/0:3", "gt": [0, 1, 2], "plans": {"m": [0, 1, 2]}},
            {"T": 3, "episode": "t/v/1:3", "gt": [0, 1, 2], "plans": {"m": [0, 5, 2]}}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "b.jsonl").write_text(json.dumps({"seed": 0, **rows[0]}) + "\n")
    r = run_kepp("eval", "--from-records", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    (table,) = json.loads(r.stdout)["tables"]
    assert [(run["seed"], run["episodes"], run["sr"]) for run in table["runs"]] == [(None, 2, 50.0), (0, 1, 100.0)]
    assert table["rows"][0]["T=3 SR"].startswith("66.67 [")  # the three episodes as one seed
