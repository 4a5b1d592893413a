"""Views of the graph for analysis and the app (docs, The app): the sub-graph around a step,
a task's expert trajectories and step transition matrices."""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kepp_core.catalog import EDGE_SCORERS
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.graph.build import ProcedureGraph

__all__ = [
    "Edge", "SubGraph", "capped_subgraph", "edge_weight", "expert_trajectories", "strongest_subgraph", "subgraph",
    "task_transition_matrix", "transition_matrix",
]

if TYPE_CHECKING:  # pandas loads with the first table (0.7 s): the app's first page shows none
    import pandas as pd


@dataclass(frozen=True)
class Edge:
    """A graph edge with its training count and P²KG probability."""

    source: int
    target: int
    count: int
    probability: float


@dataclass
class SubGraph:
    """Nodes within ``depth`` steps of ``centre`` (``nodes[a]`` = distance) and their edges."""

    centre: int
    nodes: dict[int, int]
    edges: list[Edge]

    def to_json(self, actions: Sequence[str]) -> dict:
        """The sub-graph as a JSON-ready dict."""
        return {"centre": self.centre, "centre_label": actions[self.centre],
                "nodes": [{"action": a, "label": actions[a], "depth": d} for a, d in self.nodes.items()],
                "edges": [{"source": e.source, "target": e.target, "source_label": actions[e.source],
                           "target_label": actions[e.target], "count": e.count,
                           "probability": e.probability} for e in self.edges]}

    def to_networkx(self, actions: Sequence[str]):
        """The sub-graph as a networkx DiGraph (probability and count on every edge)."""
        import networkx as nx

        g = nx.DiGraph()
        for a, d in self.nodes.items():
            g.add_node(a, label=actions[a], depth=d)
        for e in self.edges:
            g.add_edge(e.source, e.target, count=e.count, probability=e.probability, weight=e.probability)
        return g


def _task(graph: ProcedureGraph, task: str):
    if task not in graph.tasks:
        raise unknown_name_error("task", task, graph.tasks)
    return graph.tasks[task]


def edge_weight(graph: ProcedureGraph, u: int, v: int, scorer: str = "p2kg") -> float:
    """The weight of the edge ``u → v``: its P²KG probability (``p2kg``) or its min-max normalised
    frequency weight (``pkg``); 0 without an edge."""
    if scorer not in EDGE_SCORERS:
        raise KeppError(f"an arrow's weight comes from the scorer 'p2kg' or 'pkg', got {scorer!r}")
    return float(graph.probability(u, v) if scorer == "p2kg" else graph.frequency(u, v))


def subgraph(graph: ProcedureGraph, action: int | str, depth: int = 2, min_weight: float = 0.0,
             task: str | None = None, scorer: str = "p2kg") -> SubGraph:
    """Steps reachable from ``action`` in at most ``depth`` hops along out- or in-edges whose
    weight (:func:`edge_weight` in ``scorer``: the P²KG probability by default) is at least
    ``min_weight``; with ``task``, only actions that the task's training plans use. Edges: every
    such edge between kept nodes, sorted by weight (highest first). The one sub-graph walker:
    the ``kepp graph subgraph`` command, the app's graph page and the plan graph call it.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c", "d"], [(0, 1, 2, 3), (0, 1, 1)])
    >>> sorted(subgraph(g, "b", depth=1).nodes.items())
    [(0, 1), (1, 0), (2, 1)]
    >>> sorted(subgraph(g, "b", depth=1, min_weight=0.6).nodes)
    [0, 1]
    """
    if depth < 0:
        raise KeppError(f"sub-graph depth must be >= 0, got {depth}")
    if not 0.0 <= min_weight <= 1.0:
        raise KeppError(f"minimum weight must be within [0, 1], got {min_weight}")
    if scorer not in EDGE_SCORERS:  # fails before the walk, not at the first edge
        raise KeppError(f"an arrow's weight comes from the scorer 'p2kg' or 'pkg', got {scorer!r}")
    centre = graph.action_index(action)
    allowed = None
    if task is not None:
        allowed = set(_task(graph, task).action_counts())
        if centre not in allowed:
            raise KeppError(f"action {graph.actions[centre]!r} is not used by the training plans of task {task!r}")

    def ok(u: int, v: int) -> bool:
        in_task = allowed is None or (u in allowed and v in allowed)
        return in_task and edge_weight(graph, u, v, scorer) >= min_weight

    nodes = {centre: 0}
    queue = deque([centre])
    while queue:
        u = queue.popleft()
        if nodes[u] == depth:
            continue
        nbrs = [v for v in graph.successors[u] if ok(u, v)] + [v for v in graph.predecessors[u] if ok(v, u)]
        for v in nbrs:
            if v not in nodes:
                nodes[v] = nodes[u] + 1
                queue.append(v)
    edges = [Edge(u, v, graph.counts.get(u, v), float(graph.probability(u, v)))
             for u in nodes for v in graph.successors[u] if v in nodes and ok(u, v)]
    edges.sort(key=lambda e: (-edge_weight(graph, e.source, e.target, scorer), e.source, e.target))
    return SubGraph(centre, nodes, edges)


