"""Showing one evaluated test episode: its clips, ground truth, endpoints, graph paths and plans."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.records import backend, urls
from components.ui.charts import step_cards
from components.ui.colours import PATH_TINT, PLAN_TINT, TRUTH_TINT
from components.ui.config import presenting
from components.ui.text import md, plan_text
from components.ui.names import episode_label, method_name
from components.records.recorded import Record, distinct_paths, imported_files
from components.records.views import ends_of, task_names
from kepp_core.catalog import find_method, pattern_label


def episode_names(ids, ds) -> dict[str, str]:
    """Episode id -> its readable name (task, video, steps)."""
    names = task_names(ds)
    return {e: episode_label(e, names) for e in ids}


def plan_query(row) -> dict[str, str]:
    """The Plan page's query for a predictions-table row (keeping presentation mode)."""
    q = urls.plan_query(dict(row))
    if presenting():
        q["present"] = "1"
    return q


def episode_table(df: pd.DataFrame, ds, drop: tuple[str, ...] = ()) -> pd.DataFrame:
    """A readable table of episodes (labels instead of indices and ids), without the columns ``drop``
    (what the page's own filters already say: it then fits the page's width)."""
    names = task_names(ds)
    return _table(df, ds, names).drop(columns=list(drop))


def _table(df: pd.DataFrame, ds, names: dict) -> pd.DataFrame:
    return pd.DataFrame({
        "episode": [episode_label(e, names) for e in df["episode"]],
        "T": df["horizon"], "method": _method_names(df), "correct": df["success"],
        "steps right": [sum(a == b for a, b in zip(p, g)) for p, g in zip(df["plan"], df["truth"])],
        "ground truth": [plan_text(ds.labels(g)) for g in df["truth"]],
        "plan": [plan_text(ds.labels(p)) for p in df["plan"]],
        **({"pattern": [pattern_label(p) for p in df["pattern"]]} if "pattern" in df else {}),
    })


def _method_names(df: pd.DataFrame) -> list[str]:
    """Each row's method by its display name (an imported method's with its predictions file)."""
    files = df["imported"] if "imported" in df else [None] * len(df)
    return [method_name(m, f if isinstance(f, str) else None) for m, f in zip(df["method"], files)]


def episodes_csv(df: pd.DataFrame, ds) -> bytes:
    """Every row of ``df`` as the readable episode table (:func:`episode_table`, every column), in CSV:
    the download of a paged table holds all rows of its filter, not one page."""
    return episode_table(df, ds).to_csv(index=False).encode()


def show_clips(ds, row) -> None:
    """Thumbnails of the episode's start and goal (when the video file is there)."""
    try:
        video = ds.video(str(row.video))
    except Exception:
        return
    if video.video_file is None or row.start_time is None:
        return
    cols = st.columns(2)
    for col, name, t in [(cols[0], "start", float(row.start_time)), (cols[1], "goal", float(row.goal_time))]:
        with col, backend.guarded(stop=False):
            col.image(backend.thumbnail_png(str(video.video_file), round(max(0.0, t - 0.01 if name == "goal" else t), 2), 200),
                      caption=f"{name} · {t:.1f} s of {md(video.id)}")


def endpoints_line(ds, endpoints, scores, truth, imported: str | None = None) -> str:
    """The endpoints (â₁, â_T) a plan was made between as one line of HTML (:meth:`components.records.views.Ends.html`:
    each marked right or wrong against the ground truth, with their scores), the same on the Plan page and the
    records pages. ``—`` when the method planned without them, or its plans were imported (``imported``: their
    file, which holds plans only)."""
    return ends_of(ds, endpoints, scores, truth, imported).html(presenting())


def without_paths(method: str, imported: str | None = None) -> str:
    """Why a method's record holds no graph paths, in words: it plans without the graph (a baseline, KEPP
    without the graph condition), its plan is the graph's path itself, its paths are not recorded, or its
    plans were imported (``imported``: their file, which holds plans only).

    >>> without_paths("random"), without_paths("graph-pred")
    ('Random: plans without graph paths', "P²KG zero-shot, predicted endpoints: its plan is the graph's own path")
    >>> without_paths("vpn", "T3.json")
    'vpn (imported: T3.json): graph paths not recorded (the imported predictions hold plans only)'
    """
    if imported:
        return f"{method_name(method, imported)}: graph paths not recorded (the imported predictions hold plans only)"
    entry = find_method(method)
    if entry is None or not entry.graph:
        return f"{method_name(method)}: plans without graph paths"
    if entry.plan_model is None:
        return f"{method_name(method)}: its plan is the graph's own path"
    return f"{method_name(method)}: its graph paths are not in the records"


def show_methods(ds, rows: list, titles: list[str]) -> None:
    """Methods side by side on one episode with aligned rows: title, endpoints, each graph path
    (an empty cell where a method used fewer), plan."""
    n = len(rows)
    recs = [None if row is None else Record.of_row(row._asdict()) for row in rows]
    for col, rec, title in zip(st.columns(n), recs, titles):
        col.markdown(f"**{md(title)}** · {md(rec.verdict)}" if rec is not None
                     else f"**{md(title)}** · no prediction for this episode")
    for col, rec in zip(st.columns(n), recs):
        col.markdown(endpoints_line(ds, rec.endpoints, rec.endpoint_scores, rec.truth, rec.imported)
                     if rec is not None else "—", unsafe_allow_html=True)
    merged = [distinct_paths(rec.paths, rec.path_scores) if rec is not None else [] for rec in recs]
    for k in range(max(map(len, merged), default=0)):  # identical paths once, their ranks named together
        for col, paths, rec in zip(st.columns(n), merged, recs):
            with col:
                if k < len(paths):
                    (ranks, path, score), (kind, score_name, _) = paths[k], rec.path_words
                    step_cards(ds.labels(path), colour=PATH_TINT, ids=path,
                               title=f"{kind}{'s' if len(ranks) > 1 else ''} " + " = ".join(map(str, ranks))
                               + (f" · {score_name}={score:.3f}" if score is not None else ""))
                elif paths:
                    st.caption("(no other graph path)")
                elif k == 0 and rec is not None:  # a baseline or an imported method: what it is, not a missing path
                    st.caption(md(without_paths(rec.method, rec.imported)))
    for col, row in zip(st.columns(n), rows):
        with col:
            if row is not None:
                step_cards(ds.labels(row.plan), [a == b for a, b in zip(row.plan, row.truth)], title="plan",
                           colour=PLAN_TINT, ids=row.plan)


def show_episode(ds, rows: pd.DataFrame, methods: list[str]) -> None:
    """One episode: clips, ground truth, then the chosen methods side by side (aligned rows)."""
    first = rows.iloc[0]
    show_clips(ds, first)
    step_cards(ds.labels(first.truth), title="ground truth", colour=TRUTH_TINT, ids=first.truth)
    if not methods:
        return
    picked = []
    for m in methods:
        sel = rows[rows["method"] == m]
        picked.append(next(sel.itertuples()) if len(sel) else None)
    files = imported_files(rows)
    show_methods(ds, picked, [method_name(m, files.get(m)) for m in methods])
