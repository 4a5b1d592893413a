"""The Plan page's result, laid out for one screen: the input (task, video, steps, the start and
goal frames) and the plan with its verdict on the left, the plan graph on the right, brought into
view when a new result arrives (Plan, Open in Plan, a link, a playlist's next item).

A record and a live result are laid out the same way and in the same words as the records pages
(:mod:`components.records.episodes`); each view names its method. What a view shows is described once
(:class:`components.records.views.PlanView`, labels resolved); these functions only draw it."""

from __future__ import annotations

import time
from collections.abc import Sequence

import streamlit as st

from components.records import backend
from components.plan import plans
from components.ui import scripts
from components.ui.charts import step_cards
from components.ui.colours import PATH_TINT, PLAN_TINT, RIGHT, SUBTLE, TRUTH_TINT, WRONG
from components.ui.config import presenting
from components.plan.decision import SYMBOLS
from components.records.views import PathView, PlanView
from components.records.slides import SIDES
from components.ui.text import html_text, md, page_text

__all__ = ["ANCHOR", "SIDES", "bring_into_view", "clip_words", "columns", "head_html", "paths_cards", "scroll_to",
           "shown_marker", "show_head", "show_live", "show_pair", "show_record", "verdict_html"]

ANCHOR = "kepp-result"  # the class of the element a new result scrolls to
SCROLLED = "plan_scrolled"  # anchor -> the last view brought into view (a rerun of the same view does not scroll)


def bring_into_view(view: object, anchor: str = ANCHOR, scroll: bool = True) -> bool:
    """Mark the result's top (``anchor``: its class) and, when ``scroll`` (the result arrived with a link,
    a scene, a slide or a press: :class:`components.plan.decision.Decision`) and ``view`` (what identifies
    the result shown) is new to this session, scroll the page so that the result fills the screen. A page
    opened without asking for a result stays at its top. True when it scrolled."""
    st.markdown(f'<div class="{anchor}" style="scroll-margin-top:{88 if presenting() else 64}px"></div>',
                unsafe_allow_html=True)
    # the scroll script's place, there on every run: the result below keeps its place among the page's
    # elements (else a run that scrolls moves it, and the browser draws it anew beside the old one)
    slot = st.empty()
    seen = st.session_state.setdefault(SCROLLED, {})
    if not scroll or seen.get(anchor) == repr(view):
        return False
    seen[anchor] = repr(view)
    with slot:
        scroll_to(f".{anchor}")
    return True


def scroll_to(selector: str) -> None:
    """Scroll the page so that ``selector`` is at the top of the window (once, after this run)."""
    st.html(scripts.call("kepp-scroll.js", {"selector": selector, "nonce": time.time()}), unsafe_allow_javascript=True)


def columns(pair: bool = False):
    """The result's two columns: the plan (left) and its graph (right, the wider); ``pair``: an A/B slide's,
    whose three rows of cards take the wider left column (a step's name on one line keeps them on one screen)."""
    if pair:
        return st.columns([13, 10] if presenting() else [1, 1], gap="medium")
    return st.columns([1, 1] if presenting() else [9, 11], gap="medium")


def clip_words(name: str, clip: Sequence[float]) -> str:
    """A clip as every caption of the page names it (the sliders', the thumbnails', the result's).

    >>> clip_words("start", (0.0, 3.0))
    'start clip 0.0–3.0 s'
    """
    return f"{name} clip {clip[0]:.1f}–{clip[1]:.1f} s"


def show_head(episode: str, video_path: str | None, clips: tuple | None, verdict: str, note: str | None = None) -> None:
    """The slide's head: the frames at the start of the start clip and the end of the goal clip (``clips``:
    ``(start, goal)`` in seconds, the clips the view was planned from, named as the sliders name them), then
    the episode in words (:attr:`PlanView.episode`: task, video, steps, or what an upload is) over the view's
    name and verdict (``verdict``: HTML; ``note``: the hover text that says what its method's words mean)."""
    *frames, words = st.columns([0.6, 0.6, 3.0] if presenting() else [1, 1, 2.2], gap="small",
                                vertical_alignment="center")
    if video_path and clips is not None:
        for col, name, clip, t in zip(frames, ("start", "goal"), clips, (clips[0][0], max(clips[1][0], clips[1][1] - 0.01))):
            with col.container(key=f"kepp_slide_{name}"), backend.guarded(stop=False):
                st.image(backend.thumbnail_png(video_path, round(max(0.0, t), 2), 200),
                         caption=clip_words(name, clip), width="stretch")
    elif clips is not None:  # a video of features alone: no frames, the clips named where they would be
        for col, name, clip in zip(frames, ("start", "goal"), clips):
            col.markdown(f'<div class="kepp-window"><b>{html_text(clip_words(name, clip))}</b></div>',
                         unsafe_allow_html=True, help="a video of features alone: no frame to show")
    words.markdown(head_html(episode, verdict), unsafe_allow_html=True, help=note)


