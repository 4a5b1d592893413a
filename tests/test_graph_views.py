"""Sub-graphs, expert trajectories and transition matrices."""

from __future__ import annotations

import pytest

from kepp_core.errors import KeppError
from kepp_core.graph import build_graph, expert_trajectories, subgraph, task_transition_matrix, transition_matrix
from tests.helpers.data import small_dataset


def test_subgraph_follows_in_and_out_edges_up_to_depth():
    g = build_graph(small_dataset())  # 0→1 (2), 1→1 (1), 1→3 (3), 2→1 (1)
    assert subgraph(g, "fry", depth=0).nodes == {3: 0}
    sg = subgraph(g, "fry", depth=1)
    assert sg.nodes == {3: 0, 1: 1}
    assert [(e.source, e.target) for e in sg.edges] == [(1, 3), (1, 1)]  # by probability
    assert subgraph(g, "fry", depth=2).nodes == {3: 0, 1: 1, 0: 2, 2: 2}


def test_subgraph_threshold_and_task_filter():
    g = build_graph(small_dataset())
    high = subgraph(g, "whisk", depth=2, min_weight=0.7)
    assert [(e.source, e.target) for e in high.edges] == [(0, 1), (2, 1), (1, 3)]  # self-loop is 0.25
    assert set(subgraph(g, "fry", depth=1, min_weight=0.8).nodes) == {3}
    omelette = subgraph(g, "whisk", depth=2, task="omelette")
    assert 2 not in omelette.nodes  # "pour" is only used by the pancake plans
    with pytest.raises(KeppError, match="not used by the training plans"):
        subgraph(g, "pour", task="omelette")
    with pytest.raises(KeppError, match="unknown task 'omelete'; closest known: 'omelette'"):
        subgraph(g, "pour", task="omelete")
    nxg = high.to_networkx(g.actions)
    assert nxg.edges[1, 3]["probability"] == pytest.approx(0.75)


def test_the_minimum_weight_follows_the_chosen_scorer():
    from kepp_core.graph import ProcedureGraph, edge_weight

    g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1)] * 3 + [(0, 2)] * 2 + [(2, 1)])
    assert (edge_weight(g, 0, 2, "p2kg"), edge_weight(g, 0, 2, "pkg")) == (0.4, 0.5)  # a→c
    edges = {w: [(e.source, e.target) for e in subgraph(g, 0, 1, 0.45, scorer=w).edges] for w in ("p2kg", "pkg")}
    assert edges == {"p2kg": [(0, 1)], "pkg": [(0, 1), (0, 2)]}  # strongest first for either scorer
    with pytest.raises(KeppError, match="weight comes from the scorer 'p2kg' or 'pkg'"):
        subgraph(g, 0, scorer="counts")


def test_expert_trajectories_count_the_edges_of_one_task():
    g = build_graph(small_dataset())
    df = expert_trajectories(g, "omelette")
    assert df[["source", "target", "count"]].values.tolist() == [[0, 1, 2], [1, 3, 2], [1, 1, 1]]
    assert df["share"].sum() == pytest.approx(1.0)
    assert df.iloc[1]["probability"] == pytest.approx(0.75)  # whole-graph P²KG weight
    assert df.iloc[0]["source_label"] == "crack egg"


def test_transition_matrices_are_row_normalised_dataframes():
    ds = small_dataset()
    g = build_graph(ds)
    train = task_transition_matrix(g, "omelette")
    assert list(train.index) == ["crack egg", "whisk", "fry"]
    assert train.loc["whisk", "fry"] == pytest.approx(2 / 3)
    assert train.sum(axis=1).tolist() == pytest.approx([1, 1, 0])
    test_plans = [v.plan for v in ds.split("test") if v.task == "omelette"]
    order = [0, 1, 2, 3]
    test = task_transition_matrix(g, "omelette", plans=test_plans, order=order)
    assert test.loc["whisk", "pour"] == 1.0 and test.loc["whisk", "fry"] == 0.0
    counts = transition_matrix([(0, 1, 1), (0, 1)], order=[1, 0], normalize=False)
    assert counts.values.tolist() == [[1.0, 0.0], [2.0, 0.0]]
    with pytest.raises(KeppError, match="more than once"):
        transition_matrix([(0, 1)], order=[0, 1, 0])


# --- the node cap of the Graph page: strongest edges kept, the centre always --------------------------------
def strongest_by_brute_force(centre, edges, weight, cap):
    """Reference: again and again, of all edges with exactly one end kept, follow the heaviest (ties: the
    smaller new node)."""
    kept = {centre}
    while len(kept) < cap:
        joins = [(weight(u, v), -(v if u in kept else u)) for u, v in edges if (u in kept) != (v in kept)]
        if not joins:
            break
        kept.add(-max(joins)[1])
    return kept, [(u, v) for u, v in edges if u in kept and v in kept]


@pytest.mark.parametrize("seed", range(40))
def test_the_node_cap_keeps_what_the_brute_force_keeps(seed):
    import random

    from kepp_core.graph import strongest_subgraph

    rng = random.Random(seed)
    n = rng.randint(2, 14)
    edges = sorted({(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(1, 3 * n))})
    # few distinct weights: ties happen, and are broken the same way
    weights = {e: rng.choice([0.1, 0.25, 0.5, 0.5, 0.9]) for e in edges}
    centre = edges[0][0]
    sizes = []
    for cap in range(1, n + 2):
        got = strongest_subgraph(centre, edges, lambda u, v: weights[u, v], cap)
        assert got == strongest_by_brute_force(centre, edges, lambda u, v: weights[u, v], cap), (seed, cap)
        assert centre in got[0] and len(got[0]) <= cap
        sizes.append(len(got[0]))
    assert len(sizes) == n + 1 and sizes[0] == 1 and sizes == sorted(sizes)  # a larger cap never keeps fewer


def test_the_capped_graph_view_counts_the_whole_neighbourhood_and_keeps_the_centre():
    from kepp_core.api import capped_subgraph
    from kepp_core.graph import ProcedureGraph

    # a hub with 30 followers, the i-th taken i+1 times: the cap keeps the most frequent followers
    g = ProcedureGraph.from_plans([f"s{i}" for i in range(31)], [(0, i) for i in range(1, 31) for _ in range(i)])
    sg = subgraph(g, 0, 1)
    nodes, edges = set(sg.nodes), sorted((e.source, e.target) for e in sg.edges)
    assert len(nodes) == 31
    kept, kept_edges, total = capped_subgraph(g, 0, 1, max_nodes=6)
    assert total == 31 and kept == {0, 26, 27, 28, 29, 30}
    assert kept_edges == [(0, a) for a in (26, 27, 28, 29, 30)]
    assert capped_subgraph(g, 0, 1, max_nodes=100)[:2] == (nodes, edges)  # under the cap: nothing dropped
    with pytest.raises(KeppError, match="at least 1"):
        capped_subgraph(g, 0, 1, max_nodes=0)
