"""The plan graph: what the Plan page draws around a plan, decided in plain Python so that it can
be tested without a browser (:mod:`components.graph.network` turns it into a drawing).

A :class:`PlanGraph` holds the distinct paths of one query (the ground truth, KEPP's plan,
the graph's top-R paths: identical sequences merged into one :class:`PathGroup` that names
all of them), the graph's neighbourhood around the endpoints (or a chosen centre) within a
depth and a node budget, the graph's arrows between drawn steps that lie outside that depth,
fixed left-to-right positions (column = position in the plan) and a legend whose entries say
exactly what each style means. Same input, same picture: nothing here is random.

>>> from kepp_core.graph import ProcedureGraph  # the app receives graphs from kepp_core.api
>>> g = ProcedureGraph.from_plans(["a", "b", "c", "d"], [(0, 1, 2), (0, 1, 3), (0, 3, 2)])
>>> pg = plan_graph(g, (0, 2), [("KEPP plan", (0, 1, 2)), ("graph path 1", (0, 1, 2))], truth=(0, 3, 2))
>>> [grp.label for grp in pg.groups]
['ground truth', 'KEPP plan = graph path 1']
>>> sorted((n.label, n.column) for n in pg.nodes if n.role != "context")
[('a', 0), ('b', 1), ('c', 2), ('d', 1)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from components.ui.colours import (EDGE, FAINT_EDGE, FOCUS, GOAL_NODE, GROUP_COLOURS, INK, MUTED, PATH_NODE, PLAN, RIGHT,
                               START_NODE, STEP_NODE, WHITE)
from kepp_core import api
from kepp_core.errors import KeppError

__all__ = ["LegendEntry", "PathGroup", "PlanEdge", "PlanGraph", "PlanNode", "edge_text", "graph_paths",
           "label_colour", "label_edges", "node_text", "plan_graph"]

COLUMN_GAP = 230  # px between plan positions (labels wrap at 160 px)
ROW_GAP = 110  # px between rows of one column (a label wraps to three lines)


@dataclass(frozen=True)
class PathGroup:
    """One distinct path and every name it goes by (``ground truth``, ``KEPP plan``, ``graph path 2``)."""

    actions: tuple[int, ...]
    members: tuple[str, ...]
    colour: str

    @property
    def label(self) -> str:
        """The legend's name of the group: its members joined by ``=``."""
        return " = ".join(self.members)

    @property
    def is_truth(self) -> bool:
        """Whether this path is the ground truth."""
        return "ground truth" in self.members


@dataclass
class PlanNode:
    """A drawn step: its role (``start``, ``goal``, ``centre``, ``path``, ``context``), plan
    column and row, fixed position in pixels, hover text, fill and readable label colour."""

    id: int
    label: str
    role: str
    column: int
    row: int = 0
    x: int = 0
    y: int = 0
    title: str = ""
    colour: str = STEP_NODE
    font_colour: str = INK


@dataclass
class PlanEdge:
    """A drawn arrow. ``kind``: ``path`` (one group's step pair; ``group`` is its index),
    ``context`` (a graph arrow within the depth limit) or ``outside`` (a graph arrow between
    drawn steps beyond the depth limit). ``count`` 0 = a pair the graph never saw. ``labelled``:
    the drawing writes its weight on it (see :func:`label_edges`)."""

    source: int
    target: int
    kind: str
    count: int
    probability: float
    frequency: float
    title: str
    colour: str
    width: float
    dashed: bool = False
    group: int | None = None
    curve: float = 0.0  # bend, so that paths sharing a pair stay visible side by side
    labelled: bool = False  # its weight is written on it (else only in its hover text)


@dataclass(frozen=True)
class LegendEntry:
    """One line of the legend: the style (``node``, ``line``, ``dashed``, ``dotted``), its colour
    and what it means; ``group`` is the path group's index for path entries."""

    style: str
    colour: str
    text: str
    group: int | None = None


