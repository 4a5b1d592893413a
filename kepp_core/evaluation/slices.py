"""Metrics by slice: where a method fails. The evaluated episodes of one method (a predictions
table, :func:`kepp_core.api.read_predictions`) are cut by one of the catalogue's cuts
(:data:`kepp_core.catalog.SLICE_CUTS`: names, labels, fixed values); the rule that puts a row in a
slice is here, one per cut (:data:`RULES`):

- ``task``: the episode's task;
- ``pattern``: the method's failure pattern on the episode (the first that applies, as the
  failure analysis files it: :mod:`kepp_core.evaluation.failures`), or :data:`SLICE_SUCCESS`;
- ``horizon``: ``T``;
- ``ends``: whether the method's plan has the right first *and* last step
  (:data:`SLICE_ENDS_RIGHT` / :data:`SLICE_ENDS_WRONG`; the one rule of *ends right*:
  :func:`kepp_core.metrics.ends_right`).

Each slice gets its count (episodes × seeds), SR, mAcc (steps right over all positions, as
:func:`kepp_core.metrics.mean_accuracy`) and *ends right* (first and last step right), all in %,
named as the catalogue names the metrics. Against a reference method, on the units both recorded,
paired as the A/B table pairs them (:func:`kepp_core.evaluation.compare.pair_index`: an imported run
without seeds with each seed of a seeded one): the differences (method − reference, points) and, where the records hold several
seeds, the p-value of the paired sign-flip permutation test of per-unit success
(:func:`kepp_core.evaluation.stats.paired_permutation_test`: the one test of every table).
:func:`slice_table` returns a :class:`SliceTable`: the table and the rule that made it, so that a
page filters its episodes to a slice by the rule the table counted with.

>>> import pandas as pd
>>> rows = pd.DataFrame({"episode": ["a", "b", "a", "b"], "task": ["tea", "tea", "tea", "tea"],
...     "horizon": [3] * 4, "seed": [0] * 4, "setting": ["conventional"] * 4, "method": ["m", "m", "r", "r"],
...     "truth": [(1, 2, 3), (4, 5, 6)] * 2, "plan": [(1, 2, 3), (4, 0, 0), (1, 0, 3), (4, 5, 6)],
...     "success": [True, False, False, True], "pattern": ["", "wrong_endpoint", "other", ""]})
>>> t = slice_table(rows, "m", "ends", reference="r").table
>>> t[["slice", "count", "SR", "mAcc", "ends right", "Δ SR"]].to_dict("records")
[{'slice': 'right', 'count': 1, 'SR': 100.0, 'mAcc': 100.0, 'ends right': 100.0, 'Δ SR': 100.0}, \
{'slice': 'wrong', 'count': 1, 'SR': 0.0, 'mAcc': 33.33, 'ends right': 0.0, 'Δ SR': -100.0}]
>>> select_slice(rows[rows["method"] == "m"], "pattern", "wrong_endpoint")["episode"].tolist()
['b']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kepp_core.catalog import METRIC_NAMES, SLICE_BY, SLICE_CUTS, SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG, SLICE_SUCCESS
from kepp_core.errors import KeppError
from kepp_core.evaluation.compare import pair_index
from kepp_core.evaluation.stats import paired_permutation_test
from kepp_core.evaluation.store import PlanArrays
from kepp_core.metrics import ends_right

__all__ = ["PERMUTATIONS", "ROW_COLUMNS", "RULES", "SliceTable", "row_columns",
           "select_slice", "slice_table", "slice_values"]

# Sign patterns drawn per slice (the stats module's default is 20,000): a table tests every slice,
# and the test's cost grows with permutations x units (COIN scale, 75,000 units of 3 seeds: 8 s a
# table with 5,000, python benchmarks/bench_slices.py); a p-value to 1/2,001 reads fine against 0.05.
PERMUTATIONS = 2_000
METRICS = [METRIC_NAMES[k] for k in ("SR", "mAcc", "ends")]  # the columns: "SR", "mAcc", "ends right"
COLUMNS = ["slice", "count", *METRICS]
PAIRED = ["pairs", *(f"Δ {m}" for m in METRICS), "p"]


def _ends(rows: pd.DataFrame) -> np.ndarray:
    """Per row: the plan's first and last step both right (:func:`kepp_core.metrics.ends_right`)."""
    return _per_row(rows)[2]