def strongest_subgraph(centre: int, edges: Iterable[tuple[int, int]], weight: Callable[[int, int], float],
                       max_nodes: int) -> tuple[set[int], list[tuple[int, int]]]:
    """At most ``max_nodes`` nodes of a neighbourhood (given by its ``edges``), grown from ``centre``
    along the strongest edges, and the ``edges`` between them (in their order).

    The centre is always kept. Like Prim's maximum spanning tree, the next node kept is the one
    joined to the kept nodes by the heaviest ``weight(u, v)`` edge, in either direction (ties: the
    smaller node id), so every kept node hangs on the centre by a chain of strong edges: a cap
    never leaves a node floating apart. Nodes no edge links to the centre are never kept.

    >>> w = {(0, 1): 0.9, (0, 2): 0.1, (2, 3): 0.8, (1, 0): 0.5}
    >>> strongest_subgraph(0, list(w), lambda u, v: w[u, v], max_nodes=2)
    ({0, 1}, [(0, 1), (1, 0)])
    >>> strongest_subgraph(0, list(w), lambda u, v: w[u, v], max_nodes=3)  # 3 hangs on 2: 2 comes first
    ({0, 1, 2}, [(0, 1), (0, 2), (1, 0)])
    """
    if max_nodes < 1:
        raise KeppError(f"the node cap must be at least 1, got {max_nodes}")
    edges = [(int(u), int(v)) for u, v in edges]
    centre = int(centre)
    touching: dict[int, list[tuple[int, int]]] = {}
    for u, v in edges:
        touching.setdefault(u, []).append((u, v))
        touching.setdefault(v, []).append((u, v))
    kept = {centre}
    heap: list[tuple[float, int]] = []  # (-weight, node outside): the strongest joins first

    def reach(node: int) -> None:
        for u, v in touching.get(node, ()):
            other = v if u == node else u
            if other not in kept:
                heapq.heappush(heap, (-float(weight(u, v)), other))

    reach(centre)
    while heap and len(kept) < max_nodes:
        _, node = heapq.heappop(heap)
        if node not in kept:
            kept.add(node)
            reach(node)
    return kept, [(u, v) for u, v in edges if u in kept and v in kept]


