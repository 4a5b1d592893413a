"""The records store (kepp_core.evaluation.store): the same rows as reading and judging record by record (the
oracle, tests/helpers/records_oracle.py) on the demo records, imported records, older formats and hostile files
(the same one-line errors, the fast reader declining every file the exact one refuses); a cache keyed on the
file's bytes; a folder read whole whatever its files' names; records of another dataset named as such."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kepp_core import api
from kepp_core.errors import KeppError
from kepp_core.evaluation import store
from kepp_core.evaluation.store import arrays, cache, reading, version
from kepp_core.evaluation.records import read_records, write_records
from kepp_core.io import MAX_LINE_BYTES
from kepp_core.paths import DEMO_ASSETS, cache_folder
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.records_oracle import differences, oracle_rows

DEMO = DEMO_ASSETS / "predictions.jsonl"
RECORD = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "setting": "conventional", "first": 0,
          "start_time": 1.0, "goal_time": 9.0, "gt": [1, 2, 1], "endpoints": [1, 3], "endpoint_scores": [0.5, 0.25],
          "paths": [[1, 2, 1], [1, 4, 1]], "path_scores": [0.5, 0.1],
          "plans": {"kepp-R1": [1, 2, 1], "kepp-R2": [1, 4, 1], "pdpp": [3, 2, 1], "random": [5, 5, 5]},
          "success": {"kepp-R1": 1, "kepp-R2": 0, "pdpp": 0, "random": 0},
          "acc": {"kepp-R1": 1.0, "kepp-R2": 2 / 3, "pdpp": 2 / 3, "random": 0.0}}


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    """Every test's own cache home: what one test caches, the next does not read."""
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def demo_part(tmp_path: Path, lines: int = 150) -> Path:
    """The first ``lines`` demo records (every method, T=3), as their own file."""
    part = tmp_path / "demo-part.jsonl"
    with open(DEMO, encoding="utf-8") as f:
        part.write_text("".join(next(f) for _ in range(lines)), encoding="utf-8")
    return part


def same_as_oracle(files) -> int:
    table = api.read_predictions(files)
    assert differences(table, oracle_rows(files)) == []
    return len(table)


# --- the same rows as record by record ------------------------------------------------------------------------------
def test_demo_records_read_through_the_store_equal_the_record_by_record_oracle(tmp_path):
    part = demo_part(tmp_path)
    assert reading._fast_rows(part.read_bytes()) is not None  # the demo's writer's files take the fast way
    assert same_as_oracle([part]) == 150 * 21
    assert same_as_oracle([part]) == 150 * 21  # and again, from the cache


@pytest.mark.slow
def test_every_demo_record_and_every_table_of_them_equal_the_oracle_and_the_per_row_tables():
    table = api.read_predictions([DEMO])
    rows = oracle_rows([DEMO])
    assert differences(table, rows) == []
    by_row = pd.DataFrame(rows)  # the oracle's rows as a table
    for code in ("kepp", "pdpp", "vpn"):
        fast, slow = api.method_horizon_table(table, code), api.method_horizon_table(by_row, code)
        assert fast[0].equals(slow[0]) and fast[1] == slow[1], code
        assert api.metrics_table(table, code).equals(api.metrics_table(by_row, code)), code
    assert len(table) == 37_611


def test_the_fast_and_the_exact_reader_give_the_same_rows(tmp_path):
    part = demo_part(tmp_path, 40)
    fast, exact = store.judge(reading._fast_rows(part.read_bytes())), store.judge(reading._exact_rows(part))
    assert fast.column_names == exact.column_names
    assert [c for c in fast.column_names if fast.column(c).to_pylist() != exact.column(c).to_pylist()] == []


