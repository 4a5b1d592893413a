"""Hostile records input at the field's scale, attacked through every surface that reads records: ``kepp eval
--from-records FILE|FOLDER`` (the real command line), the app's records backend (:func:`kepp_core.api.read_predictions`)
and ``kepp records import``. Each case ends in one ``kepp: error:`` line naming the file (and line, record or key)
and what was expected, exit 2, or in a documented result (docs/reliability.md), with memory bounded by the input.
The classes are parametrised apart, so ``pytest --collect-only -q tests/test_records_hostile.py -k CLASS`` counts
each: ``jsonl``, ``parquet``, ``folder``, ``import``."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pyarrow as pa
import pytest

from kepp_core import api
from kepp_core.errors import KeppError, printable
from kepp_core.evaluation.store import records_in
from tests.helpers import hostile_records as h
from tests.helpers.cli import assert_one_line_error, one_error, run_kepp, run_kepp_measured
from tests.helpers.split_lists import made_up_plan, write_lists, write_vpn_predictions

MIB = 2**20


@pytest.fixture(autouse=True)
def own_cache_home(tmp_path, monkeypatch):
    """Each test's own $KEPP_HOME: what one case cached never answers another."""
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "kepp-home"))


def _frame(path) -> list[tuple]:
    """What the app's backend reads of ``path``: its rows, less the file's name."""
    preds = api.read_predictions(records_in(path)[0])
    return [tuple(map(str, r)) for r in preds.drop(columns=["source"]).itertuples(index=False)]


def _from_records(capsys, path, *more) -> tuple[int, str, str]:
    """``kepp eval --from-records PATH --json`` in this process: exit code, stdout, stderr."""
    from kepp_core.cli import main

    code = main(["eval", "--from-records", str(path), "--json", *map(str, more)])
    out, err = capsys.readouterr()
    return code, out, err


# --- JSON lines -----------------------------------------------------------------------------------------------------
_DEEP = "[" * 100_000 + "]" * 100_000
JSONL_REFUSED = {
    "line_over_16_mib": (h.good_lines(1) + b'{"episode": "' + b"a" * (16 * MIB) + b'"}\n', ":2:", "longer than"),
    "nested_100000_deep": (h.good_lines(1) + h.with_raw(1, "notes", _DEEP), ":2:", "nested too deeply"),
    "plan_nested_in_lists": (h.good_lines(1) + h.with_raw(1, "plans", '{"m": [[[[0]]], 1, 2]}'), ":2:", "plans"),
    "key_twice_episode": (h.good_lines(1) + h.with_raw(1, "episode", '"t/v1/0:3", "episode": "t/v9/0:3"'), ":2:",
                          "'episode'", "twice"),
    "method_twice_in_plans": (h.good_lines(1) + h.with_raw(1, "plans", '{"m": [0, 1, 2], "m": [2, 1, 0]}'), ":2:",
                              "'m'", "twice"),
    "nan_fraction": (h.good_lines(1) + h.with_raw(1, "fraction", "NaN"), ":2:", "NaN"),
    "infinity_start_time": (h.good_lines(1) + h.with_raw(1, "start_time", "Infinity"), ":2:", "Infinity"),
    "minus_infinity_acc": (h.good_lines(1) + h.with_raw(1, "acc", '{"m": -Infinity}'), ":2:", "Infinity"),
    "nan_in_ground_truth": (h.good_lines(1) + h.with_raw(1, "gt", "[0, NaN, 2]"), ":2:", "NaN"),
    "float_past_double": (h.good_lines(1) + h.with_raw(1, "goal_time", "1e400"), ":2:", "too large"),
    "int_past_64_bits_in_gt": (h.good_lines(1) + h.with_raw(1, "gt", f"[0, {2**64}, 2]"), ":2:", "gt"),
    "int_past_64_bits_seed": (h.good_lines(1) + h.with_raw(1, "seed", str(2**64)), ":2:", "seed"),
    "int_past_64_bits_start_time": (h.good_lines(1) + h.with_raw(1, "start_time", str(2**70)), ":2:", "start_time"),
    "int_past_64_bits_endpoints": (h.good_lines(1) + h.with_raw(1, "endpoints", f"[0, {2**65}]"), ":2:", "endpoints"),
    "int_of_101_digits": (h.good_lines(1) + h.with_raw(1, "goal_time", "9" * 101), ":2:", "101 digits"),
    "mixed_types_task": (h.good_lines(1) + h.line(1, task=5), ":2:", "task"),
    "mixed_types_video": (h.good_lines(1) + h.line(1, video=["v"]), ":2:", "video"),
    "mixed_types_setting": (h.good_lines(1) + h.line(1, setting=1), ":2:", "setting"),
    "mixed_types_T_as_text": (h.good_lines(1) + h.line(1, T="3"), ":2:", "T"),
    "mixed_types_seed_fraction": (h.good_lines(1) + h.line(1, seed=1.5), ":2:", "seed"),
    "mixed_types_start_time_text": (h.good_lines(1) + h.line(1, start_time="12"), ":2:", "start_time"),
    "mixed_types_goal_time_list": (h.good_lines(1) + h.line(1, goal_time=[1]), ":2:", "goal_time"),
    "mixed_types_gt_text": (h.good_lines(1) + h.line(1, gt="0,1,2"), ":2:", "gt"),
    "mixed_types_plans_list": (h.good_lines(1) + h.line(1, plans=[[0, 1, 2]]), ":2:", "plans"),
    "mixed_types_endpoints_text": (h.good_lines(1) + h.line(1, endpoints="0,2"), ":2:", "endpoints"),
    "mixed_types_paths_numbers": (h.good_lines(1) + h.line(1, paths=[0, 1, 2]), ":2:", "paths"),
    "mixed_types_path_scores_text": (h.good_lines(1) + h.line(1, paths=[[0, 1, 2]], path_scores=["a"]), ":2:",
                                     "path_scores"),
    "invalid_utf8": (h.good_lines(1) + b'{"episode": "t/v\xff/0:3", "gt": [0, 1, 2], "plans": {"m": [0, 1, 2]}}\n',
                     ":2:", "UTF-8"),
    "utf8_surrogate": (h.good_lines(1) + b'{"episode": "t/\xed\xa0\x80/0:3", "gt": [0, 1, 2], "plans": {"m": [0, 1, 2]}}\n',
                       ":2:", "UTF-8"),
    "bom_inside_the_file": (h.good_lines(1) + b"\xef\xbb\xbf" + h.line(1), ":2:", "byte-order mark"),
    "nul_byte": (h.good_lines(1) + b'{"episode": "t/\x00/0:3", "gt": [0, 1, 2], "plans": {"m": [0, 1, 2]}}\n', ":2:",
                 "invalid JSON"),
    "cut_last_line": (h.good_lines(2) + h.line(2)[:30], ":3:", "invalid JSON"),
}


