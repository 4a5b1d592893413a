"""The Plan page's result, laid out for one screen: the input (task, video, steps, the start and
goal frames) and the plan with its verdict on the left, the plan graph on the right, brought into
view when a new result arrives (Plan, Open in Plan, a link, a playlist's next item).

A record (:class:`components.recorded.Record`) and a live result are laid out the same way and in
the same words as the records pages (:mod:`components.episodes`); each view names its method."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import streamlit as st

from components import backend, episodes, plans, scenes
from components.charts import step_cards
from components.colours import RIGHT, WRONG
from components.config import presenting
from components.names import episode_label
from components.recorded import distinct_paths
from components.text import md

__all__ = ["ANCHOR", "bring_into_view", "columns", "paths_cards", "show_head", "show_live", "show_record"]

ANCHOR = "kepp-result"  # the class of the element a new result scrolls to
LIVE_ANCHOR = "kepp-live-result"  # the live re-plan's, below a record
SCROLLED = "plan_scrolled"  # anchor -> the last view brought into view (a rerun of the same view does not scroll)
PLAN_COLOUR, TRUTH_COLOUR, PATH_COLOUR = "#fff8e1", "#e8f5e9", "#ede7f6"


def bring_into_view(view: object, anchor: str = ANCHOR, scroll: bool = True) -> bool:
    """Mark the result's top (``anchor``: its class) and, when ``view`` (what identifies the result
    shown) is new to this session, scroll the page so that the result fills the screen (unless
    ``scroll`` is False: a result above it was brought into view in this run). True when it scrolled."""
    st.markdown(f'<div class="{anchor}" style="scroll-margin-top:{88 if presenting() else 64}px"></div>',
                unsafe_allow_html=True)
    seen = st.session_state.setdefault(SCROLLED, {})
    if seen.get(anchor) == repr(view):
        return False
    seen[anchor] = repr(view)
    if scroll:
        scenes.scroll_to(f".{anchor}")
    return scroll


def columns():
    """The result's two columns: the plan (left) and its graph (right, the wider)."""
    return st.columns([1, 1] if presenting() else [9, 11], gap="medium")


def show_head(ds, episode: str | None, video_path: str | None, start: float | None, goal: float | None,
              verdict: str, what: str = "") -> None:
    """The slide's head: the frames at the start and the goal, then the episode in words (task, video,
    steps; ``what`` for an upload) over the view's name and verdict (``verdict``: HTML)."""
    names = episodes.task_names(ds)
    *frames, words = st.columns([0.85, 0.85, 2.5] if presenting() else [1, 1, 2.2], gap="small",
                                vertical_alignment="center")
    if video_path and start is not None and goal is not None:
        for col, name, t in zip(frames, ("start", "goal"), (start, goal)):
            with col.container(key=f"kepp_slide_{name}"), backend.guarded(stop=False):
                st.image(backend.thumbnail_png(video_path, round(max(0.0, t), 2), 200),
                         caption=f"{name} {t:.1f} s", width="stretch")
    text = html.escape(episode_label(episode, names) if episode else what)
    words.markdown(f'<div class="kepp-input">{text}</div><div class="kepp-verdict-line">{verdict}</div>',
                   unsafe_allow_html=True)


def paths_cards(ds, paths: Sequence[Sequence[int]], scores: Sequence[float], kind: str = "graph path",
                shown: Mapping[tuple, str] | None = None) -> None:
    """The graph paths a plan was given, each distinct path once (its ranks named together). In presentation
    mode a path the slide shows already (``shown``: steps -> what it is, the plan or the ground truth) is one
    line that says so, not its cards again: the slide keeps to one screen."""
    for ranks, path, score in distinct_paths(paths, scores):
        name = f"{kind}{'s' if len(ranks) > 1 else ''} " + " = ".join(map(str, ranks))
        same = (shown or {}).get(tuple(path)) if presenting() else None
        if same:
            st.markdown(f'<div class="kepp-small kepp-same-path" style="color:#444">{html.escape(name)}'
                        + (f" · p={score:.3f}" if score is not None else "") + f": the same steps as {html.escape(same)}</div>",
                        unsafe_allow_html=True)
            continue
        step_cards(ds.labels(path), colour=PATH_COLOUR,
                   title=name + (f" · p={score:.3f}" if score is not None else "")
                   + (" (the graph has no other path of this length)" if len(ranks) > 1 else ""))


