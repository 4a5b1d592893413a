"""Records scored without models: ``kepp eval --from-records FILE|FOLDER`` prints each evaluation code's
table of any records, imported ones included, and ``kepp eval compare`` reads a folder as the app does."""

from __future__ import annotations

import json
import os

import pytest

from kepp_core.catalog.benchmark import protocol_metrics
from kepp_core import api
from kepp_core.catalog.benchmark import FAMILIES
from kepp_core.paths import DEMO_ASSETS
from kepp_core.evaluation.store import record_files
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.split_lists import made_up_plan, write_lists, write_vpn_predictions


@pytest.fixture()
def imported(tmp_path):
    """A folder holding an imported ViterbiPlanNet run (seed 7) and its ground truth."""
    p = write_lists(tmp_path / "lists")
    gt = write_vpn_predictions(tmp_path / "T3_predictions.json", p["test"])
    folder = tmp_path / "compare"
    folder.mkdir()
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", tmp_path / "T3_predictions.json",
                 "--split", p["test"], "--method", "vpn-run", "--seed", 7, "--out", folder / "vpn-records.jsonl")
    assert r.returncode == 0, r.stderr
    return folder, gt


@pytest.mark.slow
def test_from_records_scores_imported_records_under_every_code(imported):
    folder, gt = imported
    plans = [made_up_plan(g, k) for k, g in enumerate(gt)]
    r = run_kepp("eval", "--from-records", folder, "--metrics", *FAMILIES, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [t["code"] for t in out["tables"]] == list(FAMILIES)
    for table in out["tables"]:
        code = table["code"]
        (run,) = table["runs"]
        assert (run["method"], run["T"], run["seed"], run["episodes"], run["imported"]) == \
            ("vpn-run", 3, 7, len(gt), "T3_predictions.json")
        want = protocol_metrics(plans, gt, code)
        assert {k: run[k] for k in want} == want, code  # the code's numbers, unrounded
        (row,) = table["rows"]
        shown = api.method_horizon_table(api.read_predictions(record_files(folder)), code)[0]
        assert row == {"method": "vpn-run", **shown.loc["vpn-run"].to_dict()}
    printed = run_kepp("eval", "--from-records", folder / "vpn-records.jsonl", "--metrics", "pdpp", "vpn",
                       "--benchmark", "niv", env={"COLUMNS": "400"})  # headers whole (pytest-xdist's workers say 80)
    assert printed.returncode == 0, printed.stderr
    assert "T=3 SR (PDPP)" in printed.stdout and "T=3 mIoU (ViterbiPlanNet acc_iou)" in printed.stdout
    assert "published on niv with PDPP's code" in printed.stdout


@pytest.mark.slow
def test_from_records_without_records_or_with_run_options_is_one_line(imported, tmp_path):
    folder, _ = imported
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(run_kepp("eval", "--from-records", empty), str(empty), "a folder without records")
    assert_one_line_error(run_kepp("eval", "--from-records", folder, "--models", tmp_path),
                          "--from-records scores recorded plans", "--models")


@pytest.mark.slow
def test_eval_compare_reads_a_folder_of_records_as_the_app_does(imported, tmp_path):
    folder, _ = imported
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", tmp_path / "T3_predictions.json",
                 "--split", tmp_path / "lists" / "test_3.json", "--method", "other-run", "--seed", 7,
                 "--out", folder / "sub" / "other-preds.jsonl")
    assert r.returncode == 0, r.stderr
    r = run_kepp("eval", "compare", folder, "--a", "vpn-run", "--b", "other-run", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    assert row["units"] == 6 and row["both"] == 3 and row["neither"] == 3


def test_a_folder_gives_the_records_files_the_app_reads(tmp_path):
    record = json.dumps({"seed": 0, "T": 3, "episode": "t/v/0:3", "gt": [0, 1, 2], "plans": {"m": [0, 1, 2]}})
    for name, text in (("a-records.jsonl", record), ("sub/m1.jsonl", record), ("notes.jsonl", '{"note": 1}'),
                       ("records.txt", record)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    ws = api.Workspace(api.AppConfig(predictions=str(tmp_path)))
    # every .jsonl / .parquet that reads as records, whatever its name; notes.jsonl is not records
    assert record_files(tmp_path) == ws.prediction_files() == [tmp_path / "a-records.jsonl", tmp_path / "sub" / "m1.jsonl"]
    assert [s.path for s in ws.prediction_sources()[1]] == [tmp_path / "notes.jsonl"]
    assert record_files(tmp_path / "notes.jsonl") == [tmp_path / "notes.jsonl"]


@pytest.mark.slow
def test_from_records_takes_horizons_and_methods_as_filters(imported, tmp_path):
    folder, _ = imported
    p4 = write_lists(tmp_path / "lists4", horizon=4)
    write_vpn_predictions(tmp_path / "T4_predictions.json", p4["test"])
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", tmp_path / "T4_predictions.json",
                 "--split", p4["test"], "--method", "other-run", "--seed", 7, "--out", folder / "t4-records.jsonl")
    assert r.returncode == 0, r.stderr

    def runs(*filters):
        r = run_kepp("eval", "--from-records", folder, "--metrics", "kepp", "--json", *filters)
        assert r.returncode == 0, r.stderr
        return sorted((run["method"], run["T"]) for run in json.loads(r.stdout)["tables"][0]["runs"])

    assert runs() == [("other-run", 4), ("vpn-run", 3)]
    assert runs("-T", "4") == [("other-run", 4)]
    assert runs("--methods", "vpn-run") == [("vpn-run", 3)]
    assert_one_line_error(run_kepp("eval", "--from-records", folder, "-T", "5"), str(folder), "no records of -T 5",
                          "the records hold 3, 4")
    assert_one_line_error(run_kepp("eval", "--from-records", folder, "--methods", "kepp-R1"),
                          "no records of --methods kepp-R1", "other-run, vpn-run")


# Runs `kepp ARGS` as the command line does, in this fresh process, then says whether torch was imported: exit
# status 3 when it was (the command's own status otherwise).
_TORCH_WATCH = """
import sys
from kepp_core.cli import main
status = main(sys.argv[1:])
sys.exit(3 if "torch" in sys.modules else status)
"""


@pytest.mark.slow
def test_scoring_records_never_imports_torch(imported):
    import subprocess
    import sys

    from kepp_core.paths import REPO_ROOT

    folder, _ = imported
    for argv in (["eval", "--from-records", folder], ["eval", "--from-records", folder, "--metrics", *FAMILIES, "--json"],
                 ["eval", "--from-records", folder, "--device", "cpu"]):
        r = subprocess.run([sys.executable, "-c", _TORCH_WATCH, *map(str, argv)], capture_output=True, text=True,
                           cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=300)
        assert r.returncode == 0, (argv, r.returncode, r.stderr)  # 3: torch was imported
    # the watch itself sees torch where a command does load it (a run of models resolves its device with torch)
    r = subprocess.run([sys.executable, "-c", _TORCH_WATCH, "eval", "--models", str(folder / "none"), "--device", "cpu"],
                       capture_output=True, text=True, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                       timeout=300)
    assert r.returncode == 3, r.stderr


@pytest.mark.slow
def test_text_tables_print_every_method_name_whole(imported, tmp_path):
    folder, _ = imported
    long_name = "viterbiplannet-reimplemented-with-a-long-name"
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", tmp_path / "T3_predictions.json",
                 "--split", tmp_path / "lists" / "test_3.json", "--method", long_name, "--seed", 7,
                 "--out", folder / "long-records.jsonl")
    assert r.returncode == 0, r.stderr
    for codes in (["kepp"], ["kepp", "pdpp", "vpn"]):
        printed = run_kepp("eval", "--from-records", folder, "--metrics", *codes, env={"COLUMNS": "80"})
        assert printed.returncode == 0, printed.stderr
        rows = [line for line in printed.stdout.splitlines() if line.startswith("│")]
        for name in ("vpn-run", long_name):  # each on one line, whole, in every table
            assert sum(f"│ {name} " in line for line in rows) == len(codes), (name, printed.stdout)
        assert "…" not in printed.stdout  # no header or number cut either
    # the demo's labels, the longest of the catalogue, whole too
    printed = run_kepp("eval", "--from-records", DEMO_ASSETS / "predictions.jsonl", "--metrics", "pdpp")
    assert "│ KEPP R=1 + joint decoding with the endpoint model " in printed.stdout and "…" not in printed.stdout


def test_a_table_that_fits_is_printed_as_before(capsys):
    from kepp_core.commands._common import print_table

    print_table([{"method": "kepp-R1", "SR": 50.0}, {"method": "pdpp", "SR": 40.0}], title="t")
    lines = capsys.readouterr().out.splitlines()
    assert "│ kepp-R1 │ 50.00 │" in lines and max(map(len, lines)) < 40  # as narrow as its cells: nothing widened
