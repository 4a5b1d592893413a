"""Other methods' predictions as prediction records (``kepp records import``): read by the API's tables and
failure analysis beside ``kepp eval``'s records of the same split lists, labelled with their source."""

from __future__ import annotations

import json

import pytest

from kepp_core import api
from kepp_core.data.split_lists import listed_episode_ids, read_split_list
from kepp_core.errors import KeppError
from kepp_core.evaluation.imports import import_predictions
from kepp_core.catalog.benchmark import protocol_metrics
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.split_lists import NAMES, made_up_plan, write_lists, write_vpn_predictions


_predicted = made_up_plan


@pytest.fixture()
def lists(tmp_path):
    p = write_lists(tmp_path / "lists")
    p["vpn"] = tmp_path / "T3_predictions.json"
    gt = write_vpn_predictions(p["vpn"], p["test"])
    return p, gt


@pytest.mark.slow
def test_a_viterbiplannet_predictions_file_sits_beside_kepp_eval_records_in_the_apis_tables(lists, tmp_path):
    p, gt = lists
    models = tmp_path / "models"
    models.mkdir()
    r = run_kepp("eval", "--dataset", "split-lists", "--root", p["root"], "--models", models, "-T", "3",
                 "--methods", "random", "graph-gt", "--records", tmp_path / "kepp.jsonl")
    assert r.returncode == 0, r.stderr
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", p["vpn"], "--split", p["test"],
                 "--method", "vpn-run", "--seed", 7, "--out", tmp_path / "vpn.jsonl")
    assert r.returncode == 0, r.stderr
    assert "SR (ViterbiPlanNet)" in r.stdout and "SR (PDPP)" in r.stdout

    preds = api.read_predictions([tmp_path / "kepp.jsonl", tmp_path / "vpn.jsonl"])
    mine = preds[preds["method"] == "vpn-run"]
    theirs = preds[preds["method"] == "graph-gt"]
    assert list(mine["episode"]) == list(theirs["episode"]) == listed_episode_ids(read_split_list(p["test"]))
    assert set(mine["imported"]) == {"T3_predictions.json"} and theirs["imported"].isna().all()
    assert set(mine["source"]) == {"vpn.jsonl"} and set(mine["seed"]) == {7}
    assert [list(t) for t in mine["truth"]] == gt

    table = api.metrics_table(preds).set_index("method")
    want = protocol_metrics([_predicted(g, k) for k, g in enumerate(gt)], gt, "kepp")
    assert table.loc["vpn-run", "SR"] == round(want["sr"], 2) == 50.0
    assert table.loc["vpn-run", "imported"] == "T3_predictions.json" and table.loc["vpn-run", "name"] == "vpn-run"
    vpn_table = api.metrics_table(preds, "vpn").set_index("method")
    assert "SR (ViterbiPlanNet)" in vpn_table.columns and "mIoU (ViterbiPlanNet acc_iou)" in vpn_table.columns
    outcomes, stats, failures = api.failure_analysis(mine)
    assert len(outcomes) == len(gt) and len(failures) == sum(k % 2 for k in range(len(gt)))
    grid, _best = api.method_horizon_table(preds)
    assert "vpn-run" in grid.index


def test_plain_jsonl_with_names_and_csv_with_ids_give_the_vpn_files_records(lists, tmp_path):
    p, gt = lists
    ids = listed_episode_ids(read_split_list(p["test"]))
    by_vpn = import_predictions(p["vpn"], p["test"], "other", "vpn")
    plans = [_predicted(g, k) for k, g in enumerate(gt)]
    jsonl = tmp_path / "other.jsonl"
    jsonl.write_text("".join(json.dumps({"episode": ids[k] if k % 2 else k,
                                         "plan": [NAMES[a] if NAMES[a] != "stir" else a for a in plan]}) + "\n"
                             for k, plan in reversed(list(enumerate(plans)))))
    csv = tmp_path / "other.csv"
    csv.write_text("episode,plan\n" + "".join(f"{k},{';'.join(map(str, plan))}\n" for k, plan in enumerate(plans)))
    assert len(by_vpn) == len(gt) > 0
    for path in (jsonl, csv):
        recs = import_predictions(path, p["test"], "other", "plain", taxonomy=p["taxonomy"])
        assert [r["plans"] for r in recs] == [r["plans"] for r in by_vpn]
        assert {r["imported"]["other"] for r in recs} == {path.name}


