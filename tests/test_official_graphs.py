"""Official P²KG pickles and training lists: ``kepp graph import`` reads the pickles the official
code writes (raw counts or out-edge normalised) through an allow-list and gives the graph
``kepp graph build`` makes from the same list; a pickle naming any other global is refused
before anything runs."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from pathlib import Path

import networkx as nx
import pytest

from kepp_core.cli import main
from kepp_core.data import load_plans
from kepp_core.data.official import load_official_list
from kepp_core.errors import KeppError
from kepp_core.graph import build_graph, graph_source, load_graph
from kepp_core.graph.official import import_graph_pickle
from kepp_core.paths import REPO_ROOT

SEQUENCES = {"v1": [0, 1, 2, 1], "v2": [0, 1, 3], "v3": [2, 2, 4, 0], "v4": [0, 1, 2], "v5": [4, 0, 1, 1, 3]}


def official_pickle(path: Path, sequences: dict, normalise: bool, protocol: int = 4, views: bool = True) -> Path:
    """A graph pickled the way the official graph-building code makes it: an edge per
    consecutive pair with weight += 1, then (``normalise``) weights divided by each node's out-sum."""
    g = nx.DiGraph()
    for seq in sequences.values():
        for u, v in zip(seq, seq[1:]):
            if g.has_edge(u, v):
                g[u][v]["weight"] += 1
            else:
                g.add_edge(u, v, weight=1)
    if normalise:
        for node in g.nodes:
            total = sum(g[node][n]["weight"] for n in g.successors(node))
            for n in g.successors(node):
                g[node][n]["weight"] /= total
    if views:  # networkx caches its views on the graph, and they are pickled with it
        g.nodes, g.edges, g.succ, g.pred, g.adj, g.degree, g.in_degree, g.out_degree, g.in_edges  # noqa: B018
    path.write_bytes(pickle.dumps(g, protocol=protocol))
    return path


def official_list(path: Path, sequences: dict, tasks: bool = False) -> Path:
    with open(path, "w") as f:
        for vid, seq in sequences.items():
            f.write(json.dumps({"vid": vid, **({"task": "t" + vid[-1]} if tasks else {}), "legal_range": seq}) + "\n")
    return path


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_a_counts_pickle_imports_to_exactly_the_graph_build_makes_from_the_list(tmp_path, protocol):
    g = import_graph_pickle(official_pickle(tmp_path / "g.pkl", SEQUENCES, False, protocol))
    built = build_graph(load_official_list(official_list(tmp_path / "l.json", SEQUENCES)))
    assert g.actions == built.actions
    assert g.counts.toarray().tolist() == built.counts.toarray().tolist()
    assert g.source["weighting"] == "counts"


@pytest.mark.parametrize("protocol", [0, 4])
def test_a_normalised_pickle_keeps_every_p2kg_probability_exactly(tmp_path, protocol):
    g = import_graph_pickle(official_pickle(tmp_path / "g.pkl", SEQUENCES, True, protocol))
    built = build_graph(load_official_list(official_list(tmp_path / "l.json", SEQUENCES)))
    n = built.num_actions
    assert g.actions == built.actions and g.num_edges == built.num_edges
    assert all(g.probability(u, v) == built.probability(u, v) for u in range(n) for v in range(n))
    assert g.source["weighting"] == "out-edge normalised"


def test_graph_build_on_an_official_list_equals_the_imported_official_pickle(tmp_path, capsys):
    lst = official_list(tmp_path / "train.json", SEQUENCES, tasks=True)
    pkl = official_pickle(tmp_path / "trained_graph.pkl", SEQUENCES, False)
    assert main(["graph", "build", "--dataset", "official-list", "--root", str(lst), "--out",
                 str(tmp_path / "built.json"), "--no-fit", "--json"]) == 0
    assert main(["graph", "import", str(pkl), "--out", str(tmp_path / "imported.json"), "--json"]) == 0
    built, imported = (json.loads((tmp_path / f).read_text()) for f in ("built.json", "imported.json"))
    assert imported["actions"] == built["actions"] and imported["transitions"] == built["transitions"]
    assert graph_source(load_graph(tmp_path / "built.json")) == \
        f"built from the train plans of {lst} (dataset official-list)"
    assert graph_source(load_graph(tmp_path / "imported.json")) == f"imported from {pkl} (counts)"


