"""Graph drawings (pyvis, offline HTML): the P²KG around a step or around a plan's endpoints,
and a task's expert trajectories. The graph queries themselves come from ``kepp_core.api``."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Collection, Iterable, Sequence
from dataclasses import astuple, dataclass, field
from pathlib import Path

import streamlit as st

from components.ui import scripts
from components.graph import plangraph
from components.ui.colours import EDGE, FOCUS, GRAPH_SCRIPT, INK, MUTED, NODE, PATH_COLOURS, RIGHT, WHITE, WRONG
from components.ui.config import MIN_PRESENT_PX, STEP_PRESENT_PX, presenting
from components.graph.layout import grid_by_position
from components.ui.scripts import SLIDE_KEYS, STATIC, STATIC_URL
from components.ui.text import page_text, script_json



# --- graph drawing -------------------------------------------------------------------------------
@dataclass
class GraphNode:
    """A node of a drawing: action id, label, hover text, colour, size; ``x``/``y`` its place in the
    drawing's grid (column, row: the frame's script spreads the grid over its canvas), ``font`` the
    label colour, ``role`` kept for tests and scripts."""

    id: int
    label: str
    title: str = ""
    color: str = NODE
    size: int = 18
    x: int | None = None
    y: int | None = None
    font: str = INK
    role: str = ""


@dataclass
class GraphEdge:
    """An arrow of a drawing: its ends, label, hover text, width, colour, dash pattern (``True``,
    ``False`` or a pattern), bend, its ``kind``/``group`` (kept for tests and scripts) and the
    ``weight`` its label shows (which labels win a place first: see :func:`label_ranks`)."""

    source: int
    target: int
    label: str = ""
    title: str = ""
    width: float = 1.5
    color: str = EDGE
    dashes: bool | tuple = False
    curve: float = 0.0
    kind: str = ""
    group: int = -1
    weight: float = 0.0


@dataclass
class GraphDrawing:
    """Nodes and edges to draw (keyed by action id and by (source, target, group)), with the
    title, settings line and legend that go with it into the page and its exports."""

    nodes: dict[int, GraphNode] = field(default_factory=dict)
    edges: dict[tuple[int, int, int], GraphEdge] = field(default_factory=dict)
    title: str = ""
    settings: str = ""
    legend: list[tuple[str, str, str, int]] = field(default_factory=list)  # (style, colour, text, group)
    # the grid's column and row ranges ((first, last), (first, last)): nodes sit at their (x, y) in it
    grid: tuple[tuple[float, float], tuple[float, float]] | None = None

    def node(self, node: GraphNode) -> None:
        """Add ``node`` unless one with its id is there."""
        self.nodes.setdefault(node.id, node)

    def edge(self, edge: GraphEdge) -> None:
        """Add or replace ``edge``."""
        self.edges[(edge.source, edge.target, edge.group)] = edge


_EXTERNAL = re.compile(r'<(script|link)[^>]+(src|href)="(https?:|\.\./)[^"]*"[^>]*>(\s*</script>)?', re.I)
LABEL_PAD = 2  # px around an edge label's text box (its white background and stroke)
# Type sizes of a drawing in CSS pixels at the scale it is drawn (labels, legend, header), and the smallest
# grid cell a label reads in: presentation mode's are for the back of the room (at least 18 px).
@dataclass(frozen=True)
class Type:
    """A drawing's type sizes (px) and its grid's smallest readable cell (px)."""

    node: int
    edge: int
    legend: int
    title: int
    small: int
    min_column: int
    min_row: int


# px: the width a step's name wraps in before the frame's script arranges the drawing (it then wraps names at
# spaces only, a box at least as wide as its longest word: app/static/kepp-graph.js, fitWords)
STEP_WIDTH = 160
TYPE = {False: Type(node=14, edge=12, legend=13, title=16, small=13, min_column=80, min_row=46),
        True: Type(node=STEP_PRESENT_PX, edge=MIN_PRESENT_PX, legend=MIN_PRESENT_PX, title=24, small=MIN_PRESENT_PX,
                   min_column=136, min_row=84)}
# The drawing's own script, app/static/kepp-graph.js (spreads the grid over the canvas, places the edge labels
# off every arrow, hands a clicker's keys to the page, exports a PNG), reads these from the frame's JSON block.
GRAPH_JS, GRAPH_DATA = "kepp-graph.js", "kepp-graph-data"


def _legend_html(legend: tuple, title: str, settings: str, type_: Type, present: bool = False) -> tuple[str, str]:
    """The header (title, settings, PNG button) and the legend, as HTML around the drawing: the legend's
    entries flow side by side (a path's steps are in its hover text and the drawing). In presentation mode
    the header is the title alone, wrapped where it must (the settings and the export are for the desk)."""
    esc = page_text  # an iframe's page: HTML, never Markdown
    if present:
        head = (f'<div class="kepp-head" style="font-family:sans-serif;line-height:1.2;margin-bottom:4px">'
                f'<b style="font-size:{type_.title}px">{esc(title)}</b></div>')
        return head, _legend_rows(legend, type_)
    # one line: the title, the settings (cut short: the whole line on hover, and in the exports), the PNG button
    clip = "overflow:hidden;text-overflow:ellipsis;white-space:nowrap"
    head = (f'<div class="kepp-head" style="font-family:sans-serif;display:flex;align-items:baseline;gap:10px">'
            f'<b style="font-size:{type_.title}px;{clip};flex:0 1 auto" title="{esc(title)}">{esc(title)}</b>'
            f'<span style="font-size:{type_.small}px;color:{MUTED};{clip};flex:1 1 0" title="{esc(settings)}">'
            f'{esc(settings)}</span><button id="kepp-png" onclick="keppPng()" style="font-size:{type_.small}px;'
            'flex:none">Download PNG</button></div>')
    return head, _legend_rows(legend, type_)


def _legend_rows(legend: tuple, type_: Type) -> str:
    """The legend's entries as HTML (escaped), flowing side by side."""
    esc = page_text  # an iframe's page: HTML, never Markdown
    rows = []
    for style, colour, text, group in legend:
        style, colour, group = esc(str(style)), esc(str(colour)), esc(str(group))  # attribute values
        if style == "node":
            swatch = f'<span style="display:inline-block;width:26px;height:14px;background:{colour};border-radius:3px"></span>'
        else:
            border = {"dashed": "dashed", "dotted": "dotted"}.get(style, "solid")
            swatch = f'<span style="display:inline-block;width:30px;border-top:4px {border} {colour};vertical-align:middle"></span>'
        name, _, steps = str(text).partition(": ")
        shown, hover = (name, text) if group != "-1" and steps else (text, "")
        rows.append(f'<div class="kepp-legend-entry" data-style="{style}" data-group="{group}" title="{esc(hover)}" '
                    f'style="display:inline-block;margin-right:14px">{swatch} <span>{esc(shown)}</span></div>')
    return (f'<div class="kepp-legend" style="font-family:sans-serif;font-size:{type_.legend}px;line-height:1.45;'
            'clear:both;padding-top:4px">' + "".join(rows) + "</div>") if rows else ""


def _options() -> str:
    """vis.js options: positions given by the page's script (its grid; physics off); labels keep their
    size whatever the zoom (vis.js caps them at 30 px on screen by default); a selected step's name stays in
    its font (vis.js's bold would widen its words past the box the frame's script measured them for)."""
    unscaled = '"scaling": {"label": {"maxVisible": 200}}'
    return ('{"layout": {"randomSeed": 1}, "physics": {"enabled": false}, "edges": {"smooth": {"type": "curvedCW", '
            '"roundness": 0.15}, ' + unscaled + '}, "nodes": {' + unscaled + ', "labelHighlightBold": false},'
            ' "interaction": {"hover": true, "tooltipDelay": 80, "navigationButtons": false}}')


def _edge_options(e: GraphEdge, rank: int) -> dict:
    """One arrow's vis.js options (its own bend, so that arrows sharing a pair stay apart); its label
    (``klabel``: drawn by the frame's script beside the arrow, not by vis.js) with its ``rank`` for the
    label placement."""
    dashes = list(e.dashes) if isinstance(e.dashes, tuple) else e.dashes
    smooth = ({"enabled": True, "type": "curvedCW" if e.curve > 0 else "curvedCCW", "roundness": abs(e.curve)}
              if e.curve else {"enabled": e.source == e.target})
    return dict(klabel=e.label, title=e.title or e.label, width=e.width, color=e.color, dashes=dashes,
                arrows={"to": {"enabled": True, "scaleFactor": 0.7}}, smooth=smooth, kind=e.kind, group=e.group,
                rank=rank)


def label_ranks(edges: Sequence[GraphEdge]) -> list[int]:
    """The order in which edge labels get a place in the drawing (0 first; the page's script keeps
    a label only where it covers no node and no label placed before it): the paths' arrows in path
    order (the ground truth's group first), then the other arrows by weight, strongest first; arrows
    without a label come last.

    >>> ranks = label_ranks([GraphEdge(0, 1, "0.20", weight=0.2), GraphEdge(1, 2, "0.90", weight=0.9),
    ...                      GraphEdge(2, 3, "", kind="path", group=0), GraphEdge(3, 4, "0.50", kind="path", group=1)])
    >>> ranks
    [2, 1, 3, 0]
    """
    def key(k: int) -> tuple:
        e = edges[k]
        return (not e.label, e.kind != "path", e.group if e.kind == "path" else 0, -e.weight, k)

    order = sorted(range(len(edges)), key=key)
    ranks = [0] * len(edges)
    for rank, k in enumerate(order):
        ranks[k] = rank
    return ranks


# vis.js is served once by the app (Streamlit's static files, ``server.enableStaticServing`` in
# .streamlit/config.toml: app/static/ at app/static/), so that a frame carries only its graph; the
# files come from the installed pyvis package (the very ones its template inlines) and are copied
# there on first use. The HTML export keeps them inline: it works offline, alone.

def _vis_files() -> list[Path]:
    """The vis-network script and style sheet that pyvis's template inlines."""
    import pyvis

    lib = Path(pyvis.__file__).parent / "templates" / "lib"
    return sorted(lib.glob("vis-*/vis-network.min.js"))[-1:] + sorted(lib.glob("vis-*/vis-network.css"))[-1:]


@functools.cache
def served_vis() -> tuple[tuple[str, str], ...]:
    """``(inlined text, served URL)`` for each vis.js file, copied into app/static/ once per process
    (atomically; left alone when already there and equal); empty when that folder cannot be written,
    and the drawings then carry vis.js inline."""
    out = []
    try:
        for src in _vis_files():
            text = src.read_text(encoding="utf-8")
            dest = STATIC / src.name
            if not dest.is_file() or dest.read_text(encoding="utf-8") != text:
                STATIC.mkdir(exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=STATIC, prefix=f".{src.name}.")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.chmod(tmp, 0o644)
                os.replace(tmp, dest)
            out.append((text, STATIC_URL + src.name))
    except OSError:
        return ()
    return tuple(out)


def _serve_vis(page: str) -> str:
    """``page`` with its inlined vis.js replaced by the app's served copies (unchanged where they
    are not served)."""
    for text, url in served_vis():
        if url.endswith(".js"):
            page = page.replace(f"<script>{text}</script>", f'<script src="{page_text(url)}"></script>', 1)
        else:
            page = page.replace(f"<style>{text}</style>", f'<link rel="stylesheet" href="{page_text(url)}">', 1)
    return page


@st.cache_data(show_spinner=False, max_entries=64)
def graph_html(nodes: tuple, edges: tuple, height: int = 560, grid: tuple | None = None, title: str = "",
               settings: str = "", legend: tuple = (), name: str = "kepp_graph", inline: bool = True,
               present: bool = False) -> str:
    """An HTML page drawing the graph (pyvis), with its title, settings, legend and a PNG export:
    standalone and offline with vis.js inlined (``inline``, the export), else referring to the
    app's served copy of vis.js (the page's frame). ``grid``: the column and row ranges the nodes'
    (x, y) lie in (:class:`GraphDrawing`); ``present``: presentation mode's type sizes (:data:`TYPE`)."""
    from pyvis.network import Network

    type_ = TYPE[bool(present)]
    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor=WHITE)
    for n in (GraphNode(*t) for t in nodes):
        net.add_node(n.id, label=n.label, title=n.title or n.label, color=n.color, size=n.size, shape="box",
                     font={"size": type_.node, "color": n.font}, role=n.role, gx=n.x or 0, gy=n.y or 0,
                     x=0, y=0, physics=False, widthConstraint={"maximum": STEP_WIDTH})  # long labels wrap
    drawn = [GraphEdge(*t) for t in edges]
    for e, rank in zip(drawn, label_ranks(drawn)):
        net.add_edge(e.source, e.target, **_edge_options(e, rank))
    net.set_options(_options())
    page = net.generate_html(notebook=False)
    # Offline: vis.js is inlined; drop the template's CDN/relative asset tags it does not need.
    page = re.sub(r"<center>\s*<h1></h1>\s*</center>", "", _EXTERNAL.sub("", page))
    if not inline:
        page = _serve_vis(page)
    head, legend_html = _legend_html(legend, title, settings, type_, present=bool(present) and not inline)
    layout = None if grid is None else {"cols": list(grid[0]), "rows": list(grid[1]), "minColumn": type_.min_column,
                                        "minRow": type_.min_row}
    # Dataset text for the script: escaped JSON in a data block (pyvis writes nodes and edges with Jinja's
    # tojson, which escapes the same characters), so every label shows exactly as written.
    data = {"legend": [list(x) for x in legend], "title": title, "settings": settings, "name": name, "grid": layout,
            "pad": LABEL_PAD, "edgeSize": type_.edge, "leastEdge": type_.edge,
            "leastNode": type_.node if present else 0, "slideKeys": [k for keys in SLIDE_KEYS.values() for k in keys],
            "colours": GRAPH_SCRIPT, "stepWidth": STEP_WIDTH}
    script = scripts.data_block(GRAPH_DATA, data) + (scripts.inline(GRAPH_JS) if inline or not served_vis()
                                                     else scripts.served(GRAPH_JS))
    page = page.replace('<div class="card" style="width: 100%">', head + '<div class="card" style="width: 100%">', 1)
    return page.replace("</body>", legend_html + script + "</body>", 1)


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


