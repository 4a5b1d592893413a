"""The runs of a predictions table, every one scored at once: its rows grouped by method, T and seed (a *run*), each
run's rows in the records' order, and each evaluation code's numbers per run counted on the store's ``[n, T]`` arrays
of each T, every run of that T together (:meth:`kepp_core.catalog.benchmark.MetricFamily.run_scores`), never a run's
rows cut out and scored by themselves, never a record at a time. What the method × T table
(:func:`kepp_core.api.method_horizon_table`) and ``kepp eval --from-records`` count on.

>>> import pandas as pd
>>> from kepp_core.catalog.benchmark import family
>>> preds = pd.DataFrame({"method": ["a", "b", "a"], "horizon": [3, 3, 3], "seed": [0, 0, 0],
...                       "plan": [(1, 2, 3), (1, 5, 3), (4, 4, 4)], "truth": [(1, 2, 3), (1, 2, 3), (1, 2, 3)]})
>>> runs = Runs(preds)
>>> runs.keys, runs.values(family("kepp"))["sr"]
([('a', 3, 0), ('b', 3, 0)], [50.0, 0.0])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from kepp_core.catalog.benchmark import DEFAULT_FAMILY, MetricFamily
from kepp_core.evaluation.store import PlanArrays

__all__ = ["Runs"]

RUN_KEYS = ["method", "horizon", "seed"]


class Runs:
    """The runs of ``preds`` (a predictions table, or :func:`~kepp_core.evaluation.store.plans_frame`'s): its rows
    grouped by method, T and seed (a missing seed counted as ``missing_seed``), in sorted order (as pandas'
    ``groupby(sort=True)``). ``keys``: each run's (method, T, seed); ``rows``: each run's row positions, in the
    records' order. The grouping, each T's set IoUs and each code's numbers are counted once, for every code asked;
    ``keep``: each T's plans in run order kept too, for the next code (a copy of every plan: for a caller that asks
    several codes, as ``kepp eval --from-records`` does)."""

    def __init__(self, preds, missing_seed: int = -1, keep: bool = False):
        self.preds = preds
        self.keep = keep
        keys = {"method": preds["method"], "horizon": preds["horizon"], "seed": preds["seed"].fillna(missing_seed)}
        key = np.zeros(len(preds), dtype=np.int64)
        for c in RUN_KEYS:  # each column's values numbered in sorted order (a missing one last), the numbers combined
            codes, uniques = pd.factorize(keys[c], sort=True)
            key = key * (len(uniques) + 1) + np.where(codes < 0, len(uniques), codes)
        self.group = _dense(key)  # each row's run: the runs numbered in sorted order
        self.sizes = np.bincount(self.group) if len(key) else np.zeros(0, dtype=np.int64)  # each run's rows
        self.plans = PlanArrays(preds)
        self.made: dict = {}  # what is counted once: each T's set IoUs, episodes (arrays), each code's numbers
        self._horizons: dict[int, tuple] = {}
        self._rows: list[np.ndarray] | None = None
        horizon, firsts = preds["horizon"].to_numpy(), np.zeros(len(self.sizes), dtype=np.int64)
        for T in sorted(pd.unique(horizon).tolist()):
            at = np.flatnonzero(horizon == T)  # T's rows in the records' order
            perm = np.argsort(self.group[at], kind="stable")  # ... run after run, each run's in the records' order
            rows = at[perm]
            starts = np.flatnonzero(np.r_[True, np.diff(self.group[rows]) != 0])
            runs = self.group[rows[starts]]
            firsts[runs] = rows[starts]
            self._horizons[int(T)] = runs, rows, starts, at, perm
        self.keys: list[tuple] = list(zip(*[keys[c].iloc[firsts].tolist() for c in RUN_KEYS]))

    @property
    def rows(self) -> list[np.ndarray]:
        """Each run's row positions, in the records' order (in :attr:`keys`' order)."""
        if self._rows is None:
            self._rows = [np.zeros(0, dtype=np.int64)] * len(self.keys)
            for runs, rows, starts, _, _ in self._horizons.values():
                for r, part in zip(runs.tolist(), np.split(rows, starts[1:])):
                    self._rows[r] = part
        return self._rows

    def horizons(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per T: its runs (their places in :attr:`keys`), their rows one run after another, and where each run's
        rows start among them."""
        return {T: made[:3] for T, made in self._horizons.items()}

    def _arrays(self, T: int) -> tuple[np.ndarray, np.ndarray] | None:
        """T's plans and truths as ``[n, T]`` integer arrays, its runs' rows one after another (None: the plans of
        this T are not all of one length, or not whole numbers). Cut again for each code unless :attr:`keep`."""
        if ("arrays", T) in self.made:
            return self.made[("arrays", T)]
        *_, at, perm = self._horizons[T]
        pred, gt = self.plans.of(at)  # the whole T: the store's arrays as they are
        whole = all(isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype.kind in "iu" for a in (pred, gt))
        arrays = (pred[perm], gt[perm]) if whole else None
        if self.keep:
            self.made[("arrays", T)] = arrays
        return arrays

    def _set_iou(self, T: int) -> np.ndarray:
        """The set IoU of each row of T's arrays (:meth:`PlanArrays.set_iou`: the store's counted once)."""
        if ("iou", T) not in self.made:
            *_, at, perm = self._horizons[T]
            self.made[("iou", T)] = self.plans.set_iou(at)[perm]
        return self.made[("iou", T)]

    def values(self, code: MetricFamily, alone: Callable | None = None) -> dict[str, list[float]]:
        """Per metric key of ``code`` (in table order), its number for each run (in :attr:`keys`' order): what
        ``code.scores`` gives on the run's plans, every run of a T at once (:meth:`MetricFamily.run_scores`).
        ``alone(pred, gt)``: how a run is scored by itself where the code counts no runs at once (default its
        ``scores``), and where a T's plans are not arrays (its function then names the odd plan)."""
        at_once = code.runs is not None or alone is None
        if at_once and ("values", code) in self.made:
            return self.made[("values", code)]
        out = {m.key: np.zeros(len(self.keys)) for m in code.metrics}
        for T, (runs, rows, starts) in self.horizons().items():
            arrays = self._arrays(T)
            if arrays is not None and at_once:
                iou = self._set_iou(T) if code.runs is not None else None  # counted once per T, shared
                got = code.run_scores(*arrays, starts, iou=iou)
            else:
                scored = [(alone or code.scores)(*self._plans_of(r)) for r in runs]
                got = {m.key: [float(s[m.key]) for s in scored] for m in code.metrics}
            for key, vals in got.items():
                out[key][runs] = vals  # each T's runs in their places
        values = {key: v.tolist() for key, v in out.items()}
        if at_once:
            self.made[("values", code)] = values
        return values

    def _plans_of(self, run: int) -> tuple:
        """One run's plans and truths, as arrays where they are (else as lists: the code names the odd one)."""
        pred, gt = self.plans.of(self.rows[run])
        if not (isinstance(pred, np.ndarray) and pred.ndim == 2):
            pred, gt = [list(p) for p in pred], [list(t) for t in gt]
        return pred, gt

    def episodes(self, code: MetricFamily, run: int) -> dict[str, np.ndarray]:
        """Each episode's value of each of ``code``'s table metrics for the run ``run`` (what a one-seed cell's
        interval resamples; the code's ``per_episode``), counted once per T for all its runs."""
        T = int(self.keys[run][1])
        if ("episodes", code, T) not in self.made:
            runs, _, starts = self.horizons()[T]
            arrays = self._arrays(T)
            if arrays is None:
                return code.per_episode(*self.plans.of(self.rows[run]))[1]
            iou = {"iou": self._set_iou(T)} if code.name == DEFAULT_FAMILY else {}
            self.made[("episodes", code, T)] = runs, starts, code.per_episode(*arrays, **iou)[1]
        runs, starts, episodes = self.made[("episodes", code, T)]
        k = int(np.searchsorted(runs, run))
        end = starts[k + 1] if k + 1 < len(starts) else None
        return {key: v[starts[k]:end] for key, v in episodes.items()}


def _dense(key: np.ndarray) -> np.ndarray:
    """``key``'s values numbered 0, 1, ... in their sorted order (counted in a table where they are small)."""
    if not len(key):
        return key.astype(np.int64)
    if int(key.max()) < 1 << 24:
        present = np.bincount(key) > 0
        return (np.cumsum(present) - 1)[key]
    return np.unique(key, return_inverse=True)[1].ravel()