def _per_row(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the steps its plan has right, its steps, and whether its first and last step are both right
    (:func:`kepp_core.metrics.ends_right`), counted on each horizon's plans as arrays
    (:class:`~kepp_core.evaluation.store.PlanArrays`)."""
    hits, steps = np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=np.int64)
    ends = np.zeros(len(rows), dtype=bool)
    plans = PlanArrays(rows)
    horizon = rows["horizon"].to_numpy()
    for T in pd.unique(horizon):
        idx = np.flatnonzero(horizon == T)
        pred, gt = plans.of(idx)
        ends[idx] = ends_right(pred, gt)
        if pred.dtype != object:
            hits[idx], steps[idx] = (pred == gt).sum(axis=1), gt.shape[1]
        else:  # plans of several lengths under one T
            hits[idx] = [sum(a == b for a, b in zip(p, t)) for p, t in zip(pred, gt)]
            steps[idx] = [len(t) for t in gt]
    return hits, steps, ends


# What :func:`row_columns` adds to each row: its plan's steps right and whether its first, last and both ends are right.
ROW_COLUMNS = ("steps right", "first right", "last right", METRIC_NAMES["ends"])


def row_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row of a predictions table (same index): :data:`ROW_COLUMNS`, counted on each horizon's plans as
    arrays (:class:`~kepp_core.evaluation.store.PlanArrays`), never a plan at a time; *ends right* is the one rule
    (:func:`kepp_core.metrics.ends_right`) and first and last right are its two halves.

    >>> rows = pd.DataFrame({"horizon": [3, 3], "plan": [(1, 2, 3), (1, 5, 4)], "truth": [(1, 2, 3), (1, 2, 3)]})
    >>> row_columns(rows).to_dict("list")
    {'steps right': [3, 1], 'first right': [True, True], 'last right': [True, False], 'ends right': [True, False]}
    """
    hits, _, ends = _per_row(rows)
    first, last = np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=bool)
    plans, horizon = PlanArrays(rows), rows["horizon"].to_numpy()
    for T in pd.unique(horizon):
        idx = np.flatnonzero(horizon == T)
        pred, gt = plans.of(idx)
        if pred.dtype != object:
            first[idx], last[idx] = pred[:, 0] == gt[:, 0], pred[:, -1] == gt[:, -1]
        else:  # plans of several lengths under one T
            first[idx] = [p[0] == t[0] for p, t in zip(pred, gt)]
            last[idx] = [p[-1] == t[-1] for p, t in zip(pred, gt)]
    return pd.DataFrame(dict(zip(ROW_COLUMNS, (hits, first, last, ends))), index=rows.index)


def _pattern_slices(rows: pd.DataFrame) -> np.ndarray:
    """Per row its failure pattern, or :data:`SLICE_SUCCESS` where it has none."""
    pattern = rows["pattern"].to_numpy(dtype=object)
    out = pattern.copy()
    out[np.equal(pattern, "") | np.equal(pattern, None)] = SLICE_SUCCESS
    return out


# The rule of each cut: the slice of every row (a string), in the catalogue's order of the cuts.
RULES: dict[str, Callable[[pd.DataFrame], np.ndarray]] = {
    "task": lambda rows: rows["task"].astype(str).to_numpy(dtype=object),
    "pattern": _pattern_slices,
    "horizon": lambda rows: rows["horizon"].astype(int).astype(str).to_numpy(dtype=object),
    "ends": lambda rows: np.where(_ends(rows), SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG).astype(object),
}
assert list(RULES) == list(SLICE_CUTS), "every cut of the catalogue has one rule here"


def slice_values(rows: pd.DataFrame, by: str) -> np.ndarray:
    """The slice of each row (a string: a task id, a pattern or :data:`SLICE_SUCCESS`, ``"3"``,
    :data:`SLICE_ENDS_RIGHT` / :data:`SLICE_ENDS_WRONG`)."""
    if by not in RULES:
        raise KeppError(f"unknown slice {by!r} (expected one of {', '.join(SLICE_BY)})")
    return RULES[by](rows)


def select_slice(rows: pd.DataFrame, by: str, value: str) -> pd.DataFrame:
    """The rows of ``rows`` in the slice ``value`` of ``by`` (the rule the table counts with)."""
    return rows[slice_values(rows, by) == str(value)] if len(rows) else rows


def _order(values, by: str) -> list[str]:
    """The slices in reading order: the cut's fixed values first in the catalogue's order
    (successes, then the patterns; right before wrong), horizons by number, the rest by name."""
    present = set(values)
    fixed = [v for v in SLICE_CUTS[by].value_labels if v in present]
    rest = present - set(fixed)
    return fixed + sorted(rest, key=int if SLICE_CUTS[by].every_horizon else str)


