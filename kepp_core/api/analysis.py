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

__all__ = ["PATTERNS", "PATTERN_LABELS", "RECORD_COLUMNS", "SCENE_KINDS", "TABLE_METRICS", "choose_scenes",
           "episode_label", "episode_parts", "mean_ci90", "method_horizon_table", "method_label", "method_model",
           "pattern_label", "plan_query", "t_quantile_95", "EpisodeOutcome", "Failure", "FailureStats",
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


# --- readable names ----------------------------------------------------------------------------------------
def method_label(method: str) -> str:
    """A method's readable name (the evaluation registry's label; the name itself when unknown)."""
    from kepp_core.evaluation.methods import LABELS  # lazy: loads torch

    return LABELS.get(method, method)


def pattern_label(pattern: str | None) -> str:
    """A failure pattern's readable name; a comma-separated list of patterns is named one by one.

    >>> pattern_label("wrong_endpoint, repeated_subsequence")
    'wrong first/last step, repeated sub-sequence'
    >>> pattern_label("")
    '—'
    """
    names = [p.strip() for p in str(pattern or "").split(",") if p.strip()]
    return ", ".join(PATTERN_LABELS.get(p, p.replace("_", " ")) for p in names) or "—"


def episode_parts(episode: str) -> tuple[str, str, int, int] | None:
    """``(task, video, first step, T)`` of a record's episode id ``task/video/first:T`` (None otherwise).

    >>> episode_parts("coffee/0001/2:3")
    ('coffee', '0001', 2, 3)
    """
    try:
        head, tail = str(episode).rsplit("/", 1)
        task, video = head.split("/", 1) if "/" in head else ("", head)
        first, horizon = tail.split(":")
        return task, video, int(first), int(horizon)
    except ValueError:
        return None


def episode_label(episode: str, task_names: dict | None = None) -> str:
    """A record's episode id as words: task name, video, the steps it covers.

    >>> episode_label("coffee/0001/2:3", {"coffee": "make coffee"})
    'make coffee · video 0001 · steps 3–5'
    """
    parts = episode_parts(episode)
    if parts is None:
        return str(episode)
    task, video, first, horizon = parts
    name = (task_names or {}).get(task, task)
    return f"{name} · video {video} · steps {first + 1}–{first + horizon}"


# --- links to the Plan page ---------------------------------------------------------------------------------
def method_model(method: str) -> tuple[str, int] | None:
    """The planning model (condition, trained R) the evaluation ``method`` ran, or None for a baseline.

    >>> method_model("kepp-R2"), method_model("kepp-nograph"), method_model("random")
    (('graph', 2), ('none', 1), None)
    """
    if method.startswith("kepp-R") and method[6:].isdigit():
        return "graph", int(method[6:])
    if method == "kepp-nograph":
        return "none", 1
    return None


def plan_query(row) -> dict[str, str]:
    """The Plan page's URL query that opens a predictions-table row's episode (and plans it):
    video, first step, T, and the row's planning model (``graph-R<r>`` or ``none``) and R when the
    method is KEPP's.

    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2"})
    {'video': '0287', 'ep': '7', 'T': '3', 'plan': '1', 'model': 'graph-R2', 'R': '2'}
    """
    parts = episode_parts(row["episode"])
    video = str(row["video"]) if row.get("video") is not None else (parts[1] if parts else "")
    first = parts[2] if parts else 0
    q = {"video": video, "ep": str(first), "T": str(int(row["horizon"])), "plan": "1"}
    model = method_model(str(row["method"]))
    if model is not None:
        q["model"] = "none" if model[0] == "none" else f"graph-R{model[1]}"
        if model[0] == "graph":
            q["R"] = str(model[1])
    return q


# --- scenes for a live demo ------------------------------------------------------------------------------
SCENE_KINDS = {
    "success": "A clean success",
    "wrong_endpoint": "A wrong-endpoint failure",
    "repeated": "A repeated-step failure",
    "long": "A long horizon (T=6)",
    "upload": "An uploaded video",
}


def _confidence(row) -> float:
    scores = row["endpoint_scores"]
    return float(min(scores)) if scores else 0.0


def choose_scenes(preds, method: str | None = None, horizons: Iterable[int] | None = None,
                  videos: Iterable[str] | None = None, upload_example: bool = False) -> list[dict]:
    """Curated examples for a live demo, chosen from a predictions table: a clean success (the
    whole plan and both endpoints right, confident endpoints, KEPP's other variants right too), a
    wrong-endpoint failure, a repeated-step failure, a long horizon (T=6, or the longest) and an
    uploaded video's episode when the records hold one. ``horizons``/``videos`` keep only episodes
    the app can open (trained horizons, playable videos). ``upload_example``: when the records hold
    no uploaded video, one of the dataset's playable videos (another success, on another video than
    the clean success) is offered as an upload instead: the Plan page loads its file the way it
    loads a user's upload and encodes it from its pixels (its query: ``source=upload``,
    ``upload=<video>``). Each scene: kind, name, description, episode, method, T, success and the
    Plan page ``query``; the order is fixed and the choice deterministic (same records, same scenes)."""
    if preds is None or not len(preds):
        return []
    methods = sorted(preds["method"].unique())
    method = method if method in methods else methods[default_method(methods)]
    df = preds[preds["method"] == method]
    if horizons is not None:
        df = df[df["horizon"].isin([int(h) for h in horizons])]
    known = None if videos is None else {str(v) for v in videos}
    local = df if known is None else df[df["video"].astype(str).isin(known)]
    right = preds[preds["success"]].groupby("episode")["method"].nunique()
    picks: list[tuple[str, object]] = []
    ok = local[local["success"]]
    if len(ok):
        recs = ok.to_dict("records")
        best = min(range(len(recs)), key=lambda i: (-int(right.get(recs[i]["episode"], 0)),
                                                    int(recs[i]["horizon"]) != min(int(h) for h in ok["horizon"]),
                                                    -_confidence(recs[i]), recs[i]["episode"]))
        picks.append(("success", ok.iloc[best]))
    for kind, pattern in (("wrong_endpoint", "wrong_endpoint"), ("repeated", "repeated_subsequence")):
        bad = local[local["patterns"].str.contains(pattern, regex=False)]
        if len(bad):
            bad = bad.assign(_c=[-_confidence(r) for r in bad.to_dict("records")])
            picks.append((kind, bad.sort_values(["horizon", "_c", "episode"]).iloc[0]))
    if len(local):
        longest = 6 if (local["horizon"] == 6).any() else int(local["horizon"].max())
        if longest > 3:
            long = local[local["horizon"] == longest].sort_values(["success", "episode"], ascending=[False, True])
            picks.append(("long", long.iloc[0]))
    if known is not None:
        up = df[~df["video"].astype(str).isin(known)]
        if len(up):
            picks.append(("upload", up.sort_values("episode").iloc[0]))
        elif upload_example and len(ok):
            return [_scene(kind, row) for kind, row in picks] + [_upload_example(ok, picks)]
    return [_scene(kind, row) for kind, row in picks]


def _upload_example(ok, picks: list) -> dict:
    """The upload scene of a dataset video: a confident success at the shortest horizon, on another
    video than the clean success's where there is one."""
    taken = {str(row["video"]) for kind, row in picks if kind == "success"}
    short = ok[ok["horizon"] == ok["horizon"].min()]
    other = ~short["video"].astype(str).isin(taken)
    short = short[other] if other.any() else short
    recs = short.to_dict("records")
    row = recs[min(range(len(recs)), key=lambda i: (-_confidence(recs[i]), recs[i]["episode"]))]
    scene = _scene("upload", row)
    query = {k: v for k, v in scene["query"].items() if k != "video"}
    scene["query"] = {"source": "upload", "upload": scene["video"], **query}
    scene["description"] = "a test video loaded as an upload (encoded from its pixels, no annotations)"
    return scene


def _scene(kind: str, row) -> dict:
    """One scene from a predictions-table row."""
    row = dict(row)
    name = SCENE_KINDS[kind]
    if kind == "long":
        name = f"A long horizon (T={int(row['horizon'])})"
    return {"kind": kind, "name": name, "episode": row["episode"], "method": row["method"],
            "T": int(row["horizon"]), "task": row.get("task"), "video": str(row.get("video")),
            "success": bool(row["success"]), "pattern": row.get("pattern") or "",
            "description": ("plan right" if row["success"] else f"failure: {pattern_label(row.get('pattern'))}"),
            "query": plan_query(row)}


# --- method x T table ----------------------------------------------------------------------------------------
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753,
        1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697)


