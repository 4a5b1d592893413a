"""Graph drawings (pyvis, offline HTML): the P²KG around a step or around a plan's endpoints,
and a task's expert trajectories. The graph queries themselves come from ``kepp_core.api``."""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field

import streamlit as st

from components import plangraph
from components.text import script_json

# Colours of the graph drawing.
NODE = "#d9e3f0"
NODE_START = "#2e7d32"
NODE_GOAL = "#c62828"
NODE_FOCUS = "#f9a825"
EDGE = "#9e9e9e"
PATH_COLOURS = ["#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#5d4037"]
PATH_COLOUR_NAMES = ["blue", "purple", "teal", "orange", "brown"]
PLAN_COLOUR = "#f9a825"


# --- graph drawing -------------------------------------------------------------------------------
@dataclass
class GraphNode:
    """A node of a drawing: action id, label, hover text, colour, size; ``x``/``y`` fix its
    position (no physics), ``font`` is the label colour, ``role`` is kept for tests and scripts."""

    id: int
    label: str
    title: str = ""
    color: str = NODE
    size: int = 18
    x: int | None = None
    y: int | None = None
    font: str = "#1a1a1a"
    role: str = ""


@dataclass
class GraphEdge:
    """An arrow of a drawing: its ends, label, hover text, width, colour, dash pattern (``True``,
    ``False`` or a pattern), bend, and its ``kind``/``group`` (kept for tests and scripts)."""

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


@dataclass
class GraphDrawing:
    """Nodes and edges to draw (keyed by action id and by (source, target, group)), with the
    title, settings line and legend that go with it into the page and its exports."""

    nodes: dict[int, GraphNode] = field(default_factory=dict)
    edges: dict[tuple[int, int, int], GraphEdge] = field(default_factory=dict)
    title: str = ""
    settings: str = ""
    legend: list[tuple[str, str, str, int]] = field(default_factory=list)  # (style, colour, text, group)
    fixed: bool = False  # positions given: no physics

    def node(self, node: GraphNode) -> None:
        """Add ``node`` unless one with its id is there."""
        self.nodes.setdefault(node.id, node)

    def edge(self, edge: GraphEdge) -> None:
        """Add or replace ``edge``."""
        self.edges[(edge.source, edge.target, edge.group)] = edge


_EXTERNAL = re.compile(r'<(script|link)[^>]+(src|href)="(https?:|\.\./)[^"]*"[^>]*>(\s*</script>)?', re.I)
# In the page: fit the drawing whenever its frame gets a size (a hidden tab draws at 0x0), until the
# reader moves it; a PNG export of title, settings, drawing and legend; the legend for scripts and tests.
_PAGE_JS = """
<script>
(function () {
  const legend = %s, title = %s, settings = %s, name = %s;
  window.keppLegend = legend;
  let touched = false;
  function fit() { if (!touched && window.network) network.fit({animation: false}); }
  function ready() {
    if (!window.network) return setTimeout(ready, 50);
    network.on("dragStart", () => { touched = true; });
    network.on("zoom", () => { touched = true; });
    network.once("stabilizationIterationsDone", fit);
    new ResizeObserver(fit).observe(document.getElementById("mynetwork"));
    setTimeout(fit, 300);
  }
  ready();
  window.keppPng = function () {
    const src = document.querySelector("#mynetwork canvas"), r = src.width / src.clientWidth || 1;
    const line = 22 * r, head = (settings ? 56 : 36) * r, w = src.width;
    const c = document.createElement("canvas");
    c.width = w; c.height = head + src.height + (legend.length + 1) * line;
    const x = c.getContext("2d");
    x.fillStyle = "#ffffff"; x.fillRect(0, 0, c.width, c.height);
    x.fillStyle = "#111111"; x.font = `bold ${18 * r}px sans-serif`; x.fillText(title, 10 * r, 24 * r);
    x.font = `${13 * r}px sans-serif`; if (settings) x.fillText(settings, 10 * r, 46 * r);
    x.drawImage(src, 0, head);
    legend.forEach(([style, colour, text], i) => {
      const y = head + src.height + (i + 1) * line;
      x.strokeStyle = colour; x.fillStyle = colour; x.lineWidth = 4 * r;
      x.setLineDash(style === "dashed" ? [8 * r, 6 * r] : style === "dotted" ? [2 * r, 5 * r] : []);
      if (style === "node") x.fillRect(10 * r, y - 12 * r, 30 * r, 14 * r);
      else { x.beginPath(); x.moveTo(10 * r, y - 5 * r); x.lineTo(40 * r, y - 5 * r); x.stroke(); }
      x.fillStyle = "#111111"; x.fillText(text, 50 * r, y);
    });
    const a = document.createElement("a");
    a.download = name + ".png"; a.href = c.toDataURL("image/png");
    document.body.appendChild(a); a.click(); a.remove();
  };
})();
</script>
"""


