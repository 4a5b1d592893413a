"""A and B, episode by episode: two methods' plans on the same test episodes, side by side.

The rows of a predictions table (:func:`kepp_core.api.read_predictions`: one row per episode and
method, from ``kepp eval --records``, a ``kepp protocol`` folder's ``records.jsonl`` or imported
predictions alike) are paired on their unit, (training fraction, seed, T, episode, observation
setting): each unit both methods planned becomes one row with both plans, both verdicts and its
cell of the 2×2 table (:data:`kepp_core.catalog.AB_CELLS`: both right, A right and B wrong, B right
and A wrong, both wrong). :func:`compare_methods` adds the numbers a reader asks of the table:

- each method's SR and A − B, with percentile-bootstrap intervals
  (:func:`kepp_core.evaluation.stats.bootstrap_interval`, seeded, :data:`~kepp_core.catalog.BOOTSTRAP_RESAMPLES`
  draws, the catalogue's level :data:`~kepp_core.catalog.CONFIDENCE`): over test episodes with one
  seed (each draw takes as many episodes as there are); with several seeds whole episodes are
  drawn, each with all its seeds, since one episode's seeds are not independent. The interval of
  A − B resamples the units' differences, so both methods always see the same draw (paired);
- McNemar's exact test of the discordant cells (:func:`kepp_core.evaluation.stats.mcnemar_exact`;
  over (seed, episode) units when both methods name the same several seeds: each seed's pairs are
  two independent runs);
- a one-run method (imported predictions, no seed) against a several-seed one is not pooled: its one
  run is paired with each seed in turn, so the pooled units repeat it and McNemar's p over them is
  far too small. Each seed gets its own 2×2 table (its ``b``, ``c`` and McNemar's p: :attr:`ABComparison.per_seed`)
  and the headline ``p`` is the Cochran–Mantel–Haenszel test over the seeds' tables of method ×
  right/wrong, the one run's row counted as the same run in every stratum (:func:`kepp_core.evaluation.stats.cmh_test`
  with ``shared_row``; :data:`~kepp_core.catalog.AB_STRATIFIED_TEST`).

>>> import pandas as pd
>>> rows = pd.DataFrame({"episode": ["e1", "e2", "e3"] * 2, "task": "tea", "video": "v", "horizon": 3,
...     "seed": 0, "setting": "conventional", "method": ["A"] * 3 + ["B"] * 3,
...     "truth": [(1, 2, 3)] * 6, "plan": [(1, 2, 3), (1, 2, 3), (1, 0, 3), (1, 2, 3), (0, 2, 3), (1, 0, 3)],
...     "success": [True, True, False, True, False, False]})
>>> c = compare_methods(rows, "A", "B", horizon=3, resamples=200)
>>> c.counts, c.p, c.delta, c.stratified
({'both': 1, 'a-only': 1, 'b-only': 0, 'neither': 1}, 1.0, 33.33, False)
>>> c.select("a-only")[["episode", "plan_a", "plan_b"]].to_dict("records")
[{'episode': 'e2', 'plan_a': (1, 2, 3), 'plan_b': (0, 2, 3)}]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kepp_core.catalog import AB_CELLS, AB_STRATIFIED_TEST, AB_TEST, BOOTSTRAP_RESAMPLES, CONFIDENCE, SIGNIFICANCE, method_label, p_text
from kepp_core.errors import KeppError
from kepp_core.evaluation.stats import bootstrap_interval, cmh_test, mcnemar_exact

__all__ = ["UNIT", "ABComparison", "SeedTest", "compare_methods", "pair_index", "pair_rows", "pairs_table", "seed_tests"]

UNIT = ("fraction", "seed", "horizon", "episode", "setting")  # what both methods must have planned
KEPT = ("episode", "task", "video", "horizon", "seed", "setting", "fraction", "start_time", "goal_time", "truth")


def _unit_keys(rows: pd.DataFrame) -> pd.DataFrame:
    """The unit of each row, missing values made comparable (a record without a seed or setting)."""
    fraction = rows["fraction"] if "fraction" in rows else pd.Series(np.nan, index=rows.index)
    return pd.DataFrame({"fraction": pd.to_numeric(fraction, errors="coerce").fillna(-1.0).to_numpy(float),
                         "seed": pd.to_numeric(rows["seed"], errors="coerce").fillna(-1).to_numpy(np.int64),
                         "horizon": rows["horizon"].astype(int).to_numpy(),
                         "episode": rows["episode"].astype(str).to_numpy(),
                         "setting": rows["setting"].fillna("").astype(str).to_numpy()}, index=rows.index)


def _check_one_plan_per_unit(rows: pd.DataFrame, keys: pd.DataFrame, method: str) -> None:
    """A unit recorded twice (two records files, or a file appended to) counts once, so its records
    must agree: a KeppError naming the episode and both plans where they do not."""
    twice = keys.duplicated(list(UNIT), keep=False).to_numpy()
    if not twice.any():
        return
    seen = keys[twice].assign(plan=rows["plan"][twice].to_numpy())
    plans = seen.groupby(list(UNIT), sort=False)["plan"].unique()
    conflict = plans[plans.map(len) > 1]
    if len(conflict):
        (_fraction, seed, horizon, episode, _setting), found = next(iter(conflict.items()))
        sources = sorted(set(rows.loc[twice & (keys["episode"] == episode).to_numpy(), "source"].astype(str)))
        seed_words = f", seed {seed}" if seed >= 0 else ""
        raise KeppError(f"{', '.join(sources)}: episode {episode!r} (T={horizon}{seed_words}) is recorded twice with "
                        f"different plans of {method!r}: {' and '.join(_ids(p) for p in found[:2])} (expected one "
                        f"plan per episode and seed)")


def _method_rows(preds: pd.DataFrame, method: str, horizon: int | None) -> pd.DataFrame:
    keep = preds["method"] == method
    if horizon is not None:
        keep &= preds["horizon"] == int(horizon)
    rows = preds[keep]
    if not len(rows):
        at = f" at T={int(horizon)}" if horizon is not None else ""
        have = ", ".join(sorted(map(str, preds.loc[preds["horizon"] == int(horizon), "method"].unique()
                                    if horizon is not None else preds["method"].unique())))
        raise KeppError(f"no records of method {method!r}{at} (recorded: {have or 'none'})")
    return rows


def _one_fraction(rows: pd.DataFrame, fraction: float | None) -> pd.DataFrame:
    """The rows of one training fraction: ``fraction``, else the largest the rows hold (a protocol
    folder's records hold several; ``kepp eval`` records none)."""
    if "fraction" not in rows or rows["fraction"].isna().all():
        if fraction is not None:
            raise KeppError(f"these records hold no training fractions (got fraction {fraction:g}): "
                            "only a 'kepp protocol' folder's records do")
        return rows
    held = sorted(float(f) for f in rows["fraction"].dropna().unique())
    if fraction is None:
        fraction = held[-1]
    if float(fraction) not in held:
        raise KeppError(f"no records at training fraction {fraction:g} (recorded: {', '.join(f'{f:g}' for f in held)})")
    return rows[rows["fraction"] == float(fraction)]


def pair_index(rows_a: pd.DataFrame, rows_b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """The pairing rule of two methods' rows, the one every paired comparison uses (the A/B table, the
    slices' differences): the positions in ``rows_a`` and ``rows_b`` of each pair, in A's row order, and the
    unit keys the pairs were not matched on, each with the side whose values they keep (:func:`_loose_keys`).
    A unit (:data:`UNIT`) recorded twice counts once; a method that names no seed (imported predictions) is
    paired with each of the other's seeds on the same episode, one that names no observation setting with
    the other's; two methods that both name seeds pair on them.

    >>> a = pd.DataFrame({"episode": ["e1", "e2", "e1"], "horizon": 3, "seed": [0, 0, 1], "setting": "conventional"})
    >>> b = pd.DataFrame({"episode": ["e2", "e1"], "horizon": 3, "seed": [None, None], "setting": None})
    >>> ia, ib, loose = pair_index(a, b)
    >>> ia.tolist(), ib.tolist(), loose
    ([0, 1, 2], [1, 0, 1], {'seed': 'a', 'setting': 'a'})
    """
    ka, kb = _unit_keys(rows_a), _unit_keys(rows_b)
    loose = _loose_keys(ka, kb)  # a key one side does not tell apart: taken from the side that does
    on = [c for c in UNIT if c not in loose]
    left, right = (k.assign(**{pos: np.arange(len(k))})[~k.duplicated(list(UNIT)).to_numpy()][[*on, pos]]
                   for k, pos in ((ka, "_a"), (kb, "_b")))
    paired = left.merge(right, on=on, how="inner", sort=False)
    return paired["_a"].to_numpy(np.int64), paired["_b"].to_numpy(np.int64), loose


def pair_rows(preds: pd.DataFrame, a: str, b: str, horizon: int | None = None,
              fraction: float | None = None) -> pd.DataFrame:
    """One row per unit (:data:`UNIT`) both methods planned, paired by :func:`pair_index`, in A's record
    order: the episode's columns (:data:`KEPT`), ``plan_a`` / ``plan_b``, ``success_a`` / ``success_b`` and
    ``cell`` (a name of :data:`kepp_core.catalog.AB_CELLS`). ``horizon``: one T (None: every T);
    ``fraction``: one training fraction of a protocol's records (None: the largest)."""
    if a == b:
        raise KeppError(f"A and B are both {a!r}: a method compared with itself agrees on every episode "
                        "(expected two different methods)")
    ra, rb = (_one_fraction(_method_rows(preds, method, horizon), fraction) for method in (a, b))
    for rows, method in ((ra, a), (rb, b)):
        _check_one_plan_per_unit(rows, _unit_keys(rows), method)
    ia, ib, loose = pair_index(ra, rb)
    if not len(ia):
        at = f" at T={int(horizon)}" if horizon is not None else ""
        raise KeppError(f"{a!r} and {b!r} share no evaluated episode{at} (same episode, seed and setting)")
    ka, kb = _unit_keys(ra).iloc[ia].reset_index(drop=True), _unit_keys(rb).iloc[ib].reset_index(drop=True)
    paired = ka.assign(**{c: kb[c] for c, side in loose.items() if side == "b"})
    side_a, side_b = ra.iloc[ia].reset_index(drop=True), rb.iloc[ib].reset_index(drop=True)
    paired = paired.assign(**{c: side_a[c] for c in KEPT if c not in UNIT and c in side_a},
                           plan_a=side_a["plan"], plan_b=side_b["plan"])
    sa, sb = side_a["success"].astype(bool).to_numpy(), side_b["success"].astype(bool).to_numpy()
    names = list(AB_CELLS)
    paired["success_a"], paired["success_b"] = sa, sb
    paired["cell"] = np.select([sa & sb, sa & ~sb, ~sa & sb], names[:3], names[3])
    paired["seed"] = paired["seed"].where(paired["seed"] >= 0, None)
    paired["fraction"] = paired["fraction"].where(paired["fraction"] >= 0, None)
    paired["setting"] = paired["setting"].where(paired["setting"] != "", None)
    columns = [c for c in KEPT if c in paired] + ["plan_a", "plan_b", "success_a", "success_b", "cell"]
    out = paired[columns].reset_index(drop=True)
    out.attrs["one_run"] = a if loose.get("seed") == "b" else b if loose.get("seed") == "a" else None
    return out


def _loose_keys(ka: pd.DataFrame, kb: pd.DataFrame) -> dict[str, str]:
    """The unit keys the two methods are not paired on, each with the side (``a``, ``b``) whose values the
    pairs keep: the seed where one side names none (another method's predictions brought in with ``kepp
    records import``), so that run is paired with each of the other's seeds on the same episode (two sides
    that both name seeds pair on them: seed 0 of one is never paired with seed 1 of the other); the setting
    where a side names none (imported predictions: their split list's episodes)."""
    loose = {}
    seeded_a, seeded_b = bool((ka["seed"] >= 0).any()), bool((kb["seed"] >= 0).any())  # -1: no seed (_unit_keys)
    if seeded_a != seeded_b:
        loose["seed"] = "a" if seeded_a else "b"
    named_a, named_b = (ka["setting"] != "").any(), (kb["setting"] != "").any()
    if named_a != named_b:
        loose["setting"] = "a" if named_a else "b"
    return loose


@dataclass(frozen=True, kw_only=True)
class SeedTest:
    """One seed's 2×2 table of a one-run method against a several-seed one: the seed, its units, ``b`` (A right,
    B wrong), ``c`` (B right, A wrong), each method's right count and McNemar's exact p of ``b`` and ``c``."""

    seed: int
    units: int
    b: int
    c: int
    right_a: int
    right_b: int
    p: float

    def table(self) -> list[list[int]]:
        """The seed's stratum of the CMH test: rows A and B, columns right and wrong."""
        return [[self.right_a, self.units - self.right_a], [self.right_b, self.units - self.right_b]]

    def row(self) -> dict:
        """As a flat row (JSON, the app's table)."""
        return {"seed": self.seed, "units": self.units, "b": self.b, "c": self.c, "p": self.p}


def seed_tests(units: pd.DataFrame) -> tuple[SeedTest, ...]:
    """Per seed of paired units (:func:`pair_rows`), in seed order: its :class:`SeedTest`.

    >>> u = pd.DataFrame({"seed": [0, 0, 1, 1], "success_a": [True, True, True, False],
    ...                   "success_b": [False, False, True, True]})
    >>> [(t.seed, t.b, t.c, t.p) for t in seed_tests(u)]
    [(0, 2, 0, 0.5), (1, 0, 1, 1.0)]
    """
    sa, sb = units["success_a"].to_numpy(bool), units["success_b"].to_numpy(bool)
    seeds = pd.to_numeric(units["seed"], errors="coerce").fillna(-1).to_numpy(np.int64)
    keys, at = np.unique(seeds, return_inverse=True)
    at = at.ravel()
    count = lambda mask: np.bincount(at, weights=mask, minlength=len(keys)).astype(np.int64)  # noqa: E731
    n, b, c, ra, rb = np.bincount(at, minlength=len(keys)), count(sa & ~sb), count(~sa & sb), count(sa), count(sb)
    return tuple(SeedTest(seed=int(keys[i]), units=int(n[i]), b=int(b[i]), c=int(c[i]), right_a=int(ra[i]),
                          right_b=int(rb[i]), p=mcnemar_exact(int(b[i]), int(c[i]))) for i in range(len(keys)))


@dataclass(frozen=True, kw_only=True)
class ABComparison:
    """Methods A and B on the units both planned (:func:`compare_methods`): the paired rows
    (``units``, :func:`pair_rows`), the count of each cell, McNemar's p, each method's SR and the
    difference A − B in % / points with their bootstrap intervals, and how they were computed."""

    a: str
    b: str
    horizon: int | None
    fraction: float | None
    units: pd.DataFrame
    counts: dict[str, int]
    p: float
    sr_a: float
    sr_b: float
    delta: float
    sr_a_interval: tuple[float, float]
    sr_b_interval: tuple[float, float]
    delta_interval: tuple[float, float]
    resamples: int
    confidence: float
    seed: int
    per_seed: tuple[SeedTest, ...] = ()
    one_run: str | None = None

    @property
    def stratified(self) -> bool:
        """Whether ``p`` is the CMH test over seeds (a one-run method against several seeds), not McNemar's."""
        return self.one_run is not None and len(self.per_seed) > 1

    @property
    def test(self) -> str:
        """The test ``p`` is, in words (:data:`~kepp_core.catalog.AB_STRATIFIED_TEST` or :data:`~kepp_core.catalog.AB_TEST`)."""
        return AB_STRATIFIED_TEST if self.stratified else AB_TEST

    @property
    def test_name(self) -> str:
        """The test's short name for a tile or a column header."""
        return "CMH over seeds" if self.stratified else "McNemar"

    @property
    def seeds(self) -> int:
        """How many training seeds the units span (one for ``kepp eval`` records)."""
        return int(self.units["seed"].nunique(dropna=False))

    @property
    def episodes(self) -> int:
        """How many distinct test episodes the units cover."""
        return int(self.units[["horizon", "episode"]].drop_duplicates().shape[0])

    def select(self, cell: str | None) -> pd.DataFrame:
        """The units of one cell (every unit when None); KeppError for a name not in :data:`AB_CELLS`."""
        if cell is None:
            return self.units
        if cell not in AB_CELLS:
            raise KeppError(f"unknown cell {cell!r} (expected one of {', '.join(AB_CELLS)})")
        return self.units[self.units["cell"] == cell]

    @property
    def significant(self) -> bool:
        return self.p < SIGNIFICANCE

    def resampling(self) -> str:
        """How the intervals were drawn, in words (one seed or several)."""
        level = f"{round(self.confidence * 100)}%"
        if self.seeds > 1:
            return (f"{level} percentile bootstrap over test episodes, each drawn with all its {self.seeds} seeds "
                    f"({self.resamples:,} draws, seed {self.seed})")
        return (f"{level} percentile bootstrap over the test episodes of one seed (episode-level: the test set's "
                f"spread, not the training's; {self.resamples:,} draws, seed {self.seed})")

    def verdict(self) -> str:
        """One plain sentence: the discordant cells and whether they differ significantly."""
        a, b = method_label(self.a), method_label(self.b)
        only_a, only_b = self.counts["a-only"], self.counts["b-only"]
        p = "p " + ("" if p_text(self.p).startswith("<") else "= ") + p_text(self.p)
        split = f"{a} alone right on {only_a:,}, {b} alone right on {only_b:,}"
        if self.stratified:
            split += f"; {self.test_name}: {method_label(self.one_run)} is one run, tested against each of " \
                     f"{len(self.per_seed)} seeds"
        if self.significant:
            way = "better" if only_a > only_b else "worse"
            return f"{p} < {SIGNIFICANCE}: {a} is significantly {way} than {b} ({split})."
        return f"{p} ≥ {SIGNIFICANCE}: no significant difference between {a} and {b} ({split})."

    def table(self, cell: str | None = None, steps: Callable[[Sequence[int]], str] | None = None,
              episode: Callable[[str], str] = str, part: slice | None = None, seeds: bool | None = None) -> pd.DataFrame:
        """The units of ``cell`` (every unit when None; ``part``: those rows of them, e.g. one page
        of a list) as :func:`pairs_table` writes them, the seed column kept whenever the comparison
        spans several seeds (``seeds``: True keeps it always, as the app's lists and downloads do)."""
        rows = self.select(cell)
        return pairs_table(rows if part is None else rows.iloc[part], self.a, self.b, steps or _ids, episode,
                           seeds=self.seeds > 1 if seeds is None else seeds)

    def row(self) -> dict:
        """The comparison as one flat JSON-ready row (``kepp eval compare --json``)."""
        return {"a": self.a, "b": self.b, "T": self.horizon, "fraction": self.fraction, "units": len(self.units),
                "episodes": self.episodes, "seeds": self.seeds, **self.counts, "SR_a": self.sr_a,
                "SR_a_low": self.sr_a_interval[0], "SR_a_high": self.sr_a_interval[1], "SR_b": self.sr_b,
                "SR_b_low": self.sr_b_interval[0], "SR_b_high": self.sr_b_interval[1], "delta": self.delta,
                "delta_low": self.delta_interval[0], "delta_high": self.delta_interval[1], "p": self.p,
                "test": self.test, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
                "one_run": self.one_run, "per_seed": [t.row() for t in self.per_seed] if self.stratified else []}


def compare_methods(preds: pd.DataFrame, a: str, b: str, horizon: int | None = None, fraction: float | None = None,
                    resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = CONFIDENCE,
                    seed: int = 0) -> ABComparison:
    """Methods ``a`` and ``b`` of a predictions table episode by episode (the module docstring):
    :func:`pair_rows`, the cells' counts, McNemar's exact p and the bootstrap intervals (``seed``:
    the bootstrap's random seed)."""
    units = pair_rows(preds, a, b, horizon, fraction)
    sa, sb = units["success_a"].to_numpy(float), units["success_b"].to_numpy(float)
    several = units["seed"].nunique(dropna=False) > 1
    groups = units.groupby(["horizon", "episode"], sort=False).ngroup().to_numpy() if several else None  # episodes

    def interval(values: np.ndarray) -> tuple[float, float]:
        lo, hi = bootstrap_interval(values, groups, resamples, confidence, seed)
        return round(100 * lo, 2), round(100 * hi, 2)

    counts = {c: int((units["cell"] == c).sum()) for c in AB_CELLS}
    per_seed, one_run = seed_tests(units), units.attrs.get("one_run")
    p = mcnemar_exact(counts["a-only"], counts["b-only"])
    if one_run is not None and len(per_seed) > 1:  # one run against several seeds: never pooled (module docstring)
        p = cmh_test([t.table() for t in per_seed], shared_row=True)[1]
    return ABComparison(a=a, b=b, horizon=None if horizon is None else int(horizon),
                        fraction=next((float(f) for f in units["fraction"].dropna()), None), units=units,
                        counts=counts, p=p, per_seed=per_seed, one_run=one_run,
                        sr_a=round(100 * float(sa.mean()), 2), sr_b=round(100 * float(sb.mean()), 2),
                        delta=round(100 * float((sa - sb).mean()), 2), sr_a_interval=interval(sa), sr_b_interval=interval(sb),
                        delta_interval=interval(sa - sb), resamples=int(resamples), confidence=float(confidence),
                        seed=int(seed))


def _ids(plan: Sequence[int]) -> str:
    return " ".join(str(int(x)) for x in plan)


def pairs_table(units: pd.DataFrame, a: str, b: str, steps: Callable[[Sequence[int]], str] = _ids,
                episode: Callable[[str], str] = str, seeds: bool | None = None) -> pd.DataFrame:
    """Paired rows (:func:`pair_rows`) as a table to read and download: the episode, T, the seed
    (where the rows span several), the ground truth, A's plan and whether it is right, B's plan and
    whether it is right, and the cell in words. ``steps`` writes a plan (default: its action ids),
    ``episode`` an episode id; ``seeds``: whether to keep the seed column (None: where these rows
    span several seeds).

    >>> units = pd.DataFrame({"episode": ["e1"], "horizon": [3], "seed": [0], "truth": [(1, 2, 3)],
    ...     "plan_a": [(1, 2, 3)], "plan_b": [(1, 0, 3)], "success_a": [True], "success_b": [False], "cell": ["a-only"]})
    >>> pairs_table(units, "kepp-R2", "pdpp").iloc[0].to_dict()   # doctest: +NORMALIZE_WHITESPACE
    {'episode': 'e1', 'T': 3, 'ground truth': '1 2 3', 'A: KEPP R=2': '1 2 3', 'A right': True,
     'B: PDPP (task classifier)': '1 0 3', 'B right': False, 'cell': 'A right, B wrong'}
    """
    several = units["seed"].nunique(dropna=False) > 1 if seeds is None else seeds
    return pd.DataFrame({
        "episode": [episode(e) for e in units["episode"]], "T": units["horizon"].astype(int).to_numpy(),
        **({"seed": units["seed"].to_numpy()} if several else {}),
        "ground truth": [steps(t) for t in units["truth"]],
        f"A: {method_label(a)}": [steps(p) for p in units["plan_a"]], "A right": units["success_a"].to_numpy(bool),
        f"B: {method_label(b)}": [steps(p) for p in units["plan_b"]], "B right": units["success_b"].to_numpy(bool),
        "cell": [AB_CELLS[c] for c in units["cell"]]})
