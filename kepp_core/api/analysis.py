"""Looking at a graph and at evaluated plans: a task's expert
trajectories, transition matrices, prediction records as one table, metrics per method and
horizon, and the paper's failure analysis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from kepp_core.catalog.benchmark import DEFAULT_FAMILY, MetricFamily, family
from kepp_core.catalog import method_label
from kepp_core.errors import KeppError
from kepp_core.evaluation.failures import (
    EpisodeOutcome,
    Failure,
    FailureStats,
    classify_failures,
    failure_patterns_batch,
    failure_stats,
    stored_paths,
)
from kepp_core.evaluation.literature import literature_rows as _literature_rows
from kepp_core.evaluation.literature import literature_table
from kepp_core.evaluation.store import FRAME_COLUMNS, PlanArrays, check_vocabulary, file_version, predictions_frame
from kepp_core.evaluation.stats import bootstrap_interval, mean_ci
from kepp_core.graph import (capped_subgraph, expert_trajectories, graph_source, retrieve, scorer_names, subgraph,
                             transition_matrix)
from kepp_core.metrics import (
    iou_per_episode,
    mean_accuracy,
    miou_per_batch,
    miou_per_episode,
    success_rate,
)

__all__ = [
    "capped_subgraph", "check_vocabulary", "compare_methods", "episodes_through", "expert_view", "failure_analysis",
    "graph_source", "group_table",
    "literature_rows", "method_horizon_table", "metrics_table", "read_predictions", "records_version", "retrieve",
    "row_columns", "scorer_names", "slice_table", "subgraph", "transitions",
]

RECORD_COLUMNS = FRAME_COLUMNS


# --- the graph ------------------------------------------------------------------------------------
def expert_view(graph, task: str) -> tuple[list[int], list[tuple[int, int]], dict[tuple[int, int], int]]:
    """Nodes, edges and per-edge counts of a task's training plans."""
    df = expert_trajectories(graph, task)
    freq = {(int(u), int(v)): int(n) for u, v, n in zip(df["source"], df["target"], df["count"])}
    nodes = sorted({a for e in freq for a in e})
    return nodes, list(freq), freq


def episodes_through(preds, node: int | None = None, edge: tuple[int, int] | None = None):
    """The rows of a predictions table whose plan or ground truth passes through the step ``node`` (it appears) or
    the transition ``edge`` = ``(a, b)`` (``a`` right before ``b``): a table of their positions in ``preds``
    (``row``) and whether the plan (``plan``) and the truth (``truth``) pass through it, in the table's order.
    Counted on the store's ``[n, T]`` arrays, horizon by horizon (no row loop).

    >>> import pandas as pd
    >>> preds = pd.DataFrame({"horizon": [3, 3], "plan": [(1, 2, 3), (4, 5, 6)], "truth": [(1, 2, 3), (4, 2, 6)]})
    >>> episodes_through(preds, node=2).to_dict("list")
    {'row': [0, 1], 'plan': [True, False], 'truth': [True, True]}
    """
    import pandas as pd

    in_plan, in_truth = PlanArrays(preds).through(node, edge)
    rows = np.flatnonzero(in_plan | in_truth)
    return pd.DataFrame({"row": rows, "plan": in_plan[rows], "truth": in_truth[rows]})


def transitions(plans: Iterable[Sequence[int]], order: list[int], labels: list[str]):
    """Row-normalised transition matrix of ``plans`` in ``order`` as a DataFrame labelled with ``labels``.

    >>> transitions([(0, 1), (0, 1), (0, 2)], [0, 1, 2], ["a", "b", "c"]).loc["a"].round(2).tolist()
    [0.0, 0.67, 0.33]
    """
    df = transition_matrix(plans, order)
    df.index, df.columns = list(labels), list(labels)
    return df


# --- prediction records -------------------------------------------------------------------------------
def records_version(path: str | Path) -> str:
    """The version of a records file (its size and a hash of its bytes: :func:`kepp_core.evaluation.store.file_version`),
    a cache key that changes whenever the file's bytes do."""
    return file_version(path).key


