"""Every format one schema, every failure one line, through the real command line: malformed
networkx reconstruction pickles in ``graph import``, a TorchScript encoder whose forward raises
(named, with the first line of its error), integers typed with thousands of digits, a CUDA device
on a machine without one (the fix named), a FIFO where a checkpoint should be; wrong types, empty or
path-like ids across plans, COIN, official lists, CrossTask, graph files, feature manifests, protocol
specs and resume states (`TestFieldTypes`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.s3d import write_release
import json
from kepp_core.cli import main
from tests.helpers import hostile
from tests.helpers.cli import in_process, one_error
from tests.helpers.data import write_crosstask
from tests.helpers.hostile import PLAN

ENV = {"KEPP_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


DIGRAPH = _global("networkx.classes.digraph", "DiGraph")
# Pickles that call the allowed networkx globals with what networkx refuses (NetworkXError, a traceback before)
RECONSTRUCTIONS = {
    "digraph-of-a-bad-edge-list": b"\x80\x02" + DIGRAPH + b"(K\x01K\x02K\x03t\x85R.",
    "digraph-of-a-dict-of-numbers": b"\x80\x02" + DIGRAPH + b"(}(K\x01K\x02ut\x85R.",
    "reconstructor-with-the-graph-as-its-base": (b"\x80\x02" + _global("copyreg", "_reconstructor") + b"(" + DIGRAPH
                                                 + DIGRAPH + b"(K\x01K\x02K\x03ttR."),
    "degree-view-of-a-node-not-in-the-graph": (b"\x80\x02" + _global("networkx.classes.reportviews", "DiDegreeView")
                                               + b"(" + DIGRAPH + b")RK\x07tR."),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(RECONSTRUCTIONS))
def test_a_malformed_networkx_reconstruction_pickle_is_one_line(case, tmp_path):
    p = tmp_path / f"{case}.pkl"
    p.write_bytes(RECONSTRUCTIONS[case])
    r = run_kepp("graph", "import", p, "--out", tmp_path / "g.json")
    assert_one_line_error(r, str(p), "not a readable pickle of a networkx DiGraph", "NetworkXError")
    assert not (tmp_path / "g.json").exists()


SCRIPT = '''
import torch
class Raises(torch.nn.Module):
    def forward(self, frames: torch.Tensor, fps: float) -> torch.Tensor:
        if fps > 0:
            raise RuntimeError("the encoder cannot read frames of this size")
        return frames.float()
class Returns(torch.nn.Module):
    def forward(self, frames: torch.Tensor, fps: float):
        return [frames.float()]
torch.jit.save(torch.jit.script(Raises()), "raises.pt")
torch.jit.save(torch.jit.script(Returns()), "returns.pt")
'''


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("scripted")
    (folder / "make.py").write_text(SCRIPT)  # TorchScript compiles from source files
    subprocess.run([sys.executable, "make.py"], cwd=folder, check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    from kepp_core.video import write_video

    return write_video(tmp_path_factory.mktemp("video") / "a.mp4", np.full((24, 48, 64, 3), 90, np.uint8), 24)


@pytest.mark.parametrize("name, words", [
    ("raises.pt", ["its forward failed", "RuntimeError: the encoder cannot read frames of this size"]),
    ("returns.pt", ["its forward returned a list", "expected a tensor"]),
])
@pytest.mark.slow
def test_a_torchscript_encoder_whose_forward_fails_is_named_with_its_error(name, words, scripted, video, tmp_path):
    r = run_kepp("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder", scripted / name, env=ENV)
    assert_one_line_error(r, f"TorchScript encoder {scripted / name}", *words)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("start", ["9" * 5000, "1" + "0" * 30], ids=["5000-digits", "31-digits"])
def test_an_action_index_of_thousands_of_digits_is_out_of_range(start, tmp_path):
    r = run_kepp("graph", "paths", "--start", start, "--goal", "0", "-T", 3)
    assert_one_line_error(r, "action index", f"({len(start):,} digits)", "out of range")


def test_an_index_in_other_digits_is_a_name_not_a_number():
    r = run_kepp("graph", "paths", "--start", "²", "--goal", "0", "-T", 3)
    assert_one_line_error(r, "unknown action '²'")


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has a CUDA device")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_a_cuda_device_on_a_machine_without_one_names_the_fix(device, tmp_path, video):
    release = write_release(tmp_path / "s3d", ["crack", "egg"])
    r = run_kepp("features", "encode", video, "--out", tmp_path / "o.npy", "--encoder",
                 f"s3d:{release},device={device}", env=ENV)
    assert_one_line_error(r, f"device={device}", "without CUDA", "run on the CPU with --device cpu")
    r = run_kepp("features", "ground", video, "--encoder", f"s3d:{release},device={device}", "--steps", "crack egg",
                 env=ENV)
    assert_one_line_error(r, f"device={device}", "without CUDA", "run on the CPU with --device cpu")


# --- field types, one schema per format -----------------------------------------------------------
OK_LINE = {**PLAN, "video": "ok"}
PLANS_FIELDS = {  # the key each error must name
    "video-null": {"video": None}, "video-number": {"video": 7}, "video-boolean": {"video": True},
    "video-object": {"video": {"a": 1}}, "video-empty": {"video": ""}, "video-nul": {"video": "a\u0000b"},
    "video-slash": {"video": "../x"}, "task-list": {"task": ["t"]}, "task-empty": {"task": ""},
    "task-slash": {"task": "../t"}, "task-backslash": {"task": "a\\b"},
    "segments-strings": {"segments": [["0", "1"], ["1", "2"], ["2", "3"]]},
    "segments-booleans": {"segments": [[True, False], [1, 2], [2, 3]]}, "duration-true": {"duration": True},
    "steps-beyond-a-c-long": {"steps": ["a", 2**70]},
}
COIN_RECORD = {"class": "MakeTea", "subset": "training", "duration": 20,
               "annotation": [{"id": "1", "label": "boil", "segment": [0, 2]}, {"id": "2", "label": "pour", "segment": [3, 5]}]}
COIN_FIELDS = {  # (video id, record edit, words of the error)
    "label-null": ("v2", {"annotation": [{"id": "1", "label": None, "segment": [0, 2]}]}, "'annotation'"),
    "one-id-two-labels": ("v2", {"annotation": [{"id": "1", "label": "heat", "segment": [0, 2]}]}, "step id '1'"),
    "class-list": ("v2", {"class": ["MakeTea"]}, "'class'"), "class-empty": ("v2", {"class": ""}, "'class'"),
    "class-slash": ("v2", {"class": "Make/Tea"}, "'class' must be an id"),
    "video-id-slash": ("../v2", {}, "video id"), "video-id-escape": ("v\u001b[2J", {}, "video id"),
    "duration-true": ("v2", {"duration": True}, "'duration'"),
    "segment-booleans": ("v2", {"annotation": [{"id": "1", "label": "boil", "segment": [True, 1]}]}, "'annotation'"),
}
OFFICIAL_FIELDS = {
    "vid-number": {"vid": 5}, "vid-slash": {"vid": "a/b"}, "vid-empty": {"vid": ""}, "vid-object": {"vid": {"a": 1}},
    "vid-nul": {"vid": "a\u0000b"}, "task-empty": {"task": ""}, "task-slash": {"task": "a/b"},
}


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A ``kepp train`` run folder on the demo world with a resume state (two steps)."""
    from kepp_core.data.synth import ensure_world

    world = ensure_world(progress=False)
    out = tmp_path_factory.mktemp("resume") / "m"
    assert main(["train", "step", "--dataset", "demo", "--root", str(world), "-T", "3", "--out", str(out),
                 "--train-steps", "2", "--val-every", "1", "--no-progress"]) == 0
    assert (out / "state.json").is_file()
    return world, out


