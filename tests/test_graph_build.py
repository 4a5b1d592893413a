"""Building, storing and loading the procedure knowledge graph; a malformed JSON or compact graph file
is one ``kepp: error:`` line naming the key or array (the real command line)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.graph import ProcedureGraph, build_graph, load_graph
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.data import small_dataset, write_small_plans


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


@pytest.fixture(scope="module")
def graph_pair(tmp_path_factory) -> Path:
    """A JSON + compact graph pair built by the command line from a small plans file."""
    d = tmp_path_factory.mktemp("graph")
    write_small_plans(d / "plans.jsonl")
    r = run_kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--compact", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


# --- graph files ----------------------------------------------------------------------
JSON_GRAPH_EDITS = {
    "tasks-null": ({"tasks": None}, "'tasks'"),
    "actions-null": ({"actions": None}, "'actions'"),
    "astronomic-count": ({"transitions": [[0, 1, 10 ** 30]]}, "transition 0"),
    "astronomic-start": ({"start_counts": {"0": 10 ** 30}}, "start_counts[0]"),
    "negative-start": ({"start_counts": {"0": -5}}, "start_counts[0]"),
    "float-count": ({"transitions": [[0, 1, 1.5]]}, "1.5"),
    "start-index-out-of-range": ({"start_counts": {"99": 1}}, "'99'"),
    "plans-a-string": ({"tasks": {"t": {"name": "t", "plans": "abc"}}}, "task 't'"),
    "plan-token-out-of-range": ({"tasks": {"t": {"name": "t", "plans": [[0, 7]]}}}, "7"),
    "params-a-list": ({"params": [1]}, "'params'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(JSON_GRAPH_EDITS))
def test_a_malformed_json_graph_is_one_error_naming_the_key(graph_pair, tmp_path, case):
    edit, needle = JSON_GRAPH_EDITS[case]
    obj = json.loads((graph_pair / "g.json").read_text())
    obj.pop("companion", None)
    obj.update(edit)
    (tmp_path / "bad.json").write_text(json.dumps(obj))
    r = run_kepp("graph", "subgraph", "--graph", "bad.json", "--action", "a", cwd=tmp_path)
    assert_one_line_error(r, "bad.json", needle)


def _compact_variant(src: Path, dst: Path, header_edit: dict | None = None, arrays_edit=None,
                     raw_header: str | None = None) -> None:
    from safetensors import safe_open
    from safetensors.numpy import save_file

    with safe_open(str(src), "numpy") as f:
        header = json.loads(f.metadata()["kepp"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    header.pop("companion", None)
    header.update(header_edit or {})
    if arrays_edit:
        arrays.update(arrays_edit(arrays))
    save_file(arrays, str(dst), metadata={"kepp": raw_header if raw_header is not None else json.dumps(header)})


COMPACT_EDITS = {
    "actions-an-int": ({"actions": 5}, None, "'actions'"),
    "tasks-null": ({"tasks": None}, None, "'tasks'"),
    "params-a-list": ({"params": [1, 2]}, None, "'params'"),
    "negative-edge-counts": (None, lambda a: {"data": -a["data"]}, "'data'"),
    "negative-start-counts": (None, lambda a: {"start_counts": -a["start_counts"]}, "'start_counts'"),
    "plan-tokens-out-of-range": (None, lambda a: {"plan_tokens": a["plan_tokens"] + 100}, "'plan_tokens'"),
    "negative-plan-tokens": (None, lambda a: {"plan_tokens": a["plan_tokens"] - 100}, "'plan_tokens'"),
    "order-out-of-range": (None, lambda a: {"order": a["order"] + 100}, "'order'"),
    "plan-pointers-past-the-end": (None, lambda a: {"plan_ptr": a["plan_ptr"] * 7}, "'plan_ptr'"),
    "float-counts": (None, lambda a: {"data": a["data"].astype(np.float64) + 0.5}, "'data'"),
    "short-start-counts": (None, lambda a: {"start_counts": a["start_counts"][:1]}, "'start_counts'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(COMPACT_EDITS))
def test_a_malformed_compact_graph_is_one_error_naming_the_key_or_array(graph_pair, tmp_path, case):
    header_edit, arrays_edit, needle = COMPACT_EDITS[case]
    _compact_variant(graph_pair / "g.safetensors", tmp_path / "bad.safetensors", header_edit, arrays_edit)
    r = run_kepp("graph", "paths", "--graph", "bad.safetensors", "--start", "a", "--goal", "b", "--horizon", "2",
                 cwd=tmp_path)
    assert_one_line_error(r, "bad.safetensors", needle)


def test_a_compact_graph_whose_header_is_not_an_object_is_one_error(graph_pair, tmp_path):
    _compact_variant(graph_pair / "g.safetensors", tmp_path / "bad.safetensors", raw_header="[1, 2]")
    r = run_kepp("graph", "subgraph", "--graph", "bad.safetensors", "--action", "a", cwd=tmp_path)
    assert_one_line_error(r, "bad.safetensors")
