"""The episode map on the Results page: the test episodes of one horizon placed by the PCA of
their start and goal windows (:func:`kepp_core.api.episode_map`), coloured by the chosen method's
success or by task; hovering names the episode, a click opens it on the Plan page.

:func:`map_points` and :func:`map_figure` are plain Python (tested without a browser); at most
:data:`MAP_CAP` points are drawn (a fixed random sample beyond it, said under the map), so a
COIN-scale world's tens of thousands of episodes stay a responsive drawing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import streamlit as st

from components.records import backend, episodes
from components.ui.colours import MIXED, RIGHT, WHITE, WRONG
from components.ui.pages import PAGES
from components.ui.charts import show_figure
from components.ui.names import episode_label, namer
from components.ui.text import md, plan_text, plot_text
from kepp_core import catalog

__all__ = ["COLOUR_BY", "MAP_CAP", "map_figure", "map_points", "map_section"]

MAP_CAP = 4000  # points drawn at most: plotly's SVG scatter still answers hover and click at once
COLOUR_BY = {"success": "plan right or wrong", "task": "task"}
OUTCOME_COLOURS = {"right": RIGHT, "wrong": WRONG, "mixed": MIXED}
TASK_LEGEND_MAX = 24  # more tasks than this: colours without a legend (hover names the task)


def _outcome(right: int, seeds: int) -> str:
    """An episode's outcome over its seeds: right, wrong, or mixed."""
    return "right" if right == seeds else "wrong" if right == 0 else "mixed"


def map_points(coords: Mapping, rows: pd.DataFrame, labels, task_names: Mapping[str, str],
               cap: int = MAP_CAP, seed: int = 0) -> tuple[pd.DataFrame, int]:
    """The map's points: the episodes of ``coords`` that ``rows`` (one method's records at one
    horizon, any number of seeds) evaluated, with their place, task, outcome over the seeds and
    hover text (dataset text HTML-escaped: plotly reads hover text as markup); at most ``cap`` of
    them, a fixed random sample. ``labels(plan)`` names a plan's steps. Returns ``(points, how
    many episodes the map has)``."""
    place = pd.DataFrame({"episode": coords["episodes"], "x": coords["x"], "y": coords["y"]})
    per = rows.groupby("episode", sort=False).agg(task=("task", "first"), video=("video", "first"),
                                                  truth=("truth", "first"), right=("success", "sum"),
                                                  seeds=("success", "size")).reset_index()
    points = place.merge(per, on="episode", how="inner")
    total = len(points)
    if total > cap:
        keep = np.sort(np.random.default_rng(seed).choice(total, cap, replace=False))
        points = points.iloc[keep].reset_index(drop=True)
    points["outcome"] = [_outcome(int(r), int(n)) for r, n in zip(points["right"], points["seeds"])]
    points["task_name"] = [task_names.get(t, str(t)) for t in points["task"]]
    points["hover"] = [_hover(row, labels, task_names) for row in points.itertuples()]
    return points, total


def _hover(row, labels, task_names: Mapping[str, str]) -> str:
    """One point's hover: the episode's name, its steps and whether the plan was right."""
    name = episode_label(row.episode, dict(task_names))
    outcome = {"right": "plan right", "wrong": "plan wrong"}.get(row.outcome, f"plan right in {row.right} of {row.seeds} seeds")
    return (f"<b>{plot_text(name)}</b><br>{plot_text(plan_text(labels(row.truth)))}<br>{outcome}"
            "<br><i>click to open in Plan</i>")