def t_quantile_95(df: int) -> float:
    """The 95% quantile of Student's t with ``df`` degrees of freedom (two-sided 90% intervals):
    a table up to 30, the Cornish-Fisher expansion beyond.

    >>> t_quantile_95(4), round(t_quantile_95(1000), 3)
    (2.132, 1.646)
    """
    if df < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    if df <= len(_T95):
        return _T95[df - 1]
    z = 1.6448536
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def mean_ci90(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its 90% confidence interval (Student t over the values; None for one value).

    >>> mean_ci90([40.0, 50.0, 60.0])
    (50.0, 16.86)
    """
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return round(mean, 2), None
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return round(mean, 2), round(t_quantile_95(n - 1) * sd / n ** 0.5, 2)


TABLE_METRICS = ("SR", "mAcc", "mIoU")


def method_horizon_table(preds) -> tuple[object, dict[str, str]]:
    """SR, mAcc and mIoU (per episode, in %) as one row per method and a column per T and metric
    (``"T=3 SR"``, ...): mean over seeds, with ``"± h"`` (90% CI, Student t) where a method
    and horizon have several seeds. Returns ``(table of text cells, {column: best method})``; the
    table's index is the methods' readable names, ``best`` names the highest mean per column."""
    import pandas as pd

    seeds = preds["seed"].fillna(0)
    means: dict[tuple[str, str], float] = {}
    cells: dict[str, dict[str, str]] = {}
    for (method, horizon), g in preds.assign(seed=seeds).groupby(["method", "horizon"], sort=True):
        per_seed = {m: [] for m in TABLE_METRICS}
        for _, s in g.groupby("seed", sort=True):
            pred, gt = [list(p) for p in s["plan"]], [list(t) for t in s["truth"]]
            per_seed["SR"].append(float(success_rate(pred, gt)))
            per_seed["mAcc"].append(float(mean_accuracy(pred, gt)))
            per_seed["mIoU"].append(float(miou_per_episode(pred, gt)))
        for metric, vals in per_seed.items():
            col = f"T={int(horizon)} {metric}"
            mean, half = mean_ci90(vals)
            means[(col, method)] = mean
            cells.setdefault(method, {})[col] = f"{mean:.2f}" + ("" if half is None else f" ± {half:.2f}")
    cols = sorted({c for c, _ in means}, key=lambda c: (int(c.split()[0][2:]), TABLE_METRICS.index(c.split()[1])))
    best = {c: max((m for cc, m in means if cc == c), key=lambda m: means[(c, m)]) for c in cols}
    names = {m: method_label(m) for m in cells}
    table = pd.DataFrame([{c: cells[m].get(c, "—") for c in cols} for m in cells], index=[names[m] for m in cells])
    return table, {c: names[m] for c, m in best.items()}