def test_a_name_two_actions_share_resolves_by_its_task_label_or_is_refused(lists, tmp_path):
    p, gt = lists
    k = next(i for i, g in enumerate(gt) if 2 in g)
    plan = ["stir (Make Tea)" if a == 2 else a for a in gt[k]]
    rows = [{"episode": i, "plan": g} for i, g in enumerate(gt)]
    rows[k]["plan"] = plan
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert import_predictions(f, p["test"], "x", "plain", taxonomy=p["taxonomy"])[k]["plans"]["x"] == gt[k]
    rows[k]["plan"] = ["stir" if a == 2 else a for a in gt[k]]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(KeppError, match=rf"p.jsonl:{k + 1}: step 'stir' names actions 2, 6: write the id"):
        import_predictions(f, p["test"], "x", "plain", taxonomy=p["taxonomy"])


def _vpn_edit(p, edit):
    data = json.loads(p["vpn"].read_text())
    edit(data)
    p["vpn"].write_text(json.dumps(data))


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.pop("3"), ["T3_predictions.json", "5 predictions for the 6 entries of test_3.json", "missing '3'"]),
    (lambda d: d.__setitem__("6", d["0"]), ["7 predictions", "keys beyond the list: '6'"]),
    (lambda d: d["2"]["pred"].append(1), ["'2': 'pred' has 4 steps", "have 3"]),
    (lambda d: d["4"].__setitem__("true", [4, 5, 7]), ["'4': 'true' is [4, 5, 7]", "test_3.json entry 4 is"]),
    (lambda d: d["1"].pop("true"), ["missing key 'true'"]),
])
@pytest.mark.slow
def test_a_vpn_file_that_does_not_match_its_split_list_is_refused_in_one_line(lists, tmp_path, edit, words):
    p, _gt = lists
    _vpn_edit(p, edit)
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", p["vpn"], "--split", p["test"],
                 "--method", "vpn-run", "--out", tmp_path / "out.jsonl")
    assert_one_line_error(r, *words)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("rows, words", [
    ([(0, [0, 1, 2])], ["no plan for 5 of the 6 entries"]),
    ([(0, [0, 1, 2]), (0, [0, 1, 2])], ["p.jsonl:2", "a second plan for entry 0"]),
    ([(9, [0, 1, 2])], ["p.jsonl:1", "episode 9 is not in the split list"]),
    ([(0, [0, 1])], ["p.jsonl:1", "a plan of 2 steps for entry 0", "T=3"]),
    ([(0, [0, "boil milk", 2])], ["p.jsonl:1", "step 'boil milk' is no action of the list"]),
])
@pytest.mark.slow
def test_a_plain_file_that_does_not_match_its_split_list_is_refused_in_one_line(lists, tmp_path, rows, words):
    p, _gt = lists
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps({"episode": e, "plan": plan}) + "\n" for e, plan in rows))
    r = run_kepp("records", "import", "--format", "plain", "--predictions", f, "--split", p["test"],
                 "--taxonomy", p["taxonomy"], "--method", "m", "--out", tmp_path / "out.jsonl")
    assert_one_line_error(r, *words)


def test_an_imported_method_cannot_take_the_name_of_one_of_this_packages_methods(lists, tmp_path):
    p, _gt = lists
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", p["vpn"], "--split", p["test"],
                 "--method", "kepp-R1", "--out", tmp_path / "out.jsonl")
    assert_one_line_error(r, "--method 'kepp-R1' is one of this package's methods")


CSV_CELLS = [  # (id, the second line of a CSV whose other lines are right, words of the one-line error)
    ("step-superscript-two", "0,²;1;2", ["p.csv:2", "step '²' is no action of the list"]),
    ("step-of-5000-digits", "0," + "9" * 5000 + ";1;2", ["p.csv:2", "step of 5,000 digits (expected at most 20)"]),
    ("action-id-above-the-json-limit", "0,1000001;1;2", ["p.csv:2", "step '1000001'", "<= 1000000"]),
    ("episode-superscript-two", "²,0;1;2", ["p.csv:2", "episode '²' is not in the split list"]),
    ("episode-of-5000-digits", "9" * 5000 + ",0;1;2", ["p.csv:2", "episode of 5,000 digits"]),
    ("field-over-131072-bytes", "0," + "x" * 140_000, ["p.csv:2", "field larger than field limit (131072)"]),
]


@pytest.mark.parametrize("line, words", [c[1:] for c in CSV_CELLS], ids=[c[0] for c in CSV_CELLS])
@pytest.mark.slow
def test_a_csv_cell_no_json_row_could_hold_is_refused_in_one_line(lists, tmp_path, line, words):
    p, gt = lists
    f = tmp_path / "p.csv"
    rows = [f"{k},{';'.join(map(str, g))}" for k, g in enumerate(gt)]
    f.write_text("\n".join(["episode,plan", line, *rows[1:]]) + "\n")
    r = run_kepp("records", "import", "--format", "plain", "--predictions", f, "--split", p["test"],
                 "--method", "m", "--out", tmp_path / "out.jsonl")
    assert_one_line_error(r, *words)
    assert not (tmp_path / "out.jsonl").exists()