@pytest.mark.parametrize("case", list(JSONL_REFUSED))
def test_jsonl_hostile_line_is_one_error_naming_file_and_line(case, tmp_path, capsys):
    data, *words = JSONL_REFUSED[case]
    f = h.write(tmp_path / "records.jsonl", data)
    code, out, err = _from_records(capsys, f)
    said = one_error(code, err, f"{f}{words[0]}").split(f"{f}{words[0]}", 1)[1]
    assert all(w in said for w in words[1:]), said  # words of the message, not of the file's name
    assert out == ""
    with pytest.raises(KeppError) as e:  # the app's backend: the same line
        api.read_predictions([f])
    assert printable(str(e.value)) == err.strip().removeprefix("kepp: error: ")


_LF = h.good_lines(3)
JSONL_READ = {  # each reads as the same records as _LF
    "crlf_line_ends": _LF.replace(b"\n", b"\r\n"),
    "bom_at_the_start": b"\xef\xbb\xbf" + _LF,
    "bom_and_crlf": b"\xef\xbb\xbf" + _LF.replace(b"\n", b"\r\n"),
    "blank_and_space_lines": _LF.replace(b"\n", b"\n\n   \n"),
    "no_newline_at_the_end": _LF[:-1],
    "int_past_64_bits_in_an_unread_key": b"".join(h.with_raw(k, "first", str(2**64)) for k in range(3)),
    "line_just_under_16_mib": h.good_lines(2) + h.with_raw(2, "notes", '"' + "n" * (16 * MIB - 400) + '"'),
    "non_ascii_labels": b"".join(h.line(k, task="t\u00e9", gt_labels=["\u00b2", "--5", "\u2028"]) for k in range(3)),
}


@pytest.mark.parametrize("case", list(JSONL_READ))
def test_jsonl_odd_but_valid_file_reads_as_the_plain_file(case, tmp_path, capsys):
    plain = h.write(tmp_path / "plain" / "records.jsonl", _LF)
    odd = h.write(tmp_path / "odd" / "records.jsonl", JSONL_READ[case])
    want = _frame(plain)
    if case == "non_ascii_labels":
        want = [r[:1] + ("t\u00e9",) + r[2:] for r in want]
    assert _frame(odd) == want
    code, out, err = _from_records(capsys, odd)
    assert code == 0 and err == "", err
    assert json.loads(out)["tables"][0]["runs"][0]["episodes"] == 3