def test_imported_records_without_seeds_or_context_equal_the_oracle(tmp_path):
    imported = [{"T": 3, "episode": f"t/v/{i}:3", "video": "v", "task": "t", "gt": [1, 2, i % 4],
                 "plans": {"vpn-s7": [1, 2, 3]}, "success": {"vpn-s7": int(i % 4 == 3)}, "acc": {"vpn-s7": 1.0},
                 "imported": {"vpn-s7": "T3_predictions.json"}} for i in range(12)]
    path = write_records(tmp_path / "vpn-s7.jsonl", imported)
    assert same_as_oracle([path, write_records(tmp_path / "kepp.jsonl", [RECORD])]) == 12 + 4
    assert set(api.read_predictions([path])["imported"]) == {"T3_predictions.json"}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_older_records_and_parquet_files_equal_the_oracle(tmp_path, suffix):
    old = {k: v for k, v in RECORD.items() if k not in ("success", "acc", "seed", "T")}
    old["correct"] = {m: p == RECORD["gt"] for m, p in RECORD["plans"].items()}
    path = write_records(tmp_path / f"old{suffix}", [old, {**old, "episode": "t/v/1:3", "gt": [2, 2, 2]}])
    assert same_as_oracle([path]) == 8


def test_a_key_given_twice_is_refused_by_both_readers_and_plans_of_other_types_are_refused(tmp_path):
    """A key given twice: the fast reader declines, the exact one refuses it naming the line and key (JSON leaves
    which value counts to the reader; tests/test_records_hostile.py). Plans written as floats or digit strings:
    both refuse them in one line (a plan is a list of integer action ids)."""
    path = tmp_path / "twice.jsonl"
    text = json.dumps(RECORD) + "\n"
    path.write_text(text + text.replace('"episode": "t/v/0:3"', '"episode": "x", "episode": "t/v/1:3"'), encoding="utf-8")
    assert reading._fast_rows(path.read_bytes()) is None
    with pytest.raises(KeppError, match=r"twice.jsonl:2: the key 'episode' twice in one object"):
        api.read_predictions([path])
    for name, record in (("floats", {**RECORD, "gt": [1.0, 2.0, 1.0]}),
                         ("strings", {**RECORD, "plans": {"pdpp": ["3", "2", "1"]}})):
        odd = tmp_path / f"{name}.jsonl"
        odd.write_text(json.dumps(record) + "\n", encoding="utf-8")
        assert reading._fast_rows(odd.read_bytes()) is None
        with pytest.raises(KeppError) as e:
            api.read_predictions([odd])
        assert f"{odd}:1: " in str(e.value) and "must be" in str(e.value) and "\n" not in str(e.value)


