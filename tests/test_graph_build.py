"""Building, storing and loading the procedure knowledge graph."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.graph import ProcedureGraph, build_graph, load_graph
from tests.helpers.data import small_dataset


def test_counts_come_from_consecutive_training_pairs_with_self_loops():
    g = build_graph(small_dataset())
    assert g.counts.tolist() == [[0, 2, 0, 0], [0, 1, 0, 3], [0, 1, 0, 0], [0, 0, 0, 0]]
    assert g.start_counts.tolist() == [2, 0, 1, 0]
    assert g.end_counts.tolist() == [0, 0, 0, 3]
    assert g.tasks["omelette"].plans == [(0, 1, 1, 3), (0, 1, 3)]  # the test video is not used
    assert g.tasks["omelette"].name == "Make an omelette"


def test_p2kg_rows_sum_to_one_and_frequency_is_min_max():
    g = build_graph(small_dataset())
    prob = g.probabilities()
    assert prob.sum(axis=1).tolist() == pytest.approx([1, 1, 1, 0])
    assert prob[1, 3] == pytest.approx(3 / 4)
    freq = g.frequencies()
    assert freq[1, 3] == 1.0 and freq[1, 1] == 0.0 and freq[0, 1] == pytest.approx(0.5)
    assert freq[3, 0] == 0.0  # no edge
    assert g.frequency(0, 1) == freq[0, 1]


def test_graph_round_trips_through_json(tmp_path):
    ds = small_dataset()
    g = build_graph(ds)
    g.params["history_prior"] = 5
    path = tmp_path / "sub" / "graph.json"
    g.save(path)
    obj = json.loads(path.read_text())
    assert obj["format"] == "kepp-procedure-graph" and obj["actions"] == ds.actions
    assert [1, 3, 3] in obj["transitions"]
    back = load_graph(path, ds)
    assert np.array_equal(back.counts, g.counts)
    assert np.array_equal(back.start_counts, g.start_counts) and np.array_equal(back.end_counts, g.end_counts)
    assert {t: s.plans for t, s in back.tasks.items()} == {t: s.plans for t, s in g.tasks.items()}
    assert back.params == {"history_prior": 5}
    assert [p.name for p in tmp_path.joinpath("sub").iterdir()] == ["graph.json"]  # no temp leftovers


def test_loading_a_graph_for_another_vocabulary_is_an_error(tmp_path):
    path = tmp_path / "graph.json"
    build_graph(small_dataset()).save(path)
    other = small_dataset(actions=("crack egg", "whisk", "pour", "flip"))
    with pytest.raises(KeppError, match="vocabulary does not match.*'flip'"):
        load_graph(path, other)
    reordered = small_dataset(actions=("whisk", "crack egg", "pour", "fry"))
    with pytest.raises(KeppError, match="different order"):
        load_graph(path, reordered)


@pytest.mark.parametrize("edit, message", [
    (lambda o: o.update(format="other"), "not a KEPP procedure graph"),
    (lambda o: o["transitions"].append([0, 9, 1]), "transition 4: 9 is invalid"),
    (lambda o: o.pop("tasks"), "missing key .tasks."),
    (lambda o: o.update(vocabulary_hash="0"), "vocabulary_hash"),
])
def test_bad_graph_files_name_the_problem(tmp_path, edit, message):
    path = tmp_path / "graph.json"
    build_graph(small_dataset()).save(path)
    obj = json.loads(path.read_text())
    edit(obj)
    path.write_text(json.dumps(obj))
    with pytest.raises(KeppError, match=message):
        load_graph(path)
    path.write_text("{not json")
    with pytest.raises(KeppError, match="graph.json:1: invalid JSON"):
        load_graph(path)
    with pytest.raises(KeppError, match="not found"):
        load_graph(tmp_path / "missing.json")


def test_to_networkx_carries_counts_and_weights():
    g = build_graph(small_dataset())
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == 4 and nxg.number_of_edges() == g.num_edges == 4
    e = nxg.edges[1, 3]
    assert e["count"] == 3 and e["probability"] == pytest.approx(0.75) and e["weight"] == e["probability"]
    assert nxg.nodes[0]["label"] == "crack egg" and nxg.nodes[0]["start"] == 2
    assert g.to_networkx("pkg").edges[1, 3]["weight"] == 1.0
    with pytest.raises(KeppError, match="unknown edge scorer"):
        g.to_networkx("pagerank")


def test_action_names_resolve_or_list_closest():
    g = build_graph(small_dataset())
    assert g.action_index("whisk") == 1 and g.action_index("2") == 2 and g.action_index(3) == 3
    with pytest.raises(KeppError, match="closest known: 'whisk'"):
        g.action_index("wisk")


def test_empty_training_split_is_an_error():
    ds = small_dataset()
    for v in ds.videos:
        v.split = "test"
    with pytest.raises(KeppError, match="no train plans"):
        build_graph(ds)
    with pytest.raises(KeppError, match="outside 0..1"):
        ProcedureGraph.from_plans(["a", "b"], [(0, 2)])


def test_coin_graph_has_one_node_per_step_id_and_counts_every_train_transition(coin_dataset):
    g = build_graph(coin_dataset)
    assert g.num_actions == len(coin_dataset.actions) == 768
    assert g.num_edges == 2229
    assert int(g.counts.sum()) == sum(len(p) - 1 for p in coin_dataset.plans("train"))
    assert len(g.tasks) == len({v.task for v in coin_dataset.split("train")})