# --- Parquet --------------------------------------------------------------------------------------------------------
def _typed(**cols):
    """:func:`h.flat_table`'s records with ``cols`` replaced (Arrow arrays)."""
    t = h.flat_table(3)
    for name, arr in cols.items():
        t = t.set_column(t.column_names.index(name), name, arr) if name in t.column_names else t.append_column(name, arr)
    return t


def _deep_list(depth: int):
    typ = pa.int64()
    for _ in range(depth):
        typ = pa.list_(typ)
    value = 1
    for _ in range(depth):
        value = [value]
    return pa.array([value] * 3, typ)


PARQUET_REFUSED = {
    "another_schema": (lambda p: h.parquet_of(p, pa.table({"a": [1, 2], "b": ["x", "y"]})), "record 1", "lacks"),
    "gt_a_number": (lambda p: h.parquet_of(p, _typed(gt=pa.array([1, 2, 3]))), "record 1", "gt"),
    "plans_not_json": (lambda p: h.parquet_of(p, _typed(plans=pa.array(["{m: 1}"] * 3))), "record 1", "plans"),
    "episode_a_number": (lambda p: h.parquet_of(p, _typed(episode=pa.array([1, 2, 3]))), "record 1", "episode"),
    "seed_text": (lambda p: h.parquet_of(p, _typed(seed=pa.array(["0", "1", "2"]))), "record 1", "seed"),
    "nested_64_deep": (lambda p: h.parquet_of(p, _typed(notes=_deep_list(64))), "too deeply nested"),
    "footer_longer_than_file": (lambda p: h.footer_length(h.parquet_of(p, h.flat_table()), 2**31), "Parquet"),
    "footer_scrambled": (lambda p: h.footer_scrambled(h.parquet_of(p, h.flat_table())), "Parquet"),
    "cut_in_half": (lambda p: h.write(p, h.parquet_of(p, h.flat_table()).read_bytes()[:600]), "Parquet"),
    "empty_file": (lambda p: h.write(p, b""), "Parquet"),
    "json_named_parquet": (lambda p: h.write(p, h.good_lines()), "Parquet"),
    "10001_row_groups": (lambda p: h.many_row_groups(p, 10_001), "10,001 row groups"),
}


@pytest.mark.parametrize("case", list(PARQUET_REFUSED))
def test_parquet_hostile_file_is_one_error_naming_it(case, tmp_path, capsys):
    make, *words = PARQUET_REFUSED[case]
    f = make(tmp_path / "records.parquet")
    code, out, err = _from_records(capsys, f)
    said = one_error(code, err, str(f)).split(str(f), 1)[1]
    assert all(w in said for w in words), said
    with pytest.raises(KeppError) as e:
        api.read_predictions([f])
    assert printable(str(e.value)) == err.strip().removeprefix("kepp: error: ")


PARQUET_BOMBS = {
    "dictionary_bomb_4_gib": lambda p: h.dictionary_bomb(p),
    "zstd_bomb_1_5_gib": lambda p: h.plain_bomb(p),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(PARQUET_BOMBS))
def test_parquet_decompression_bomb_is_refused_before_it_inflates(case, tmp_path):
    f = PARQUET_BOMBS[case](tmp_path / "bomb.parquet")
    assert f.stat().st_size < 4 * MIB
    r, peak = run_kepp_measured("eval", "--from-records", f, env={"KEPP_HOME": str(tmp_path / "home")}, timeout=600)
    assert_one_line_error(r, str(f), "inflate")
    assert peak < 600 * MIB, f"peak {peak / MIB:.0f} MiB"


def _nested(p):
    recs = [h.record(k) for k in range(3)]
    return h.parquet_of(p, pa.table({k: [r[k] for r in recs] for k in recs[0]}))  # gt lists, plans structs


def _as_map(p):
    recs = [h.record(k) for k in range(3)]
    t = pa.table({k: [r[k] for r in recs] for k in recs[0] if k != "plans"})
    plans = pa.array([list(r["plans"].items()) for r in recs], pa.map_(pa.string(), pa.list_(pa.int64())))
    return h.parquet_of(p, t.append_column("plans", plans))


def _dictionary_text(p):
    import pyarrow.parquet as pq

    pq.write_table(h.flat_table(3), p, use_dictionary=True, compression="zstd")
    return p