class TestFieldTypes:
    """Wrong types, empty or path-like ids and sizes across the formats: one error naming the file,
    line or record and the key (they were accepted silently or were tracebacks)."""

    @pytest.mark.parametrize("case", sorted(PLANS_FIELDS))
    def test_plans_jsonl(self, capsys, tmp_path, case):
        p = tmp_path / "plans.jsonl"
        p.write_text(hostile.plans_lines(OK_LINE, {**OK_LINE, "video": "v", **PLANS_FIELDS[case]}))
        key = case.split("-")[0]
        line = one_error(*in_process(capsys, "data", "stats", "--dataset", "plans", "--root", p), "plans.jsonl:2",
                         f"'{key}'")
        assert "\u001b" not in line and "\u0000" not in line

    @pytest.mark.parametrize("case", sorted(COIN_FIELDS))
    def test_coin(self, capsys, tmp_path, case):
        vid, edit, words = COIN_FIELDS[case]
        p = tmp_path / "COIN.json"
        p.write_text(json.dumps({"database": {"v1": COIN_RECORD, vid: {**COIN_RECORD, **edit}}}))
        line = one_error(*in_process(capsys, "data", "stats", "--dataset", "coin", "--root", p), "COIN.json", words)
        assert "\u001b" not in line

    @pytest.mark.parametrize("case", sorted(OFFICIAL_FIELDS))
    def test_official_lists(self, capsys, tmp_path, case):
        p = tmp_path / "list.jsonl"
        ok = {"vid": "ok", "legal_range": [0, 1]}
        p.write_text(json.dumps(ok) + "\n" + json.dumps({**ok, "vid": "v", **OFFICIAL_FIELDS[case]}) + "\n")
        one_error(*in_process(capsys, "data", "stats", "--dataset", "official-list", "--root", p), "list.jsonl:2",
                  f"'{case.split('-')[0]}'")

    @pytest.mark.parametrize("case", ["task-id-escape", "task-id-slash", "video-id-escape"])
    def test_crosstask(self, capsys, tmp_path, case):
        root = write_crosstask(tmp_path / "ct")
        tasks = root / "tasks_primary.txt"
        if case == "task-id-escape":
            tasks.write_text(tasks.read_text().replace("101\n", "101\u001b[2J\n", 1))
        elif case == "task-id-slash":
            tasks.write_text(tasks.read_text().replace("102\n", "1/2\n", 1))
        else:
            (root / "annotations" / "101_a.csv").rename(root / "annotations" / "101_a\u001b]0;x\u0007.csv")
        line = one_error(*in_process(capsys, "data", "stats", "--dataset", "crosstask", "--root", root),
                         "video id" if case.startswith("video") else "task id must be an id")
        assert "\u001b" not in line and "\u0007" not in line

    @pytest.mark.parametrize("task", ["../t", "a\\b", "t\u001b[2J"], ids=["slash", "backslash", "escape"])
    def test_graph_json_task_ids(self, capsys, tmp_path, task):
        plans = tmp_path / "plans.jsonl"
        plans.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(3)]))
        graph = tmp_path / "g.json"
        assert in_process(capsys, "graph", "build", "--dataset", "plans", "--root", plans, "--out", graph, "--no-fit")[0] == 0
        g = json.loads(graph.read_text())
        g["tasks"] = {task: g["tasks"]["t"]}
        graph.write_text(json.dumps(g))
        line = one_error(*in_process(capsys, "graph", "paths", "--graph", graph, "--start", "a", "--goal", "c"),
                         "g.json", "task id must be an id")
        assert "\u001b" not in line

    @pytest.mark.parametrize("manifest", [{"encoder": 7, "dim": 8}, {"encoder": "builtin-v1", "dim": -1}])
    def test_feature_manifests(self, capsys, tmp_path, manifest):
        from kepp_core.video.write import write_video

        (tmp_path / "videos").mkdir()
        write_video(tmp_path / "videos" / "clip.mp4", np.zeros((8, 32, 32, 3), np.uint8), 4)
        (tmp_path / "features").mkdir()
        (tmp_path / "features" / "features.json").write_text(json.dumps(manifest))
        one_error(*in_process(capsys, "features", "extract", "--dataset", "files", "--root", tmp_path),
                  "features.json", f"'{'encoder' if manifest['encoder'] == 7 else 'dim'}'")

    def test_a_remembered_shape_that_is_absurd_is_not_trusted(self, tmp_path):
        from kepp_core.data import load_dataset

        root = write_crosstask(tmp_path / "ct")
        load_dataset("crosstask", root)  # writes features/feature-shapes.json
        index = root / "features" / "feature-shapes.json"
        data = json.loads(index.read_text())
        for entry in data["files"].values():
            entry[4] = [10**9, 8]  # a billion seconds, kept with the file's true size and times
        index.write_text(json.dumps(data))
        ds = load_dataset("crosstask", root)
        assert {v.duration for v in ds.videos} == {12.0}

    @pytest.mark.parametrize("spec", ['lr = "x"', 'mults = "a"', "decay = [[[[[[[[1]]]]]]]]", "x = " + "[" * 3000 + "]" * 3000])
    def test_protocol_spec_train_tables(self, capsys, tmp_path, spec):
        p = tmp_path / "spec.toml"
        key, _, value = spec.partition(" = ")
        body = f'out = "{tmp_path / "out"}"\nmethods = ["random"]\n'
        p.write_text(body + (f"[train]\n{spec}\n" if key != "x" else f"{spec}\n"))
        one_error(*in_process(capsys, "protocol", p), str(p))
        assert not (tmp_path / "out").exists()

    @pytest.mark.parametrize("edit", [{"step": 10**9}, {"step": -5}, {"param_groups": []}, {"bad_rounds": "x"}])
    def test_resume_state(self, capsys, tmp_path, run_folder, edit):
        import shutil

        world, src = run_folder
        out = tmp_path / "m"
        shutil.copytree(src, out)
        state = json.loads((out / "state.json").read_text())
        (out / "state.json").write_text(json.dumps({**state, **edit}))
        code, err = in_process(capsys, "train", "step", "--dataset", "demo", "--root", world, "-T", 3, "--out", out,
                               "--train-steps", 2, "--val-every", 1, "--no-progress", "--resume")
        one_error(code, err, "state.json")
