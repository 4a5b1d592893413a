"""The one per-episode record format (kepp_core.evaluation.records): older files read as the
same records, both file types round-trip, protocol records become paired-test units."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.evaluation.records import Records, read_records, upgrade, write_records

NEW = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "setting": "conventional", "first": 0,
       "start_time": 1.0, "goal_time": 9.0, "gt": [1, 2, 3], "gt_labels": ["a", "b", "c"], "endpoints": [1, 3],
       "paths": [[1, 2, 3]], "path_scores": [0.5], "plans": {"kepp-R1": [1, 2, 3], "random": [1, 4, 4]},
       "success": {"kepp-R1": 1, "random": 0}, "acc": {"kepp-R1": 1.0, "random": 1 / 3}}


def old_format(record: dict) -> dict:
    """The record as ``kepp eval --records`` wrote it before: ``correct`` (true/false) instead of
    ``success`` and ``acc``."""
    rec = {k: v for k, v in record.items() if k not in ("success", "acc")}
    rec["correct"] = {m: p == record["gt"] for m, p in record["plans"].items()}
    return rec


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_old_format_file_reads_as_the_same_records(tmp_path, suffix):
    second = {**NEW, "episode": "t/v/1:3", "plans": {"kepp-R1": [3, 2, 1], "random": [1, 2, 3]},
              "success": {"kepp-R1": 0, "random": 1}, "acc": {"kepp-R1": 1 / 3, "random": 1.0}}
    old = tmp_path / f"old{suffix}"
    if suffix == ".jsonl":  # written by hand, as the older writer did (keys in its order, 'correct' last)
        old.write_text("".join(json.dumps(old_format(r)) + "\n" for r in (NEW, second)), encoding="utf-8")
    else:
        write_records(old, [old_format(r) for r in (NEW, second)])
    new = write_records(tmp_path / f"new{suffix}", [NEW, second])
    got, want = read_records(old), read_records(new)
    assert isinstance(got, Records) and got.path == str(old)
    for g, w in zip(got, want, strict=True):
        assert "correct" not in g and g.keys() == w.keys()
        assert {k: v for k, v in g.items() if k != "acc"} == {k: v for k, v in w.items() if k != "acc"}
        assert g["acc"] == pytest.approx(w["acc"])


def test_a_record_in_the_format_is_left_as_it_is():
    assert upgrade(NEW) is NEW
    assert upgrade({**NEW, "correct": {"kepp-R1": True}}) is not NEW  # both: success and acc are kept
    assert upgrade({**NEW, "correct": {"kepp-R1": True}})["success"] == NEW["success"]


def test_protocol_records_become_paired_test_units(tmp_path):
    recs = [{**NEW, "fraction": 1.0, "seed": s, "episode": f"t/v/{i}:3",
             "success": {"a": int(i % 2 == 0), "b": 0}, "acc": {"a": 0.5, "b": 0.25}} for s in (0, 1) for i in range(3)]
    recs[-1] = {**recs[-1], "success": {"a": 1}, "acc": {"a": 1.0}}  # 'b' has no plan for the last unit
    units = read_records(write_records(tmp_path / "records.jsonl", recs)).units()
    g = units[(1.0, 3)]
    assert g["seed"].tolist() == [0, 0, 0, 1, 1, 1] and g["episode"][:3] == ["t/v/0:3", "t/v/1:3", "t/v/2:3"]
    assert g["success"]["a"].tolist() == [1, 0, 1, 1, 0, 1]
    assert math.isnan(g["success"]["b"][-1]) and np.isnan(g["acc"]["b"]).sum() == 1
    with pytest.raises(KeppError, match="record 1: expected a protocol record"):
        Records([NEW]).units()  # no train fraction: a 'kepp eval' record, not a protocol's


def test_bad_record_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(NEW) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(KeppError, match=r"bad.jsonl:2: invalid JSON"):
        read_records(bad)
    with pytest.raises(KeppError, match=r"records are written as .jsonl or .parquet"):
        write_records(tmp_path / "r.csv", [NEW])


BAD_RECORDS = [  # (id, change to one record, words of the error)
    ("plan-of-strings", {"plans": {"kepp-R1": ["a", "b", "c"]}}, ["'plans'", "expected an integer, got a string"]),
    ("plan-null", {"plans": {"kepp-R1": None}}, ["'plans'", "expected a list, got null"]),
    ("plan-step-null", {"plans": {"kepp-R1": [1, None, 3]}}, ["'plans'", "got null"]),
    ("ground-truth-of-strings", {"gt": ["1", "2", "3"]}, ["'gt'", "got a string"]),
    ("seed-x", {"seed": "x"}, ["'seed' must be a whole number 0..4,294,967,295"]),
    ("seed-10-to-the-30", {"seed": 10**30}, ["'seed' must be a whole number 0..4,294,967,295"]),
    ("seed-negative", {"seed": -1}, ["'seed' must be a whole number"]),
    ("horizon-text", {"T": "3"}, ["'T' must be a horizon 1..64"]),
    ("fraction-above-one", {"fraction": 2.0}, ["'fraction' must be a training fraction in (0, 1]"]),
]


@pytest.mark.parametrize("change, words", [c[1:] for c in BAD_RECORDS], ids=[c[0] for c in BAD_RECORDS])
def test_a_record_whose_plans_seed_or_horizon_no_reader_can_use_is_refused_naming_it(tmp_path, change, words):
    nested = set(change) <= {"plans", "gt"}  # Parquet holds nested values as JSON text; its columns keep one type
    messages = {}
    for suffix in (".jsonl", ".parquet") if nested else (".jsonl",):
        path = tmp_path / f"r{suffix}"
        write_records(path, [NEW, {**NEW, "episode": "t/v/1:3", **change}])
        with pytest.raises(KeppError) as e:
            read_records(path)
        messages["r.jsonl:2" if suffix == ".jsonl" else "r.parquet: record 2"] = str(e.value)
    assert messages and all(where in m and all(w in m for w in words) for where, m in messages.items()), messages