@dataclass
class PlanGraph:
    """Everything the plan graph draws (see the module's docstring)."""

    nodes: list[PlanNode]
    edges: list[PlanEdge]
    groups: list[PathGroup]
    legend: list[LegendEntry]
    settings: dict = field(default_factory=dict)
    hidden: int = 0  # neighbourhood steps left out by the node budget
    other_tasks: int = 0  # neighbourhood steps of other tasks left out (drawn only when asked)

    def path_edges(self, group: int) -> list[tuple[int, int]]:
        """The step pairs drawn for path group ``group`` (in path order)."""
        return [(e.source, e.target) for e in self.edges if e.kind == "path" and e.group == group]


def label_colour(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (``#rrggbb``; WCAG relative luminance).

    >>> label_colour(START_NODE) == WHITE, label_colour(PATH_NODE) == INK
    (True, True)
    """
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    lum = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    return WHITE if (1.05 / (lum + 0.05)) > ((lum + 0.05) / 0.05) else INK


def _groups(named: Sequence[tuple[str, Sequence[int]]], truth: Sequence[int] | None) -> list[PathGroup]:
    """Distinct paths in order (truth first), identical ones merged, each with its colour."""
    order: list[tuple[int, ...]] = []
    names: dict[tuple[int, ...], list[str]] = {}
    for name, path in ([("ground truth", truth)] if truth is not None else []) + list(named):
        key = tuple(int(a) for a in path)
        if key not in names:
            order.append(key)
            names[key] = []
        names[key].append(name)
    out, k = [], 0
    for key in order:
        members = names[key]
        if "ground truth" in members:
            colour = RIGHT
        elif members[0] == "KEPP plan":
            colour = PLAN
        else:
            colour, k = GROUP_COLOURS[k % len(GROUP_COLOURS)], k + 1
        out.append(PathGroup(key, tuple(members), colour))
    return out


def _columns(groups: list[PathGroup], endpoints: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Column (position in the plan) and row of every path step: the first group that uses it decides."""
    at: dict[int, tuple[int, int]] = {}
    for row, g in enumerate(groups):
        for col, a in enumerate(g.actions):
            at.setdefault(a, (col, row))
    horizon = max((len(g.actions) for g in groups), default=2)
    at.setdefault(int(endpoints[0]), (0, 0))
    at.setdefault(int(endpoints[1]), (horizon - 1, 0))
    return at


def _place_context(graph, placed: dict[int, tuple[int, int]], context: list[int]) -> dict[int, int]:
    """A column for each context step: right of its strongest drawn predecessor, else left of its
    strongest drawn successor (deterministic: ties by action index)."""
    cols: dict[int, int] = {}
    pending = list(context)
    for _ in range(len(context) + 1):
        left = []
        for a in pending:
            known = {**{u: c for u, (c, _) in placed.items()}, **cols}
            pred = [(float(graph.probability(u, a)), -u, known[u] + 1) for u in graph.predecessors[a] if u in known]
            succ = [(float(graph.probability(a, v)), -v, known[v] - 1) for v in graph.successors[a] if v in known]
            if pred or succ:
                cols[a] = max(pred)[2] if pred else max(succ)[2]
            else:
                left.append(a)
        if not left or len(left) == len(pending):
            break
        pending = left
    for a in pending:
        cols.setdefault(a, 0)
    return cols


def _rank_context(graph, hood: dict[int, int], drawn: set[int], budget: int) -> tuple[list[int], int]:
    """The context steps kept under the node budget: nearest first, then strongest arrow to a drawn step."""
    def strength(a: int) -> float:
        return max([float(graph.probability(a, b)) for b in drawn] + [float(graph.probability(b, a)) for b in drawn])

    ranked = sorted((a for a in hood if a not in drawn), key=lambda a: (hood[a], -strength(a), a))
    kept = ranked[:max(0, budget)]
    return kept, len(ranked) - len(kept)


def _position(nodes: list[PlanNode], below: bool = False) -> None:
    """Fixed pixel positions: x by column; in each column, path rows first (in group order), then
    context steps alternately above and below them (by label; ``below``: all below them, so that the
    grid is no taller than its fullest column)."""
    by_col: dict[int, list[PlanNode]] = {}
    for n in nodes:
        by_col.setdefault(n.column, []).append(n)
    for col, members in by_col.items():
        path = sorted((n for n in members if n.role != "context"), key=lambda n: (n.row, n.id))
        ctx = sorted((n for n in members if n.role == "context"), key=lambda n: (n.label, n.id))
        for i, n in enumerate(path):
            n.row = i
        first = len(path)
        for i, n in enumerate(ctx):
            n.row = first + i if below else -(i // 2 + 1) if i % 2 == 0 else first + i // 2
        for n in members:
            n.x, n.y = col * COLUMN_GAP, n.row * ROW_GAP


def edge_text(graph, u: int, v: int) -> str:
    """Hover text of a step pair: its count and both weightings (or that the graph never saw it)."""
    n = int(graph.counts.get(u, v))
    head = f"{graph.actions[u]} → {graph.actions[v]}"
    if n == 0:
        return f"{head}\nnever seen in the graph's training plans (count 0)"
    return (f"{head}\ncount {n} of {int(graph.out_counts[u])} out of '{graph.actions[u]}'\n"
            f"P²KG probability {float(graph.probability(u, v)):.3f}\nfrequency weight {float(graph.frequency(u, v)):.3f}")


def node_text(graph, a: int) -> str:
    """Hover text of a step: its transition and plan counts."""
    return (f"{graph.actions[a]}\nfollowed by {int(graph.out_counts[a])} transitions, preceded by "
            f"{int(graph.counts[:, a].sum())}\n"
            f"starts {int(graph.start_counts[a])} plans, ends {int(graph.end_counts[a])}")


def _nodes(graph, groups, endpoints, centre, context_cols, placed, below: bool = False) -> list[PlanNode]:
    """The drawn steps with their role, colour and readable label colour."""
    nodes = []
    for a, (col, row) in sorted(placed.items()):
        role = "start" if a == endpoints[0] else "goal" if a == endpoints[1] else "path"
        nodes.append(PlanNode(a, graph.actions[a], role, col, row))
    for a, col in sorted(context_cols.items()):
        nodes.append(PlanNode(a, graph.actions[a], "context", col))
    fills = {"start": START_NODE, "goal": GOAL_NODE, "path": PATH_NODE, "context": STEP_NODE}
    for n in nodes:
        if centre is not None and n.id == centre and n.role in ("path", "context"):
            n.role = "centre"
        n.colour = fills.get(n.role, FOCUS)
        n.font_colour = label_colour(n.colour)
        n.title = node_text(graph, n.id)
    _position(nodes, below)
    return nodes


def _edges(graph, groups: list[PathGroup], drawn: set[int], near: set[tuple[int, int]], depth: int,
           min_probability: float) -> list[PlanEdge]:
    """Path arrows (one per group and pair, bent apart when groups share a pair), the graph's arrows
    within the depth limit, and its arrows between drawn steps beyond it."""
    out: list[PlanEdge] = []
    on_path: dict[tuple[int, int], int] = {}
    for k, g in enumerate(groups):
        for u, v in dict.fromkeys(zip(g.actions, g.actions[1:])):
            n = int(graph.counts.get(u, v))
            shared = on_path.get((u, v), 0)
            on_path[(u, v)] = shared + 1
            where = "" if n == 0 or (u, v) in near else f"\n(outside the depth-{depth} neighbourhood)"
            out.append(PlanEdge(u, v, "path", n, float(graph.probability(u, v)), float(graph.frequency(u, v)),
                                f"{g.label}\n{edge_text(graph, u, v)}{where}", g.colour, 5.0 if not g.is_truth else 6.0,
                                dashed=n == 0, group=k, curve=0.18 * shared * (1 if shared % 2 else -1)))
    for u in sorted(drawn):
        for v in graph.successors[u]:
            v = int(v)
            p = float(graph.probability(u, v))
            if v not in drawn or (u, v) in on_path or p < min_probability:
                continue
            kind = "context" if (u, v) in near else "outside"
            text = edge_text(graph, u, v) + ("" if kind == "context" else
                                             f"\noutside the depth-{depth} neighbourhood of the centre")
            out.append(PlanEdge(u, int(v), kind, int(graph.counts.get(u, v)), p, float(graph.frequency(u, v)), text,
                                EDGE if kind == "context" else FAINT_EDGE,
                                1.0 + 5.0 * p if kind == "context" else 1.0, dashed=kind == "outside", curve=0.12))
    return out


def label_edges(edges: Sequence[PlanEdge]) -> None:
    """Mark the arrows whose weight the drawing writes on them: the paths' arrows, each step pair
    once (the first path drawn on it: the ground truth's, then the plan's, then the graph paths' in
    rank order), and never a pair the graph never saw. The graph's other arrows show their weight on
    hover only, so that the few numbers the plan rests on can be read from the back of the room.

    >>> def arrow(u, v, kind, count=1): return PlanEdge(u, v, kind, count, 0.5, 0.5, "", PLAN, 1.0)
    >>> es = [arrow(0, 1, "path"), arrow(1, 2, "path", 0), arrow(0, 1, "path"), arrow(1, 3, "context")]
    >>> label_edges(es); [e.labelled for e in es]
    [True, False, False, False]
    """
    seen: set[tuple[int, int]] = set()
    for e in edges:
        e.labelled = e.kind == "path" and e.count > 0 and (e.source, e.target) not in seen
        if e.kind == "path":
            seen.add((e.source, e.target))


def _legend(graph, groups: list[PathGroup], nodes: list[PlanNode], edges: list[PlanEdge], depth: int,
            scorer: str, centre: int | None = None) -> list[LegendEntry]:
    """One entry per distinct path (naming every path it stands for), the endpoints and the centre as
    drawn (â₁ = â_T: one step is both, one entry), and each arrow style present in the drawing, each
    saying exactly what it means: nothing the drawing does not show (the centre in the colour it is drawn in)."""
    weight = "P²KG probability" if scorer == "p2kg" else "frequency weight"
    roles = {n.role: n for n in nodes}
    goal_drawn = "goal" in roles
    out = [LegendEntry("node", START_NODE, "â₁ (start)" if goal_drawn else "â₁ = â_T (start and goal)")]
    if goal_drawn:
        out.append(LegendEntry("node", GOAL_NODE, "â_T (goal)"))
    middle = next((n for n in nodes if n.id == centre), None)
    if middle is not None:  # in its own colour (an endpoint's, when the centre is one)
        out.append(LegendEntry("node", middle.colour, f"centre of the neighbourhood: {middle.label}"))
    for k, g in enumerate(groups):
        out.append(LegendEntry("line", g.colour, f"{g.label}: " + " → ".join(graph.actions[a] for a in g.actions), group=k))
    kinds = {e.kind for e in edges}
    if any(e.kind == "path" and e.dashed for e in edges):
        out.append(LegendEntry("dashed", MUTED, "dashed: a pair the graph never saw (count 0)"))
    if "context" in kinds:
        out.append(LegendEntry("line", EDGE, f"grey: a transition within {depth} step"
                               f"{'s' if depth > 1 else ''}; width: its {weight} (hover for it)"))
    if "outside" in kinds:
        out.append(LegendEntry("dotted", FAINT_EDGE, f"dotted: a transition beyond the depth limit ({depth})"))
    return out


def plan_graph(graph, endpoints: Sequence[int], named_paths: Sequence[tuple[str, Sequence[int]]] = (),
               truth: Sequence[int] | None = None, depth: int = 1, max_nodes: int = 24,
               min_probability: float = 0.0, centre: int | None = None, scorer: str = "p2kg",
               own: Collection[int] | None = None, max_rows: int | None = None) -> PlanGraph:
    """The plan graph of one query: ``named_paths`` in rank order (``("KEPP plan", plan)``,
    ``("graph path 1", p)``, …) with the ``truth`` first, identical ones merged; the graph's
    neighbourhood within ``depth`` of the endpoints (or of ``centre``) under a budget of
    ``max_nodes`` steps (path steps always drawn) and of ``max_rows`` steps to a column (what a screen
    reads at a room's type size; the rest counted in ``hidden``), of the episode's task's steps only where
    ``own`` names them (its other steps counted in ``other_tasks``); the graph's arrows between drawn steps
    beyond that depth; fixed positions and the legend.

    >>> from kepp_core.graph import ProcedureGraph
    >>> g = ProcedureGraph.from_plans(["a", "b", "c", "x"], [(0, 1, 2), (0, 3, 2)])
    >>> pg = plan_graph(g, (0, 2), [("KEPP plan", (0, 1, 2))], own={0, 1, 2})
    >>> sorted(n.label for n in pg.nodes), pg.other_tasks
    (['a', 'b', 'c'], 1)
    """
    if depth < 0 or max_nodes < 1:
        raise KeppError(f"plan graph: depth must be >= 0 and max nodes >= 1 (got {depth}, {max_nodes})")
    a1, at = int(endpoints[0]), int(endpoints[1])
    groups = _groups(named_paths, truth)
    placed = _columns(groups, (a1, at))
    centres = [a1, at] if centre is None else [int(centre)]
    around = [api.subgraph(graph, c, depth, min_probability) for c in centres]  # one walk per centre
    hood = {a: min(sg.nodes[a] for sg in around if a in sg.nodes) for sg in around for a in sg.nodes}
    others = set() if own is None else {a for a in hood if a not in placed and a not in own and a != centre}
    hood = {a: d for a, d in hood.items() if a not in others}
    near = {(e.source, e.target) for sg in around for e in sg.edges}
    kept, hidden = _rank_context(graph, hood, set(placed), max_nodes - len(placed))
    horizon = max((len(g.actions) for g in groups), default=2)
    # inside the plan's columns: a column more would narrow every label (a neighbour of â₁ sits beside it)
    context_cols = {a: min(max(c, 0), horizon - 1) for a, c in _place_context(graph, placed, kept).items()}
    if max_rows is not None:  # no column holds more steps than a screen reads (the nearest, strongest first)
        used = Counter(c for c, _ in placed.values())
        fits = {}
        for a in kept:
            if used[context_cols[a]] < max_rows:
                fits[a] = context_cols[a]
                used[context_cols[a]] += 1
        hidden += len(context_cols) - len(fits)
        context_cols = fits
    nodes = _nodes(graph, groups, (a1, at), centre, context_cols, placed, below=max_rows is not None)
    drawn = {n.id for n in nodes}
    edges = _edges(graph, groups, drawn, near, depth, min_probability)
    label_edges(edges)
    legend = _legend(graph, groups, nodes, edges, depth, scorer, centre)
    settings = {"P²KG around it: depth": depth, "max nodes": max_nodes, "minimum probability": min_probability,
                "centre": "â₁ and â_T" if centre is None else graph.actions[int(centre)], "weights": scorer}
    return PlanGraph(nodes, edges, groups, legend, settings, hidden, len(others))


def graph_paths(result, condition: str, R: int) -> list[tuple[str, tuple[int, ...]]]:
    """A KEPP result's named paths for the plan graph: its plan, and the top-``R`` graph paths (or
    the fallback paths) only when the planning model was conditioned on the graph (``condition == "graph"``)."""
    named = [("KEPP plan", tuple(int(a) for a in result.plan))]
    if condition == "graph":  # with no path between the endpoints, KEPP's fallback paths condition the model
        kind = "fallback path" if result.fallback else "graph path"
        named += [(f"{kind} {k + 1}", tuple(int(a) for a in p)) for k, p in enumerate(result.paths[:R])]
    return named