def read_predictions(files: Iterable[str | Path]):
    """Prediction records (``kepp eval --records``) as one long DataFrame: one row per episode
    and method, with its outcome and failure patterns (columns :data:`RECORD_COLUMNS`; ``source``:
    the records file, ``imported``: for another method's plans brought in with ``kepp records
    import``, the predictions file they came from, else None).

    Read through the records store (:mod:`kepp_core.evaluation.store`): each file is validated and
    judged once per version and cached as columns, so a second read is a memory map; the same rows as
    judging each method's :func:`~kepp_core.evaluation.failures.outcome_from_record` with
    :func:`~kepp_core.evaluation.failures.failure_patterns` one by one (tested)."""
    return predictions_frame(files)


def metrics_table(preds, metrics: str = DEFAULT_FAMILY):
    """SR, mAcc and both mIoU variants (in %) per method, horizon and setting of a predictions table;
    with ``metrics`` another evaluation code's family (``pdpp``, ``vpn``: :mod:`kepp_core.catalog.benchmark`)
    under its headers, which name the code (episodes in the records' order, batches of 256). An
    imported method's row names the file its plans came from (``imported``)."""
    import pandas as pd

    rows = []
    plans = PlanArrays(preds)
    import_codes, import_files = pd.factorize(preds["imported"]) if "imported" in preds else (None, None)
    for (method, horizon, setting), idx in _groups(preds, ["method", "horizon", "setting"]):
        row = {"method": method, "name": method_label(method), "T": int(horizon), "setting": setting, "episodes": len(idx)}
        pred, gt = plans.of(idx)
        if metrics == DEFAULT_FAMILY:  # this package's all-metrics table: its headers since the first release
            values, _ = _seed_values(pred, gt, family(metrics), plans.set_iou(idx))  # the IoUs shared
            row.update({"SR": round(values["sr"], 2), "mAcc": round(values["macc"], 2),
                        "mIoU (episode)": round(values["miou_episode"], 2),
                        "mIoU (batch 256)": round(float(miou_per_batch(pred, gt)), 2)})
        else:
            fam = family(metrics)
            values = fam.columns_of(pred, gt)
            row.update({m.header: round(float(values[m.column]), 2) for m in fam.metrics})
        codes = np.unique(import_codes[idx]) if import_codes is not None else []
        imported = sorted(import_files[codes[codes >= 0]].tolist()) if len(codes) else []
        if imported:
            row["imported"] = ", ".join(imported)
        rows.append(row)
    return pd.DataFrame(rows)


def _groups(preds, by: list[str], keys=None) -> list[tuple[tuple, np.ndarray]]:
    """The groups of a predictions table by the columns ``by`` in sorted order (missing values last, as
    ``groupby(sort=True, dropna=False)``), each as its key and its row numbers in the records' order
    (``keys``: a table of those columns to group by instead of ``preds``'s own)."""
    keys = preds[by] if keys is None else keys
    group = keys.groupby(by, sort=True, dropna=False).ngroup().to_numpy()  # the columns as they are: no copy to objects
    if not len(group):
        return []
    rows = np.argsort(group, kind="stable")
    cuts = np.flatnonzero(np.diff(group[rows])) + 1
    firsts = rows[np.r_[0, cuts]]
    values = [keys[c].iloc[firsts].tolist() for c in by]
    return [(tuple(v[g] for v in values), idx) for g, idx in enumerate(np.split(rows, cuts))]


# --- the field's evaluation codes and published numbers ----------------------------------------------------------
def literature_rows(dataset: str | None = None, horizon: int | None = None, code: str | None = None,
                    table: bool = False) -> list:
    """Published numbers of ``dataset`` (``crosstask-105``, ``crosstask-133``, ``coin``, ``niv``),
    ``horizon`` and evaluation ``code`` (None: any), each with its paper and table
    (:mod:`kepp_core.evaluation.literature`): shown beside measured rows, never averaged with them.
    ``table`` (with a ``code``): as table rows under that code's headers, ``—`` where a paper gives no
    number, each with its split and source (:func:`~kepp_core.evaluation.literature.literature_table`).

    >>> [r["method"] for r in literature_rows("niv", 3, "pdpp", table=True)]
    ['PDPP (published)', 'KEPP (published)']
    """
    rows = _literature_rows(dataset, horizon, code)
    if table:
        if code is None:
            raise KeppError("literature_rows(table=True) needs a code: the table's headers are one code's")
        return literature_table(rows, code)
    return rows


