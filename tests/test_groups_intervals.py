"""The Groups page's intervals drawn on counts for all groups at once (stats.group_bootstrap_intervals) against the
one-group bootstrap (stats.bootstrap_interval) on each group's values, within Monte-Carlo tolerance; and
group_table's point estimates against a plain per-group count of the same rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kepp_core.errors import KeppError
from kepp_core.evaluation.groups import group_table
from kepp_core.evaluation.stats import bootstrap_interval, group_bootstrap_intervals

DRAWS = 20_000


def _groups(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Values of several kinds in five groups: successes (0/1), steps right / T, values with a kind per unit."""
    parts = [rng.random(400) < 0.3, rng.random(60) < 0.8, rng.integers(0, 5, 300) / 4,
             rng.integers(0, 4, 250) / rng.integers(3, 7, 250), rng.normal(0.5, 0.2, 200)]
    values = np.concatenate(parts).astype(np.float64)
    codes = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    order = rng.permutation(len(values))  # the groups' rows interleaved, as in a table
    return values[order], codes[order]


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.99])
def test_intervals_drawn_on_counts_agree_with_resampling_each_groups_values(confidence):
    values, codes = _groups(np.random.default_rng(3))
    drawn = group_bootstrap_intervals(values, codes, resamples=DRAWS, confidence=confidence, seed=1)
    assert codes.max() + 1 == len(drawn) >= 3
    for g in range(codes.max() + 1):
        v = values[codes == g]
        lo, hi = bootstrap_interval(v, resamples=DRAWS, confidence=confidence, seed=2)
        tolerance = 4 * v.std() / np.sqrt(len(v)) * 0.05 + 1.5 / len(v)  # a few quantile errors, a value's step
        assert abs(drawn[g, 0] - lo) < tolerance and abs(drawn[g, 1] - hi) < tolerance, (g, drawn[g], (lo, hi))


def test_a_group_of_one_kind_has_no_spread_and_a_missing_group_has_no_interval():
    drawn = group_bootstrap_intervals([1, 1, 0.25, 7], [0, 0, 3, 3], resamples=50)
    assert drawn[0].tolist() == [1.0, 1.0]
    assert np.isnan(drawn[1:3]).all()
    assert 0.25 <= drawn[3, 0] <= drawn[3, 1] <= 7


def test_the_same_seed_draws_the_same_intervals_and_another_seed_others():
    values, codes = _groups(np.random.default_rng(5))
    once = group_bootstrap_intervals(values, codes, resamples=500, seed=7)
    assert np.array_equal(group_bootstrap_intervals(values, codes, resamples=500, seed=7), once)
    assert not np.array_equal(group_bootstrap_intervals(values, codes, resamples=500, seed=8), once)


@pytest.mark.parametrize("kwargs", [dict(values=[1.0, 0.0], codes=[0]), dict(values=[1.0], codes=[-1]),
                                    dict(values=[1.0], codes=[0.5]), dict(values=[1.0], codes=[0], resamples=0),
                                    dict(values=[1.0], codes=[0], confidence=1.0)])
def test_bad_group_numbers_or_draws_are_refused_in_one_message(kwargs):
    with pytest.raises(KeppError):
        group_bootstrap_intervals(**kwargs)


def test_group_table_point_estimates_equal_a_plain_count_per_group():
    rng = np.random.default_rng(11)
    n = 3_000
    horizon = rng.integers(3, 7, n)
    truth = [tuple(rng.integers(0, 9, T)) for T in horizon]
    plan = [tuple(np.where(rng.random(len(t)) < 0.7, t, rng.integers(0, 9, len(t)))) for t in truth]
    rows = pd.DataFrame({"method": rng.choice(["a", "b", "c"], n), "horizon": horizon, "seed": rng.integers(0, 3, n),
                         "task": "t", "setting": None, "pattern": "", "source": "r.jsonl", "imported": None,
                         "success": [p == t for p, t in zip(plan, truth)], "plan": plan, "truth": truth})
    table = group_table(rows, ["method", "seed"], resamples=100)
    acc = [np.mean(np.equal(p, t)) for p, t in zip(plan, truth)]
    iou = [len(set(p) & set(t)) / len(set(p) | set(t)) for p, t in zip(plan, truth)]
    want = rows.assign(acc=acc, iou=iou).groupby(["method", "seed"]).agg(
        count=("success", "size"), SR=("success", "mean"), mAcc=("acc", "mean"), mIoU=("iou", "mean")).reset_index()
    assert table["count"].tolist() == want["count"].tolist()
    for m in ("SR", "mAcc", "mIoU"):
        assert table[m].tolist() == np.round(100 * want[m].to_numpy(), 2).tolist(), m
        assert (table[f"{m} low"] <= table[m] + 1e-9).all() and (table[m] <= table[f"{m} high"] + 1e-9).all(), m