# --- drawings of the graph ---------------------------------------------------------------------
WEIGHTS = {"p2kg": "P²KG probability", "pkg": "frequency weight"}


def edge_title(graph, u: int, v: int) -> str:
    """Hover text of an edge: count and both weightings (or that the graph never saw it)."""
    return plangraph.edge_text(graph, u, v)


def node_title(graph, a: int) -> str:
    """Hover text of a node: its transition and plan counts."""
    return plangraph.node_text(graph, a)


LABELLED = 12  # arrows of a neighbourhood whose weight is written on them (the strongest; every one on hover)


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


def _grid(drawing: GraphDrawing, cells: dict, grid: tuple) -> GraphDrawing:
    """``drawing`` with its nodes placed in the grid ``cells`` ({node: (column, row)})."""
    for a, (c, r) in cells.items():
        if a in drawing.nodes:
            drawing.nodes[a].x, drawing.nodes[a].y = c, r
    drawing.grid = grid
    return drawing


def edges_drawing(graph, nodes: Iterable[int], edges: Iterable[tuple[int, int]], scorer: str = "p2kg",
                  focus: Sequence[int] = (), title: str = "", settings: str = "",
                  positions: Sequence[float] | None = None, max_rows: int = 8) -> GraphDrawing:
    """A drawing of ``edges`` between ``nodes`` with weights as labels and counts on hover; edge width
    grows with the weight. Steps left to right by their typical place in the training plans
    (``positions``, :func:`components.graph.layout.typical_positions`), the first ``focus`` step alone in the
    middle column, at most ``max_rows`` to a column (:func:`components.graph.layout.grid_by_position`)."""
    d = GraphDrawing(title=title, settings=settings)
    for a in nodes:
        colour = FOCUS if a in focus else NODE
        d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a), colour, 22 if a in focus else 16, role="focus" if a in focus else ""))
    weights = [float(graph.probability(u, v) if scorer == "p2kg" else graph.frequency(u, v)) for u, v in edges]
    strongest = set(sorted(range(len(weights)), key=lambda k: -weights[k])[:LABELLED])
    for k, ((u, v), w) in enumerate(zip(edges, weights)):
        d.node(GraphNode(int(u), graph.actions[u], node_title(graph, u)))
        d.node(GraphNode(int(v), graph.actions[v], node_title(graph, v)))
        d.edge(GraphEdge(int(u), int(v), label=f"{w:.2f}" if k in strongest else "", title=edge_title(graph, u, v),
                         width=1.0 + 6.0 * w, color=EDGE, kind="graph", weight=w))
    if focus:
        d.legend.append(("node", FOCUS, "the chosen step", -1))
    d.legend.append(("line", EDGE, f"arrow: a transition; width: its {WEIGHTS[scorer]}, written on the {LABELLED} "
                                   "strongest (hover any arrow for it and its count)", -1))
    positions = positions if positions is not None else [0.5] * len(graph.actions)
    return _grid(d, *grid_by_position(d.nodes, positions, focus[0] if focus else None, max_rows))


