"""Graph drawings for the pages: the P²KG around a step or around a plan's endpoints, and a
task's expert trajectories. The graph queries themselves come from ``kepp_core.graph``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from components.views import (EDGE, NODE, NODE_FOCUS, NODE_GOAL, NODE_START, PATH_COLOURS, PLAN_COLOUR,
                              GraphDrawing, GraphEdge, GraphNode)


def edge_title(graph, u: int, v: int) -> str:
    """Hover text of an edge: count and both weightings."""
    p = float(graph.probability(u, v))
    f = float(graph.frequency(u, v))
    return (f"{graph.actions[u]} → {graph.actions[v]}\ncount {int(graph.counts[u, v])}"
            f" of {int(graph.out_counts[u])} out of '{graph.actions[u]}'\nP²KG probability {p:.3f}\nfrequency weight {f:.3f}")


def node_title(graph, a: int) -> str:
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


def neighbourhood(graph, centres: Sequence[int], depth: int, min_probability: float = 0.0) -> tuple[set[int], list]:
    """Nodes and edges within ``depth`` hops of ``centres`` (in- and out-edges) whose P²KG
    probability is at least ``min_probability``, through ``kepp_core.graph``'s sub-graph view."""
    from components.backend import subgraph_view

    nodes: set[int] = set()
    edges: set[tuple[int, int]] = set()
    for c in centres:
        n, e = subgraph_view(graph, int(c), depth, min_probability, None)
        nodes.update(n)
        edges.update(e)
    return nodes, sorted(edges)


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
