"""A predictions table grouped by any of its columns (W&B Tables' and Zeno's "group by"): per group the count of
episodes, SR, mAcc and mIoU with their intervals, counted on columns, never a record at a time.

The columns a table groups by (:data:`kepp_core.catalog.GROUP_BY`) are the records' own (method, T, seed, task,
setting, the failure pattern the one judge filed the episode under, the records file, the imported predictions file)
and two judged on the plan arrays (the first step right, the last step right). Per group:

- ``count``: its episodes (rows of the predictions table: one per episode, method and seed);
- ``SR``: plans right, ``mAcc``: the mean over episodes of the steps right / T (the package's mAcc where a group has
  one T), ``mIoU``: the mean per-episode IoU of the action sets (``mIoU (episode)`` of the metrics table), in %;
- ``<metric> low`` / ``<metric> high``: the percentile bootstrap interval over the group's episodes, every group's
  drawn at once on its value counts (:func:`kepp_core.evaluation.stats.group_bootstrap_intervals`: per group
  the distribution of :func:`~kepp_core.evaluation.stats.bootstrap_interval`'s resampling of the episodes; one
  generator of ``seed`` for the whole table, :data:`GROUP_RESAMPLES` draws at the catalogue's
  :data:`~kepp_core.catalog.CONFIDENCE`), NaN for a group of one episode.

>>> import pandas as pd
>>> rows = pd.DataFrame({"method": ["a", "a", "b"], "horizon": [3, 3, 3], "seed": [0, 1, 0], "task": "t",
...     "setting": None, "pattern": ["", "other", "other"], "source": "r.jsonl", "imported": None,
...     "success": [True, False, False], "plan": [(1, 2, 3), (1, 0, 3), (0, 0, 0)], "truth": [(1, 2, 3)] * 3})
>>> t = group_table(rows, ["method"], resamples=200)
>>> t[["method", "count", "SR", "mAcc", "mIoU"]].to_dict("records")   # doctest: +NORMALIZE_WHITESPACE
[{'method': 'a', 'count': 2, 'SR': 50.0, 'mAcc': 83.33, 'mIoU': 75.0},
 {'method': 'b', 'count': 1, 'SR': 0.0, 'mAcc': 0.0, 'mIoU': 0.0}]
>>> group_table(rows, ["pattern", "first_right"], resamples=200)[["pattern", "first_right", "count"]].values.tolist()
[['other', False, 1], ['other', True, 1], ['right', True, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from kepp_core.catalog import CONFIDENCE, GROUP_BY
from kepp_core.errors import KeppError
from kepp_core.evaluation.stats import group_bootstrap_intervals
from kepp_core.evaluation.store import PlanArrays

__all__ = ["GROUP_METRICS", "GROUP_RESAMPLES", "MAX_GROUPS", "RIGHT", "group_table"]

GROUP_METRICS = ("SR", "mAcc", "mIoU")
GROUP_RESAMPLES = 2_000  # a 5% quantile of 2,000 draws is off by about 0.1 points of SR at 600 episodes
MAX_GROUPS = 5_000  # more groups than a table can be read as (and as many bootstraps): refused, with the count
RIGHT = "right"  # the pattern column's value for a right plan (the judge files none)


def _keys(preds: pd.DataFrame, by: Sequence[str], first: np.ndarray, last: np.ndarray) -> pd.DataFrame:
    """The values grouped on, one column per name of ``by``."""
    made = {"T": lambda: preds["horizon"].astype(np.int64).to_numpy(),
            "seed": lambda: pd.to_numeric(preds["seed"], errors="coerce").astype("Int64").to_numpy(),
            "pattern": lambda: preds["pattern"].fillna("").replace("", RIGHT).to_numpy(),
            "first_right": lambda: first, "last_right": lambda: last}
    return pd.DataFrame({c: made[c]() if c in made else preds[c].to_numpy() for c in by}, index=preds.index)


def _per_row(preds: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row, on the plan arrays one horizon at a time: steps right / T, the set IoU, first and last step right."""
    n = len(preds)
    acc, iou = np.zeros(n), np.zeros(n)
    first, last = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    plans = PlanArrays(preds)
    horizon = preds["horizon"].to_numpy()
    for T in np.unique(horizon):
        idx = np.flatnonzero(horizon == T)
        pred, gt = plans.of(idx)
        right = np.asarray(pred) == np.asarray(gt)
        acc[idx], first[idx], last[idx] = right.mean(axis=1), right[:, 0], right[:, -1]
        iou[idx] = plans.set_iou(idx)
    return acc, iou, first, last


def group_table(preds: pd.DataFrame, by: Sequence[str], resamples: int = GROUP_RESAMPLES,
                confidence: float = CONFIDENCE, seed: int = 0) -> pd.DataFrame:
    """The predictions table ``preds`` (:func:`kepp_core.api.read_predictions`) grouped by the columns ``by`` (names
    of :data:`kepp_core.catalog.GROUP_BY`, in that order): one row per group present, sorted by the groups' values
    (missing values last), with ``count``, each of :data:`GROUP_METRICS` in % and its bootstrap interval (the module docstring).
    KeppError for an unknown or repeated column, none, or more than :data:`MAX_GROUPS` groups."""
    by = list(by)
    unknown = [c for c in by if c not in GROUP_BY]
    if not by or unknown or len(set(by)) != len(by):
        raise KeppError(f"group by {', '.join(map(str, by)) or 'nothing'}: expected one or more different columns of "
                        f"{', '.join(GROUP_BY)}" + (f" (unknown: {', '.join(map(str, unknown))})" if unknown else ""))
    if not len(preds):
        return pd.DataFrame(columns=[*by, "count", *(f"{m}{s}" for m in GROUP_METRICS for s in ("", " low", " high"))])
    acc, iou, first, last = _per_row(preds)
    keys = _keys(preds, by, first, last)
    codes = keys.groupby(by, sort=True, dropna=False).ngroup().to_numpy()
    groups = int(codes.max()) + 1
    if groups > MAX_GROUPS:
        raise KeppError(f"group by {', '.join(by)}: {groups:,} groups, more than a table of {MAX_GROUPS:,} (expected "
                        f"fewer columns, or columns with fewer values)")
    seen = np.flatnonzero(~pd.Series(codes).duplicated().to_numpy())  # each group's first row (hashed, not sorted)
    firsts = seen[np.argsort(codes[seen])]
    values = {"SR": preds["success"].to_numpy(dtype=np.float64), "mAcc": acc, "mIoU": iou}
    count = np.bincount(codes, minlength=groups)
    out = keys.iloc[firsts].reset_index(drop=True)
    out["count"] = count
    for name, v in values.items():
        out[name] = np.round(100 * np.bincount(codes, weights=v, minlength=groups) / count, 2)
        bounds = group_bootstrap_intervals(v, codes, resamples=resamples, confidence=confidence, seed=seed)
        bounds[count < 2] = np.nan
        out[f"{name} low"], out[f"{name} high"] = np.round(100 * bounds[:, 0], 2), np.round(100 * bounds[:, 1], 2)
    return out