def plan_drawing(graph, pg, title: str = "", scorer: str = "p2kg") -> GraphDrawing:
    """A drawing of a :class:`~components.graph.plangraph.PlanGraph`: its grid (column = place in the plan),
    one colour per distinct path, the legend's entries as the plan graph gives them."""
    d = GraphDrawing(title=title, settings=" · ".join(f"{k}: {v}" for k, v in pg.settings.items()))
    for n in pg.nodes:
        d.node(GraphNode(n.id, n.label, n.title, n.colour, 24 if n.role in ("start", "goal") else 18,
                         n.column, n.row, n.font_colour, n.role))
    for k, e in enumerate(pg.edges):
        w = e.probability if scorer == "p2kg" else e.frequency
        dashes = (8, 6) if e.kind == "path" and e.dashed else (2, 5) if e.kind == "outside" else False
        d.edges[(e.source, e.target, k)] = GraphEdge(e.source, e.target, f"{w:.2f}" if e.labelled else "", e.title,
                                                     e.width, e.colour, dashes, e.curve, e.kind,
                                                     -1 if e.group is None else e.group, w)
    d.legend = [(x.style, x.colour, x.text, -1 if x.group is None else x.group) for x in pg.legend]
    cols, rows = [n.column for n in pg.nodes] or [0], [n.row for n in pg.nodes] or [0]
    d.grid = ((min(cols), max(cols)), (min(rows), max(rows)))
    return d