def test_the_source_survives_the_compact_graph_file(tmp_path):
    g = import_graph_pickle(official_pickle(tmp_path / "g.pkl", SEQUENCES, False))
    g.save(tmp_path / "g.safetensors")
    assert load_graph(tmp_path / "g.safetensors").source == g.source


def test_action_ids_index_the_vocabulary_of_a_dataset_given(tmp_path, capsys):
    plans = tmp_path / "plans.jsonl"
    words = ["pour", "stir", "boil", "cut", "serve"]
    plans.write_text("".join(json.dumps({"video": f"v{i}", "task": "t", "steps": words}) + "\n" for i in range(3)))
    pkl = official_pickle(tmp_path / "g.pkl", SEQUENCES, False)
    assert main(["graph", "import", str(pkl), "--out", str(tmp_path / "g.json"), "--dataset", "plans",
                 "--root", str(plans)]) == 0
    ds = load_plans(plans)
    g = load_graph(tmp_path / "g.json", ds)  # checks the vocabulary is the dataset's
    assert g.dataset == "plans" and g.counts.get(0, 1) == 4  # ids 0 → 1 follow each other 4 times


def test_an_action_id_outside_the_dataset_vocabulary_names_both_numbers(tmp_path, capsys):
    plans = tmp_path / "plans.jsonl"
    plans.write_text(json.dumps({"video": "v", "task": "t", "steps": ["a", "b", "c"]}) + "\n")
    pkl = official_pickle(tmp_path / "g.pkl", SEQUENCES, False)
    assert main(["graph", "import", str(pkl), "--out", str(tmp_path / "g.json"), "--dataset", "plans",
                 "--root", str(plans)]) == 2
    assert "action id 4 is outside dataset 'plans''s 3 actions" in capsys.readouterr().err


def test_min_max_normalised_weights_are_refused_saying_why(tmp_path):
    g = nx.DiGraph()
    g.add_edge(0, 1, weight=0.25)
    g.add_edge(0, 2, weight=0.5)
    (tmp_path / "g.pkl").write_bytes(pickle.dumps(g))
    with pytest.raises(KeppError, match="neither counts nor out-edge normalised"):
        import_graph_pickle(tmp_path / "g.pkl")


# --- pickles that name other globals ------------------------------------------------------------
def _payloads(marker: Path) -> dict[str, tuple]:
    """``(callable, args)`` that would each create ``marker`` if the unpickler called them."""
    import builtins
    import importlib

    m = str(marker)
    return {
        "os.system": (os.system, (f"touch {m}",)),
        "builtins.eval": (builtins.eval, (f"open({m!r}, 'w')",)),
        "builtins.exec": (builtins.exec, (f"open({m!r}, 'w')",)),
        "builtins.open": (builtins.open, (m, "w")),
        "subprocess.Popen": (subprocess.Popen, (["touch", m],)),
        "importlib.import_module": (importlib.import_module, ("this",)),
        "networkx.write_edgelist": (nx.write_edgelist, (nx.DiGraph([(0, 1)]), m)),
    }


class _Reduce:
    def __init__(self, fn, args) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.mark.parametrize("name", list(_payloads(Path("x"))))
