"""A graph drawing as an HTML page (pyvis): the drawing's nodes and arrows for vis.js, its header (title,
settings, PNG export), its legend and its own script (``app/static/kepp-graph.js``) with the settings it reads.
Standalone and offline with vis.js inlined (the export), or referring to the app's served copy
(:mod:`components.graph.vis`) in the page's frame."""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from components.graph import vis
from components.graph.drawing import STEP_WIDTH, TYPE, GraphEdge, GraphNode, Type
from components.ui import scripts
from components.ui.colours import GRAPH_SCRIPT, MUTED, WHITE
from components.ui.config import MIN_PRESENT_PX, STEP_PRESENT_PX
from components.ui.scripts import SLIDE_KEYS
from components.ui.text import page_text

_EXTERNAL = re.compile(r'<(script|link)[^>]+(src|href)="(https?:|\.\./)[^"]*"[^>]*>(\s*</script>)?', re.I)
LABEL_PAD = 2  # px around an edge label's text box (its white background and stroke)
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
        page = vis.serve(page)
    head, legend_html = _legend_html(legend, title, settings, type_, present=bool(present) and not inline)
    layout = None if grid is None else {"cols": list(grid[0]), "rows": list(grid[1]), "minColumn": type_.min_column,
                                        "minRow": type_.min_row}
    # Dataset text for the script: escaped JSON in a data block (pyvis writes nodes and edges with Jinja's
    # tojson, which escapes the same characters), so every label shows exactly as written.
    data = {"legend": [list(x) for x in legend], "title": title, "settings": settings, "name": name, "grid": layout,
            "pad": LABEL_PAD, "edgeSize": type_.edge, "leastEdge": type_.edge,
            "leastNode": type_.node if present else 0, "shrinkNode": STEP_PRESENT_PX if present else 0,
            "compactNode": MIN_PRESENT_PX if present else 0,
            "slideKeys": [k for keys in SLIDE_KEYS.values() for k in keys],
            "colours": GRAPH_SCRIPT, "stepWidth": STEP_WIDTH}
    script = scripts.data_block(GRAPH_DATA, data) + (scripts.inline(GRAPH_JS) if inline or not vis.served()
                                                     else scripts.served(GRAPH_JS))
    page = page.replace('<div class="card" style="width: 100%">', head + '<div class="card" style="width: 100%">', 1)
    return page.replace("</body>", legend_html + script + "</body>", 1)