def _legend_html(legend: tuple, title: str, settings: str) -> tuple[str, str]:
    """The header (title, settings, PNG button) and the legend, as HTML around the drawing."""
    esc = html.escape
    head = (f'<div class="kepp-head" style="font-family:sans-serif;display:flex;align-items:baseline;gap:12px">'
            f'<b style="font-size:17px">{esc(title)}</b><span style="font-size:13px;color:#555">{esc(settings)}</span>'
            '<button id="kepp-png" onclick="keppPng()" style="margin-left:auto;font-size:13px">Download PNG</button></div>')
    rows = []
    for style, colour, text, group in legend:
        style, colour, group = esc(str(style)), esc(str(colour)), esc(str(group))  # attribute values
        if style == "node":
            swatch = f'<span style="display:inline-block;width:26px;height:14px;background:{colour};border-radius:3px"></span>'
        else:
            border = {"dashed": "dashed", "dotted": "dotted"}.get(style, "solid")
            swatch = f'<span style="display:inline-block;width:30px;border-top:4px {border} {colour};vertical-align:middle"></span>'
        rows.append(f'<div class="kepp-legend-entry" data-style="{style}" data-group="{group}">{swatch} '
                    f'<span>{esc(text)}</span></div>')
    legend_html = ('<div class="kepp-legend" style="font-family:sans-serif;font-size:14px;line-height:1.6;'
                   'clear:both;padding-top:6px">' + "".join(rows) + "</div>") if rows else ""
    return head, legend_html


def _options(fixed: bool, hierarchical: bool) -> str:
    """vis.js options: fixed positions (physics off), a left-to-right hierarchy, or a seeded physics layout."""
    if fixed:
        layout, physics = '"layout": {"randomSeed": 1},', '"physics": {"enabled": false}'
    elif hierarchical:
        layout = ('"layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",'
                  ' "levelSeparation": 190}},')
        physics = '"physics": {"enabled": false}'
    else:
        layout = '"layout": {"randomSeed": 7, "improvedLayout": true},'
        physics = '"physics": {"enabled": true, "solver": "forceAtlas2Based", "stabilization": {"iterations": 150}}'
    return ('{' + layout + physics + ', "edges": {"smooth": {"type": "curvedCW", "roundness": 0.15}},'
            ' "interaction": {"hover": true, "tooltipDelay": 80, "navigationButtons": false}}')


def _edge_options(e: GraphEdge) -> dict:
    """One arrow's vis.js options (its own bend, so that arrows sharing a pair stay apart)."""
    dashes = list(e.dashes) if isinstance(e.dashes, tuple) else e.dashes
    smooth = ({"enabled": True, "type": "curvedCW" if e.curve > 0 else "curvedCCW", "roundness": abs(e.curve)}
              if e.curve else {"enabled": e.source == e.target})
    return dict(label=e.label, title=e.title or e.label, width=e.width, color=e.color, dashes=dashes,
                arrows="to", font={"size": 17, "align": "top"}, smooth=smooth, kind=e.kind, group=e.group)


@st.cache_data(show_spinner=False, max_entries=64)
def graph_html(nodes: tuple, edges: tuple, height: int = 560, hierarchical: bool = False, fixed: bool = False,
               title: str = "", settings: str = "", legend: tuple = (), name: str = "kepp_graph") -> str:
    """A standalone, offline HTML page drawing the graph (pyvis with vis.js inlined), with its
    title, settings, legend and a PNG export."""
    from pyvis.network import Network

    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor="#ffffff")
    for n in (GraphNode(*t) for t in nodes):
        pos = {"x": n.x, "y": n.y, "physics": False} if n.x is not None else {}
        net.add_node(n.id, label=n.label, title=n.title or n.label, color=n.color, size=n.size,
                     shape="box", font={"size": 24 if fixed else 18, "color": n.font}, role=n.role,
                     widthConstraint={"maximum": 160}, **pos)  # long labels wrap instead of overlapping
    for e in (GraphEdge(*t) for t in edges):
        net.add_edge(e.source, e.target, **_edge_options(e))
    net.set_options(_options(fixed, hierarchical))
    page = net.generate_html(notebook=False)
    # Offline: vis.js is inlined; drop the template's CDN/relative asset tags it does not need.
    page = re.sub(r"<center>\s*<h1></h1>\s*</center>", "", _EXTERNAL.sub("", page))
    head, legend_html = _legend_html(legend, title, settings)
    # Dataset text in the inline script: escaped for a script (pyvis writes nodes and edges with
    # Jinja's tojson, which escapes the same characters), so every label shows exactly as written.
    script = _PAGE_JS % tuple(script_json(x) for x in ([list(x) for x in legend], title, settings, name))
    page = page.replace('<div class="card" style="width: 100%">', head + '<div class="card" style="width: 100%">', 1)
    return page.replace("</body>", legend_html + script + "</body>", 1)