def expert_trajectories(graph: ProcedureGraph, task: str) -> pd.DataFrame:
    """The edges the training plans of ``task`` use, most frequent first.

    Columns: ``source``, ``target`` (indices), ``source_label``, ``target_label``, ``count``
    (times the task's plans take the edge), ``share`` (count / all the task's transitions)
    and ``probability`` (the edge's P²KG probability over the whole graph).

    >>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1), (0, 1), (0, 0)])
    >>> df = expert_trajectories(g, "")
    >>> df[["source_label", "target_label", "count"]].values.tolist(), df["share"].round(3).tolist()
    ([['a', 'b', 2], ['a', 'a', 1]], [0.667, 0.333])
    """
    counts = _task(graph, task).transition_counts()
    total = sum(counts.values())
    rows = [{"source": u, "target": v, "source_label": graph.actions[u], "target_label": graph.actions[v],
             "count": c, "share": c / total, "probability": float(graph.probability(u, v))}
            for (u, v), c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    columns = ["source", "target", "source_label", "target_label", "count", "share", "probability"]
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def transition_matrix(plans: Iterable[Sequence[int]], order: Sequence[int],
                      actions: Sequence[str] | None = None, normalize: bool = True,
                      weights: Iterable[int] | None = None) -> pd.DataFrame:
    """Step transition matrix of ``plans`` over the actions in ``order`` (rows: from, columns:
    to). Pairs with an action outside ``order`` are ignored. Row-normalised by default (rows
    without transitions stay zero); labels from ``actions`` if given, else indices.
    ``weights``: how many times each plan counts (distinct plans with their counts).

    Works for training plans (``graph.tasks[task].plans``), test plans
    (``[v.plan for v in ds.split("test") if v.task == task]``) or predicted plans.

    >>> transition_matrix([(0, 1, 1), (0, 2)], order=[0, 1], actions=["a", "b", "c"]).values.tolist()
    [[0.0, 1.0], [0.0, 1.0]]
    """
    order = [int(a) for a in order]
    if len(set(order)) != len(order):
        dup = [a for a, c in Counter(order).items() if c > 1]
        raise KeppError(f"action order lists action(s) {dup} more than once")
    pos = {a: i for i, a in enumerate(order)}
    mat = np.zeros((len(order), len(order)))
    plans = list(plans)
    for p, w in zip(plans, [1] * len(plans) if weights is None else weights):
        for u, v in zip(p, p[1:]):
            i, j = pos.get(int(u)), pos.get(int(v))
            if i is not None and j is not None:
                mat[i, j] += w
    if normalize:
        rows = mat.sum(axis=1, keepdims=True)
        mat = mat / (rows + (rows == 0))
    names = [actions[a] for a in order] if actions is not None else order
    import pandas as pd

    return pd.DataFrame(mat, index=pd.Index(names, name="from"), columns=pd.Index(names, name="to"))


def task_transition_matrix(graph: ProcedureGraph, task: str, plans: Iterable[Sequence[int]] | None = None,
                           order: Sequence[int] | None = None, normalize: bool = True) -> pd.DataFrame:
    """Transition matrix for one task: its training plans unless ``plans`` is given (test
    plans, predictions), over ``order`` (default: the task's actions by first use).
    Training plans are read as distinct plans with their counts (same matrix, bounded work)."""
    stats = _task(graph, task)
    if order is None:  # first use over distinct plans in first-seen order = first use over all plans
        order = list(dict.fromkeys(a for p in stats.distinct for a in p))
    if plans is None:
        return transition_matrix(stats.distinct, order, graph.actions, normalize, weights=stats.counts)
    return transition_matrix(plans, order, graph.actions, normalize)


def capped_subgraph(graph, centre: int, depth: int = 1, min_weight: float = 0.0, task: str | None = None,
                    scorer: str = "p2kg", max_nodes: int = 40) -> tuple[set[int], list[tuple[int, int]], int]:
    """The neighbourhood of ``centre`` (:func:`subgraph` in the chosen
    ``scorer``, so the minimum follows the weights on screen; arrows in index order) kept
    legible: at most ``max_nodes`` steps, those its strongest arrows reach from ``centre``, which
    is always kept (:func:`strongest_subgraph`). A centre that ``task``'s plans
    do not use stands alone. Returns the kept steps, the arrows between them and how many steps
    the whole neighbourhood has.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c", "d"], [(0, 1)] * 3 + [(0, 2)] + [(0, 3)] * 2)
    >>> capped_subgraph(g, 0, max_nodes=3)  # a→b (0.5) and a→d (0.33) beat a→c (0.17)
    ({0, 1, 3}, [(0, 1), (0, 3)], 4)
    """
    if task in graph.tasks and int(centre) not in graph.tasks[task].action_counts():
        sg = SubGraph(int(centre), {int(centre): 0}, [])  # the page filters steps by task, not its centre
    else:
        sg = subgraph(graph, centre, depth, min_weight, task, scorer)
    nodes, edges = {int(a) for a in sg.nodes}, sorted((int(e.source), int(e.target)) for e in sg.edges)
    kept, kept_edges = strongest_subgraph(int(centre), edges, lambda u, v: edge_weight(graph, u, v, scorer),
                                          max_nodes)
    return kept, kept_edges, len(nodes)