PARQUET_READ = {
    "flat_json_text": lambda p: h.parquet_of(p, h.flat_table(3)),
    "nested_list_and_struct_columns": _nested,
    "plans_as_a_map": _as_map,
    "dictionary_encoded_text": _dictionary_text,
    "a_row_group_per_record": lambda p: h.many_row_groups(p, 3),
    "a_task_in_brackets": lambda p: h.parquet_of(p, _typed(task=pa.array(["[t]"] * 3))),
}


@pytest.mark.parametrize("case", list(PARQUET_READ))
def test_parquet_other_valid_layouts_read_as_the_jsonl_records(case, tmp_path):
    plain = h.write(tmp_path / "plain" / "records.jsonl", _LF)
    f = PARQUET_READ[case](tmp_path / "records.parquet")
    want = _frame(plain)
    if case == "a_task_in_brackets":  # text, not JSON
        want = [r[:1] + ("[t]",) + r[2:] for r in want]
    assert _frame(f) == want


# --- folders --------------------------------------------------------------------------------------------------------
def _loop_folder(d: Path) -> list[str]:
    (d / "loop").symlink_to(d, target_is_directory=True)
    (d / "sub").mkdir()
    (d / "sub" / "up").symlink_to("..", target_is_directory=True)
    return []


def _loop_file(d: Path) -> list[str]:
    (d / "x.jsonl").symlink_to("y.jsonl")
    (d / "y.jsonl").symlink_to("x.jsonl")
    return ["x.jsonl", "y.jsonl"]


def _dangling(d: Path) -> list[str]:
    (d / "gone.jsonl").symlink_to("nowhere.jsonl")
    return ["gone.jsonl"]


def _fifo(d: Path) -> list[str]:
    h.fifo(d / "pipe.jsonl")
    (d / "to-pipe.parquet").symlink_to("pipe.jsonl")
    return ["pipe.jsonl", "to-pipe.parquet"]


def _socket(d: Path) -> list[str]:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock.parquet"))
    s.close()
    return ["sock.parquet"]


def _device(d: Path) -> list[str]:
    (d / "zero.jsonl").symlink_to("/dev/zero")
    return ["zero.jsonl"]


def _folder_named_jsonl(d: Path) -> list[str]:
    h.write(d / "inner.jsonl" / "deeper.parquet" / "r.jsonl", b"".join(h.line(k) for k in range(3, 5)))
    return []


FOLDER_CASES = {  # each beside a.jsonl (3 records): the traps skipped with a reason, never a hang
    "symlink_loops_of_folders": (_loop_folder, 3),
    "symlink_loop_of_files": (_loop_file, 3),
    "dangling_symlink": (_dangling, 3),
    "fifo_and_a_link_to_it": (_fifo, 3),
    "unix_socket": (_socket, 3),
    "link_to_a_device": (_device, 3),
    "folders_named_like_records": (_folder_named_jsonl, 5),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(FOLDER_CASES))