# The drawing in a frame of the page that reports a click on a node (its action id) to Python: a
# components.v2 component (no build step), so that clicking a step can re-centre the plan graph.
_CLICK_JS = """
export default function ({ parentElement, data, setTriggerValue }) {
  let frame = parentElement.querySelector("iframe.kepp-graph");
  if (!frame || frame.dataset.digest !== data.digest) {
    if (frame) frame.remove();
    frame = document.createElement("iframe");
    frame.className = "kepp-graph";
    frame.dataset.digest = data.digest;
    frame.style.cssText = `width:100%;height:${data.height}px;border:0;display:block`;
    frame.srcdoc = data.html;
    parentElement.appendChild(frame);
  }
  const hook = () => {
    const w = frame.contentWindow;
    if (!w || !w.network) return setTimeout(hook, 100);
    if (w.__keppClick) return;
    w.__keppClick = true;
    w.network.on("click", (p) => { if (p.nodes.length) setTriggerValue("node", p.nodes[0]); });
  };
  hook();
}
"""
_CLICKABLE = st.components.v2.component("kepp_clickable_graph", js=_CLICK_JS, isolate_styles=False)


def drawing_height(drawing: GraphDrawing, height: int) -> int:
    """The frame height for a drawing: the canvas, the header and the legend's lines."""
    return height + 40 + 24 * len(drawing.legend) + 16


def show_graph(drawing: GraphDrawing, height: int = 560, hierarchical: bool = False,
               download_name: str | None = None, key: str | None = None, click_key: str | None = None) -> str:
    """Draw a graph in the page (interactive, with a PNG export in its header) with an HTML
    download; returns the HTML. With ``click_key``, a click on a node stores its action id in
    ``st.session_state[click_key]`` and reruns the page."""
    page = graph_html(tuple(astuple(n) for n in drawing.nodes.values()),
                      tuple(astuple(e) for e in drawing.edges.values()), height, hierarchical, drawing.fixed,
                      drawing.title, drawing.settings, tuple(tuple(x) for x in drawing.legend),
                      (download_name or "kepp_graph").removesuffix(".html"))
    full = drawing_height(drawing, height)
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
        # The page is already in the iframe: send it again only when asked (it carries vis.js inline).
        st.download_button("Download graph (HTML)", lambda: page, file_name=download_name, mime="text/html",
                           key=key, on_click="ignore")
    return page


# --- drawings of the graph ---------------------------------------------------------------------
WEIGHTS = {"p2kg": "P²KG probability", "pkg": "frequency weight"}


def edge_title(graph, u: int, v: int) -> str:
    """Hover text of an edge: count and both weightings (or that the graph never saw it)."""
    return plangraph.edge_text(graph, u, v)


def node_title(graph, a: int) -> str:
    """Hover text of a node: its transition and plan counts."""
    return plangraph.node_text(graph, a)


def edges_drawing(graph, nodes: Iterable[int], edges: Iterable[tuple[int, int]], scorer: str = "p2kg",
                  focus: Sequence[int] = (), title: str = "", settings: str = "") -> GraphDrawing:
    """A drawing of ``edges`` between ``nodes`` with weights as labels and counts on hover;
    edge width grows with the weight."""
    d = GraphDrawing(title=title, settings=settings)
    for a in nodes:
        colour = NODE_FOCUS if a in focus else NODE
        d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a), colour, 22 if a in focus else 16))
    for u, v in edges:
        w = float(graph.probability(u, v) if scorer == "p2kg" else graph.frequency(u, v))
        d.node(GraphNode(int(u), graph.actions[u], node_title(graph, u)))
        d.node(GraphNode(int(v), graph.actions[v], node_title(graph, v)))
        d.edge(GraphEdge(int(u), int(v), label=f"{w:.2f}", title=edge_title(graph, u, v),
                         width=1.0 + 6.0 * w, color=EDGE, kind="graph"))
    if focus:
        d.legend.append(("node", NODE_FOCUS, "the chosen step", -1))
    d.legend.append(("line", EDGE, f"arrow: a transition of the graph; label and width: its {WEIGHTS[scorer]} "
                                   "(hover for its count and both weightings)", -1))
    return d