def _verdict_html(verdict: str) -> str:
    """A verdict in its colour (success green, failure red), escaped."""
    colour = RIGHT if verdict == "success" else WRONG
    return f'<span style="color:{colour};font-weight:600">{html.escape(verdict)}</span>'


def _plan_and_truth(ds, plan: Sequence[int], truth: Sequence[int] | None, title: str) -> dict[tuple, str]:
    """The plan's cards (✓/✗ against the truth) and the ground truth's; what they show (steps -> the
    plan, the ground truth), for the graph paths below them."""
    right = None if truth is None else [a == b for a, b in zip(plan, truth)]
    step_cards(ds.labels(plan), right, title=title, colour=PLAN_COLOUR)
    if truth is not None and presenting() and tuple(plan) == tuple(truth):  # a slide: the same cards once
        st.markdown(f'<div class="kepp-small kepp-same-path" style="color:#444">ground truth · {len(truth)}/{len(truth)} '
                    "steps right: the same steps as the plan</div>", unsafe_allow_html=True)
    elif truth is not None:
        step_cards(ds.labels(truth), title=f"ground truth · {sum(right)}/{len(truth)} steps right", colour=TRUTH_COLOUR)
    return {**({} if truth is None else {tuple(truth): "the ground truth"}), tuple(plan): "the plan"}


def show_record(ds, rec, video_path: str | None) -> None:
    """A record as the records pages show it: the input (task, video, steps, the start and goal
    frames), its method and verdict, the endpoints it planned between, its plan against the ground
    truth, and the graph paths it was given."""
    show_head(ds, rec.episode, video_path, rec.start_time, None if rec.goal_time is None else max(0.0, rec.goal_time - 0.01),
              f'<span class="kepp-verdict" data-success="{str(rec.success).lower()}"><b>Recorded · '
              f'{html.escape(rec.label)}</b> · {_verdict_html(rec.verdict)}</span>')
    st.markdown(episodes.endpoints_line(ds, rec.endpoints, rec.endpoint_scores, rec.truth), unsafe_allow_html=True)
    shown = _plan_and_truth(ds, rec.plan, rec.truth, "plan (recorded)")
    paths_cards(ds, rec.paths, rec.path_scores, shown=shown)
    seed = f"seed {rec.seed}" if rec.seed is not None else ""
    if presenting():  # one line: the slide keeps to one screen
        st.caption(f"From the prediction records ({md(rec.source)}{', ' + seed if seed else ''}).")
    else:
        st.caption(f"The prediction records' {md(rec.label)} on this episode" + (f" ({seed})" if seed else "")
                   + f", {md(rec.source)}: the plan Failure cases and Results show.")


def show_live(ds, result, truth: Sequence[int] | None, label: str, condition: str, R: int,
              head: tuple | None = None) -> None:
    """A live result: the method the live planner is, its verdict where the truth is known, the
    endpoints its graph paths run between (the step model's, or the text tower's), the plan against the ground truth and the graph paths. ``head``: the input
    ``(episode, video_path, start, goal, what)`` when this view opens the result (no record above it)."""
    right = truth is not None and tuple(result.plan) == tuple(truth)
    verdict = (f'<span class="kepp-verdict kepp-live" data-success="{str(right).lower()}"><b>Live · '
               f'{html.escape(label)}</b>' + ("" if truth is None else " · " + _verdict_html("success" if right else "failure"))
               + "</span>")
    if head is not None:
        show_head(ds, *head[:4], verdict, what=head[4])
    else:
        st.markdown(verdict, unsafe_allow_html=True)
    whose, ends, scores = result.path_ends  # the step model's, or the text tower's with no trained model
    st.markdown(f"{html.escape(plans.endpoints_heading(whose))}: " + episodes.endpoints_line(ds, ends, scores, truth),
                unsafe_allow_html=True)
    shown = _plan_and_truth(ds, result.plan, truth, "plan (planned now)")
    if condition == "graph":
        if result.fallback:
            st.caption("No path of this length joins â₁ and â_T in the graph: the paths are KEPP's fallback "
                       "variations of the two endpoints.")
        paths_cards(ds, result.paths[:R], result.path_scores[:R], "fallback path" if result.fallback else "graph path",
                    shown=shown)
    else:
        st.caption("This planning model has no graph condition: no graph paths were recommended to it.")
