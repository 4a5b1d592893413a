"""Looking at a graph and at evaluated plans: a task's expert
trajectories, transition matrices, prediction records as one table, metrics per method and
horizon, and the paper's failure analysis.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from kepp_core.benchmark import DEFAULT_FAMILY, MetricFamily, family
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
from kepp_core.evaluation.records import read_records
from kepp_core.evaluation.stats import bootstrap_interval, mean_ci
from kepp_core.graph import expert_trajectories, transition_matrix
from kepp_core.metrics import (
    family_columns,
    iou_per_episode,
    mean_accuracy,
    miou_per_batch,
    miou_per_episode,
    success_rate,
)
from kepp_core.metrics import protocol_metrics as _protocol_metrics

__all__ = ["RECORD_COLUMNS", "TABLE_METRICS", "compare_methods", "expert_view", "failure_analysis", "literature_rows",
           "method_horizon_table", "metric_family", "metrics_table", "outcomes", "protocol_metrics", "read_predictions",
           "slice_table", "transitions"]

RECORD_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "fraction", "method", "truth", "plan",
                  "endpoints", "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                  "goal_time", "source", "imported"]


# --- the graph ------------------------------------------------------------------------------------
def expert_view(graph, task: str) -> tuple[list[int], list[tuple[int, int]], dict[tuple[int, int], int]]:
    """Nodes, edges and per-edge counts of a task's training plans."""
    df = expert_trajectories(graph, task)
    freq = {(int(u), int(v)): int(n) for u, v, n in zip(df["source"], df["target"], df["count"])}
    nodes = sorted({a for e in freq for a in e})
    return nodes, list(freq), freq


def transitions(plans: Iterable[Sequence[int]], order: list[int], labels: list[str]):
    """Row-normalised transition matrix of ``plans`` in ``order`` as a DataFrame labelled with ``labels``.

    >>> transitions([(0, 1), (0, 1), (0, 2)], [0, 1, 2], ["a", "b", "c"]).loc["a"].round(2).tolist()
    [0.0, 0.67, 0.33]
    """
    df = transition_matrix(plans, order)
    df.index, df.columns = list(labels), list(labels)
    return df


# --- prediction records -------------------------------------------------------------------------------
def read_predictions(files: Iterable[str | Path]):
    """Prediction records (``kepp eval --records``) as one long DataFrame: one row per episode
    and method, with its outcome and failure patterns (columns :data:`RECORD_COLUMNS`; ``source``:
    the records file, ``imported``: for another method's plans brought in with ``kepp records
    import``, the predictions file they came from, else None).

    The same rows as judging each method's :func:`~kepp_core.evaluation.failures.outcome_from_record`
    with :func:`~kepp_core.evaluation.failures.failure_patterns` one by one (tested), but the
    patterns of all rows of one horizon are found at once
    (:func:`~kepp_core.evaluation.failures.failure_patterns_batch`): 100,000 rows in about a
    second instead of four (a records page waits for it once per records file)."""
    import pandas as pd

    cols: dict[str, list] = {c: [] for c in RECORD_COLUMNS}
    # Millions of small tuples, lists and dicts, none in a cycle: the cyclic collector would scan the
    # growing heap again and again (a third of the time at 100,000 rows), so it waits until the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for f in files:
            source = Path(f).name
            for rec in read_records(f):
                _record_rows(rec, source, cols)
        _judge(cols)
        return pd.DataFrame(cols, columns=RECORD_COLUMNS)
    finally:
        if collecting:
            gc.enable()


def _record_rows(rec: dict, source: str, cols: dict[str, list]) -> None:
    """Append one record's rows (one per method) to ``cols``: what each method planned and the
    endpoints and graph paths it used (:func:`~kepp_core.evaluation.failures.stored_paths`); the
    same checks as :class:`~kepp_core.evaluation.failures.EpisodeOutcome`."""
    episode, truth, plans = rec["episode"], tuple(map(int, rec["gt"])), rec["plans"]
    if not truth:
        raise KeppError(f"episode {str(episode)!r}: empty ground-truth plan")
    ends = rec.get("endpoints")
    ends = tuple(map(int, ends)) if ends is not None else None
    paths, path_scores, scores = rec.get("paths") or [], rec.get("path_scores") or [], rec.get("endpoint_scores")
    k_of = {method: stored_paths(method) for method in plans}
    imported = rec.get("imported") if isinstance(rec.get("imported"), dict) else {}
    used_paths = {k: [tuple(p) for p in paths[:k]] for k in {0, *k_of.values()}}  # shared by the methods
    m = len(plans)
    for c, v in (("episode", episode), ("task", rec.get("task")), ("video", rec.get("video")),
                 ("horizon", int(rec.get("T") or len(rec["gt"]))), ("setting", rec.get("setting")),
                 ("seed", rec.get("seed")), ("fraction", rec.get("fraction")), ("start_time", rec.get("start_time")),
                 ("goal_time", rec.get("goal_time")), ("source", source), ("truth", truth)):
        cols[c].extend([v] * m)
    for method, plan in plans.items():
        plan = tuple(map(int, plan))
        if len(plan) != len(truth):
            raise KeppError(f"episode {str(episode)!r}: plan has {len(plan)} steps, ground truth has {len(truth)}")
        k = k_of[method]
        if k and paths and len(paths[0]) != len(truth):
            raise KeppError(f"episode {str(episode)!r}: top graph path has {len(paths[0])} steps, "
                            f"expected {len(truth)}")
        used = ends if k else None
        cols["method"].append(method)
        cols["imported"].append(imported.get(method))
        cols["plan"].append(plan)
        cols["endpoints"].append(used)
        cols["endpoint_scores"].append(scores if used is not None else None)
        cols["paths"].append(used_paths[k])
        cols["path_scores"].append(path_scores[:k])


