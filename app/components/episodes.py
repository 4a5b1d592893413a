"""Showing one evaluated test episode: its clips, ground truth, endpoints, graph paths and plans."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import backend
from components.charts import step_cards
from components.text import md, plan_text


def episode_table(df: pd.DataFrame, ds) -> pd.DataFrame:
    """A readable table of episodes (labels instead of indices)."""
    return pd.DataFrame({
        "episode": df["episode"], "task": [ds.tasks[t].name if t in ds.tasks else t for t in df["task"]],
        "T": df["horizon"], "method": df["method"], "correct": df["success"],
        "steps right": [sum(a == b for a, b in zip(p, g)) for p, g in zip(df["plan"], df["truth"])],
        "ground truth": [plan_text(ds.labels(g)) for g in df["truth"]],
        "plan": [plan_text(ds.labels(p)) for p in df["plan"]],
        **({"pattern": df["pattern"]} if "pattern" in df else {}),
    })


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


def show_method(ds, row, title: str) -> None:
    """Endpoints, graph paths and plan of one method on one episode, against the truth."""
    st.markdown(f"**{md(title)}** · {'success' if row.success else 'failure'}")
    if row.endpoints is not None:
        ok = [row.endpoints[0] == row.truth[0], row.endpoints[1] == row.truth[-1]]
        scores = row.endpoint_scores or [None, None]
        st.markdown(" · ".join(
            f"{name} **{md(ds.actions[a])}** {'✓' if k else '✗'}" + (f" ({s:.2f})" if s is not None else "")
            for name, a, k, s in zip(["â₁", "â_T"], row.endpoints, ok, scores)))
    for k, p in enumerate(row.paths or []):
        score = row.path_scores[k] if row.path_scores else None
        step_cards(ds.labels(p), title=f"graph path {k + 1}" + (f" · p={score:.3f}" if score is not None else ""),
                   colour="#ede7f6")
    step_cards(ds.labels(row.plan), [a == b for a, b in zip(row.plan, row.truth)], title="plan", colour="#fff8e1")


def show_episode(ds, rows: pd.DataFrame, methods: list[str]) -> None:
    """One episode: clips, ground truth, then the chosen methods side by side."""
    first = rows.iloc[0]
    show_clips(ds, first)
    step_cards(ds.labels(first.truth), title="ground truth", colour="#e8f5e9")
    cols = st.columns(len(methods)) if methods else []
    for col, m in zip(cols, methods):
        sel = rows[rows["method"] == m]
        with col:
            if len(sel):
                show_method(ds, sel.iloc[0], m)
            else:
                st.info(f"No {m} prediction for this episode.")
