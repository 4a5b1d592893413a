"""Graph drawings in the page: a drawing (:mod:`components.graph.drawing`, as an HTML page:
:mod:`components.graph.page`) in a frame as large as one screen holds, clickable, with its HTML export; how many
steps a canvas reads; the plan graph panel (the drawing with its depth, step budget and "centre on" controls)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import astuple

import streamlit as st

from components.graph import plangraph
from components.graph.drawing import TYPE, GraphDrawing, plan_drawing
from components.graph.page import graph_html
from components.ui import scripts
from components.ui.colours import EDGE
from components.ui.config import STEP_PRESENT_PX, presenting


# The drawing in a frame of the page that reports a click on a node (its action id) to Python: a
# components.v2 component (no build step), so that clicking a step can re-centre the plan graph.
_CLICKABLE = st.components.v2.component("kepp_clickable_graph", js=scripts.source("kepp-graph-click.js"),
                                         isolate_styles=False)


SCREEN_FRAME = {False: 590, True: 560}  # px: a whole frame fits one 720-px screen below Streamlit's header
MIN_CANVAS = 300


def _shown_text(entry: tuple) -> str:
    """What a legend entry shows (a path's entry: its names; the steps are in its hover text)."""
    _, _, text, group = entry
    name, _, steps = str(text).partition(": ")
    return name if group != -1 and steps else str(text)


def legend_lines(drawing: GraphDrawing, present: bool, width: int = 460) -> int:
    """How many lines the drawing's legend takes at most in a frame ``width`` px wide (its entries flow
    side by side; an entry wider than the frame wraps)."""
    px, lines, used = TYPE[present].legend, 0, width
    for entry in drawing.legend:
        w = 50 + 0.62 * px * len(_shown_text(entry))  # a wide estimate: a legend never overflows its frame
        if used + w > width:
            lines, used = lines + 1, 0
        lines += int(w // width)
        used += w % width if w > width else w
    return lines


def drawing_height(drawing: GraphDrawing, height: int, present: bool = False, width: int = 460) -> int:
    """The frame height for a drawing: the header, the canvas and the legend's lines (in a frame about
    ``width`` px wide)."""
    t = TYPE[present]
    lines, line, rest = legend_lines(drawing, present, width), round(t.legend * 1.45), round(t.title * 1.9) + 14
    # a room's legend keeps a line to spare (its wrapping is estimated) where the screen's frame has room for it
    slack = int(present and SCREEN_FRAME[True] - rest - line * (lines + 1) >= MIN_CANVAS)
    return height + rest + line * (lines + slack)


def canvas_height(drawing: GraphDrawing, height: int, present: bool, screen: bool = False, width: int = 460) -> int:
    """The canvas height to draw at: ``height``, or (``screen``, or in presentation mode) as much of it as
    keeps the whole frame (header, canvas, legend) within one screen below Streamlit's header.

    >>> d = GraphDrawing(legend=[("line", EDGE, "a", -1)] * 2)
    >>> canvas_height(d, 600, False), drawing_height(d, canvas_height(d, 600, True), True) <= SCREEN_FRAME[True]
    (600, True)
    """
    if not (present or screen):
        return height
    return max(MIN_CANVAS, min(height, SCREEN_FRAME[present] - drawing_height(drawing, 0, present, width)))


def show_graph(drawing: GraphDrawing, height: int = 560, download_name: str | None = None, key: str | None = None,
               click_key: str | None = None, screen: bool = False, width: tuple[int, int] = (560, 800)) -> str:
    """Draw a graph in the page (interactive, with a PNG export in its header; vis.js served by the
    app) with a standalone HTML download; returns the page's HTML. With ``click_key``, a click on a
    node stores its action id in ``st.session_state[click_key]`` and reruns the page. ``screen``: the
    whole frame fits one screen (as it always does in presentation mode); ``width``: about how wide the
    frame is at 1280 px in the normal and in presentation mode (for the legend's lines)."""
    present = presenting()
    width = width[present]
    height = canvas_height(drawing, height, present, screen, width)
    args = (tuple(astuple(n) for n in drawing.nodes.values()), tuple(astuple(e) for e in drawing.edges.values()),
            height, drawing.grid, drawing.title, drawing.settings,
            tuple(tuple(x) for x in drawing.legend), (download_name or "kepp_graph").removesuffix(".html"))
    page = graph_html(*args, inline=False, present=present)
    full = drawing_height(drawing, height, present, width)
    if click_key:
        digest = hashlib.sha1(page.encode()).hexdigest()
        got = _CLICKABLE(key=f"{click_key}_frame", data={"html": page, "digest": digest, "height": full},
                         height=full, on_node_change=lambda: None)
        if got.node is not None and st.session_state.get(click_key) != got.node:
            st.session_state[click_key] = got.node
            st.rerun()
    else:
        st.iframe(page, height=full)
    if download_name:
        # built only when asked: the export carries vis.js inline, so that it works offline, alone
        st.download_button("Download graph (HTML)", lambda: graph_html(*args, inline=True), file_name=download_name,
                           mime="text/html", key=key, on_click="ignore")
    return page


def readable_rows(height: int, screen: bool = True) -> int:
    """How many rows of steps a canvas ``height`` px tall (``screen``: at most what fits one screen,
    header and legend below it) holds at the mode's type size."""
    present = presenting()
    if screen or present:
        height = min(height, SCREEN_FRAME[present] - 140)  # the header and a legend of two or three lines
    return max(2, int(height // (1.25 * TYPE[present].min_row)))  # room for a label of three lines


def readable_steps(height: int, width: int = 800) -> int | None:
    """In presentation mode, how many steps a drawing's grid holds at the mode's type size in a frame about
    ``width`` x ``height`` px (one column for the chosen step, the others full); None in the normal mode
    (the drawing is made smaller to fit, its labels with it)."""
    if not presenting():
        return None
    columns = max(2, int(width // TYPE[True].min_column))
    return (columns - 1) * readable_rows(height) + 1


# --- the plan graph panel --------------------------------------------------------------------------------
ENDPOINTS = "â₁ and â_T"


PLAN_STEPS = {False: 18, True: 12}  # the plan graph's default step budget (presentation: fewer, larger)


def plan_rows(horizon: int) -> int | None:
    """In presentation mode, how many steps a column of the plan graph holds at the mode's type size: as many
    as one screen's canvas reads, a step's name wrapped to two lines in a column of 110 px or more, to three
    in a narrower one (a six-step plan's); None in the normal mode."""
    if not presenting():
        return None
    lines = 2 if PLAN_WIDTH / max(horizon, 1) >= 110 else 3
    return max(1, int(PLAN_CANVAS // (lines * STEP_PRESENT_PX * 1.2 + 26)))


PLAN_WIDTH, PLAN_CANVAS = 540, 330  # px: the plan graph's canvas on a slide at 1280x720 (its frame, less header and legend)


def plan_graph_panel(graph, endpoints: Sequence[int], named: Sequence[tuple[str, Sequence[int]]],
                     truth: Sequence[int] | None, key: str, title: str = "P²KG around the plan",
                     own: Collection[int] | None = None, width: tuple[int, int] = (450, 650)) -> object:
    """The plan graph: the drawing with its legend (one entry per distinct path) and PNG export, as
    large as one screen holds, then its depth, step budget and "centre on" controls and the HTML
    export. ``own``: the episode's task's steps (its neighbourhood is drawn from them; the other tasks'
    steps only when the reader asks, *Other tasks' steps*); ``width``: about how wide its column is (outside
    presentation mode, in it). Returns the :class:`PlanGraph`."""
    frame = st.container()  # the drawing first: the controls below it are read before it is drawn
    c1, c2, c3 = st.columns([1, 1, 2])
    depth = c1.slider("Depth", 0, 3, 1, key=f"{key}_depth",
                      help="graph transitions within this many steps of the centre are drawn")
    max_nodes = c2.slider("Max steps", 6, 40, PLAN_STEPS[presenting()], key=f"{key}_max_nodes",
                          help="the nearest and strongest neighbours are kept; path steps always are")
    clicked = st.session_state.pop(f"{key}_clicked", None)
    if clicked is not None and 0 <= int(clicked) < len(graph.actions):  # a click on a step re-centres on it
        st.session_state[f"{key}_centre"] = graph.actions[int(clicked)]
    centre_name = st.session_state.get(f"{key}_centre", ENDPOINTS)
    centre = None if centre_name == ENDPOINTS or centre_name not in graph.actions else graph.action_index(centre_name)
    others = bool(st.session_state.get(f"{key}_others", False))  # its toggle is drawn below the drawing
    rows = plan_rows(max([len(p) for _, p in named] + [len(truth or ()), 2]))  # presentation mode: what a screen reads
    pg = plangraph.plan_graph(graph, endpoints, named, truth, depth=depth, centre=centre, max_nodes=max_nodes,
                              own=None if own is None or others else set(own), max_rows=rows)
    options = [ENDPOINTS, *sorted({n.label for n in pg.nodes} | ({centre_name} - {ENDPOINTS}))]
    c3.selectbox("Centre on", options, key=f"{key}_centre",
                 help="draw the graph's neighbourhood around this step instead of the endpoints "
                      "(or click a step in the drawing)")
    drawing = plan_drawing(graph, pg, title=title)
    with frame:
        show_graph(drawing, height=SCREEN_FRAME[presenting()], download_name=f"{key}_graph.html",
                   key=f"{key}_graph_dl", click_key=f"{key}_clicked", screen=True, width=width)
        if pg.hidden:
            st.caption(f"{pg.hidden} more neighbour{'s' if pg.hidden > 1 else ''} within depth {depth} left out: "
                       + ("one screen holds no more at a room's type size." if rows is not None
                          else "raise *Max steps* (below) to draw them."))
    if own is not None and (others or pg.other_tasks):
        st.toggle("Other tasks' steps", key=f"{key}_others",
                  help="draw the graph's neighbours that belong to other tasks too"
                       + (f" ({pg.other_tasks} within depth {depth} left out)" if pg.other_tasks else ""))
    return pg