def plan_drawing(graph, pg, title: str = "", scorer: str = "p2kg") -> GraphDrawing:
    """A drawing of a :class:`~components.plangraph.PlanGraph`: fixed left-to-right positions, one colour
    per distinct path, the legend's entries as the plan graph gives them."""
    d = GraphDrawing(title=title, fixed=True, settings=" · ".join(f"{k}: {v}" for k, v in pg.settings.items()))
    for n in pg.nodes:
        d.node(GraphNode(n.id, n.label, n.title, n.colour, 24 if n.role in ("start", "goal") else 18,
                         n.x, n.y, n.font_colour, n.role))
    labelled: set[tuple[int, int]] = set()
    for k, e in enumerate(pg.edges):
        w = e.probability if scorer == "p2kg" else e.frequency
        show = e.kind == "context" or (e.kind == "path" and e.count > 0 and (e.source, e.target) not in labelled)
        labelled.add((e.source, e.target))
        dashes = (8, 6) if e.kind == "path" and e.dashed else (2, 5) if e.kind == "outside" else False
        d.edges[(e.source, e.target, k)] = GraphEdge(e.source, e.target, f"{w:.2f}" if show else "", e.title,
                                                     e.width, e.colour, dashes, e.curve, e.kind,
                                                     -1 if e.group is None else e.group)
    d.legend = [(x.style, x.colour, x.text, -1 if x.group is None else x.group) for x in pg.legend]
    return d


def expert_drawing(graph, nodes: Iterable[int], edges: Sequence[tuple[int, int]],
                   freq: dict[tuple[int, int], int], title: str = "", settings: str = "") -> GraphDrawing:
    """A task's expert trajectories: the transitions its training plans use, width by frequency."""
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
                         width=1.0 + 9.0 * n / top, color=PATH_COLOURS[0], kind="expert"))
    d.legend.append(("line", PATH_COLOURS[0], "arrow: a transition of this task's training plans; label: how many "
                                              "times; width grows with it", -1))
    return d


# --- the plan graph panel --------------------------------------------------------------------------------
ENDPOINTS = "â₁ and â_T"


def _plan_height(pg) -> int:
    """Canvas height for a plan graph: its rows, within 360–620 px."""
    rows = [n.row for n in pg.nodes] or [0]
    return int(min(620, max(360, (max(rows) - min(rows) + 1) * 95 + 80)))


def plan_graph_panel(graph, endpoints: Sequence[int], named: Sequence[tuple[str, Sequence[int]]],
                     truth: Sequence[int] | None, key: str, title: str = "P²KG around the plan") -> object:
    """The plan graph, full width: depth, step budget and "centre on" controls, the drawing with its
    legend (one entry per distinct path), and HTML/PNG exports. Returns the :class:`PlanGraph`."""
    c1, c2, c3 = st.columns([1, 1, 2])
    depth = c1.slider("Depth", 0, 3, 1, key=f"{key}_depth",
                      help="graph transitions within this many steps of the centre are drawn")
    max_nodes = c2.slider("Max steps", 6, 40, 18, key=f"{key}_max_nodes",
                          help="the nearest and strongest neighbours are kept; path steps always are")
    clicked = st.session_state.pop(f"{key}_clicked", None)
    if clicked is not None and 0 <= int(clicked) < len(graph.actions):  # a click on a step re-centres on it
        st.session_state[f"{key}_centre"] = graph.actions[int(clicked)]
    centre_name = st.session_state.get(f"{key}_centre", ENDPOINTS)
    centre = None if centre_name == ENDPOINTS or centre_name not in graph.actions else graph.action_index(centre_name)
    pg = plangraph.plan_graph(graph, endpoints, named, truth, depth=depth, max_nodes=max_nodes, centre=centre)
    options = [ENDPOINTS, *sorted({n.label for n in pg.nodes} | ({centre_name} - {ENDPOINTS}))]
    c3.selectbox("Centre on", options, key=f"{key}_centre",
                 help="draw the graph's neighbourhood around this step instead of the endpoints "
                      "(or click a step in the drawing)")
    drawing = plan_drawing(graph, pg, title=title)
    show_graph(drawing, height=_plan_height(pg), download_name=f"{key}_graph.html", key=f"{key}_graph_dl",
               click_key=f"{key}_clicked")
    if pg.hidden:
        st.caption(f"{pg.hidden} more neighbour{'s' if pg.hidden > 1 else ''} within depth {depth} "
                   "left out: raise *Max steps* to draw them.")
    return pg