def head_html(text: str, verdict: str) -> str:
    """The episode in words (escaped: :func:`~components.ui.text.html_text`) over the view's verdict
    (HTML made by :func:`verdict_html`)."""
    return f'<div class="kepp-input">{html_text(text)}</div><div class="kepp-verdict-line">{verdict}</div>'


def paths_cards(paths: Sequence[PathView], kind: str = "graph path", score_name: str = "p", note: str = "paths") -> None:
    """The graph paths a plan was given (:attr:`PlanView.paths`), or a K-best row's own plans (``kind``
    ``K-best plan``, ``score_name`` ``log score``, ``note`` ``kbest``: :data:`SYMBOLS`' line that says what they
    are), each distinct path once (its ranks named together), and what they are. In presentation mode a path the
    slide shows already (:attr:`PathView.same`: the plan or the ground truth) is one line that says so, not its
    cards again: the slide keeps to one screen."""
    for path in paths:
        ranks, score = path.ranks, path.score
        name = f"{kind}{'s' if len(ranks) > 1 else ''} " + " = ".join(map(str, ranks))
        same = path.same if presenting() else None
        if same:
            st.markdown(f'<div class="kepp-small kepp-same-path" style="color:{SUBTLE}">{html_text(name)}'
                        + (f" · {score_name}={score:.3f}" if score is not None else "") + f": the same steps as {html_text(same)}</div>",
                        unsafe_allow_html=True)
            continue
        step_cards(path.steps, colour=PATH_TINT, ids=path.ids,
                   title=name + (f" · {score_name}={score:.3f}" if score is not None else "")
                   + (" (the graph has no other path of this length)" if len(ranks) > 1 else ""))
    if paths:
        st.caption(SYMBOLS[note])


def verdict_html(view: str, label: str, success: bool, verdict: str | None) -> str:
    """A view's name (``Recorded``, ``Live``), its method's label and its verdict (success green, failure
    red; none where the truth is not known), as HTML for Streamlit's Markdown, the label escaped.

    >>> "&lt;b&gt;" in verdict_html("Live", "<b>", True, "success")
    True
    """
    live = " kepp-live" if view == "Live" else ""
    tail = "" if verdict is None else f" · {_verdict_html(verdict)}"
    return (f'<span class="kepp-verdict{live}" data-success="{str(success).lower()}"><b>{html_text(view)} · '
            f'{html_text(label)}</b>{tail}</span>')


def _verdict_html(verdict: str) -> str:
    """A verdict in its colour (success green, failure red), escaped."""
    colour = RIGHT if verdict == "success" else WRONG
    return f'<span style="color:{colour};font-weight:600">{html_text(verdict)}</span>'


def _plan_and_truth(view: PlanView, title: str) -> None:
    """The plan's cards (✓/✗ against the truth; none when there is no plan) and the ground truth's."""
    plan, truth, right = view.plan, view.truth, view.plan_right
    if plan is not None:
        step_cards(plan, right, title=title, colour=PLAN_TINT, ids=view.plan_ids)
    if truth is not None and plan is not None and presenting() and len(plan) == len(truth) and all(right):  # once
        st.markdown(f'<div class="kepp-small kepp-same-path" style="color:{SUBTLE}">ground truth · {len(truth)}/{len(truth)} '
                    "steps right: the same steps as the plan</div>", unsafe_allow_html=True)
    elif truth is not None:
        title = "ground truth" + ("" if right is None else f" · {sum(right)}/{len(truth)} steps right")
        step_cards(truth, title=title, colour=TRUTH_TINT, ids=view.truth_ids)


def _endpoints(heading: str, view: PlanView) -> None:
    """The endpoints a plan was made between, with what â₁ and â_T mean on hover."""
    head = f"{html_text(heading)}: " if heading else ""
    st.markdown(f"{head}{view.ends.html(presenting())}", help=SYMBOLS["ends"],
                unsafe_allow_html=True)  # the line is HTML (its labels escaped), classed for a room's type sizes