def expert_drawing(graph, nodes: Iterable[int], edges: Sequence[tuple[int, int]],
                   freq: dict[tuple[int, int], int], title: str = "", settings: str = "",
                   positions: Sequence[float] | None = None, max_rows: int = 8) -> GraphDrawing:
    """A task's expert trajectories: the transitions its training plans use, width by frequency; steps
    left to right by their typical place in those plans (``positions``)."""
    d = GraphDrawing(title=title, settings=settings)
    top = max((freq[e] for e in edges), default=1)
    used = {a for e in edges for a in e}
    for a in nodes:
        if a in used:
            d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a)))
    for u, v in edges:
        n = freq[(u, v)]
        d.edge(GraphEdge(int(u), int(v), label=str(n),
                         title=f"{graph.actions[u]} → {graph.actions[v]}\n{n} times in this task's training plans\n"
                               f"P²KG probability {float(graph.probability(u, v)):.3f}",
                         width=1.0 + 9.0 * n / top, color=PATH_COLOURS[0], kind="expert", weight=n / top))
    d.legend.append(("line", PATH_COLOURS[0], "arrow: a transition of this task's training plans; label: how many "
                                              "times (hover where a label would cover another); width grows with it", -1))
    positions = positions if positions is not None else [0.5] * len(graph.actions)
    return _grid(d, *grid_by_position(d.nodes, positions, None, max_rows))


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
