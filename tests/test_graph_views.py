"""Sub-graphs, expert trajectories and transition matrices."""

from __future__ import annotations

import pytest

from kepp_core.errors import KeppError
from kepp_core.graph import build_graph, expert_trajectories, subgraph, task_transition_matrix, transition_matrix
from tests.test_graph_build import small_dataset


def test_subgraph_follows_in_and_out_edges_up_to_depth():
    g = build_graph(small_dataset())  # 0→1 (2), 1→1 (1), 1→3 (3), 2→1 (1)
    assert subgraph(g, "fry", depth=0).nodes == {3: 0}
    sg = subgraph(g, "fry", depth=1)
    assert sg.nodes == {3: 0, 1: 1}
    assert [(e.source, e.target) for e in sg.edges] == [(1, 3), (1, 1)]  # by probability
    assert subgraph(g, "fry", depth=2).nodes == {3: 0, 1: 1, 0: 2, 2: 2}


def test_subgraph_threshold_and_task_filter():
    g = build_graph(small_dataset())
    high = subgraph(g, "whisk", depth=2, min_probability=0.7)
    assert [(e.source, e.target) for e in high.edges] == [(0, 1), (2, 1), (1, 3)]  # self-loop is 0.25
    assert set(subgraph(g, "fry", depth=1, min_probability=0.8).nodes) == {3}
    omelette = subgraph(g, "whisk", depth=2, task="omelette")
    assert 2 not in omelette.nodes  # "pour" is only used by the pancake plans
    with pytest.raises(KeppError, match="not used by the training plans"):
        subgraph(g, "pour", task="omelette")
    with pytest.raises(KeppError, match="unknown task 'omelete'; closest known: 'omelette'"):
        subgraph(g, "pour", task="omelete")
    nxg = high.to_networkx(g.actions)
    assert nxg.edges[1, 3]["probability"] == pytest.approx(0.75)


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