HOSTILE = {  # a records file's lines -> what its one-line error names
    "invalid JSON": ([json.dumps(RECORD), "{oops"], ":2: invalid JSON"),
    "two objects on a line": ([json.dumps(RECORD) + " " + json.dumps(RECORD)], ":1: invalid JSON"),
    "not an object": (["[1, 2, 3]"], ":1: expected a JSON object, got list"),
    "no plans": ([json.dumps({k: v for k, v in RECORD.items() if k != "plans"})], "record lacks plans"),
    "plan too short": ([json.dumps({**RECORD, "plans": {"pdpp": [1, 2]}})], "plan has 2 steps, ground truth has 3"),
    "empty truth": ([json.dumps({**RECORD, "gt": [], "plans": {"pdpp": []}})], ":1: 'gt' must be a plan"),
    "graph path too short": ([json.dumps({**RECORD, "paths": [[1, 1]]})], "top graph path has 2 steps, expected 3"),
    "NaN": ([json.dumps(RECORD).replace('"goal_time": 9.0', '"goal_time": NaN')], "NaN (not a JSON number) is not readable"),
    "Infinity": ([json.dumps(RECORD).replace('"path_scores": [0.5', '"path_scores": [Infinity')], "Infinity"),
    "huge integer": ([json.dumps(RECORD).replace('"first": 0', '"first": ' + "9" * 150)], "an integer of 150 digits"),
    "plan given as null": ([json.dumps({**RECORD, "plans": {**RECORD["plans"], "pdpp": None}})], ":1: 'plans' must be"),
    "truth of text": ([json.dumps({**RECORD, "gt": ["a", "b", "c"]})], ":1: 'gt' must be a plan"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_records_file_is_one_line_error_the_fast_reader_never_accepts(tmp_path, case):
    lines, words = HOSTILE[case]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert reading._fast_rows(path.read_bytes()) is None
    with pytest.raises(KeppError) as e:
        api.read_predictions([path])
    assert words in str(e.value) and "\n" not in str(e.value)
    assert not list(cache_folder("records").glob("*.arrow"))  # nothing cached (a kept hash names no table)


def test_a_line_past_the_limit_and_invalid_utf8_are_the_exact_readers_errors(tmp_path):
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps({**RECORD, "pad": "x" * MAX_LINE_BYTES}) + "\n", encoding="utf-8")
    bad = tmp_path / "bytes.jsonl"
    bad.write_bytes(json.dumps(RECORD).replace("conventional", "conv\udcffx").encode("utf-8", "surrogateescape") + b"\n")
    for path, words in ((long, "line longer than"), (bad, "not valid UTF-8 text")):
        assert reading._fast_rows(path.read_bytes()) is None
        with pytest.raises(KeppError, match=words):
            api.read_predictions([path])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bytes.jsonl", "long.jsonl"]


# --- the cache --------------------------------------------------------------------------------------------------------
def test_the_cache_follows_the_files_bytes_even_at_the_same_size_and_time(tmp_path, cache_home):
    path = write_records(tmp_path / "r.jsonl", [RECORD])
    first = api.read_predictions([path])
    stat = path.stat()
    changed = path.read_text(encoding="utf-8").replace('"pdpp": [3, 2, 1]', '"pdpp": [1, 2, 1]')
    path.write_text(changed, encoding="utf-8")  # as many bytes, then the old modification time given back
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    second = api.read_predictions([path])
    pdpp = lambda t: t.loc[t["method"] == "pdpp", "success"].tolist()  # noqa: E731
    assert pdpp(first) == [False] and pdpp(second) == [True]
    cached = sorted(p.name for p in (cache_home / "records").iterdir() if p.is_file())  # (hashes/: kept hashes)
    assert cached == [f"{store.file_version(path).key}.arrow"]  # the first version's table deleted: not on disk
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "r.jsonl"]  # nothing beside the records


def test_a_settled_files_hash_is_kept_so_a_new_process_reads_no_bytes_until_the_file_is_written_again(
        tmp_path, cache_home, monkeypatch):
    monkeypatch.setattr(version, "SETTLED_NS", 0)  # this file counts as settled (else 2 s after its last write)
    path = write_records(tmp_path / "r.jsonl", [RECORD])
    api.read_predictions([path])
    stat = path.stat()
    version._versions.clear()  # as a new process finds the cache home
    cache._opened.clear()

    def refuse(*_args, **_kwargs):
        raise AssertionError("the records file's bytes were read again")
    with monkeypatch.context() as m:
        m.setattr(version, "open_regular", refuse)
        m.setattr(cache, "open_regular", refuse)
        again = api.read_predictions([path])  # its kept hash names the cached table: no byte of the file read
    changed = path.read_text(encoding="utf-8").replace('"pdpp": [3, 2, 1]', '"pdpp": [1, 2, 1]')
    path.write_text(changed, encoding="utf-8")  # as many bytes, then the old modification time given back
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    version._versions.clear()
    cache._opened.clear()
    second = api.read_predictions([path])
    pdpp = lambda t: t.loc[t["method"] == "pdpp", "success"].tolist()  # noqa: E731
    assert pdpp(again) == [False] and pdpp(second) == [True]
    kept = list((cache_home / "records" / "hashes").iterdir())
    assert len(kept) == 1  # the version on disk's, under its status (the first one's deleted with its table)
    for f in kept:
        f.write_text("../../../elsewhere", encoding="ascii")  # a kept hash that is not one is not taken
    version._versions.clear()
    assert store.file_version(path).digest == hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()