def test_folder_traps_are_skipped_with_a_reason_and_never_hang(case, tmp_path):
    make, episodes = FOLDER_CASES[case]
    d = tmp_path / "runs"
    h.write(d / "a.jsonl", _LF)
    skipped = make(d)
    r = run_kepp("eval", "--from-records", d, "--json", env={"KEPP_HOME": str(tmp_path / "home")}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tables"][0]["runs"][0]["episodes"] == episodes
    lines = r.stderr.splitlines()
    assert len(lines) == len(skipped) and "Traceback" not in r.stderr, r.stderr
    for name, text in zip(sorted(skipped), sorted(lines)):
        assert text.startswith(f"kepp: {d / name}: skipped: "), text
    files, why = records_in(d)
    assert sorted(s.path.name for s in why) == sorted(skipped)


@pytest.mark.slow
def test_folder_of_nothing_but_traps_is_one_error_counting_them(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    _fifo(d)
    _dangling(d)
    r = run_kepp("eval", "--from-records", d, env={"KEPP_HOME": str(tmp_path / "home")}, timeout=120)
    assert_one_line_error(r, str(d), "a folder without records", "3 file(s) skipped")


@pytest.mark.slow
def test_folder_of_10000_files_reads_every_record_and_names_the_bad_one(tmp_path):
    d = tmp_path / "runs"
    for k in range(10_000):
        sub = d / f"s{k // 1000}"
        if k % 1000 == 0:
            sub.mkdir(parents=True)
        (sub / f"r{k}.jsonl").write_bytes(h.line(k) if k != 4321 else h.with_raw(k, "seed", "NaN"))
    files, skipped = records_in(d)
    assert len(files) == 9_999 and [s.path.name for s in skipped] == ["r4321.jsonl"]
    assert "line 1: NaN" in skipped[0].why
    preds = api.read_predictions(files)
    assert len(preds) == 2 * 9_999 and preds["episode"].nunique() == 9_999
    r = run_kepp("eval", "--from-records", d, "--json", env={"KEPP_HOME": os.environ["KEPP_HOME"]}, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tables"][0]["runs"][0]["episodes"] == 9_999
    assert r.stderr.splitlines() == [f"kepp: {skipped[0].line()}"]


# --- kepp records import ----------------------------------------------------------------------------------------------
@pytest.fixture()
def lists(tmp_path):
    p = write_lists(tmp_path / "lists")
    gt = write_vpn_predictions(tmp_path / "T3_predictions.json", p["test"])
    return p, gt


def _plain(gt) -> list[bytes]:
    return [json.dumps({"episode": k, "plan": made_up_plan(g, k)}).encode() + b"\n" for k, g in enumerate(gt)]


IMPORT_REFUSED = {  # (the plain JSON lines edited, words); line 2 is the hostile one
    "line_over_16_mib": (lambda ls: [ls[0], b'{"episode": 1, "plan": "' + b"a" * (16 * MIB) + b'"}\n'], ":2:",
                         "longer than"),
    "nested_100000_deep": (lambda ls: [ls[0], b'{"episode": 1, "plan": ' + _DEEP.encode() + b"}\n"], ":2:", "plan"),
    "key_twice": (lambda ls: [ls[0], b'{"episode": 1, "plan": [0, 0, 0], ' + ls[1][15:]], ":2:", "'plan'", "twice"),
    "nan_step": (lambda ls: [ls[0], b'{"episode": 1, "plan": [0, NaN, 2]}\n'], ":2:", "NaN"),
    "int_past_64_bits": (lambda ls: [ls[0], b'{"episode": 18446744073709551617, "plan": [0, 1, 2]}\n'], ":2:",
                         "episode"),
    "invalid_utf8": (lambda ls: [ls[0], b'{"episode": 1, "plan": ["st\xffir", 1, 2]}\n'], ":2:", "UTF-8"),
    "bom_inside": (lambda ls: [ls[0], b"\xef\xbb\xbf" + ls[1]], ":2:", "byte-order mark"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(IMPORT_REFUSED))
def test_import_hostile_predictions_line_is_one_error_and_writes_nothing(case, lists, tmp_path):
    p, gt = lists
    edit, *words = IMPORT_REFUSED[case]
    ls = _plain(gt)
    f = h.write(tmp_path / "preds.jsonl", b"".join(edit(ls) + ls[2:]))
    out = tmp_path / "out.jsonl"
    r = run_kepp("records", "import", "--format", "plain", "--predictions", f, "--split", p["test"],
                 "--method", "other", "--out", out)
    said = assert_one_line_error(r, f"{f}{words[0]}").split(f"{f}{words[0]}", 1)[1]
    assert all(w in said for w in words[1:]), said
    assert not out.exists() and not list(tmp_path.glob(".out.jsonl*"))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["bom_at_the_start", "crlf_line_ends"])
def test_import_bom_and_crlf_read_as_plain_lines(case, lists, tmp_path):
    p, gt = lists
    data = b"".join(_plain(gt))
    data = b"\xef\xbb\xbf" + data if case == "bom_at_the_start" else data.replace(b"\n", b"\r\n")
    f = h.write(tmp_path / "preds.jsonl", data)
    out = tmp_path / "out.jsonl"
    r = run_kepp("records", "import", "--format", "plain", "--predictions", f, "--split", p["test"],
                 "--method", "other", "--out", out)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["plans"]["other"] for r in recs] == [made_up_plan(g, k) for k, g in enumerate(gt)]


@pytest.mark.slow
def test_import_vpn_file_with_an_entry_twice_is_one_error(lists, tmp_path):
    p, gt = lists
    data = json.loads((tmp_path / "T3_predictions.json").read_text())
    again = json.dumps({"pred": gt[0][::-1], "true": gt[0]})  # a second entry '0': JSON leaves which one counts
    f = h.write(tmp_path / "dup.json", ("{" + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in data.items())
                                         + f', "0": {again}}}').encode())
    r = run_kepp("records", "import", "--format", "vpn", "--predictions", f, "--split", p["test"],
                 "--method", "other", "--out", tmp_path / "out.jsonl")
    said = assert_one_line_error(r, str(f)).split(str(f), 1)[1]
    assert "'0'" in said and "twice" in said, said
    assert not (tmp_path / "out.jsonl").exists()
