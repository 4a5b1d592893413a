"""Graph drawings (pyvis, offline HTML): the P²KG around a step or around a plan's endpoints,
and a task's expert trajectories. The graph queries themselves come from ``kepp_core.api``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field

import streamlit as st

from kepp_core.api import neighbourhood

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
    """A node of a drawing: action id, label, hover text, colour, size."""

    id: int
    label: str
    title: str = ""
    color: str = NODE
    size: int = 18


@dataclass
class GraphEdge:
    """An arrow of a drawing: its ends, label, hover text, width, colour, dashed or not."""

    source: int
    target: int
    label: str = ""
    title: str = ""
    width: float = 1.5
    color: str = EDGE
    dashes: bool = False


@dataclass
class GraphDrawing:
    """Nodes and edges to draw, keyed by action id and (source, target)."""

    nodes: dict[int, GraphNode] = field(default_factory=dict)
    edges: dict[tuple[int, int], GraphEdge] = field(default_factory=dict)

    def node(self, node: GraphNode) -> None:
        """Add ``node`` unless one with its id is there."""
        self.nodes.setdefault(node.id, node)

    def edge(self, edge: GraphEdge) -> None:
        """Add or replace ``edge``."""
        self.edges[(edge.source, edge.target)] = edge

    def highlight_path(self, path: Sequence[int], color: str, labels: Sequence[str], width: float = 5.0,
                       title: str = "") -> None:
        """Draw ``path`` over the graph: its edges thick in ``color`` (added if missing)."""
        for a in path:
            self.node(GraphNode(a, labels[a]))
        for u, v in zip(path, path[1:]):
            old = self.edges.get((u, v))
            tip = (old.title + "\n" if old and old.title else "") + title
            self.edge(GraphEdge(u, v, label=old.label if old else "", title=tip, width=width, color=color,
                                dashes=old is None))


def _safe(text: str) -> str:
    """Dataset labels go into an inline script: keep them from closing it."""
    return text.replace("<", "‹").replace(">", "›")


_EXTERNAL = re.compile(r'<(script|link)[^>]+(src|href)="(https?:|\.\./)[^"]*"[^>]*>(\s*</script>)?', re.I)


@st.cache_data(show_spinner=False, max_entries=64)
def graph_html(nodes: tuple, edges: tuple, height: int = 560, hierarchical: bool = False) -> str:
    """A standalone, offline HTML page drawing the graph (pyvis with vis.js inlined)."""
    from pyvis.network import Network

    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor="#ffffff")
    for n in (GraphNode(*t) for t in nodes):
        net.add_node(n.id, label=_safe(n.label), title=_safe(n.title or n.label), color=n.color, size=n.size,
                     shape="box", font={"size": 20})
    for e in (GraphEdge(*t) for t in edges):
        net.add_edge(e.source, e.target, label=_safe(e.label), title=_safe(e.title or e.label), width=e.width,
                     color=e.color, dashes=e.dashes, arrows="to", font={"size": 16, "align": "top"})
    layout = ('"layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",'
              ' "levelSeparation": 190}},' if hierarchical else "")
    net.set_options('{' + layout + '"physics": {"enabled": ' + ("false" if hierarchical else "true") +
                    ', "solver": "forceAtlas2Based", "stabilization": {"iterations": 100}},'
                    ' "edges": {"smooth": {"type": "curvedCW", "roundness": 0.15}},'
                    ' "interaction": {"hover": true, "tooltipDelay": 80}}')
    page = net.generate_html(notebook=False)
    # Offline: vis.js is inlined; drop the template's CDN/relative asset tags it does not need.
    return _EXTERNAL.sub("", page)


def show_graph(drawing: GraphDrawing, height: int = 560, hierarchical: bool = False,
               download_name: str | None = None, key: str | None = None) -> str:
    """Draw a graph in the page (interactive) with an HTML download; returns the HTML."""
    page = graph_html(tuple(astuple(n) for n in drawing.nodes.values()),
                      tuple(astuple(e) for e in drawing.edges.values()), height, hierarchical)
    st.iframe(page, height=height + 20)
    if download_name:
        # The page is already in the iframe: send it again only when asked (it carries vis.js inline).
        st.download_button("Download graph (HTML)", lambda: page, file_name=download_name, mime="text/html",
                           key=key, on_click="ignore")
    return page



# --- drawings of the graph ---------------------------------------------------------------------
def edge_title(graph, u: int, v: int) -> str:
    """Hover text of an edge: count and both weightings."""
    p = float(graph.probability(u, v))
    f = float(graph.frequency(u, v))
    return (f"{graph.actions[u]} → {graph.actions[v]}\ncount {int(graph.counts[u, v])}"
            f" of {int(graph.out_counts[u])} out of '{graph.actions[u]}'\nP²KG probability {p:.3f}\nfrequency weight {f:.3f}")


def node_title(graph, a: int) -> str:
    """Hover text of a node: its transition and plan counts."""
    return (f"{graph.actions[a]}\nfollowed by {int(graph.out_counts[a])} transitions, preceded by "
            f"{int(graph.counts[:, a].sum())}\nstarts {int(graph.start_counts[a])} plans, ends {int(graph.end_counts[a])}")


def edges_drawing(graph, nodes: Iterable[int], edges: Iterable[tuple[int, int]], weighting: str = "p2kg",
                  focus: Sequence[int] = ()) -> GraphDrawing:
    """A drawing of ``edges`` between ``nodes`` with weights as labels and counts on hover;
    edge width grows with the weight."""
    d = GraphDrawing()
    for a in nodes:
        colour = NODE_FOCUS if a in focus else NODE
        d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a), colour, 22 if a in focus else 16))
    for u, v in edges:
        w = float(graph.probability(u, v) if weighting == "p2kg" else graph.frequency(u, v))
        d.node(GraphNode(int(u), graph.actions[u], node_title(graph, u)))
        d.node(GraphNode(int(v), graph.actions[v], node_title(graph, v)))
        d.edge(GraphEdge(int(u), int(v), label=f"{w:.2f}", title=edge_title(graph, u, v),
                         width=1.0 + 6.0 * w, color=EDGE))
    return d


def plan_drawing(graph, result, truth: Sequence[int] | None, depth: int = 1,
                 min_probability: float = 0.05) -> GraphDrawing:
    """The P²KG around a plan's endpoints with the recommended paths and the final plan drawn over it."""
    a1, at = result.endpoints
    nodes, edges = neighbourhood(graph, [a1, at], depth, min_probability)
    d = edges_drawing(graph, nodes, edges)
    labels = graph.actions
    for k, path in reversed(list(enumerate(result.paths))):
        d.highlight_path(path, PATH_COLOURS[k % len(PATH_COLOURS)], labels, width=4.0,
                         title=f"path {k + 1} (p={result.path_scores[k]:.3f})")
    d.highlight_path(result.plan, PLAN_COLOUR, labels, width=7.0, title="final plan")
    if truth is not None:
        for a in truth:
            d.node(GraphNode(int(a), labels[a], node_title(graph, a)))
    d.nodes[a1].color, d.nodes[a1].size = NODE_START, 26
    d.nodes[at].color, d.nodes[at].size = NODE_GOAL, 26
    return d


def expert_drawing(graph, nodes: Iterable[int], edges: Sequence[tuple[int, int]],
                   freq: dict[tuple[int, int], int]) -> GraphDrawing:
    """A task's expert trajectories: the transitions its training plans use, width by frequency."""
    d = GraphDrawing()
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
                         width=1.0 + 9.0 * n / top, color=PATH_COLOURS[0]))
    return d