def test_a_cache_file_cut_short_is_made_again(tmp_path, cache_home):
    path = write_records(tmp_path / "r.jsonl", [RECORD])
    want = api.read_predictions([path])
    (cached,) = (cache_home / "records").glob("*.arrow")
    cut = cached.read_bytes()[:100]
    cached.unlink()  # a torn write left a new, shorter file (cache files are replaced, never rewritten in place)
    cached.write_bytes(cut)
    version._versions.clear()  # as a new process finds it
    cache._opened.clear()
    assert differences(api.read_predictions([path]), oracle_rows([path])) == [] and len(want) == 4


def test_a_tables_arrays_come_from_the_store_and_are_shared_by_its_metric_tables_until_a_plan_of_it_changes():
    preds = api.read_predictions([DEMO])
    before = api.metrics_table(preds, "pdpp")
    carried = preds.attrs[arrays.PLANS]
    whole, part = arrays.PlanArrays(preds), arrays.PlanArrays(preds[preds["method"] == "kepp-R2"])
    assert whole.carried is carried and part.carried is carried  # the store's arrays, for the table and a part of it
    rows = np.flatnonzero(preds["horizon"].to_numpy() == 3)
    assert whole._horizon(3)[1] is carried.made[3][1]  # the very arrays the store made: no tuple read again
    assert np.array_equal(whole.of(rows)[0], np.array([list(p) for p in preds["plan"].to_numpy()[rows]]))
    row = int(np.flatnonzero((preds["method"] == "kepp-R2").to_numpy() & preds["success"].to_numpy())[0])
    preds.at[row, "plan"] = tuple(a + 1 for a in preds.at[row, "plan"])  # a right plan made wrong, in place
    assert arrays.PlanArrays(preds).carried is None  # its arrays no longer hold its plans: its tuples counted
    after, fresh = api.metrics_table(preds, "pdpp"), api.metrics_table(preds.copy(deep=True), "pdpp")
    pd.testing.assert_frame_equal(after, fresh)  # counted on the plans as they are now, not the arrays made before
    assert not after.equals(before)


# --- a protocol's units -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_protocols_units_from_the_store_equal_the_record_by_record_units(tmp_path, suffix):
    """Recorded outcomes kept as they were written (here not what the plans say), a method missing from one record,
    two fractions and two horizons: the same seeds, episodes and values, NaN where the record has none."""
    recs = [{**RECORD, "fraction": f, "seed": s, "T": len(gt), "gt": gt, "episode": f"t/v/{i}:{len(gt)}",
             "plans": {"a": gt, "b": [9] * len(gt)}, "success": {"a": int(i % 2 == 0), "b": 0},
             "acc": {"a": 0.5, "b": 0.25 + s}}
            for f in (0.5, 1.0) for gt in ([1, 2, 3], [1, 2, 3, 4]) for s in (0, 1) for i in range(3)]
    recs[-1] = {**recs[-1], "success": {"a": 1}, "acc": {"a": 1.0}}
    path = write_records(tmp_path / f"records{suffix}", recs)
    want = read_records(path).units()
    got = store.protocol_units(path).units()
    assert sorted(got) == sorted(want) == [(0.5, 3), (0.5, 4), (1.0, 3), (1.0, 4)]
    for key, g in want.items():
        assert got[key]["seed"].tolist() == g["seed"].tolist() and got[key]["episode"] == g["episode"]
        for part in ("success", "acc"):
            assert sorted(got[key][part]) == sorted(g[part])
            for m, values in g[part].items():
                np.testing.assert_array_equal(got[key][part][m], values)  # NaN where the other has NaN
    with pytest.raises(KeppError, match="record 1: expected a protocol record"):
        store.protocol_units(write_records(tmp_path / "eval.jsonl", [RECORD]))  # no fraction: kepp eval's


