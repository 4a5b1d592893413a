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
from tests.test_data_loaders import write_crosstask


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kepp_core", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])


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
    ('{"video": "a", "task": "t", "steps": ["x"], "split": "val"}', "split 'val'"),
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
    with pytest.raises(KeppError, match="video 'v1': subset 'validation'"):
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
