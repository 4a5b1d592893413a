"""Graph drawings as plain records (no Streamlit): the P²KG around a step, a plan graph
(:class:`~components.graph.plangraph.PlanGraph`) and a task's expert trajectories as nodes, arrows, a title,
a settings line and a legend, placed in a grid; the type sizes they are drawn at. :mod:`components.graph.page`
turns a drawing into an HTML page, :mod:`components.graph.network` puts it in the Streamlit page."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from components.graph import plangraph
from components.graph.layout import grid_by_position
from components.ui.colours import EDGE, FOCUS, INK, NODE, PATH_COLOURS
from components.ui.config import MIN_PRESENT_PX, STEP_PRESENT_PX


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


# --- drawings of the graph ---------------------------------------------------------------------
WEIGHTS = {"p2kg": "P²KG probability", "pkg": "frequency weight"}


def edge_title(graph, u: int, v: int) -> str:
    """Hover text of an edge: count and both weightings (or that the graph never saw it)."""
    return plangraph.edge_text(graph, u, v)


def node_title(graph, a: int) -> str:
    """Hover text of a node: its transition and plan counts."""
    return plangraph.node_text(graph, a)


LABELLED = 12  # arrows of a neighbourhood whose weight is written on them (the strongest; every one on hover)


TWO_WAY_CURVE = 0.2  # the bend of each arrow of a two-way pair: a → b and b → a bend to opposite sides (vis.js's
# curvedCW follows the arrow's direction), two curves apart, each label beside its own


def two_way_bend(u: int, v: int, edges: set) -> float:
    """The bend of the arrow ``u → v``: :data:`TWO_WAY_CURVE` when ``v → u`` is drawn too (two curves, each with its
    own label), else straight.

    >>> two_way_bend(1, 2, {(1, 2), (2, 1)}), two_way_bend(1, 2, {(1, 2)}), two_way_bend(3, 3, {(3, 3)})
    (0.2, 0.0, 0.0)
    """
    return TWO_WAY_CURVE if u != v and (v, u) in edges else 0.0


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
    grows with the weight; a two-way pair as two curves (:func:`two_way_bend`). Steps left to right by their typical
    place in the training plans
    (``positions``, :func:`components.graph.layout.typical_positions`), the first ``focus`` step alone in the
    middle column, at most ``max_rows`` to a column (:func:`components.graph.layout.grid_by_position`)."""
    d = GraphDrawing(title=title, settings=settings)
    for a in nodes:
        colour = FOCUS if a in focus else NODE
        d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a), colour, 22 if a in focus else 16, role="focus" if a in focus else ""))
    weights = [float(graph.probability(u, v) if scorer == "p2kg" else graph.frequency(u, v)) for u, v in edges]
    strongest = set(sorted(range(len(weights)), key=lambda k: -weights[k])[:LABELLED])
    drawn = {(int(u), int(v)) for u, v in edges}
    for k, ((u, v), w) in enumerate(zip(edges, weights)):
        d.node(GraphNode(int(u), graph.actions[u], node_title(graph, u)))
        d.node(GraphNode(int(v), graph.actions[v], node_title(graph, v)))
        d.edge(GraphEdge(int(u), int(v), label=f"{w:.2f}" if k in strongest else "", title=edge_title(graph, u, v),
                         width=1.0 + 6.0 * w, color=EDGE, curve=two_way_bend(int(u), int(v), drawn), kind="graph",
                         weight=w))
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
    left to right by their typical place in those plans (``positions``); a two-way pair as two curves."""
    d = GraphDrawing(title=title, settings=settings)
    top = max((freq[e] for e in edges), default=1)
    used = {a for e in edges for a in e}
    drawn = {(int(u), int(v)) for u, v in edges}
    for a in nodes:
        if a in used:
            d.node(GraphNode(int(a), graph.actions[a], node_title(graph, a)))
    for u, v in edges:
        n = freq[(u, v)]
        d.edge(GraphEdge(int(u), int(v), label=str(n),
                         title=f"{graph.actions[u]} → {graph.actions[v]}\n{n} times in this task's training plans\n"
                               f"P²KG probability {float(graph.probability(u, v)):.3f}",
                         width=1.0 + 9.0 * n / top, color=PATH_COLOURS[0], curve=two_way_bend(int(u), int(v), drawn),
                         kind="expert", weight=n / top))
    d.legend.append(("line", PATH_COLOURS[0], "arrow: a transition of this task's training plans; label: how many "
                                              "times (hover where a label would cover another); width grows with it", -1))
    positions = positions if positions is not None else [0.5] * len(graph.actions)
    return _grid(d, *grid_by_position(d.nodes, positions, None, max_rows))