@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("protocol", [2, 4])
def test_a_pickle_naming_any_other_global_is_refused_without_running_it(tmp_path, name, nested, protocol, capsys):
    marker = tmp_path / "ran"
    fn, args = _payloads(marker)[name]
    payload = _Reduce(fn, args)
    if nested:  # hidden in an otherwise genuine graph's attributes
        g = nx.DiGraph()
        g.add_edge(0, 1, weight=1, note=payload)
        payload = g
    pkl = tmp_path / "evil.pkl"
    pkl.write_bytes(pickle.dumps(payload, protocol=protocol))
    assert main(["graph", "import", str(pkl), "--out", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing was run" in err
    assert f"refused to load global {fn.__module__}.{fn.__qualname__} " in err  # the name the pickle holds
    assert not marker.exists() and not (tmp_path / "g.json").exists()


def test_a_pickle_of_something_else_than_a_graph_is_refused(tmp_path):
    (tmp_path / "d.pkl").write_bytes(pickle.dumps({"weight": 1}))
    with pytest.raises(KeppError, match="holds a dict, not a networkx DiGraph"):
        import_graph_pickle(tmp_path / "d.pkl")


# --- official training lists --------------------------------------------------------------------
def test_an_official_list_gives_the_official_ids_as_the_vocabulary(tmp_path):
    ds = load_official_list(official_list(tmp_path / "l.json", {"a": [3, 1], "b": [1, 5]}, tasks=True))
    assert ds.actions == ["0", "1", "2", "3", "4", "5"]
    assert [v.plan for v in ds.videos] == [(3, 1), (1, 5)] and {v.split for v in ds.videos} == {"train"}


@pytest.mark.parametrize("line, message", [
    ({"vid": "a"}, "missing key 'legal_range'"),
    ({"legal_range": [1]}, "missing key 'vid'"),
    ({"vid": "a", "legal_range": [1, "2"]}, "'legal_range' must be a list of action ids"),
    ({"vid": "a", "legal_range": []}, "'legal_range' must be a list of action ids .*length >= 1"),
    ({"vid": "a", "legal_range": [-1]}, "'legal_range' must be a list of action ids \\(integers 0..1,000,000\\) \\(expected an integer >= 0"),
    ({"vid": "a", "legal_range": [1], "task": [1]}, "'task' must be a task id or number"),
])
def test_a_bad_official_list_line_is_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "l.json"
    path.write_text(json.dumps({"vid": "ok", "legal_range": [0, 1]}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(KeppError, match=f"{path}:2: {message}"):
        load_official_list(path)


def test_a_duplicate_vid_names_both_lines(tmp_path):
    path = official_list(tmp_path / "l.json", {"a": [1]})
    path.write_text(path.read_text() * 2)
    with pytest.raises(KeppError, match=r"l.json:2: duplicate vid 'a' \(first on line 1\)"):
        load_official_list(path)


@pytest.mark.parametrize("imported", [False, True])
def test_the_graph_page_says_where_its_graph_came_from(tmp_path, monkeypatch, capsys, imported):
    from streamlit.testing.v1 import AppTest

    lst = official_list(tmp_path / "train.json", SEQUENCES, tasks=True)
    graph = tmp_path / "graph.json"
    if imported:
        pkl = official_pickle(tmp_path / "trained_graph.pkl", SEQUENCES, False)
        assert main(["graph", "import", str(pkl), "--out", str(graph)]) == 0
        expected = f"imported from {pkl} (counts)"
    else:
        assert main(["graph", "build", "--dataset", "official-list", "--root", str(lst), "--out", str(graph),
                     "--no-fit"]) == 0
        expected = f"built from the train plans of {lst} (dataset official-list)"
    capsys.readouterr()
    for key, value in {"KEPP_APP_DATASET": "official-list", "KEPP_APP_ROOT": lst, "KEPP_APP_GRAPH": graph}.items():
        monkeypatch.setenv(key, str(value))
    for key in ("KEPP_APP_CHECKPOINTS", "KEPP_APP_PREDICTIONS", "KEPP_APP_CONFIG"):
        monkeypatch.delenv(key, raising=False)
    at = AppTest.from_file(str(REPO_ROOT / "app" / "Home.py"), default_timeout=120)
    at.switch_page("views/2_Graph.py")
    at.run()
    assert not at.exception
    caption = " ".join(c.value for c in at.caption).replace("\\", "")
    assert expected in caption, caption