def _judge(cols: dict[str, list]) -> None:
    """Fill ``success``, ``patterns`` and ``pattern`` of the rows in ``cols``, one horizon at a time."""
    found: list[tuple[str, ...]] = [()] * len(cols["truth"])
    by_length: dict[int, list[int]] = {}
    for i, truth in enumerate(cols["truth"]):
        by_length.setdefault(len(truth), []).append(i)
    for rows in by_length.values():
        plans = [cols["plan"][i] for i in rows]
        ends = [cols["endpoints"][i] or (p[0], p[-1]) for i, p in zip(rows, plans)]
        judged = failure_patterns_batch(np.array([cols["truth"][i] for i in rows]), np.array(plans), np.array(ends))
        for i, pats in zip(rows, judged):
            found[i] = pats
    cols["success"] = [not pats for pats in found]
    cols["patterns"] = [", ".join(pats) for pats in found]
    cols["pattern"] = [pats[0] if pats else "" for pats in found]


def metrics_table(preds, metrics: str = DEFAULT_FAMILY):
    """SR, mAcc and both mIoU variants (in %) per method, horizon and setting of a predictions table;
    with ``metrics`` another evaluation code's family (``pdpp``, ``vpn``: :mod:`kepp_core.benchmark`)
    under its headers, which name the code (episodes in the records' order, batches of 256). An
    imported method's row names the file its plans came from (``imported``)."""
    import pandas as pd

    rows = []
    for (method, horizon, setting), g in preds.groupby(["method", "horizon", "setting"], sort=True, dropna=False):
        pred, gt = [list(p) for p in g["plan"]], [list(t) for t in g["truth"]]
        row = {"method": method, "name": method_label(method), "T": int(horizon), "setting": setting, "episodes": len(g)}
        if metrics == DEFAULT_FAMILY:
            row.update({"SR": round(float(success_rate(pred, gt)), 2), "mAcc": round(float(mean_accuracy(pred, gt)), 2),
                        "mIoU (episode)": round(float(miou_per_episode(pred, gt)), 2),
                        "mIoU (batch 256)": round(float(miou_per_batch(pred, gt)), 2)})
        else:
            fam = family(metrics)
            values = family_columns(pred, gt, metrics)
            row.update({m.header: round(float(values[m.column]), 2) for m in fam.metrics})
        imported = [f for f in g["imported"].dropna().unique()] if "imported" in g else []
        if imported:
            row["imported"] = ", ".join(sorted(imported))
        rows.append(row)
    return pd.DataFrame(rows)


# --- the field's evaluation codes and published numbers ----------------------------------------------------------
def protocol_metrics(pred, gt, protocol: str, batch_size: int = 256) -> dict:
    """What the evaluation code ``protocol`` reports on these plans (episodes in order, batches of
    ``batch_size``): ``pdpp`` → ``sr, macc, miou_batch, miou_episode, first_acc, last_acc``, ``vpn`` →
    ``sr, macc, miou, miou_classic``, ``kepp`` → this package's (:func:`kepp_core.metrics.protocol_metrics`).

    >>> protocol_metrics([(1, 2, 3)], [(1, 2, 4)], "vpn")["sr"]
    0.0
    """
    return _protocol_metrics(pred, gt, protocol, batch_size)


def metric_family(name: str) -> MetricFamily:
    """The metric family of an evaluation code (``kepp``, ``pdpp``, ``vpn``): its metrics' keys, row
    fields and headers (each naming the code), and where the code lives (:mod:`kepp_core.benchmark`)."""
    return family(name)


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
TABLE_METRICS = ("SR", "mAcc", "mIoU")
# Bootstrap draws per cell of a one-seed table (the comparison of two methods draws the catalogue's
# 10,000): the table bootstraps every method, T and metric (240 intervals for the demo's records),
# and a 5% quantile of 2,000 draws is off by about 0.1 points of SR at 585 episodes.
TABLE_RESAMPLES = 2_000