def _units(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row the unit key and what the metrics sum: success, steps right, steps, ends right."""
    hits, steps, ends = _per_row(rows)
    return pd.DataFrame({"episode": rows["episode"].astype(str).to_numpy(),
                         "horizon": rows["horizon"].astype(int).to_numpy(),
                         "seed": rows["seed"].fillna(-1).astype(int).to_numpy(),
                         "setting": rows["setting"].fillna("").astype(str).to_numpy(),
                         "success": rows["success"].astype(float).to_numpy(), "hits": hits, "steps": steps,
                         "ends": ends.astype(float)})


def _of(rows: pd.DataFrame, method: str, horizon: int | None) -> pd.DataFrame:
    keep = rows["method"] == method
    if horizon is not None:
        keep &= rows["horizon"] == int(horizon)
    return rows[keep]


@dataclass(frozen=True)
class SliceTable:
    """A slice table (:func:`slice_table`) with the rule that made it, so that a page filters its
    episodes to a slice by the same rule the table counted with."""

    by: str
    method: str
    reference: str | None
    horizon: int | None
    table: pd.DataFrame

    def select(self, rows: pd.DataFrame, value: str) -> pd.DataFrame:
        """The rows of ``rows`` in the slice ``value`` (:func:`select_slice`)."""
        return select_slice(rows, self.by, value)


def slice_table(rows: pd.DataFrame, method: str, by: str = "task", reference: str | None = None,
                horizon: int | None = None, permutations: int = PERMUTATIONS) -> SliceTable:
    """``method``'s episodes (of ``horizon``, or all) by slice: a :class:`SliceTable` whose ``table``
    has one row per slice: ``slice`` (its value, :func:`slice_values`), ``count``, ``SR``, ``mAcc``,
    ``ends right`` (%, 2 decimals); with a ``reference`` method also ``pairs`` (units both methods
    recorded), ``Δ SR``, ``Δ mAcc``, ``Δ ends right`` (method − reference on those units, points) and
    ``p`` (the paired permutation test of per-unit success; NaN unless the records hold several seeds)."""
    horizon = None if horizon is None else int(horizon)
    own = _of(rows, method, horizon)
    if not len(own):
        raise KeppError(f"no records of method {method!r}" + (f" at T={horizon}" if horizon is not None else "")
                        + ": pick another method or horizon")
    units = _units(own).assign(slice=slice_values(own, by))
    g = units.groupby("slice", sort=False)
    table = pd.DataFrame(dict(zip(["count", *METRICS], [g.size(), 100 * g["success"].mean(),
                                                        100 * g["hits"].sum() / g["steps"].sum(), 100 * g["ends"].mean()])))
    table = table.loc[_order(table.index, by)].round(2).rename_axis("slice").reset_index()
    if reference is not None:
        ref_rows = _of(rows, reference, horizon)
        table = pd.concat([table[COLUMNS], _paired(units, _units(ref_rows), pair_index(own, ref_rows), table,
                                                   permutations)], axis=1)
    else:
        table = table[COLUMNS]
    return SliceTable(by, method, reference, horizon, table)


def _paired(units: pd.DataFrame, reference: pd.DataFrame, pairing: tuple, table: pd.DataFrame,
            permutations: int) -> pd.DataFrame:
    """Per slice of ``table``: the units both methods recorded (``pairing``: :func:`pair_index`'s positions in
    ``units`` and ``reference`` and the keys taken from one side), the differences and the paired p-value."""
    ia, ib, loose = pairing
    ref = reference.iloc[ib].reset_index(drop=True)
    pairs = units.iloc[ia].reset_index(drop=True).join(ref[["success", "hits", "ends"]].add_suffix("_ref"))
    if loose.get("seed") == "b":  # the method names no seed (imported): the pairs' seeds are the reference's
        pairs["seed"] = ref["seed"]
    several = pairs["seed"].nunique() > 1
    by_slice = dict(tuple(pairs.groupby("slice", sort=False)))
    paired = []
    for value in table["slice"]:
        p = by_slice.get(value, pairs.iloc[:0])
        d = (p["success"] - p["success_ref"]).to_numpy()
        n = len(p)
        deltas = [100 * d.mean(), 100 * (p["hits"].sum() - p["hits_ref"].sum()) / p["steps"].sum(),
                  100 * (p["ends"] - p["ends_ref"]).mean()] if n else [np.nan] * 3
        p_value = paired_permutation_test(d, permutations) if several and n else np.nan
        paired.append(dict(zip(PAIRED, [n, *deltas, p_value])))
    extra = pd.DataFrame(paired, columns=PAIRED).astype({"pairs": int})
    extra[PAIRED[1:4]] = extra[PAIRED[1:4]].astype(float).round(2)
    return extra
