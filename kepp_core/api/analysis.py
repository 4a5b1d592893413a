"""Looking at a graph and at evaluated plans: a task's expert
trajectories, transition matrices, prediction records as one table, metrics per method and
horizon, and the paper's failure analysis.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from kepp_core import catalog
from kepp_core.paths import cache_folder
from kepp_core.errors import KeppError
from kepp_core.evaluation.failures import (
    PATTERN_LABELS,
    PATTERNS,
    EpisodeOutcome,
    Failure,
    FailureStats,
    classify_failures,
    failure_patterns_batch,
    failure_stats,
    stored_paths,
)
from kepp_core.evaluation.records import read_records
from kepp_core.evaluation.stats import mean_ci
from kepp_core.graph import expert_trajectories, transition_matrix
from kepp_core.io import atomic_write_json, read_json
from kepp_core.metrics import (
    mean_accuracy,
    miou_per_batch,
    miou_per_episode,
    success_rate,
)

__all__ = ["PATTERNS", "PATTERN_LABELS", "RECORD_COLUMNS", "SCENE_KINDS", "TABLE_METRICS", "choose_scenes", "compare_default",
           "episode_label", "episode_parts", "method_horizon_table", "method_label", "method_model",
           "pattern_label", "plan_model_id", "plan_query", "remembered_scenes", "EpisodeOutcome", "Failure",
           "FailureStats", "classify_failures", "default_method", "expert_view", "failure_analysis", "failure_stats",
           "heatmap_order", "metrics_table", "outcomes", "read_predictions", "transitions"]

RECORD_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "method", "truth", "plan", "endpoints",
                  "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                  "goal_time", "source"]


# --- the graph ------------------------------------------------------------------------------------
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
    and method, with its outcome and failure patterns (columns :data:`RECORD_COLUMNS`).

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
    used_paths = {k: [tuple(p) for p in paths[:k]] for k in {0, *k_of.values()}}  # shared by the methods
    m = len(plans)
    for c, v in (("episode", episode), ("task", rec.get("task")), ("video", rec.get("video")),
                 ("horizon", int(rec.get("T") or len(rec["gt"]))), ("setting", rec.get("setting")),
                 ("seed", rec.get("seed")), ("start_time", rec.get("start_time")),
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


def metrics_table(preds):
    """SR, mAcc and both mIoU variants (in %) per method, horizon and setting of a predictions table."""
    import pandas as pd

    rows = []
    for (method, horizon, setting), g in preds.groupby(["method", "horizon", "setting"], sort=True, dropna=False):
        pred, gt = [list(p) for p in g["plan"]], [list(t) for t in g["truth"]]
        rows.append({"method": method, "name": method_label(method), "T": int(horizon),
                     "setting": setting, "episodes": len(g),
                     "SR": round(float(success_rate(pred, gt)), 2), "mAcc": round(float(mean_accuracy(pred, gt)), 2),
                     "mIoU (episode)": round(float(miou_per_episode(pred, gt)), 2),
                     "mIoU (batch 256)": round(float(miou_per_batch(pred, gt)), 2)})
    return pd.DataFrame(rows)


def default_method(methods: list[str]) -> int:
    """Index of the method to show first: KEPP if it was evaluated (:func:`kepp_core.catalog.first_shown`).

    >>> default_method(["random", "kepp-R1", "kepp-R2"])
    2
    """
    first = catalog.first_shown(methods)
    return methods.index(first) if first is not None else 0


def compare_default(method: str, available: Sequence[str], most: int = 4) -> list[str]:
    """The methods to compare ``method`` with on one episode, first: itself, then those of
    :data:`kepp_core.catalog.COMPARED_WITH` the episode has (``most`` in all).

    >>> compare_default("kepp-R3", ["random", "kepp-R3", "kepp-nograph"])
    ['kepp-R3', 'kepp-nograph', 'random']
    """
    return ([method] + [m for m in catalog.COMPARED_WITH if m in available and m != method])[:most]


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
    """A method's readable name (:func:`kepp_core.catalog.method_label`; the name itself when unknown).

    >>> method_label("kepp-R2")
    'KEPP R=2'
    """
    return catalog.method_label(method)


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
    """The planning model (condition, trained R) the evaluation ``method`` ran, when the Plan page
    can run it (:attr:`kepp_core.catalog.MethodEntry.plan_page_role`), or None (a baseline).

    >>> method_model("kepp-R2"), method_model("kepp-nograph"), method_model("random")
    (('graph', 2), ('none', 1), None)
    """
    entry = catalog.find_method(method)
    role = entry.plan_page_role if entry is not None else None
    return (role.condition, role.R) if role is not None else None


def plan_model_id(condition: str, R: int = 1) -> str:
    """The Plan page's ``model=`` id of a planning model (condition, trained R):
    :func:`kepp_core.catalog.plan_model_id`.

    >>> plan_model_id("graph", 3), plan_model_id("none")
    ('graph-R3', 'none')
    """
    return catalog.plan_model_id(catalog.ModelRole("plan", condition, R if condition == "graph" else 1))


def plan_query(row) -> dict[str, str]:
    """The Plan page's URL query that opens a predictions-table row's episode (and plans it):
    video, first step, T, and the row's planning model (:func:`plan_model_id`) and R when the
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
        q["model"] = plan_model_id(*model)
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