# --- a folder of records ---------------------------------------------------------------------------------------------
def records_folder(tmp_path: Path) -> Path:
    """Records under odd names, a JSON-lines file that is not records, a broken Parquet file, a text file."""
    folder = tmp_path / "compare"
    (folder / "more").mkdir(parents=True)
    write_records(folder / "m1.jsonl", [RECORD])
    write_records(folder / "run 2 (copy).jsonl", [{**RECORD, "seed": 1}])
    write_records(folder / "more" / "seed2.parquet", [{**RECORD, "seed": 2}])
    (folder / "notes.jsonl").write_text('{"note": "not a record"}\n', encoding="utf-8")
    (folder / "broken.parquet").write_bytes(b"PAR1 not really")
    (folder / "README.txt").write_text("records of three seeds", encoding="utf-8")
    return folder


def test_a_folder_is_read_whole_whatever_the_names_and_the_others_are_named_with_why(tmp_path):
    folder = records_folder(tmp_path)
    files, skipped = store.folder_records(folder)
    assert [f.name for f in files] == ["m1.jsonl", "seed2.parquet", "run 2 (copy).jsonl"]
    assert [s.path.name for s in skipped] == ["broken.parquet", "notes.jsonl"]
    assert "not a readable Parquet file" in skipped[0].line() and "record lacks episode, gt, plans" in skipped[1].line()
    assert all("\n" not in s.line() and str(s.path) in s.line() for s in skipped) and len(skipped) == 2
    ws = api.Workspace(api.AppConfig(predictions=str(folder)))
    assert ws.prediction_files() == files
    assert sorted(ws.predictions()["seed"].unique()) == [0, 1, 2]


def test_kepp_eval_compare_reads_a_folder_and_names_the_files_it_skipped(tmp_path):
    folder = records_folder(tmp_path)
    r = run_kepp("eval", "compare", folder, "--a", "kepp-R1", "--b", "pdpp", env={"KEPP_HOME": str(tmp_path / "h")})
    assert r.returncode == 0, r.stderr
    skipped = [line for line in r.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 2 and "notes.jsonl: skipped: " in skipped[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.jsonl").write_text('{"note": 1}\n', encoding="utf-8")
    assert_one_line_error(run_kepp("eval", "compare", empty, "--a", "x", "--b", "y", env={"KEPP_HOME": str(tmp_path / "h")}),
                          "a folder without records", "1 file(s) skipped")


# --- another dataset's records ---------------------------------------------------------------------------------------
def test_records_naming_actions_the_dataset_lacks_are_a_clear_message(tmp_path):
    path = write_records(tmp_path / "r.jsonl", [{**RECORD, "plans": {"pdpp": [1, 200, 1]}}])
    preds = api.read_predictions([path])
    api.check_vocabulary(preds, [f"a{i}" for i in range(201)], "big")
    with pytest.raises(KeppError, match=r"action id 200, but the dataset 'toy' has 10 actions .*not of this dataset"):
        api.check_vocabulary(preds, [f"a{i}" for i in range(10)], "toy")
    negative = api.read_predictions([write_records(tmp_path / "n.jsonl", [{**RECORD, "plans": {"pdpp": [1, -1, 1]}}])])
    with pytest.raises(KeppError, match="action id -1"):
        api.check_vocabulary(negative, [f"a{i}" for i in range(10)], "toy")


def test_tables_filtered_from_a_released_table_count_the_same_on_their_own_tuples():
    preds = api.read_predictions([DEMO])
    part = preds[preds["horizon"] == 3]
    before = api.metrics_table(part, "pdpp")
    carried = preds.attrs[arrays.PLANS]
    assert carried.positions(part) is not None  # counted on the table's arrays
    carried.release()  # as the app lets go of a table superseded by a newer version of its files
    assert carried.positions(part) is None and len(carried.plan) == 0
    pd.testing.assert_frame_equal(api.metrics_table(part, "pdpp"), before)