# --- failure analysis ------------------------------------------------------------------------------------
def outcomes(df) -> list[EpisodeOutcome]:
    """The episode outcomes of the rows of a predictions table (in order)."""
    return [EpisodeOutcome(r.episode, r.truth, r.plan, r.endpoints, r.paths[0] if r.paths else None, r.task, r.method)
            for r in df.itertuples()]


def failure_analysis(df) -> tuple[list[EpisodeOutcome], FailureStats, list[Failure]]:
    """Outcomes, the paper's failure statistics and the classified failures of a predictions table."""
    outs = outcomes(df)
    return outs, failure_stats(outs), classify_failures(outs)


# --- method x T table ----------------------------------------------------------------------------------------
# Bootstrap draws per cell of a one-seed table (the comparison of two methods draws the catalogue's
# 10,000): the table bootstraps every method, T and metric (240 intervals for the demo's records),
# and a 5% quantile of 2,000 draws is off by about 0.1 points of SR at 585 episodes.
TABLE_RESAMPLES = 2_000


def method_horizon_table(preds, metrics: str = DEFAULT_FAMILY, names: Mapping[str, str] | None = None,
                         runs=None) -> tuple[object, dict[str, str]]:
    """SR, mAcc and mIoU (per episode, in %) as one row per method and a column per T and metric
    (``"T=3 SR"``, ...): mean over seeds, with ``"± h"`` (90% CI, Student t) where a method
    and horizon have several seeds, and with one seed ``"[lo, hi]"``: the 90% percentile bootstrap
    interval over its test episodes (episode-level: how much the number depends on the test episodes
    drawn, not on training; :func:`~kepp_core.evaluation.stats.bootstrap_interval`, seeded,
    :data:`TABLE_RESAMPLES` draws). Returns
    ``(table of text cells, {column: best method})``; the table's index is the methods' readable
    names (``names``: method -> its name; default the catalogue's label), ``best`` names the highest
    mean per column.

    ``metrics``: another evaluation code (``pdpp``, ``vpn``: :mod:`kepp_core.catalog.benchmark`), the metrics its
    table shows (:attr:`~kepp_core.catalog.benchmark.MetricFamily.table_metrics`) under its headers, which name the
    code (``"T=3 SR (PDPP)"``, ``"T=3 mIoU (PDPP, per batch)"``), each seed's episodes in the records' order
    in batches of 256 as that code batches them; the mean ± h over seeds, and an interval with one seed only
    for a code whose numbers are means over episodes (its ``per_episode``: a per-batch number is not a mean
    over episodes to resample).

    Every seed's numbers are counted at once on the table's arrays (:class:`kepp_core.evaluation.runs.Runs`);
    ``runs``: those of ``preds`` where the caller has them (grouped with a missing seed as 0), shared by the
    tables of several codes."""
    import pandas as pd

    from kepp_core.evaluation.runs import Runs  # pandas: only when a table is asked for

    fam = family(metrics)
    shown = [(m.key, m.header) for m in fam.table_metrics]
    means: dict[tuple[str, str], float] = {}
    cells: dict[str, dict[str, str]] = {}
    order: dict[str, tuple[int, int]] = {}  # column -> (horizon, metric's place): the columns' order
    seeds_of: dict[tuple, list[int]] = {}  # (method, T) -> its runs (one per seed), seeds in order
    runs = Runs(preds, missing_seed=0) if runs is None else runs
    for r, (method, horizon, _) in enumerate(runs.keys):
        seeds_of.setdefault((method, horizon), []).append(r)
    # every seed's numbers at once; a code that counts runs one by one, by its array path where it has one
    per_run = runs.values(fam, None if fam.per_episode is None else lambda p, g: _seed_values(p, g, fam)[0])
    for (method, horizon), parts in seeds_of.items():
        one = fam.per_episode is not None and len(parts) == 1
        episodes = runs.episodes(fam, parts[0]) if one else {}
        for place, (key, header) in enumerate(shown):
            vals = [float(per_run[key][r]) for r in parts]
            col = f"T={int(horizon)} {header}"
            order[col] = (int(horizon), place)
            mean, half = mean_ci(vals)  # 90%, Student t: the interval of every result table over seeds
            means[(col, method)] = round(mean, 2)
            if one:  # one seed: the episodes' spread
                lo, hi = bootstrap_interval(episodes[key], resamples=TABLE_RESAMPLES)
                cells.setdefault(method, {})[col] = f"{mean:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"
            else:
                cells.setdefault(method, {})[col] = f"{mean:.2f}" + ("" if math.isnan(half) else f" ± {half:.2f}")
    cols = sorted(order, key=order.get)
    best = {c: max((m for cc, m in means if cc == c), key=lambda m: means[(c, m)]) for c in cols}
    names = {m: (names or {}).get(m) or method_label(m) for m in cells}
    table = pd.DataFrame([{c: cells[m].get(c, "—") for c in cols} for m in cells], index=[names[m] for m in cells])
    return table, {c: names[m] for c, m in best.items()}