def method_horizon_table(preds, metrics: str = DEFAULT_FAMILY,
                         names: Mapping[str, str] | None = None) -> tuple[object, dict[str, str]]:
    """SR, mAcc and mIoU (per episode, in %) as one row per method and a column per T and metric
    (``"T=3 SR"``, ...): mean over seeds, with ``"± h"`` (90% CI, Student t) where a method
    and horizon have several seeds, and with one seed ``"[lo, hi]"``: the 90% percentile bootstrap
    interval over its test episodes (episode-level: how much the number depends on the test episodes
    drawn, not on training; :func:`~kepp_core.evaluation.stats.bootstrap_interval`, seeded,
    :data:`TABLE_RESAMPLES` draws). Returns
    ``(table of text cells, {column: best method})``; the table's index is the methods' readable
    names (``names``: method -> its name; default the catalogue's label), ``best`` names the highest
    mean per column.

    ``metrics``: another evaluation code's family (``pdpp``, ``vpn``: :mod:`kepp_core.benchmark`), its
    SR, mAcc and mIoUs under its headers, which name the code (``"T=3 SR (PDPP)"``, ``"T=3 mIoU (PDPP, per
    batch)"``), each seed's episodes in the records' order in batches of 256 as that code batches them;
    the mean ± h over seeds, and no interval with one seed (a per-batch number is not a mean over
    episodes to resample)."""
    import pandas as pd

    fam = family(metrics)
    shown = [(m.key, m.header) for m in fam.metrics if m.key.split("_")[0] in ("sr", "macc", "miou")]
    if metrics == DEFAULT_FAMILY:
        shown = list(zip(("sr", "macc", "miou_episode"), TABLE_METRICS))
    seeds = preds["seed"].fillna(0)
    means: dict[tuple[str, str], float] = {}
    cells: dict[str, dict[str, str]] = {}
    order: dict[str, tuple[int, int]] = {}  # column -> (horizon, metric's place): the columns' order
    for (method, horizon), g in preds.assign(seed=seeds).groupby(["method", "horizon"], sort=True):
        per_seed: dict[str, list[float]] = {header: [] for _, header in shown}
        for _, s in g.groupby("seed", sort=True):
            values = _seed_values([list(p) for p in s["plan"]], [list(t) for t in s["truth"]], metrics)
            for key, header in shown:
                per_seed[header].append(float(values[key]))
        episodes = _episode_values(g) if g["seed"].nunique() == 1 and metrics == DEFAULT_FAMILY else None
        for place, (header, vals) in enumerate(per_seed.items()):
            col = f"T={int(horizon)} {header}"
            order[col] = (int(horizon), place)
            mean, half = mean_ci(vals)  # 90%, Student t: the interval of every result table over seeds
            means[(col, method)] = round(mean, 2)
            if episodes is not None:  # one seed: the episodes' spread
                lo, hi = bootstrap_interval(episodes[header], resamples=TABLE_RESAMPLES)
                cells.setdefault(method, {})[col] = f"{mean:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"
            else:
                cells.setdefault(method, {})[col] = f"{mean:.2f}" + ("" if math.isnan(half) else f" ± {half:.2f}")
    cols = sorted(order, key=order.get)
    best = {c: max((m for cc, m in means if cc == c), key=lambda m: means[(c, m)]) for c in cols}
    names = {m: (names or {}).get(m) or method_label(m) for m in cells}
    table = pd.DataFrame([{c: cells[m].get(c, "—") for c in cols} for m in cells], index=[names[m] for m in cells])
    return table, {c: names[m] for c, m in best.items()}


def _seed_values(pred: list, gt: list, metrics: str) -> dict[str, float]:
    """One seed's numbers of the method x T table: this package's three (the only ones its default table
    shows, computed alone), or what the code ``metrics`` reports."""
    if metrics == DEFAULT_FAMILY:
        return {"sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt), "miou_episode": miou_per_episode(pred, gt)}
    return protocol_metrics(pred, gt, metrics)


def _episode_values(rows) -> dict[str, np.ndarray]:
    """Per episode of ``rows`` (one method, T and seed), what each of :data:`TABLE_METRICS` averages:
    success (0/1), the share of steps right and the IoU of the action sets."""
    pred, gt = [list(p) for p in rows["plan"]], [list(t) for t in rows["truth"]]
    right = [sum(a == b for a, b in zip(p, t)) / len(t) for p, t in zip(pred, gt)]
    return {"SR": np.array([float(p == t) for p, t in zip(pred, gt)]), "mAcc": np.array(right),
            "mIoU": np.array(iou_per_episode(pred, gt))}


# --- metrics by slice ---------------------------------------------------------------------------------------
def slice_table(preds, method: str, by: str = "task", reference: str | None = None, horizon: int | None = None):
    """``method``'s episodes of a predictions table (of ``horizon``, or all) by slice, compared with
    ``reference``: :func:`kepp_core.evaluation.slices.slice_table` (a
    :class:`~kepp_core.evaluation.slices.SliceTable`: its ``table`` has count, SR, mAcc and ends right
    per slice, the differences and the paired p-value; ``select(rows, value)`` keeps the rows of one
    slice)."""
    from kepp_core.evaluation import slices  # pandas: only when a page asks

    return slices.slice_table(preds, method, by, reference, horizon)


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