def show_record(view: PlanView, video_path: str | None, clips: tuple | None) -> None:
    """A record as the records pages show it (``view``: :func:`components.records.views.record_view`): the input
    (task, video, steps, the frames of the clips the record was planned from: ``clips``, the episode's observation
    windows), its method and verdict, the endpoints it planned between, its plan against the ground truth, and
    the graph paths it was given."""
    show_head(view.episode, video_path, clips, verdict_html(view.view, view.label, view.success, view.verdict))
    _endpoints("", view)
    _plan_and_truth(view, "plan (recorded)")
    paths_cards(view.paths, *view.paths_words)
    if view.imported and not view.paths:
        st.caption("Graph paths: — (the imported predictions hold plans only).")
    seed = f"seed {view.seed}" if view.seed is not None else ""
    if presenting():  # one line: the slide keeps to one screen
        st.caption(f"From the prediction records ({md(view.source)}{', ' + seed if seed else ''}).")
    else:
        st.caption(f"The prediction records' {md(view.label)} on this episode" + (f" ({seed})" if seed else "")
                   + f", {md(view.source)}: the plan Failure cases and Results show.")


def shown_marker(episode: str | None, methods: Sequence[str]) -> None:
    """What the slide draws, for a reader that checks it against its number (a test, the deck's comparison):
    a hidden element whose ``data-episode`` and ``data-methods`` (comma-separated, A first; empty: planned
    live) name the episode and the records drawn, escaped as attribute values."""
    st.markdown(f'<div class="kepp-shown" style="display:none" data-episode="{page_text(episode or "")}" '
                f'data-methods="{page_text(",".join(methods))}"></div>'
                '<style>[data-testid="stElementContainer"]:has(.kepp-shown) { display: none; }</style>',
                unsafe_allow_html=True)  # no room taken: the slide keeps to one screen


def show_pair(a: PlanView, b: PlanView, video_path: str | None, clips: tuple | None) -> None:
    """An A/B slide: one episode's records by two methods (``a``, ``b``: :func:`components.records.views.record_view`)
    on one screen: the input, each method's verdict, each plan against the ground truth (✓/✗) and the ground truth
    once; the endpoints are the graph's (â₁, â_T of A's record, where it recorded them), so that the slide keeps
    to one screen."""
    verdicts = " &emsp; ".join(verdict_html(side, r.label, r.success, r.verdict) for side, r in zip(SIDES, (a, b)))
    show_head(a.episode, video_path, clips, verdicts)
    for side, r in zip(SIDES, (a, b)):
        step_cards(r.plan, r.plan_right, colour=PLAN_TINT, ids=r.plan_ids,
                   title=f"plan {side} · {r.label} · {r.steps_right}/{len(r.truth)} steps right")
    step_cards(a.truth, title="ground truth", colour=TRUTH_TINT, ids=a.truth_ids)
    seeds = sorted({f"seed {r.seed}" for r in (a, b) if r.seed is not None})
    st.caption(f"From the prediction records ({md(', '.join(sorted({a.source, b.source})))}"
               + (f", {', '.join(seeds)}" if seeds else "") + ").")


def show_live(view: PlanView, result, condition: str, head: tuple, note: str | None = None, no_plan=None) -> None:
    """A live result (``view``: :func:`components.records.views.live_view`; ``result``: the planner's, for whose
    endpoints and its fallback): the input (``head``: ``(video_path, clips)``), the method the live planner is
    (``note``: what its words mean) and its verdict where the truth is known, the endpoints its graph paths run
    between (the step model's, or the text tower's), the plan against the ground truth and the graph paths;
    ``no_plan`` (a :class:`components.plan.decision.Message`): the result is no plan, said in the plan's place."""
    show_head(view.episode, *head, verdict_html(view.view, view.label, view.success, view.verdict), note=note)
    _endpoints(plans.endpoints_heading(result.path_ends[0]), view)  # the step model's, or the text tower's
    if no_plan is not None:
        st.warning(no_plan.text, icon=":material/block:")
    _plan_and_truth(view, "plan (planned now)")
    if condition != "graph":
        st.caption("This planning model has no graph condition: no graph paths were recommended to it.")
    elif no_plan is None:
        if result.fallback:
            st.caption("No path of this length joins â₁ and â_T in the graph: the paths are KEPP's fallback "
                       "variations of the two endpoints.")
        paths_cards(view.paths, "fallback path" if result.fallback else "graph path")
