"""Bad input, second round: graph files, the streamed plans reader, checkpoints with non-finite
weights, CrossTask task lists and test splits, and mismatched JSON + compact graph pairs; each
through the real command line: exit 2, one ``kepp: error:`` line naming the file and the key or
line, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error as assert_one_error
from tests.helpers.cli import run_kepp

ROOT = REPO_ROOT


def kepp(*args, cwd: Path) -> subprocess.CompletedProcess:
    return run_kepp(*args, cwd=cwd)


GOOD_ROWS = [{"video": f"v{i}", "task": "t", "split": "train" if i < 4 else "test",
              "steps": ["a", "b", "c"][: 2 + i % 2], "segments": [[0, 1], [1, 2], [2, 3]][: 2 + i % 2],
              "duration": 10} for i in range(6)]


def write_plans(path: Path, last: bytes = b"") -> Path:
    path.write_bytes(b"".join((json.dumps(r) + "\n").encode() for r in GOOD_ROWS) + last)
    return path


@pytest.fixture(scope="module")
def graph_pair(tmp_path_factory) -> Path:
    """A JSON + compact graph pair built by the command line from a small plans file."""
    d = tmp_path_factory.mktemp("graph")
    write_plans(d / "plans.jsonl")
    r = kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--compact", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


# --- 8. graph files ----------------------------------------------------------------------
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


@pytest.mark.parametrize("case", sorted(JSON_GRAPH_EDITS))
def test_a_malformed_json_graph_is_one_error_naming_the_key(graph_pair, tmp_path, case):
    edit, needle = JSON_GRAPH_EDITS[case]
    obj = json.loads((graph_pair / "g.json").read_text())
    obj.pop("companion", None)
    obj.update(edit)
    (tmp_path / "bad.json").write_text(json.dumps(obj))
    r = kepp("graph", "subgraph", "--graph", "bad.json", "--action", "a", cwd=tmp_path)
    assert_one_error(r, "bad.json", needle)


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


@pytest.mark.parametrize("case", sorted(COMPACT_EDITS))
def test_a_malformed_compact_graph_is_one_error_naming_the_key_or_array(graph_pair, tmp_path, case):
    header_edit, arrays_edit, needle = COMPACT_EDITS[case]
    _compact_variant(graph_pair / "g.safetensors", tmp_path / "bad.safetensors", header_edit, arrays_edit)
    r = kepp("graph", "paths", "--graph", "bad.safetensors", "--start", "a", "--goal", "b", "--horizon", "2",
             cwd=tmp_path)
    assert_one_error(r, "bad.safetensors", needle)


def test_a_compact_graph_whose_header_is_not_an_object_is_one_error(graph_pair, tmp_path):
    _compact_variant(graph_pair / "g.safetensors", tmp_path / "bad.safetensors", raw_header="[1, 2]")
    r = kepp("graph", "subgraph", "--graph", "bad.safetensors", "--action", "a", cwd=tmp_path)
    assert_one_error(r, "bad.safetensors")


# --- 9. one set of per-line checks for the loader and the streamed build -----------------
BAD_PLAN_LINES = {
    "invalid-utf8": (b'{"video":"\xff\xfe","task":"t","steps":["a"]}\n', "UTF-8"),
    "binary-garbage": (bytes(range(256)) + b"\n", ":7:"),
    "empty-steps": (b'{"video":"x","task":"t","steps":[]}\n', "'steps'"),
    "empty-label": (b'{"video":"x","task":"t","steps":["a","  "]}\n', "empty step label"),
    "nan-segment": (b'{"video":"x","task":"t","steps":["a","b"],"segments":[[NaN,1],[1,2]]}\n', "NaN (not a JSON number)"),
    "overlapping-segments": (b'{"video":"x","task":"t","steps":["a","b"],"segments":[[0,3],[1,2]]}\n', "overlap"),
    "text-duration": (b'{"video":"x","task":"t","steps":["a"],"duration":"long"}\n', "'duration'"),
    "duration-of-1e8-seconds": (b'{"video":"x","task":"t","steps":["a"],"duration":1e8}\n', "too long"),
    "segment-ending-after-1e8-seconds": (b'{"video":"x","task":"t","steps":["a"],"segments":[[0,1e8]]}\n', "1e+08"),
    "not-an-object": (b'[1, 2]\n', "JSON object"),
    "duplicate-video": (b'{"video":"v0","task":"t","steps":["a"]}\n', "'v0'"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLAN_LINES))
def test_stats_and_the_streamed_build_refuse_a_bad_plans_line_with_the_same_error(tmp_path, case):
    last, needle = BAD_PLAN_LINES[case]
    write_plans(tmp_path / "plans.jsonl", last)
    stats = kepp("data", "stats", "--dataset", "plans", "--root", "plans.jsonl", cwd=tmp_path)
    build = kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", cwd=tmp_path)
    line = assert_one_error(stats, "plans.jsonl:7", needle)
    assert assert_one_error(build) == line
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize("labels", [["²", "1"], ["--5", "1"], ["-3", "2", "10"], ["٣", "1"], ["1", "a"]])
def test_labels_that_look_numeric_index_alike_in_the_loader_and_the_streamed_build(tmp_path, labels):
    rows = [{"video": f"v{i}", "task": "t", "split": "train", "steps": labels} for i in range(3)]
    (tmp_path / "plans.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = kepp("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--no-fit",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(ROOT))
    from kepp_core.data.plans import load_plans

    assert json.loads((tmp_path / "g.json").read_text())["actions"] == load_plans(tmp_path / "plans.jsonl").actions


# --- 13. non-finite checkpoint weights ------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "one-nan", "one-inf"])
def test_eval_refuses_a_checkpoint_with_non_finite_weights_naming_the_file(tmp_path, value):
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    shutil.copytree(ROOT / "assets" / "demo", tmp_path / "m")
    path = tmp_path / "m" / "T3" / "step" / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    name = sorted(k for k, v in tensors.items() if v.is_floating_point() and v.numel() > 1)[-1]
    bad = float(value.removeprefix("one-"))
    if value.startswith("one-"):
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[0] = bad
    else:
        tensors = {k: torch.full_like(v, bad) if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(tensors, str(path), metadata=meta)
    r = kepp("eval", "--models", "m", "-T", "3", "--methods", "kepp-R1", cwd=tmp_path)
    assert_one_error(r, "model.safetensors", "non-finite")


# --- 14. CrossTask task list and test split ---------------------------------------------------
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


@pytest.mark.parametrize("case", sorted(TASK_LISTS))
def test_a_task_defined_twice_is_one_error_naming_the_line(tmp_path, case):
    tasks, line, needle = TASK_LISTS[case]
    crosstask_world(tmp_path / "w", tasks, "")
    r = kepp("data", "stats", "--dataset", "crosstask", "--root", "w", cwd=tmp_path)
    assert_one_error(r, "tasks_primary.txt" + line, needle)


VAL_FILES = {
    "unknown-video": ("1,va\n2,vz\n", ":2:", "'vz'"),
    "unknown-task": ("7,va\n", ":1:", "'7'"),
    "video-of-another-task": ("2,va\n", ":1:", "'va'"),
    "all-unknown": ("1,x\n1,y\n", ":1:", "'x'"),
    "unknown-after-blank-lines": ("1,va\n\n\n2,nope,http://u\n", ":4:", "'nope'"),
}


@pytest.mark.parametrize("case", sorted(VAL_FILES))
def test_a_test_split_naming_an_unknown_video_is_one_error_naming_the_line(tmp_path, case):
    val, line, needle = VAL_FILES[case]
    crosstask_world(tmp_path / "w", TASK1 + TASK2, val)
    r = kepp("data", "stats", "--dataset", "crosstask", "--root", "w", cwd=tmp_path)
    assert_one_error(r, "videos_val.csv" + line, needle)


# --- 16. a JSON + compact pair from different builds ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("stale,read", [("g.safetensors", "g.json"), ("g.safetensors", "g.safetensors"),
                                        ("g.json", "g.json"), ("g.json", "g.safetensors"),
                                        ("unstamped", "g.json")])
def test_a_compact_pair_from_two_builds_is_refused_at_load(tmp_path, stale, read):
    write_plans(tmp_path / "plans.jsonl")
    build = ("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--no-fit")
    if stale == "unstamped":  # a compact file written alone, next to a stamped JSON
        assert kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        assert kepp(*build[:-2], "g.safetensors", "--no-fit", cwd=tmp_path).returncode == 0
    else:
        assert kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        shutil.copy(tmp_path / stale, tmp_path / "old")
        assert kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        for f in ("g.json", "g.safetensors"):  # both still load while they match
            assert kepp("graph", "subgraph", "--graph", f, "--action", "a", cwd=tmp_path).returncode == 0
        shutil.copy(tmp_path / "old", tmp_path / stale)  # as a stop between the two renames leaves them
    r = kepp("graph", "subgraph", "--graph", read, "--action", "a", cwd=tmp_path)
    assert_one_error(r, read, "different build")
