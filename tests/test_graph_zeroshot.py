"""Zero-shot planning with the graph alone, predicted endpoint files and the ``kepp graph`` CLI."""

from __future__ import annotations

import json

import pytest

from kepp_core.cli import main
from kepp_core.data import make_episodes, write_plans
from kepp_core.errors import KeppError
from kepp_core.evaluation.zeroshot import read_endpoints, zero_shot
from kepp_core.graph import build_graph
from tests.helpers.data import small_dataset


@pytest.fixture()
def toy_plans(tmp_path):
    path = tmp_path / "plans.jsonl"
    write_plans(small_dataset(), path)
    return path


def test_zero_shot_with_ground_truth_endpoints():
    ds = small_dataset()
    g = build_graph(ds)
    res = zero_shot(ds, g, 3)  # test episodes: (crack, whisk, pour), (whisk, pour, fry)
    assert res.episode_ids == ["omelette/v4/0:3", "omelette/v4/1:3"]
    # crack→?→pour has no walk (fallback (0, 0, 2)); whisk→?→fry: whisk→whisk→fry (1/4 · 3/4).
    assert res.predictions == [(0, 0, 2), (1, 1, 3)]
    assert res.fallbacks == 1
    assert res.metrics["sr"] == 0.0
    assert res.metrics["macc"] == pytest.approx(100 * 4 / 6)


def test_predicted_endpoints_file_is_read_by_label_or_index(tmp_path):
    ds = small_dataset()
    g = build_graph(ds)
    f = tmp_path / "endpoints.jsonl"
    f.write_text('{"episode": "omelette/v4/0:3", "start": "whisk", "goal": 3}\n\n'
                 '{"episode": "omelette/v4/1:3", "start": "1", "goal": "fry"}\n')
    ends = read_endpoints(f, g)
    assert ends == {"omelette/v4/0:3": (1, 3), "omelette/v4/1:3": (1, 3)}
    res = zero_shot(ds, g, 3, endpoints=ends)
    assert res.predictions == [(1, 1, 3), (1, 1, 3)] and res.endpoints == "predicted"


@pytest.mark.parametrize("text, message", [
    ('{"episode": "omelette/v4/0:3", "start": "wisk", "goal": 3}\n', r"endpoints.jsonl:1: unknown action 'wisk'; closest known: 'whisk'"),
    ('{"episode": "omelette/v4/0:3", "start": 1}\n', r"endpoints.jsonl:1: expected an object with keys"),
    ('not json\n', r"endpoints.jsonl:1: invalid JSON"),
    ('{"episode": "x", "start": 1, "goal": 2}\n{"episode": "x", "start": 1, "goal": 2}\n', "appears twice"),
    ('{"episode": "x", "start": [1], "goal": 2}\n', "expected an action label or index"),
])
def test_bad_endpoint_files_name_line_and_value(tmp_path, text, message):
    f = tmp_path / "endpoints.jsonl"
    f.write_text(text)
    with pytest.raises(KeppError, match=message):
        read_endpoints(f, build_graph(small_dataset()))


def test_missing_episode_in_endpoints_is_an_error(tmp_path):
    ds = small_dataset()
    with pytest.raises(KeppError, match="no line for 1 of 2 episodes"):
        zero_shot(ds, build_graph(ds), 3, endpoints={"omelette/v4/0:3": (0, 2)})


def test_cli_build_paths_subgraph_and_zero_shot(toy_plans, tmp_path, capsys):
    data = ["--dataset", "plans", "--root", str(toy_plans)]
    out = tmp_path / "graph.json"
    assert main(["graph", "build", *data, "--out", str(out), "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["actions"] == 4 and built["edges"] == 4 and out.is_file()
    assert json.loads(out.read_text())["params"]["history_prior"] == built["history_prior"]

    assert main(["graph", "paths", "--graph", str(out), "--start", "whisk", "--goal", "fry",
                 "-T", "3", "--top", "2", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [p["labels"] for p in rec["paths"]] == [["whisk", "whisk", "fry"]] * 2
    assert rec["found"] == 1 and not rec["fallback"]

    assert main(["graph", "subgraph", *data, "--action", "fry", "--depth", "1", "--json"]) == 0
    sg = json.loads(capsys.readouterr().out)
    assert {n["label"] for n in sg["nodes"]} == {"fry", "whisk"}

    assert main(["graph", "zero-shot", *data, "--graph", str(out), "-T", "3", "--scorer", "p2kg", "history",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["scorer"], r["T"], r["episodes"]) for r in rows] == [("p2kg", 3, 2), ("history", 3, 2)]

    assert main(["graph", "zero-shot", *data, "-T", "3"]) == 0  # readable table
    assert "SR" in capsys.readouterr().out


def test_cli_errors_are_one_line_with_closest_names(toy_plans, capsys):
    data = ["--dataset", "plans", "--root", str(toy_plans)]
    assert main(["graph", "paths", *data, "--start", "wisk", "--goal", "fry"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kepp: error: unknown action 'wisk'; closest known: 'whisk'") and err.count("\n") == 1


def test_cli_help_shows_examples(capsys):
    import argparse

    from kepp_core.cli import build_parser

    shown = []
    for cmd in ("build", "import", "paths", "subgraph", "zero-shot"):
        with pytest.raises(SystemExit):
            main(["graph", cmd, "--help"])
        assert "examples:\n  kepp graph " + cmd in capsys.readouterr().out
        shown.append(cmd)
    subs = lambda p: next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices  # noqa: E731
    assert shown == sorted(subs(subs(build_parser())["graph"]))  # every `kepp graph` command


REFERENCE_SR = {3: 69.32, 4: 48.60, 5: 33.61, 6: 28.34}  # docs, The graph: first-order P²KG, gt endpoints


@pytest.fixture(scope="module")
def coin_zero_shot(coin_dataset):
    """SR of p2kg and history on COIN (loader defaults: one action per step id; smaller
    tie-break; history β fitted by cross-validation on the training plans only)."""
    g = build_graph(coin_dataset)
    return {m: {t: zero_shot(coin_dataset, g, t, m).metrics["sr"] for t in REFERENCE_SR} for m in ("p2kg", "history")}


@pytest.mark.slow
def test_coin_p2kg_reproduces_the_reference_success_rates(coin_dataset, coin_zero_shot):
    assert coin_dataset.num_actions == 768
    assert len(make_episodes(coin_dataset, 3, "test")) == 5571
    for t, ref in REFERENCE_SR.items():
        assert abs(coin_zero_shot["p2kg"][t] - ref) <= 0.5, (t, coin_zero_shot["p2kg"][t], ref)


@pytest.mark.slow
def test_history_method_gains_a_point_at_T4_to_T6_and_loses_nothing_at_T3(coin_zero_shot):
    p2kg, hist = coin_zero_shot["p2kg"], coin_zero_shot["history"]
    assert hist[3] >= p2kg[3]
    for t in (4, 5, 6):
        assert hist[t] >= p2kg[t] + 1.0, (t, hist[t], p2kg[t])


def test_niv_graph_plans_without_segments(niv_dataset):
    g = build_graph(niv_dataset)
    res = zero_shot(niv_dataset, g, 4, "pkg")
    assert res.metrics["episodes"] == len(make_episodes(niv_dataset, 4, "test")) > 0
    assert 0.0 < res.metrics["sr"] <= 100.0