def _confidence(scores) -> float:
    """The smaller of a row's two endpoint scores (0 without a step model)."""
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
    if len(ok):  # the columns, not a dict per row: tens of thousands of rows
        shortest = int(ok["horizon"].min())
        keys = zip(ok["episode"], ok["horizon"], ok["endpoint_scores"])
        best = min(enumerate(keys), key=lambda ik: (-int(right.get(ik[1][0], 0)), int(ik[1][1]) != shortest,
                                                     -_confidence(ik[1][2]), ik[1][0]))[0]
        picks.append(("success", ok.iloc[best]))
    for kind, pattern in (("wrong_endpoint", "wrong_endpoint"), ("repeated", "repeated_subsequence")):
        bad = local[local["patterns"].str.contains(pattern, regex=False)]
        if len(bad):
            bad = bad.assign(_c=[-_confidence(x) for x in bad["endpoint_scores"]])
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


_SCENES_FORMAT = "kepp-scenes"


def remembered_scenes(files: Sequence[str | Path], read: Callable[[], object], horizons: Iterable[int] | None = None,
                      videos: Iterable[str] | None = None, upload_example: bool = False) -> list[dict]:
    """:func:`choose_scenes` of the records in ``files``, remembered on disk across runs:
    ``read()`` gives their table (:func:`read_predictions`) and is called only when the scenes of
    these files and arguments are not in ``$KEPP_HOME/scenes/`` yet. The key is made of the
    files' paths, sizes and modification times, the horizons, the videos and ``upload_example``,
    so a changed file is judged again. The app's first page shows its scenes without judging
    every record at each start (at COIN scale, 134,000 rows: 2 to 3 s). The folder is a cache:
    deleting it is safe, and one that cannot be written is skipped."""
    stats = [[str(f), st.st_size, st.st_mtime_ns] for f, st in ((f, os.stat(f)) for f in files)]
    hs = sorted(int(h) for h in horizons) if horizons is not None else None
    ids = hashlib.sha1("\n".join(sorted(map(str, videos))).encode()).hexdigest() if videos is not None else None
    key = json.dumps([stats, hs, ids, bool(upload_example)])
    path = cache_folder("scenes") / f"{hashlib.sha1(key.encode()).hexdigest()}.json"
    try:
        data = read_json(path)
        if data.get("format") == _SCENES_FORMAT and data.get("key") == key:
            return data["scenes"]
    except (OSError, ValueError, AttributeError, KeyError, KeppError):
        pass  # not remembered yet (or not readable): judge the records
    scenes = choose_scenes(read(), horizons=horizons, videos=videos, upload_example=upload_example)
    try:
        atomic_write_json(path, {"format": _SCENES_FORMAT, "key": key, "scenes": scenes})
    except KeppError:  # a cache folder that cannot be written: the scenes are chosen again next time
        pass
    return scenes


def _upload_example(ok, picks: list) -> dict:
    """The upload scene of a dataset video: a confident success at the shortest horizon, on another
    video than the clean success's where there is one."""
    taken = {str(row["video"]) for kind, row in picks if kind == "success"}
    short = ok[ok["horizon"] == ok["horizon"].min()]
    other = ~short["video"].astype(str).isin(taken)
    short = short[other] if other.any() else short
    keys = list(zip(short["endpoint_scores"], short["episode"]))
    row = short.iloc[min(range(len(keys)), key=lambda i: (-_confidence(keys[i][0]), keys[i][1]))]
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
            mean, half = mean_ci(vals)  # 90%, Student t: the interval of every result table
            means[(col, method)] = round(mean, 2)
            cells.setdefault(method, {})[col] = f"{mean:.2f}" + ("" if math.isnan(half) else f" ± {half:.2f}")
    cols = sorted({c for c, _ in means}, key=lambda c: (int(c.split()[0][2:]), TABLE_METRICS.index(c.split()[1])))
    best = {c: max((m for cc, m in means if cc == c), key=lambda m: means[(c, m)]) for c in cols}
    names = {m: method_label(m) for m in cells}
    table = pd.DataFrame([{c: cells[m].get(c, "—") for c in cols} for m in cells], index=[names[m] for m in cells])
    return table, {c: names[m] for c, m in best.items()}
