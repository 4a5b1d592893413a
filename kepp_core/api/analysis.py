"""Looking at a graph and at evaluated plans: the sub-graph around a step, a task's expert
trajectories, transition matrices, prediction records as one table, metrics per method and
horizon, and the paper's failure analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kepp_core.evaluation.failures import (
    PATH_METHODS,
    PATTERN_LABELS,
    PATTERNS,
    EpisodeOutcome,
    Failure,
    FailureStats,
    classify_failures,
    failure_patterns,
    failure_stats,
    outcome_from_record,
    read_records,
)
from kepp_core.graph import expert_trajectories, subgraph, transition_matrix
from kepp_core.metrics import (
    mean_accuracy,
    miou_per_batch,
    miou_per_episode,
    success_rate,
)

__all__ = ["PATTERNS", "PATTERN_LABELS", "RECORD_COLUMNS", "EpisodeOutcome", "Failure", "FailureStats",
           "classify_failures", "default_method", "expert_view", "failure_analysis", "failure_stats",
           "heatmap_order", "metrics_table", "outcomes", "read_predictions", "subgraph_view", "transitions"]

RECORD_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "method", "truth", "plan", "endpoints",
                  "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                  "goal_time", "source"]


# --- the graph ------------------------------------------------------------------------------------
def subgraph_view(graph, centre: int, depth: int = 1, min_probability: float = 0.0, task: str | None = None
                  ) -> tuple[set[int], list[tuple[int, int]]]:
    """Nodes and edges around ``centre`` (depth, minimum P²KG probability, optional task filter)."""
    sg = subgraph(graph, centre, depth=depth, min_probability=min_probability, task=task)
    return set(sg.nodes) | {centre}, [(e.source, e.target) for e in sg.edges]


def neighbourhood(graph, centres: Iterable[int], depth: int, min_probability: float = 0.0
                  ) -> tuple[set[int], list[tuple[int, int]]]:
    """Nodes and edges within ``depth`` hops of any of ``centres`` (in- and out-edges)."""
    nodes: set[int] = set()
    edges: set[tuple[int, int]] = set()
    for c in centres:
        n, e = subgraph_view(graph, int(c), depth, min_probability, None)
        nodes.update(n)
        edges.update(e)
    return nodes, sorted(edges)


def expert_view(graph, task: str) -> tuple[list[int], list[tuple[int, int]], dict[tuple[int, int], int]]:
    """Nodes, edges and per-edge counts of a task's training plans."""
    df = expert_trajectories(graph, task)
    freq = {(int(u), int(v)): int(n) for u, v, n in zip(df["source"], df["target"], df["count"])}
    nodes = sorted({a for e in freq for a in e})
    return nodes, list(freq), freq


def heatmap_order(ds, task: str, plans: Iterable[Sequence[int]]) -> list[int]:
    """The task's own actions first, then any other action the plans use (first appearance)."""
    order = list(ds.task_actions(task))
    seen = set(order)
    for p in plans:
        for a in p:
            if a not in seen:
                seen.add(a)
                order.append(int(a))
    return order


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
    and method, with its outcome and failure patterns (columns :data:`RECORD_COLUMNS`)."""
    import pandas as pd

    rows = []
    for f in files:
        for rec in read_records(f):
            base = {"episode": rec["episode"], "task": rec.get("task"), "video": rec.get("video"),
                    "horizon": int(rec.get("T") or len(rec["gt"])), "setting": rec.get("setting"),
                    "seed": rec.get("seed"), "start_time": rec.get("start_time"),
                    "goal_time": rec.get("goal_time"), "source": Path(f).name}
            rows.extend({**base, **method_row(rec, method)} for method in rec["plans"])
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def method_row(rec: dict, method: str) -> dict:
    """One method's columns of a prediction record: outcome, endpoints, the paths it used, patterns."""
    o = outcome_from_record(rec, method)
    k = PATH_METHODS.get(method, 0)
    pats = failure_patterns(o)
    return {"method": method, "truth": o.truth, "plan": o.plan, "endpoints": o.endpoints,
            "endpoint_scores": rec.get("endpoint_scores") if o.endpoints is not None else None,
            "paths": [tuple(p) for p in (rec.get("paths") or [])[:k]],
            "path_scores": (rec.get("path_scores") or [])[:k], "success": o.success,
            "patterns": ", ".join(pats), "pattern": pats[0] if pats else ""}


def metrics_table(preds):
    """SR, mAcc and both mIoU variants (in %) per method, horizon and setting of a predictions table."""
    import pandas as pd

    from kepp_core.evaluation.methods import LABELS  # lazy: loads torch

    rows = []
    for (method, horizon, setting), g in preds.groupby(["method", "horizon", "setting"], sort=True, dropna=False):
        pred, gt = [list(p) for p in g["plan"]], [list(t) for t in g["truth"]]
        rows.append({"method": method, "name": LABELS.get(method, method), "T": int(horizon),
                     "setting": setting, "episodes": len(g),
                     "SR": round(float(success_rate(pred, gt)), 2), "mAcc": round(float(mean_accuracy(pred, gt)), 2),
                     "mIoU (episode)": round(float(miou_per_episode(pred, gt)), 2),
                     "mIoU (batch 256)": round(float(miou_per_batch(pred, gt)), 2)})
    return pd.DataFrame(rows)


def default_method(methods: list[str]) -> int:
    """Index of the method to show first: KEPP if it was evaluated.

    >>> default_method(["random", "kepp-R1", "kepp-R2"])
    2
    """
    for m in ("kepp-R2", "kepp-R1", "kepp-gt"):
        if m in methods:
            return methods.index(m)
    return 0


# --- failure analysis ------------------------------------------------------------------------------------
def outcomes(df) -> list[EpisodeOutcome]:
    """The episode outcomes of the rows of a predictions table (in order)."""
    return [EpisodeOutcome(r.episode, r.truth, r.plan, r.endpoints, r.paths[0] if r.paths else None, r.task, r.method)
            for r in df.itertuples()]


def failure_analysis(df) -> tuple[list[EpisodeOutcome], FailureStats, list[Failure]]:
    """Outcomes, the paper's failure statistics and the classified failures of a predictions table."""
    outs = outcomes(df)
    return outs, failure_stats(outs), classify_failures(outs)
