"""Bad input gets one clear message naming the file/line/value, exit 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kepp_core.cli import main
from kepp_core.data import load_crosstask, load_plans, make_episodes, observations
from kepp_core.errors import KeppError
from tests.helpers.data import write_crosstask
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kepp_core", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT)


def test_missing_root_exits_2_without_traceback(tmp_path):
    r = run_cli("data", "stats", "--dataset", "coin", "--root", str(tmp_path / "nope.json"))
    assert r.returncode == 2
    assert "nope.json" in r.stderr and "does not exist" in r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_json_line_names_file_and_line(tmp_path):
    p = tmp_path / "plans.jsonl"
    p.write_text('{"video": "a", "task": "t", "steps": ["x", "y"]}\n{"video": "b", "task": \n')
    with pytest.raises(KeppError, match=r"plans\.jsonl:2: invalid JSON"):
        load_plans(p)
    r = run_cli("data", "stats", "--dataset", "plans", "--root", str(p))
    assert r.returncode == 2 and "plans.jsonl:2" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("line, message", [
    ('{"video": "a", "steps": ["x"]}', "missing key 'task'"),
    ('{"video": "a", "task": "t", "steps": "x y"}', "'steps' must be a list"),
    ('{"video": "a", "task": "t", "steps": ["x"], "split": "val"}', "'split' must be 'train' or 'test'"),
    ('{"video": "a", "task": "t", "steps": ["x", "y"], "segments": [[0, 1]]}', "2 \\[start, end\\] pairs"),
    ('{"video": "a", "task": "t", "steps": ["x"], "segments": [[5, 1]]}', "segment \\[5.0, 1.0\\] is invalid"),
    ('{"video": "a", "task": "t", "steps": ["x"], "segments": [[0, 50]], "duration": 10}', "after the video's duration"),
    ('[1, 2]', "expected a JSON object"),
])
def test_bad_plans_lines_are_named(tmp_path, line, message):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"video": "ok", "task": "t", "steps": ["x", "y"]}\n' + line + "\n")
    with pytest.raises(KeppError, match=message) as e:
        load_plans(p)
    assert "bad.jsonl:2" in str(e.value)


def test_malformed_csv_line_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "annotations" / "101_a.csv").write_text("1,0,2\n2;3;5\n")
    with pytest.raises(KeppError, match=r"101_a\.csv:2: expected 'step,start,end'"):
        load_crosstask(root)


def test_unknown_step_index_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "annotations" / "102_c.csv").write_text("1,0,3\n7,4,6\n")
    with pytest.raises(KeppError, match=r"102_c\.csv:2: step 7 is not a step of task 102 \(expected 1..3\)"):
        load_crosstask(root)


def test_segment_beyond_the_video_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "annotations" / "101_a.csv").write_text("1,0,2\n2,3,40\n")
    with pytest.raises(KeppError, match=r"101_a\.csv: segment ends at 40s, beyond the video \(12s"):
        load_crosstask(root)


def test_features_of_the_wrong_dimension_are_named(tmp_path):
    root = write_crosstask(tmp_path)
    np.save(root / "features" / "101_b.npy", np.zeros((12, 5), np.float32))
    ds = load_crosstask(root)
    eps = make_episodes(ds, 3, "train")
    with pytest.raises(KeppError, match=r"101_b\.npy: features have dimension 5, expected 8"):
        observations(eps)


def test_feature_file_that_is_not_npy_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "features" / "101_a.npy").write_bytes(b"not numpy")
    with pytest.raises(KeppError, match=r"101_a\.npy: not a readable \.npy"):
        load_crosstask(root)


def test_feature_file_with_its_data_cut_short_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    path = root / "features" / "101_a.npy"
    path.write_bytes(path.read_bytes()[:-10])  # the header is whole, the rows are not
    with pytest.raises(KeppError, match=r"101_a\.npy: not a readable \.npy feature file \(truncated"):
        load_crosstask(root)


@pytest.mark.parametrize("name, write, expected", [
    ("features/101_a.npy", lambda p: p.write_bytes(b"not numpy"), r"101_a\.npy: not a readable \.npy"),
    ("features/101_a.npy", lambda p: np.save(p, np.zeros(12, np.float32)), r"101_a\.npy: features must have shape"),
    ("annotations/101_a.csv", lambda p: p.write_text("1,0,2\n2;3;5\n"), r"101_a\.csv:2: expected 'step,start,end'"),
    ("annotations/101_a.csv", lambda p: p.write_text("1,0,2\n2,3,40\n"), r"101_a\.csv: segment ends at 40s"),
], ids=["not-npy", "one-dimensional", "malformed-csv", "beyond-the-video"])
def test_a_file_broken_after_the_dataset_was_indexed_is_named(tmp_path, name, write, expected):
    root = write_crosstask(tmp_path)
    load_crosstask(root)  # writes the shape and annotation indexes
    write(root / name)
    with pytest.raises(KeppError, match=expected):
        load_crosstask(root)


def test_pickled_npy_is_refused(tmp_path):
    root = write_crosstask(tmp_path)
    np.save(root / "features" / "101_a.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(KeppError, match="101_a.npy"):
        load_crosstask(root)


def test_horizon_longer_than_every_plan_is_named(tmp_path, niv_dataset):
    with pytest.raises(KeppError, match=r"horizon T=30 is longer than every plan .* longest has 23 steps"):
        make_episodes(niv_dataset, 30)


def test_missing_task_list_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "tasks_primary.txt").unlink()
    with pytest.raises(KeppError, match="tasks_primary.txt: file not found"):
        load_crosstask(root)


def test_annotation_of_unknown_task_is_named(tmp_path):
    root = write_crosstask(tmp_path)
    (root / "annotations" / "999_x.csv").write_text("1,0,1\n")
    with pytest.raises(KeppError, match=r"999_x\.csv: file name must be <task>_<video>\.csv"):
        load_crosstask(root)


def test_coin_bad_subset_is_named(tmp_path):
    p = tmp_path / "COIN.json"
    p.write_text(json.dumps({"database": {"v1": {"class": "c", "subset": "validation", "duration": 9,
                                                 "annotation": [{"id": "1", "label": "x", "segment": [0, 1]}]}}}))
    with pytest.raises(KeppError, match="video 'v1': 'subset' must be 'training' or 'testing'"):
        from kepp_core.data import load_coin
        load_coin(p)


def test_unknown_dataset_name_lists_known_ones():
    with pytest.raises(SystemExit):
        main(["data", "stats", "--dataset", "cointask"])


def test_stats_cli_prints_json(niv_plans):
    r = run_cli("data", "stats", "--dataset", "plans", "--root", str(niv_plans), "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["videos_per_split"] == {"train": 100, "test": 42}
    assert st["episodes"]["3"]["test"] == 270


def test_s3d_feature_dicts_are_read_as_they_are(tmp_path):
    from kepp_core.data import load_features

    feats = np.random.default_rng(0).normal(size=(20, 512)).astype(np.float32)
    np.save(tmp_path / "v.npy", {"frames_features": feats, "steps_features": np.zeros((2, 512))},
            allow_pickle=True)
    np.testing.assert_array_equal(load_features(tmp_path / "v.npy", dim=512), feats)


class _Hostile:
    def __reduce__(self):
        import os
        return (os.system, ("echo should-not-run",))


def test_feature_pickle_with_code_is_refused(tmp_path):
    from kepp_core.data import load_features

    np.save(tmp_path / "evil.npy", np.array([_Hostile()], dtype=object), allow_pickle=True)
    with pytest.raises(KeppError, match=r"evil\.npy: .*refused to load posix\.system"):
        load_features(tmp_path / "evil.npy")


def test_coin_reads_s3d_release_file_names(tmp_path):
    from kepp_core.data import load_coin

    p = tmp_path / "COIN.json"
    p.write_text(json.dumps({"database": {"v1": {"class": "MakeTea", "recipe_type": 7, "subset": "training",
                                                 "duration": 9, "annotation": [
                                                     {"id": "1", "label": "boil", "segment": [0, 2]},
                                                     {"id": "2", "label": "pour", "segment": [3, 5]}]}}}))
    (tmp_path / "feats").mkdir()
    np.save(tmp_path / "feats" / "MakeTea_7_v1.npy", {"frames_features": np.ones((9, 4))}, allow_pickle=True)
    ds = load_coin(p, features=tmp_path / "feats")
    assert ds.videos[0].feature_file.name == "MakeTea_7_v1.npy"


# --- the bad-input suite: every case through the real CLI ----------------------------------------
# Each case builds a small valid dataset, breaks one thing, runs `kepp ...` (in-process `main`,
# so an uncaught exception fails the test as a traceback would) and expects exit status 2, one
# `kepp: error:` line and a message naming the file, line or value.

PLAN_OK = '{"video": "ok", "task": "t", "steps": ["x", "y"], "segments": [[0, 1], [2, 3]], "duration": 9}'


def cli(capsys, argv, env=None, monkeypatch=None) -> tuple[int, str]:
    if env:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, err


def assert_clear_error(code: int, err: str, *expected: str) -> None:
    assert code == 2, err
    assert err.startswith("kepp: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for pattern in expected:
        assert __import__("re").search(pattern, err), f"{pattern!r} not in {err!r}"


# plans-JSONL: (id, second line of the file, expected message)
PLANS_CASES = [
    ("missing-video", '{"task": "t", "steps": ["x"]}', r"bad\.jsonl:2: missing key 'video'"),
    ("missing-task", '{"video": "b", "steps": ["x"]}', r"bad\.jsonl:2: missing key 'task'"),
    ("missing-steps", '{"video": "b", "task": "t"}', r"bad\.jsonl:2: missing key 'steps'"),
    ("steps-string", '{"video": "b", "task": "t", "steps": "x y"}', r":2: 'steps' must be a list"),
    ("steps-null", '{"video": "b", "task": "t", "steps": null}', r":2: 'steps' must be a list"),
    ("steps-dicts", '{"video": "b", "task": "t", "steps": [{"a": 1}]}', r":2: 'steps' must be a list"),
    ("steps-bool", '{"video": "b", "task": "t", "steps": [true]}', r":2: 'steps' must be a list"),
    ("steps-empty", '{"video": "b", "task": "t", "steps": []}', r":2: 'steps' must be a list of step labels \(expected a list of length >= 1\)"),
    ("steps-blank-label", '{"video": "b", "task": "t", "steps": ["x", " "]}', r":2: 'steps' holds an empty"),
    ("segments-count", '{"video": "b", "task": "t", "steps": ["x", "y"], "segments": [[0, 1]]}', r":2: 'segments' must be 2"),
    ("segments-not-pairs", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[0, 1, 2]]}', r":2: 'segments' must be \[start, end\] pairs"),
    ("segments-strings", '{"video": "b", "task": "t", "steps": ["x"], "segments": [["a", "b"]]}', r":2: 'segments' must be \[start, end\] pairs of seconds \(expected a number, got a string"),
    ("segment-nan", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[NaN, 1]]}', r":2: NaN \(not a JSON number\) is not readable"),
    ("segment-inf", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[0, Infinity]]}', r":2: Infinity \(not a JSON number\)"),
    ("segment-negative", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[-3, -1]]}', r":2: segment \[-3\.0, -1\.0\] is invalid"),
    ("segment-reversed", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[5, 1]]}', r":2: segment \[5\.0, 1\.0\] is invalid"),
    ("segments-overlap", '{"video": "b", "task": "t", "steps": ["x", "y"], "segments": [[0, 5], [3, 8]]}', r":2: segments \[0, 5\] and \[3, 8\] overlap"),
    ("segment-beyond-duration", '{"video": "b", "task": "t", "steps": ["x"], "segments": [[0, 50]], "duration": 10}', r":2: segment \[0, 50\] ends after the video's duration 10s"),
    ("duration-text", '{"video": "b", "task": "t", "steps": ["x"], "duration": "ten"}', r":2: 'duration' must be a number of seconds \(expected a number or null, got a string\)"),
    ("duration-negative", '{"video": "b", "task": "t", "steps": ["x"], "duration": -4}', r":2: duration -4\.0 is invalid"),
    ("duration-zero", '{"video": "b", "task": "t", "steps": ["x"], "duration": 0}', r":2: duration 0\.0 is invalid"),
    ("duration-nan", '{"video": "b", "task": "t", "steps": ["x"], "duration": NaN}', r":2: NaN \(not a JSON number\)"),
    ("duration-list", '{"video": "b", "task": "t", "steps": ["x"], "duration": [1]}', r":2: 'duration' must be a number of seconds"),
    ("split-val", '{"video": "b", "task": "t", "steps": ["x"], "split": "val"}', r":2: 'split' must be 'train' or 'test' \(invalid enum value 'val'\)"),
    ("duplicate-video", '{"video": "ok", "task": "t", "steps": ["x"]}', r":2: duplicate video id 'ok'"),
    ("invalid-json", '{"video": "b", "task": ', r"bad\.jsonl:2: invalid JSON"),
    ("json-array", '[1, 2]', r":2: expected a JSON object, got a list"),
    ("json-string", '"plan"', r":2: expected a JSON object, got a string"),
    ("features-missing", '{"video": "b", "task": "t", "steps": ["x"], "features": "nope.npy"}', r":2: feature file .*nope\.npy not found"),
    ("features-not-path", '{"video": "b", "task": "t", "steps": ["x"], "features": 7}', r":2: 'features' must be a file path"),
]


@pytest.mark.parametrize("line, expected", [c[1:] for c in PLANS_CASES], ids=[c[0] for c in PLANS_CASES])
def test_bad_plans_file_is_a_clear_error(tmp_path, capsys, line, expected):
    p = tmp_path / "bad.jsonl"
    p.write_text(PLAN_OK + "\n" + line + "\n")
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "plans", "--root", p]), expected)


def test_plans_file_with_invalid_utf8_names_line_and_byte(tmp_path, capsys):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(PLAN_OK.encode() + b'\n{"video": "b\xff", "task": "t", "steps": ["x"]}\n')
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "plans", "--root", p]),
                       r"bad\.jsonl:2: not valid UTF-8 text \(byte 0xff")


def test_empty_plans_file_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n\n")
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "plans", "--root", p]), r"bad\.jsonl: no plans found")


def coin_record(**overrides) -> dict:
    rec = {"class": "MakeTea", "subset": "training", "duration": 10, "recipe_type": 1,
           "annotation": [{"id": "1", "label": "boil", "segment": [0, 2]}, {"id": "2", "label": "pour", "segment": [3, 5]}]}
    rec.update(overrides)
    return rec


def ann(*segments, label="boil"):
    return [{"id": str(k), "label": label, "segment": s} for k, s in enumerate(segments, 1)]


# COIN.json: (id, the record of video 'v2' (or the whole file as text), expected message)
COIN_CASES = [
    ("annotation-int", coin_record(annotation=5), r"video 'v2': 'annotation' must be a list of steps .*\(expected a list, got an integer\)"),
    ("annotation-string", coin_record(annotation="boil"), r"video 'v2': 'annotation' must be a list of steps .*\(expected a list, got a string\)"),
    ("annotation-dict", coin_record(annotation={"label": "x"}), r"video 'v2': 'annotation' must be a list of steps .*\(expected a list, got a JSON object\)"),
    ("annotation-empty", coin_record(annotation=[]), r"video 'v2': 'annotation' must be a list of steps .*\(expected a list of length >= 1\)"),
    ("annotation-item-int", coin_record(annotation=[3]), r"video 'v2': 'annotation' must be .*\(expected a JSON object, got an integer at 'annotation'\[0\]\)"),
    ("segment-missing", coin_record(annotation=[{"id": "1", "label": "x"}]), r"video 'v2': missing key 'segment' in 'annotation'\[0\]"),
    ("segment-three", coin_record(annotation=[{"id": "1", "label": "x", "segment": [0, 1, 2]}]), r"video 'v2': 'annotation' must be .*\(expected a list of length 2 at 'annotation'\[0\]\.segment\)"),
    ("segment-text", coin_record(annotation=ann(["a", "b"])), r"video 'v2': 'annotation' must be .*\(expected a number, got a string at 'annotation'\[0\]\.segment\[0\]\)"),
    ("segment-nan", coin_record(annotation=ann([float("nan"), 1])), r"NaN \(not a JSON number\)"),
    ("segment-inf", coin_record(annotation=ann([0, float("inf")])), r"Infinity \(not a JSON number\)"),
    ("segment-negative", coin_record(annotation=ann([-2, 1])), r"video 'v2', annotation 0: segment \[-2\.0, 1\.0\] is invalid"),
    ("segment-reversed", coin_record(annotation=ann([4, 1])), r"video 'v2', annotation 0: segment \[4\.0, 1\.0\] is invalid"),
    ("segments-overlap", coin_record(annotation=ann([0, 5], [4, 8])), r"video 'v2': segments \[0, 5\] and \[4, 8\] overlap"),
    ("segment-beyond-video", coin_record(annotation=ann([0, 2], [3, 5000])), r"video 'v2', annotation 1: segment \[3, 5000\] ends after the video's duration 10s"),
    ("duration-text", coin_record(duration="ten"), r"video 'v2': 'duration' must be a number of seconds"),
    ("duration-negative", coin_record(duration=-10), r"video 'v2': duration -10\.0 is invalid"),
    ("duration-nan", coin_record(duration=float("nan")), r"NaN \(not a JSON number\)"),
    ("label-empty", coin_record(annotation=[{"id": "1", "label": " ", "segment": [0, 1]}]), r"video 'v2', annotation 0: empty step label"),
    ("subset-validation", coin_record(subset="validation"), r"video 'v2': 'subset' must be 'training' or 'testing' \(invalid enum value 'validation'\)"),
    ("class-missing", {k: v for k, v in coin_record().items() if k != "class"}, r"video 'v2': missing key 'class'"),
    ("record-list", [1, 2], r"video 'v2': expected a JSON object, got a list"),
]


@pytest.mark.parametrize("record, expected", [c[1:] for c in COIN_CASES], ids=[c[0] for c in COIN_CASES])
def test_bad_coin_record_is_a_clear_error(tmp_path, capsys, record, expected):
    p = tmp_path / "COIN.json"
    p.write_text(json.dumps({"database": {"v1": coin_record(), "v2": record}}))
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "coin", "--root", p]), r"COIN\.json: " + expected)


COIN_FILE_CASES = [
    ("invalid-json", b'{"database": {', r"COIN\.json:1: invalid JSON"),
    ("no-database", b'{"videos": {}}', r"COIN\.json: missing key 'database'"),
    ("database-list", b'{"database": [1, 2]}', r"COIN\.json: 'database' must be an object mapping video ids"),
    ("top-level-list", b'[1, 2]', r"COIN\.json: expected a JSON object, got a list"),
    ("invalid-utf8", b'{"database": {"v\xe9": {}}}', r"COIN\.json:1: not valid UTF-8 text \(byte 0xe9"),
]


@pytest.mark.parametrize("data, expected", [c[1:] for c in COIN_FILE_CASES], ids=[c[0] for c in COIN_FILE_CASES])
def test_bad_coin_file_is_a_clear_error(tmp_path, capsys, data, expected):
    p = tmp_path / "COIN.json"
    p.write_bytes(data)
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "coin", "--root", p]), expected)


# CrossTask layout: (id, {relative path: new content (bytes/str) or None to delete}, expected message)
CROSSTASK_CASES = [
    ("tasks-missing", {"tasks_primary.txt": None}, r"tasks_primary\.txt: file not found"),
    ("tasks-incomplete", {"tasks_primary.txt": "101\nMake Tea\nhttp://x\n"}, r"tasks_primary\.txt:1: incomplete task block"),
    ("tasks-count-text", {"tasks_primary.txt": "101\nMake Tea\nhttp://x\nfour\na,b,c,d\n"}, r"tasks_primary\.txt:4: number of steps 'four'"),
    ("tasks-count-mismatch", {"tasks_primary.txt": "101\nMake Tea\nhttp://x\n5\na,b,c,d\n"}, r"tasks_primary\.txt:5: expected 5 non-empty"),
    ("tasks-empty-step", {"tasks_primary.txt": "101\nMake Tea\nhttp://x\n4\na,,c,d\n"}, r"tasks_primary\.txt:5: expected 4 non-empty"),
    ("tasks-invalid-utf8", {"tasks_primary.txt": b"101\nMake \xc3(Tea\nhttp://x\n4\na,b,c,d\n"}, r"tasks_primary\.txt:2: not valid UTF-8"),
    ("tasks-empty-file", {"tasks_primary.txt": "\n"}, r"tasks_primary\.txt: no tasks found"),
    ("annotations-missing", {"annotations": None}, r"annotations: folder not found"),
    ("csv-two-columns", {"annotations/101_a.csv": "1,0\n"}, r"101_a\.csv:1: expected 'step,start,end'"),
    ("csv-semicolons", {"annotations/101_a.csv": "1,0,2\n2;3;5\n"}, r"101_a\.csv:2: expected 'step,start,end'"),
    ("csv-step-text", {"annotations/101_a.csv": "one,0,2\n"}, r"101_a\.csv:1: expected an integer step"),
    ("csv-time-text", {"annotations/101_a.csv": "1,zero,2\n"}, r"101_a\.csv:1: expected an integer step and numeric"),
    ("csv-step-zero", {"annotations/101_a.csv": "0,0,2\n"}, r"101_a\.csv:1: step 0 is not a step of task 101"),
    ("csv-step-too-big", {"annotations/101_a.csv": "9,0,2\n"}, r"101_a\.csv:1: step 9 is not a step of task 101"),
    ("csv-nan-time", {"annotations/101_a.csv": "1,nan,2\n"}, r"101_a\.csv:1: segment \[nan, 2\.0\] is not finite"),
    ("csv-inf-time", {"annotations/101_a.csv": "1,0,inf\n"}, r"101_a\.csv:1: segment \[0\.0, inf\] is not finite"),
    ("csv-negative", {"annotations/101_a.csv": "1,-2,1\n"}, r"101_a\.csv:1: segment \[-2\.0, 1\.0\] is invalid"),
    ("csv-reversed", {"annotations/101_a.csv": "1,5,2\n"}, r"101_a\.csv:1: segment \[5\.0, 2\.0\] is invalid"),
    ("csv-overlap", {"annotations/101_a.csv": "1,0,4\n2,3,6\n"}, r"101_a\.csv: segments \[0, 4\] and \[3, 6\] overlap"),
    ("csv-beyond-video", {"annotations/101_a.csv": "1,0,2\n2,3,40\n"}, r"101_a\.csv: segment ends at 40s, beyond the video"),
    ("csv-empty", {"annotations/101_a.csv": "\n"}, r"101_a\.csv: no steps"),
    ("csv-invalid-utf8", {"annotations/101_a.csv": b"1,0,2\n2,3,\xff5\n"}, r"101_a\.csv:2: not valid UTF-8"),
    ("csv-unknown-task", {"annotations/999_x.csv": "1,0,1\n"}, r"999_x\.csv: file name must be <task>_<video>\.csv"),
    ("csv-no-underscore", {"annotations/101.csv": "1,0,1\n"}, r"101\.csv: file name must be <task>_<video>\.csv"),
    ("val-list-one-column", {"videos_val.csv": "102\n"}, r"videos_val\.csv:1: expected 'task,video\[,url\]'"),
    ("val-list-invalid-utf8", {"videos_val.csv": b"102,\xfed\n"}, r"videos_val\.csv:1: not valid UTF-8"),
]


def edit_tree(root: Path, changes: dict) -> None:
    import shutil

    for rel, content in changes.items():
        p = root / rel
        if content is None:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


@pytest.mark.parametrize("changes, expected", [c[1:] for c in CROSSTASK_CASES], ids=[c[0] for c in CROSSTASK_CASES])
def test_bad_crosstask_layout_is_a_clear_error(tmp_path, capsys, changes, expected):
    root = write_crosstask(tmp_path / "ct")
    edit_tree(root, changes)
    assert_clear_error(*cli(capsys, ["data", "stats", "--dataset", "crosstask", "--root", root]), expected)


def train_args(root: Path, out: Path, *extra) -> list:
    return ["train", "step", "--dataset", "crosstask", "--root", root, "--out", out, "-T", "2", "--train-steps", "1",
            "--diffusion-steps", "2", "--dim", "8", "--batch-size", "4", "--no-progress", "--threads", "1", *extra]


def _complex(n, d):
    return np.zeros((n, d), np.complex64) + 1j


# Feature files (read when training builds observations): (id, file content for 101_a.npy, expected)
FEATURE_CASES = [
    ("nan", lambda p: np.save(p, np.full((12, 8), np.nan, np.float32)), r"101_a\.npy: features hold 96 non-finite values"),
    ("one-nan", lambda p: np.save(p, np.where(np.eye(12, 8) > 0, np.nan, 0).astype(np.float32)), r"101_a\.npy: features hold 8 non-finite values \(NaN, inf or beyond float32\), first at second 0, column 0"),
    ("inf", lambda p: np.save(p, np.full((12, 8), np.inf, np.float32)), r"101_a\.npy: features hold 96 non-finite"),
    ("minus-inf", lambda p: np.save(p, -np.full((12, 8), np.inf, np.float64)), r"101_a\.npy: features hold 96 non-finite"),
    ("overflowing-float64", lambda p: np.save(p, np.full((12, 8), 1e300)), r"101_a\.npy: features hold 96 non-finite"),
    ("complex", lambda p: np.save(p, _complex(12, 8)), r"101_a\.npy: features are complex numbers \(complex64\)"),
    ("pickled-dict-nan", lambda p: np.save(p, {"frames_features": np.full((12, 8), np.nan)}, allow_pickle=True), r"101_a\.npy: features hold 96 non-finite"),
    ("strings", lambda p: np.save(p, np.full((12, 8), "a")), r"101_a\.npy: features must be a numeric array"),
    ("one-dimensional", lambda p: np.save(p, np.zeros(12, np.float32)), r"101_a\.npy: features must have shape \[seconds, D\]"),
    ("three-dimensional", lambda p: np.save(p, np.zeros((12, 8, 2), np.float32)), r"101_a\.npy: features must have shape"),
    ("no-rows", lambda p: np.save(p, np.zeros((0, 8), np.float32)), r"101_a\.npy: features must have shape \[seconds, D\] with seconds > 0"),
    ("not-npy", lambda p: p.write_bytes(b"not numpy"), r"101_a\.npy: not a readable \.npy"),
    ("empty-file", lambda p: p.write_bytes(b""), r"101_a\.npy: not a readable \.npy"),
    ("truncated", lambda p: p.write_bytes(p.read_bytes()[:100]), r"101_a\.npy: not a readable \.npy"),
    ("wrong-dimension-first-file", lambda p: np.save(p, np.zeros((12, 5), np.float32)), r"101_a\.npy: features have dimension 5, expected 8"),
    ("pickled-code", lambda p: np.save(p, np.array([_Hostile()], dtype=object), allow_pickle=True), r"101_a\.npy: .*refused to load posix\.system"),
]


@pytest.mark.parametrize("write, expected", [c[1:] for c in FEATURE_CASES], ids=[c[0] for c in FEATURE_CASES])
def test_bad_feature_file_is_a_clear_error_naming_it(tmp_path, capsys, write, expected):
    root = write_crosstask(tmp_path / "ct")
    write(root / "features" / "101_a.npy")
    assert_clear_error(*cli(capsys, train_args(root, tmp_path / "out")), expected)
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_wrong_dimension_names_the_odd_file_not_the_first(tmp_path, capsys):
    root = write_crosstask(tmp_path / "ct")
    np.save(root / "features" / "101_b.npy", np.zeros((12, 5), np.float32))
    assert_clear_error(*cli(capsys, train_args(root, tmp_path / "out")), r"101_b\.npy: features have dimension 5, expected 8")


# Training options: (id, extra arguments, expected)
TRAIN_OPTION_CASES = [
    ("lr-nan", ["--lr", "nan"], r"lr=nan must be a finite number"),
    ("lr-inf", ["--lr", "inf"], r"lr=inf must be a finite number"),
    ("lr-negative", ["--lr", "-0.1"], r"lr=-0\.1 must be positive"),
    ("lr-zero", ["--lr", "0"], r"lr=0\.0 must be positive"),
    ("threads-zero", ["--threads", "0"], r"threads 0: expected 1 to \d+"),
    ("threads-negative", ["--threads", "-2"], r"threads -2: expected 1 to \d+"),
    ("dim-absurd", ["--dim", "1000000000"], r"dim=1000000000 is too large \(at most 4096\)"),
    ("dim-zero", ["--dim", "0"], r"dim=0 must be at least 1"),
    ("batch-zero", ["--batch-size", "0"], r"batch_size=0 must be at least 1"),
    ("train-steps-zero", ["--train-steps", "0"], r"train_steps=0 must be at least 1"),
    ("diffusion-steps-absurd", ["--diffusion-steps", "10000000"], r"n_steps=10000000 is too large"),
    ("horizon-one", ["-T", "1"], r"--horizon 1: expected 2\.\.64"),
    ("horizon-absurd", ["-T", "100000"], r"--horizon 100000: expected 2\.\.64"),
    ("patience-negative", ["--patience", "-1"], r"patience=-1 must not be negative"),
    ("sampler-steps-zero", ["--sampler-steps", "0"], r"sampler_steps=0 must be at least 1"),
    ("decay-zero-factor", ["--decay", "10:0"], r"decay\[0\]\[1\]=0\.0 must be positive"),
    ("decay-nan-factor", ["--decay", "10:nan"], r"decay\[0\]\[1\]=nan must be a finite number"),
    ("decay-text", ["--decay", "soon"], r"--decay soon: expected STEP:FACTOR"),
    ("lr-explodes", ["--lr", "1e30", "--warmup", "1", "--train-steps", "6"], r"training stopped at step \d: the loss is (nan|inf)"),
]


@pytest.mark.parametrize("extra, expected", [c[1:] for c in TRAIN_OPTION_CASES], ids=[c[0] for c in TRAIN_OPTION_CASES])
def test_bad_training_option_is_a_clear_error(tmp_path, capsys, extra, expected):
    root = write_crosstask(tmp_path / "ct")
    assert_clear_error(*cli(capsys, train_args(root, tmp_path / "out", *extra)), expected)


@pytest.mark.parametrize("value", ["0", "abc", "-1"])
def test_bad_kepp_threads_variable_is_a_clear_error(tmp_path, capsys, monkeypatch, value):
    root = write_crosstask(tmp_path / "ct")
    argv = train_args(root, tmp_path / "out")[:-2]  # without --threads 1
    assert_clear_error(*cli(capsys, argv, {"KEPP_THREADS": value}, monkeypatch), rf"KEPP_THREADS='{value}'")


NIV_ARGS = ["--dataset", "plans", "--root"]


def plans_file(tmp_path: Path, labels=("a", "b", "c", "d")) -> Path:
    p = tmp_path / "plans.jsonl"
    p.write_text("".join(json.dumps({"video": f"v{k}", "task": "t", "steps": list(labels)}) + "\n" for k in range(6)))
    return p


# Graph queries: (id, arguments after the dataset, expected)
GRAPH_CASES = [
    ("paths-horizon-huge", ["paths", "--start", "a", "--goal", "d", "-T", "1000000"], r"--horizon 1000000: expected 2\.\.64"),
    ("paths-horizon-one", ["paths", "--start", "a", "--goal", "d", "-T", "1"], r"--horizon 1: expected 2\.\.64"),
    ("paths-top-zero", ["paths", "--start", "a", "--goal", "d", "--top", "0"], r"--top 0: expected 1\.\.100"),
    ("paths-top-huge", ["paths", "--start", "a", "--goal", "d", "--top", "100000000"], r"--top 100000000: expected 1\.\.100"),
    ("paths-unknown-start", ["paths", "--start", "zebra", "--goal", "d"], r"unknown action 'zebra'"),
    ("subgraph-depth-huge", ["subgraph", "--action", "a", "--depth", "100000"], r"--depth 100000: expected 0\.\.10"),
    ("subgraph-min-prob", ["subgraph", "--action", "a", "--min-prob", "2"], r"--min-prob 2\.0: expected a probability"),
    ("zero-shot-horizon-huge", ["zero-shot", "-T", "3", "5000"], r"--horizon 5000: expected 2\.\.64"),
]


@pytest.mark.parametrize("args, expected", [c[1:] for c in GRAPH_CASES], ids=[c[0] for c in GRAPH_CASES])
def test_bad_graph_query_is_a_clear_error(tmp_path, capsys, args, expected):
    argv = ["graph", args[0], *NIV_ARGS, plans_file(tmp_path), *args[1:]]
    assert_clear_error(*cli(capsys, argv), expected)


def read_only_folder(tmp_path: Path) -> Path:
    """A folder this process cannot write to (root ignores permissions: then sysfs)."""
    import os

    if os.geteuid() == 0:
        return Path("/sys")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return d


# Output paths: (id, function of tmp_path giving the --out path, command, expected)
def _a_file(tmp_path: Path) -> Path:
    p = tmp_path / "a-file"
    p.write_text("x")
    return p


def _a_folder(tmp_path: Path) -> Path:
    p = tmp_path / "a-folder"
    p.mkdir()
    return p


OUT_CASES = [
    ("graph-out-is-folder", _a_folder, "graph", r"a-folder: cannot write \(is a folder, expected a file\)"),
    ("graph-out-under-file", lambda t: _a_file(t) / "g.json", "graph", r"a-file/g\.json: cannot write \(a parent of it is a file"),
    ("graph-out-read-only", lambda t: read_only_folder(t) / "g.json", "graph", r"g\.json: cannot write \(Permission denied\)"),
    ("train-out-is-file", _a_file, "train", r"a-file: is a file, expected a folder"),
    ("train-out-under-file", lambda t: _a_file(t) / "run", "train", r"a-file/run: cannot write \(a parent of it is a file"),
    ("train-out-read-only", lambda t: read_only_folder(t) / "run", "train", r"run: cannot write \((Permission denied|Operation not permitted|folder is read-only)\)"),
    ("synth-out-is-file", _a_file, "synth", r"a-file: exists and is not a folder"),
    ("synth-out-under-file", lambda t: _a_file(t) / "world", "synth", r"a-file/world: (Not a directory|cannot write)"),
]


@pytest.mark.parametrize("make_out, command, expected", [c[1:] for c in OUT_CASES], ids=[c[0] for c in OUT_CASES])
def test_unwritable_output_is_a_clear_error(tmp_path, capsys, make_out, command, expected):
    out = make_out(tmp_path)
    if command == "graph":
        argv = ["graph", "build", *NIV_ARGS, plans_file(tmp_path), "--out", out, "--no-fit"]
    elif command == "train":
        argv = train_args(write_crosstask(tmp_path / "ct"), out)
    else:
        argv = ["data", "synth", "--out", out, "--videos", "1", "--size", "32"]
    assert_clear_error(*cli(capsys, argv), expected)


# Checkpoints (the step model a planning model is trained with): (id, edit of the folder, expected)
def _config_edit(**model_changes):
    def edit(folder: Path) -> None:
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model"].update(model_changes)
        (folder / "config.json").write_text(json.dumps(cfg))
    return edit


def _config_set(table: str, key: str, value):
    def edit(folder: Path) -> None:
        cfg = json.loads((folder / "config.json").read_text())
        cfg[table][key] = value
        (folder / "config.json").write_text(json.dumps(cfg))
    return edit


def _write(name: str, data: bytes):
    return lambda folder: (folder / name).write_bytes(data)


CHECKPOINT_CASES = [
    ("dim-absurd", _config_edit(dim=1_000_000_000), r"config\.json: 'model' must be the network's settings \(expected an integer <= 4096 at 'model\.dim'\)"),
    ("dim-large", _config_edit(dim=64), r"config\.json: the model config describes [\d,]+ parameters, but model\.safetensors holds only"),
    ("dim-negative", _config_edit(dim=-8), r"config\.json: 'model' must be the network's settings \(expected an integer >= 1 at 'model\.dim'\)"),
    ("dim-text", _config_edit(dim="wide"), r"config\.json: 'model' must be the network's settings \(expected an integer, got a string at 'model\.dim'\)"),
    ("mults-zero", _config_edit(mults=[0]), r"config\.json: 'model' must be the network's settings \(expected an integer >= 1 at 'model\.mults'\[0\]\)"),
    ("layout-missing", _config_edit(layout=None), r"config\.json: 'model' must be the network's settings \(missing key 'layout'\)"),
    # the checkpoint config's schema (docs/reliability.md): keys no reader used to check were accepted
    ("train-lr-text", _config_set("train", "lr", "x"), r"config\.json: 'train' must be the training options \(expected a number, got a string at 'train\.lr'\)"),
    ("training-steps-negative", _config_set("training", "steps", -5), r"config\.json: 'training' must be the run's summary \(expected an integer >= 0 at 'training\.steps'\)"),
    ("best-score-text", _config_set("training", "best", {"score": "high"}), r"config\.json: 'training' must be the run's summary \(expected a number, got a string at 'training\.best'"),
    ("task-id-slash", _config_set("dataset", "tasks", ["../101", "102"]), r"config\.json: 'dataset\.tasks'\[0\] must be an id \(non-empty, no control characters or path separators"),
    ("config-not-json", _write("config.json", b"{"), r"config\.json: corrupt checkpoint config"),
    ("config-invalid-utf8", _write("config.json", b'{"format": "\xff"}'), r"config\.json:1: not valid UTF-8"),
    ("config-list", _write("config.json", b"[1]"), r"config\.json: not a kepp checkpoint config"),
    ("weights-truncated", lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:200]), r"model\.safetensors: corrupt or truncated"),
    ("weights-missing", lambda f: (f / "model.safetensors").unlink(), r"model\.safetensors: checkpoint weights not found"),
    ("weights-from-another-save", lambda f: _resave_weights(f), r"come from different saves"),
    ("config-missing", lambda f: (f / "config.json").unlink(), r"config\.json: not found"),
]


def _resave_weights(folder: Path) -> None:
    from kepp_core.models.checkpoint import load_tensors, save_tensors

    save_tensors(folder / "model.safetensors", load_tensors(folder / "model.safetensors"), "another-save")


@pytest.fixture(scope="module")
def step_checkpoint(tmp_path_factory) -> tuple[Path, Path]:
    """A crosstask layout and a real (tiny) step model trained on it."""
    base = tmp_path_factory.mktemp("ckpt")
    root = write_crosstask(base / "ct")
    assert main([str(a) for a in train_args(root, base / "step")]) == 0
    return root, base / "step"


@pytest.mark.parametrize("edit, expected", [c[1:] for c in CHECKPOINT_CASES], ids=[c[0] for c in CHECKPOINT_CASES])
def test_bad_checkpoint_is_a_clear_error(tmp_path, capsys, step_checkpoint, edit, expected):
    import shutil

    root, step = step_checkpoint
    folder = tmp_path / "step"
    shutil.copytree(step, folder)
    edit(folder)
    argv = ["train", "plan", "--dataset", "crosstask", "--root", root, "--out", tmp_path / "plan", "-T", "2",
            "--step-model", folder, "--train-steps", "1", "--diffusion-steps", "2", "--dim", "8", "--no-progress",
            "--threads", "1"]
    capsys.readouterr()
    assert_clear_error(*cli(capsys, argv), expected)


# --- odd but valid input: no error, and no traceback --------------------------------------------
ODD_LABELS = [
    ("superscript-digit", ["²", "1", "3"]),
    ("double-minus", ["--5", "-4", "7"]),
    ("rich-markup", ["[/red]", "[bold]x", "[link=http://x]y"]),
    ("markdown-image", ["![x](http://127.0.0.1:9/p.png)", "<script>", "`code`"]),
]


@pytest.mark.parametrize("labels", [c[1] for c in ODD_LABELS], ids=[c[0] for c in ODD_LABELS])
def test_odd_labels_are_printed_as_they_are(tmp_path, labels):
    p = plans_file(tmp_path, labels)
    r = run_cli("graph", "paths", "--dataset", "plans", "--root", str(p), f"--start={labels[0]}",
                f"--goal={labels[-1]}", "-T", "3")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert all(lab in r.stdout for lab in labels)


@pytest.mark.parametrize("argv", [
    ["data", "stats", "--dataset", "plans", "--root", "{bad}"],
    ["graph", "paths", "--dataset", "plans", "--root", "{bad}", "--start", "x", "--goal", "y"],
], ids=["stats", "paths"])
def test_real_process_prints_one_line_and_no_traceback(tmp_path, argv):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"video": "a", "task": "t", "steps": ["x", "y"], "duration": "ten"}\n')
    r = run_cli(*[a.replace("{bad}", str(p)) for a in argv])
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("kepp: error: ") and "bad.jsonl:1: 'duration' must be a number of seconds" in r.stderr


# --- CrossTask task list and test split ---------------------------------------------------
def crosstask_world(d: Path, tasks: str, val: str) -> Path:
    (d / "annotations").mkdir(parents=True)
    (d / "tasks_primary.txt").write_text(tasks)
    (d / "annotations" / "1_va.csv").write_text("1,0,1\n2,1,2\n")
    (d / "annotations" / "2_vb.csv").write_text("1,0,1\n")
    if val:
        (d / "videos_val.csv").write_text(val)
    return d


TASK1 = "1\nmake tea\nhttp://x\n2\nboil,pour\n\n"
TASK2 = "2\nmake toast\nhttp://y\n1\ntoast\n\n"
TASK_LISTS = {
    "task-1-twice": (TASK1 + TASK2 + TASK1, ":13:", "'1'"),
    "task-2-twice": (TASK1 + TASK2 + TASK2, ":13:", "'2'"),
    "task-twice-in-a-row": (TASK1 + TASK1 + TASK2, ":7:", "'1'"),
    "same-id-other-steps": (TASK1 + TASK2 + "1\nother\nhttp://z\n1\nstir\n", ":13:", "'1'"),
    "same-id-other-name": (TASK1 + "1\nmake coffee\nhttp://x\n2\nboil,pour\n\n" + TASK2, ":7:", "first at line 1"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(TASK_LISTS))
def test_a_task_defined_twice_is_one_error_naming_the_line(tmp_path, case):
    tasks, line, needle = TASK_LISTS[case]
    crosstask_world(tmp_path / "w", tasks, "")
    r = run_kepp("data", "stats", "--dataset", "crosstask", "--root", "w", cwd=tmp_path)
    assert_one_line_error(r, "tasks_primary.txt" + line, needle)


VAL_FILES = {
    "unknown-video": ("1,va\n2,vz\n", ":2:", "'vz'"),
    "unknown-task": ("7,va\n", ":1:", "'7'"),
    "video-of-another-task": ("2,va\n", ":1:", "'va'"),
    "all-unknown": ("1,x\n1,y\n", ":1:", "'x'"),
    "unknown-after-blank-lines": ("1,va\n\n\n2,nope,http://u\n", ":4:", "'nope'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(VAL_FILES))
def test_a_test_split_naming_an_unknown_video_is_one_error_naming_the_line(tmp_path, case):
    val, line, needle = VAL_FILES[case]
    crosstask_world(tmp_path / "w", TASK1 + TASK2, val)
    r = run_kepp("data", "stats", "--dataset", "crosstask", "--root", "w", cwd=tmp_path)
    assert_one_line_error(r, "videos_val.csv" + line, needle)