def _seed_values(pred: np.ndarray, gt: np.ndarray, code: MetricFamily,
                 iou: np.ndarray | None = None) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One seed's numbers of the method x T table (its plans and ground truths as arrays, one T) as the evaluation
    ``code`` computes them and, where its table's metrics are means over episodes, each episode's value of each
    (what a one-seed cell's bootstrap resamples): the code's array path (given the episodes' set IoUs where the
    table has them already), else its function."""
    if code.per_episode is None:
        return code.scores(pred, gt), {}
    return code.per_episode(pred, gt) if iou is None else code.per_episode(pred, gt, iou=iou)


# --- metrics by slice ---------------------------------------------------------------------------------------
def slice_table(preds, method: str, by: str = "task", reference: str | None = None, horizon: int | None = None):
    """``method``'s episodes of a predictions table (of ``horizon``, or all) by slice, compared with
    ``reference``: :func:`kepp_core.evaluation.slices.slice_table` (a
    :class:`~kepp_core.evaluation.slices.SliceTable`: its ``table`` has count, SR, mAcc and ends right
    per slice, the differences and the paired p-value; ``select(rows, value)`` keeps the rows of one
    slice)."""
    from kepp_core.evaluation import slices  # pandas: only when a page asks

    return slices.slice_table(preds, method, by, reference, horizon)


# --- any grouping ---------------------------------------------------------------------------------------------
def group_table(preds, by, resamples: int | None = None, seed: int = 0):
    """A predictions table grouped by the columns ``by`` (any of :data:`kepp_core.catalog.GROUP_BY`:
    method, T, seed, task, setting, pattern, first_right, last_right, source, imported): one row per group with
    its count, SR, mAcc and mIoU in % and their bootstrap intervals over the group's episodes
    (:func:`kepp_core.evaluation.groups.group_table`; ``resamples`` defaults to its ``GROUP_RESAMPLES``)."""
    from kepp_core.evaluation import groups  # pandas: only when a page asks

    options = {} if resamples is None else {"resamples": resamples}
    return groups.group_table(preds, by, seed=seed, **options)


def row_columns(preds):
    """Per row of a predictions table (same index), what its plan has right: steps right, first right, last right,
    ends right (:func:`kepp_core.evaluation.slices.row_columns`: on arrays, the one rule of *ends right*)."""
    from kepp_core.evaluation import slices  # pandas: only when a page asks

    return slices.row_columns(preds)


# --- two methods episode by episode -------------------------------------------------------------------------
def compare_methods(preds, a: str, b: str, horizon: int | None = None, fraction: float | None = None,
                    resamples: int | None = None, confidence: float | None = None, seed: int = 0):
    """Methods ``a`` and ``b`` of a predictions table on the episodes both planned (of ``horizon``,
    or all; of ``fraction`` of a protocol's records, or its largest):
    :func:`kepp_core.evaluation.compare.compare_methods` (an
    :class:`~kepp_core.evaluation.compare.ABComparison`: the 2×2 table's counts and units, McNemar's
    exact p, each method's SR and A − B with paired-bootstrap intervals; ``resamples`` and
    ``confidence`` default to the catalogue's)."""
    from kepp_core.evaluation.compare import compare_methods as compare  # pandas: only when a page asks

    options = {k: v for k, v in (("resamples", resamples), ("confidence", confidence)) if v is not None}
    return compare(preds, a, b, horizon, fraction, seed=seed, **options)