def map_figure(points: pd.DataFrame, colour_by: str, title: str = ""):
    """The scatter of :func:`map_points`' points, one trace per outcome or task (one trace with a
    colour per task and no legend past :data:`TASK_LEGEND_MAX` tasks); each point carries its
    episode id (``customdata``) for the click."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    palette = qualitative.Dark24
    if colour_by == "success":
        groups = [(o, points[points["outcome"] == o], OUTCOME_COLOURS[o]) for o in OUTCOME_COLOURS]
    else:
        tasks = sorted(points["task"].astype(str).unique())
        colour = {t: palette[i % len(palette)] for i, t in enumerate(tasks)}
        if len(tasks) > TASK_LEGEND_MAX:
            groups = [("", points, [colour[str(t)] for t in points["task"]])]
        else:
            groups = [(points.loc[points["task"] == t, "task_name"].iloc[0], points[points["task"] == t], colour[t])
                      for t in tasks]
    for name, part, colour in groups:
        if not len(part):
            continue
        fig.add_trace(go.Scatter(x=part["x"], y=part["y"], mode="markers", name=plot_text(name),
                                 showlegend=bool(name), customdata=part["episode"], text=part["hover"],
                                 hovertemplate="%{text}<extra></extra>",
                                 marker=dict(color=colour, size=8, opacity=0.8, line=dict(width=0.5, color=WHITE))))
    fig.update_layout(title=plot_text(title), height=540, margin=dict(l=10, r=10, t=50, b=10), clickmode="event+select",
                      legend=dict(itemclick=False, itemdoubleclick=False), dragmode="pan",
                      xaxis=dict(title="PC 1", zeroline=False), yaxis=dict(title="PC 2", zeroline=False))
    return fig


def _clicked(prefix: str) -> None:
    """on_select of the map: remember the clicked episode (the next run opens it in Plan)."""
    points = st.session_state[f"{prefix}_map_chart"].selection.points
    if points and points[0].get("customdata") is not None:
        st.session_state[f"{prefix}_map_open"] = str(points[0]["customdata"])


def _open_clicked(prefix: str, rows: pd.DataFrame) -> None:
    """A clicked episode opens on the Plan page (with the method's planning model, planned)."""
    episode = st.session_state.pop(f"{prefix}_map_open", None)
    if episode is None:
        return
    hit = rows[rows["episode"] == episode]
    if len(hit):
        st.switch_page(PAGES["plan"].path, query_params=episodes.plan_query(hit.iloc[0]))


def map_section(link, prefix: str, cfg, ds, rows: pd.DataFrame, method: str, horizon: int) -> None:
    """The "Episode map" section: a toggle (``map=1`` in the URL; nothing is computed or sent to
    the browser while it is off), the colouring (``colour=task``) and the map of ``rows``
    (``method``'s records at ``horizon``)."""
    _open_clicked(prefix, rows)
    link.seed(f"{prefix}_map", "map", [True, False], lambda t: t == "1", absent="0")
    shown = st.toggle("Episode map", key=f"{prefix}_map", help="the test episodes placed by the PCA of their start "
                      "and goal observation windows; a click opens an episode in Plan")
    link.keep(map="1" if shown else None)
    if not shown or not len(rows):
        return
    link.seed(f"{prefix}_map_colour", "colour", list(COLOUR_BY))
    colour_by = st.radio("Colour by", list(COLOUR_BY), horizontal=True, key=f"{prefix}_map_colour",
                         format_func=COLOUR_BY.get)
    link.keep(colour=None if colour_by == "success" else colour_by)
    setting = str(rows["setting"].dropna().mode().iloc[0]) if rows["setting"].notna().any() else catalog.DEFAULT_SETTING
    with backend.guarded(stop=False):
        coords = backend.episode_map(cfg, ds, horizon, setting)
        names = {t: ds.tasks[t].name for t in ds.tasks}
        points, total = map_points(coords, rows, ds.labels, names)
        if not total:
            st.info("None of these records' episodes is on the map (the map holds the dataset's test episodes "
                    "with features): check that the records belong to this dataset.")
            return
        name = namer(backend.method_names(cfg))(method)  # an imported one says so, with its file
        fig = map_figure(points, colour_by, f"T={horizon} test episodes · {name}")
        show_figure(fig, f"kepp_episode_map_T{horizon}", key=f"{prefix}_map_fig", on_select=lambda: _clicked(prefix),
                    selection_mode="points", chart_key=f"{prefix}_map_chart")
        share = sum(coords["explained"]) * 100
        shown_text = f"{len(points):,} of {total:,} episodes (a fixed random sample)" if len(points) < total \
            else f"all {total:,} episodes"
        st.caption(f"Showing {shown_text}; the two axes explain {share:.0f}% of the windows' variance. "
                   + (f"Colour: whether {md(name)}'s plan is right (over all seeds)"
                      if colour_by == "success" else "Colour: the task")
                   + ". Click a point to open its episode in Plan.")
