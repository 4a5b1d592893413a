"""Reliability and security, third round (docs/reliability.md): the audit's classes, every case through the
real command line (``main`` in-process where a subprocess is not what is tested, real processes
for crashes, servers, pipes and concurrent writers) and real Streamlit sessions for the app.

Classes: paths named inside data files, hostile pickles and checkpoints, field types across the
formats, numeric options, the app failing fast, terminal output, one writer per folder, header
sizes that lie."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kepp_core.cli import main
from kepp_core.commands.app import free_port
from tests.helpers import hostile
from tests.helpers.app_session import open_page
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.data import write_crosstask

REFUSED = "is not under a folder this app server allows"
SECRET = "kepp-secret-content-7f3a"  # a file outside every allowed root holds it: it must never be shown
PLAN = {"task": "t", "steps": ["a", "b", "c"], "split": "train"}


def in_process(capsys, *argv) -> tuple[int, str]:
    """``kepp ARGV`` through ``main`` in this process (an uncaught exception fails the test)."""
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_error(code: int, err: str, *words: str) -> str:
    """Exit 2, one ``kepp: error:`` line holding every word, no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("kepp: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def need_official() -> None:
    if not (hostile.OFFICIAL / "official-kepp-plan-T3.pth.tar").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("../shared/data/official-kepp is missing")
        pytest.skip("no ../shared/data/official-kepp (the official checkpoints)")


class _NoEnv:
    """An app environment with nothing preset: each test names its dataset."""

    def environ(self) -> dict[str, str]:
        return {}


# --- 0. paths named inside data files ----------------------------------------------------------------
def _outside(tmp_path: Path) -> Path:
    """A valid feature file outside every folder the app allows (its folder holds a secret too)."""
    folder = tmp_path / "outside"
    folder.mkdir()
    np.save(folder / "feats.npy", np.ones((30, 8), np.float32))
    (folder / "secret.txt").write_text(f"{SECRET}:x:0:0\n")
    return folder / "feats.npy"


def _plans_naming(tmp_path, outside: Path) -> dict:
    root = tmp_path / "data"
    root.mkdir()
    lines = [{**PLAN, "video": f"v{i}"} for i in range(6)]
    lines[0]["features"] = str(outside)
    (root / "plans.jsonl").write_text(hostile.plans_lines(*lines))
    return {"KEPP_APP_DATASET": "plans", "KEPP_APP_ROOT": root / "plans.jsonl"}


def _plans_symlinked(tmp_path, outside: Path) -> dict:
    env = _plans_naming(tmp_path, outside)
    path = env["KEPP_APP_ROOT"]
    (path.parent / "features").mkdir()
    (path.parent / "features" / "v1.npy").symlink_to(outside)
    path.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(6)]))
    return env


def _coin_symlinked(tmp_path, outside: Path) -> dict:
    root = tmp_path / "coin"
    (root / "features").mkdir(parents=True)
    db = {f"v{i}": {"class": "MakeTea", "subset": "training", "recipe_type": 1, "annotation": [
        {"id": "1", "label": "boil", "segment": [0, 2]}, {"id": "2", "label": "pour", "segment": [3, 5]}]}
        for i in range(4)}
    (root / "COIN.json").write_text(json.dumps({"database": db}))
    (root / "features" / "v0.npy").symlink_to(outside)
    return {"KEPP_APP_DATASET": "coin", "KEPP_APP_ROOT": root / "COIN.json", "KEPP_APP_FEATURES": root / "features"}


def _crosstask_feature(tmp_path, outside: Path) -> dict:
    root = write_crosstask(tmp_path / "ct")
    (root / "features" / "101_a.npy").unlink()
    (root / "features" / "101_a.npy").symlink_to(outside)
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


def _crosstask_annotation(tmp_path, outside: Path) -> dict:
    root = write_crosstask(tmp_path / "ct")
    (root / "annotations" / "101_a.csv").unlink()
    (root / "annotations" / "101_a.csv").symlink_to(outside.parent / "secret.txt")
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


def _official_list(tmp_path, outside: Path) -> dict:
    (outside.parent / "list.jsonl").write_text("".join(json.dumps({"vid": f"v{i}", "legal_range": [0, 1, 2]}) + "\n"
                                                       for i in range(4)))
    root = tmp_path / "lists"
    root.mkdir()
    (root / "train_list.jsonl").symlink_to(outside.parent / "list.jsonl")
    return {"KEPP_APP_DATASET": "official-list", "KEPP_APP_ROOT": root / "train_list.jsonl"}


def _feature_manifest(tmp_path, outside: Path) -> dict:
    """A feature folder whose manifest (``features.json``, read for the features' encoder) links outside."""
    (outside.parent / "features.json").write_text(json.dumps({"encoder": SECRET, "dim": 8}))
    root = write_crosstask(tmp_path / "ct")
    (root / "features" / "features.json").symlink_to(outside.parent / "features.json")
    return {"KEPP_APP_DATASET": "crosstask", "KEPP_APP_ROOT": root}


APP_PATH_CASES = {"plans-features-key": _plans_naming, "feature-manifest-symlink": _feature_manifest, "plans-feature-folder-symlink": _plans_symlinked,
                  "coin-feature-symlink": _coin_symlinked, "crosstask-feature-symlink": _crosstask_feature,
                  "crosstask-annotation-symlink": _crosstask_annotation, "official-list-symlink": _official_list}


@pytest.mark.xdist_group("app")
class TestPathsNamedInDataFiles:
    """A path a dataset file names is as untrusted as a path a visitor types (real app sessions),
    and no command-line error quotes a file's content."""

    @pytest.mark.parametrize("case", sorted(APP_PATH_CASES))
    def test_the_app_refuses_a_dataset_naming_a_file_outside_the_allowed_folders(self, monkeypatch, tmp_path, case):
        env = APP_PATH_CASES[case](tmp_path, _outside(tmp_path))
        at = open_page(monkeypatch, _NoEnv(), "pages/2_Graph.py", KEPP_APP_CHECKPOINTS=None, KEPP_APP_PREDICTIONS=None,
                       KEPP_HOME=tmp_path / "home", **env)
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(str(e.value) for e in at.error)
        assert REFUSED in shown, shown
        assert SECRET not in shown and "root:x" not in shown

    @pytest.mark.parametrize("typed", ["/data/a\u0000b.jsonl", "/" + "x" * 5000], ids=["nul-byte", "5000-characters"])
    def test_a_path_no_system_call_takes_is_refused_in_the_sidebar(self, monkeypatch, tmp_path, typed):
        plans = tmp_path / "plans.jsonl"
        plans.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(4)]))
        at = open_page(monkeypatch, _NoEnv(), KEPP_HOME=tmp_path / "home", KEPP_APP_DATASET="plans", KEPP_APP_ROOT=plans)
        at.session_state["kepp_panel_open"] = True
        at.run()
        at.text_input(key="cfg_root").set_value(typed).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("not a usable path" in str(e.value) for e in at.error), [e.value for e in at.error]

    def test_the_command_line_never_quotes_a_named_file(self, capsys, tmp_path):
        outside = _outside(tmp_path)
        secret = outside.parent / "secret.txt"
        cases = []
        plans = tmp_path / "p.jsonl"  # a features key naming a text file (here the secret, and /etc/hostname)
        for target in (secret, Path("/etc/hostname")):
            plans.write_text(hostile.plans_lines({**PLAN, "video": "v0", "features": str(target)}))
            cases.append(in_process(capsys, "data", "stats", "--dataset", "plans", "--root", plans))
        root = _crosstask_annotation(tmp_path, outside)["KEPP_APP_ROOT"]  # an annotation file that is the secret
        cases.append(in_process(capsys, "data", "stats", "--dataset", "crosstask", "--root", root))
        hostname = Path("/etc/hostname").read_text(errors="replace").strip() if Path("/etc/hostname").is_file() else ""
        for code, err in cases:
            line = one_error(code, err)
            assert SECRET not in line and "b'" not in line, line
            assert not hostname or len(hostname) < 4 or hostname not in line, line
        assert [code for code, _ in cases] == [2, 2, 2] and SECRET in secret.read_text()  # 3 refusals; it was there


# --- 2. pickles and checkpoints -----------------------------------------------------------------------
class TestHostilePicklesAndCheckpoints:
    """No pickle or checkpoint crashes the interpreter, allocates what its header claims or is
    accepted with weights no model can use: one line naming the file and the part."""

    def test_a_tuple_nested_a_million_deep_does_not_crash_the_interpreter(self, tmp_path):
        p = tmp_path / "deep.pkl"
        p.write_bytes(hostile.deep_tuple_key())
        r = run_kepp("graph", "import", p, "--out", tmp_path / "g.json", timeout=120)
        assert r.returncode != -11, "segmentation fault"
        assert_one_line_error(r, str(p), "levels deep")
        assert not (tmp_path / "g.json").exists()

    @pytest.mark.parametrize("case", sorted(hostile.GRAPH_CASES))
    def test_a_malformed_graph_pickle_is_one_error(self, capsys, tmp_path, case):
        make, words = hostile.GRAPH_CASES[case]
        p = tmp_path / f"{case}.pkl"
        p.write_bytes(make())
        one_error(*in_process(capsys, "graph", "import", p, "--out", tmp_path / "g.json"), str(p), words)
        assert not (tmp_path / "g.json").exists()

    @pytest.mark.parametrize("case", sorted(hostile.CHECKPOINT_CASES))
    def test_poisoned_official_weights_are_refused(self, capsys, tmp_path, case):
        need_official()
        edit, words = hostile.CHECKPOINT_CASES[case]
        plan = hostile.poisoned(edit, f"{case}.pth.tar", tmp_path)
        step = hostile.OFFICIAL / "official-kepp-step-T3.pth.tar"
        code, err = in_process(capsys, "models", "import", "--plan", plan, "--step", step, "-T", 3,
                               "--out", tmp_path / "m")
        one_error(code, err, str(plan), words)
        assert not list((tmp_path / "m").rglob("*.safetensors"))

    @pytest.mark.parametrize("build, words", [
        (hostile.size_lie, ("85,899,345,920 bytes", "refused before allocating")),  # a storage claiming 80 GB
        (hostile.deep_data_pkl, ("data.pkl", "levels deep")),
    ], ids=["storage-claiming-80-gb", "data-pkl-nested-deep"])
    def test_an_archive_that_lies_is_refused_before_loading(self, capsys, tmp_path, build, words):
        need_official()
        plan = build(hostile.OFFICIAL / "official-kepp-plan-T3.pth.tar", tmp_path / "bad.pth.tar")
        code, err = in_process(capsys, "models", "import", "--plan", plan, "--step",
                               hostile.OFFICIAL / "official-kepp-step-T3.pth.tar", "-T", 3, "--out", tmp_path / "m")
        one_error(code, err, *words)

    def test_a_horizon_of_1000_is_refused(self, capsys, tmp_path):
        need_official()
        code, err = in_process(capsys, "models", "import", "--plan", hostile.OFFICIAL / "official-kepp-plan-T3.pth.tar",
                               "--step", hostile.OFFICIAL / "official-kepp-step-T3.pth.tar", "-T", 1000,
                               "--out", tmp_path / "m")
        one_error(code, err, "--horizon 1000", "2..64")
        assert not (tmp_path / "m").exists()

    def test_a_feature_pickle_nested_deep_is_refused(self, capsys, tmp_path):
        p = hostile.s3d_dict_nested_deep(tmp_path / "s3d.npy")
        one_error(*in_process(capsys, "plan", p, "--start", 0, 1, "--goal", 2, 3), str(p), "levels deep")


# --- 1. field types, one schema per format -----------------------------------------------------------
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


# --- 6. numeric options -------------------------------------------------------------------------------
class TestNumericOptions:
    """Seeds, -R, --top, horizons and clip bounds: the same range rules in every command."""

    @pytest.mark.parametrize("argv, words", [
        (["data", "stats", "--split-seed", "-1"], "--split-seed -1"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "--seed", str(2**70)], "--seed"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "-R", "0"], "-R/--paths 0"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "-R", "100000"], "-R/--paths 100000"),
        (["plan", "{npy}", "--start", "0", "1", "--goal", "2", "3", "--top", "100000"], "--top 100000"),
        (["plan", "{npy}", "--start", "0", "5", "--goal", "3", "8"], "overlapping"),
    ])
    def test_out_of_range(self, capsys, tmp_path, argv, words):
        npy = tmp_path / "f.npy"
        np.save(npy, np.ones((10, 256), np.float32))
        one_error(*in_process(capsys, *[a.replace("{npy}", str(npy)) for a in argv]), words)


# --- 3. the app fails fast ------------------------------------------------------------------------------
def _app(*argv, timeout: float = 60) -> subprocess.CompletedProcess:
    """``kepp app ARGV`` on a free port; a server that starts instead of refusing is stopped at ``timeout``."""
    try:
        return run_kepp("app", "--port", free_port(), *argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kepp app {' '.join(map(str, argv))} started serving instead of refusing")


class TestAppFailsFast:
    """``kepp app`` (and ``kepp plan``) refuse options they cannot use before anything is served."""

    @pytest.fixture
    def files(self, tmp_path):
        (tmp_path / "garbage.pt").write_bytes(b"not torchscript")
        plans = tmp_path / "plans.jsonl"
        plans.write_text(hostile.plans_lines(*[{**PLAN, "video": f"v{i}"} for i in range(4)]))
        (tmp_path / "preds.jsonl").write_text("{not json\n")
        (tmp_path / "bad-encoder.toml").write_text('encoders = ["os:system"]\n')
        (tmp_path / "deep.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
        os.mkfifo(tmp_path / "fifo.toml")
        (tmp_path / "seed-negative.toml").write_text("split_seed = -1\n")
        (tmp_path / "seed-huge.toml").write_text(f"split_seed = {2**70}\n")
        (tmp_path / "two-places.toml").write_text(f'root = "{plans}"\n[app]\npresentation = true\n')
        return tmp_path

    @pytest.mark.parametrize("argv, words", [
        (["--encoder", "os:system"], "does not take (frames, fps)"),
        (["--encoder", "{tmp}/garbage.pt"], "garbage.pt"),
        (["--graph", "{tmp}/plans.jsonl"], "plans.jsonl"),
        (["--predictions", "{tmp}/preds.jsonl"], "preds.jsonl:1"),
        (["--config", "{tmp}/bad-encoder.toml"], "does not take (frames, fps)"),
        (["--config", "{tmp}/fifo.toml"], "not a regular file"),
        (["--config", "{tmp}/deep.toml"], "nested too deeply"),
        (["--config", "{tmp}/seed-negative.toml"], "seed-negative.toml: 'split_seed' must be a seed 0.."),
        (["--config", "{tmp}/seed-huge.toml"], "seed-huge.toml: 'split_seed' must be a seed 0.."),
        (["--config", "{tmp}/two-places.toml"], "two-places.toml: keys both under [app] and outside it"),
    ])
    def test_kepp_app_refuses_before_serving(self, files, argv, words):
        t0 = time.monotonic()
        r = _app(*[a.replace("{tmp}", str(files)) for a in argv])
        assert_one_line_error(r, words)
        assert time.monotonic() - t0 < 60

    @pytest.mark.slow
    def test_kepp_plan_never_calls_an_encoder_that_does_not_take_frames(self, tmp_path):
        video = tmp_path / "v.mp4"
        from kepp_core.video.write import write_video

        write_video(video, np.zeros((40, 32, 32, 3), np.uint8), 4)
        marker = tmp_path / "ran"
        r = run_kepp("plan", video, "--start", 0, 2, "--goal", 4, 6, "-T", 3, "--encoder", "os:system",
                     env={"KEPP_HOME": str(tmp_path / "home")}, cwd=tmp_path)
        assert_one_line_error(r, "does not take (frames, fps)")
        assert not marker.exists()


# --- 4. terminal output ----------------------------------------------------------------------------------
class TestTerminalOutput:
    """Dataset strings reach a terminal with their control characters escaped; a closed pipe ends
    a command quietly."""

    LABEL = "stir\u001b[2J\u001b]0;pwned\u0007\u009b31m"

    @pytest.fixture
    def plans(self, tmp_path):
        p = tmp_path / "plans.jsonl"
        p.write_text(hostile.plans_lines(*[{"video": f"v{i}", "task": "t", "split": "train",
                                            "steps": ["boil", self.LABEL, "pour"]} for i in range(4)]))
        return p

    @pytest.mark.parametrize("argv", [
        ["graph", "paths", "--start", "boil", "--goal", "pour", "-T", "3"],
        ["graph", "subgraph", "--action", "boil"],
        ["graph", "paths", "--start", LABEL, "--goal", "pour", "-T", "2"],  # the label in the table's title
    ])
    def test_control_characters_are_escaped(self, plans, argv):
        r = run_kepp(*argv, "--dataset", "plans", "--root", plans)
        out = r.stdout + r.stderr
        assert "\u001b" not in out and "\u0007" not in out and "\u009b" not in out, out
        assert "\\x1b[2J" in out, out

    def test_a_closed_pipe_ends_quietly(self, plans):
        from kepp_core.paths import REPO_ROOT

        cmd = (f"{sys.executable} -m kepp_core graph paths --dataset plans --root {plans} --start boil --goal pour "
               f"-T 3 --top 100 --json | head -c 1")
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        assert r.stdout == "{" and "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


# --- 5. one writer per folder ------------------------------------------------------------------------------
SYNTH = ["--videos", "6", "--size", "32", "--fps", "4", "--step-min", "1", "--step-max", "1.5", "--workers", "1"]


class TestOneWriterPerFolder:
    """Two writers of one folder never mix their files: the second is refused naming the first, a
    cache waits for its builder; what a killed writer left half-written goes with the next run."""

    @pytest.mark.slow
    def test_a_second_data_synth_into_one_folder_is_refused_naming_the_first(self, tmp_path):
        from kepp_core.paths import REPO_ROOT

        out = tmp_path / "world"
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        first = subprocess.Popen([sys.executable, "-m", "kepp_core", "data", "synth", "--out", str(out), "--seed", "1",
                                  *SYNTH, "--videos", "40"], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 120
            while not (out / "world.json").is_file():  # the first holds the folder
                assert first.poll() is None and time.time() < deadline, first.stderr.read()
                time.sleep(0.1)
            second = run_kepp("data", "synth", "--out", out, "--seed", "2", *SYNTH)
            assert_one_line_error(second, str(out), "kepp data synth", f"pid {first.pid}")
        finally:
            assert first.wait(timeout=300) == 0, first.stderr.read()
        assert run_kepp("data", "stats", "--dataset", "demo", "--root", out).returncode == 0
        assert json.loads((out / "world.json").read_text())["seed"] == 1

    @pytest.mark.slow
    def test_two_processes_asking_for_one_world_build_it_once(self, tmp_path):
        """The suite's two workers asked for the demo world at once (tests/helpers/app_env.py): the second
        cleared the first's half-written files (FileNotFoundError on a temporary mp4)."""
        from kepp_core.paths import REPO_ROOT

        root = tmp_path / "cache-world"
        code = ("import sys; from kepp_core.data.synth import ensure_world; "
                "print(ensure_world(sys.argv[1], videos=30, size=32, fps=4, step_min=1.0, step_max=1.5, "
                "progress=False, workers=2))")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

        def start() -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-c", code, str(root)], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        first = start()
        deadline = time.time() + 120
        while not (root / "videos").is_dir():  # the first is writing videos
            assert first.poll() is None and time.time() < deadline
            time.sleep(0.05)
        second = start()
        results = [p.communicate(timeout=300) for p in (first, second)]
        assert [first.returncode, second.returncode] == [0, 0], [e[-2000:] for _, e in results]
        assert all(out.strip() == str(root) for out, _ in results)
        from kepp_core.data import load_dataset

        assert len(load_dataset("demo", root).videos) == 30

    def test_what_a_killed_import_left_is_removed_by_the_next(self, capsys, tmp_path):
        out = tmp_path / "m"
        (out / "T3" / "step").mkdir(parents=True)
        left = out / "T3" / "step" / ".model.safetensors.kepp-tmp-abc123.safetensors"
        left.write_bytes(b"half")
        in_process(capsys, "models", "import", "--plan", tmp_path / "none.pth.tar", "--step", tmp_path / "none.pth.tar",
                   "-T", 3, "--out", out)
        assert not left.exists()


# --- header sizes that lie ---------------------------------------------------------------------------------
class TestHeaderSizesThatLie:
    """A header's sizes are checked against the file before anything is allocated."""

    def test_a_feature_file_claiming_25e12_values(self, capsys, tmp_path):
        p = hostile.npy_header_lie(tmp_path / "lie.npy")
        one_error(*in_process(capsys, "plan", p, "--start", 0, 1, "--goal", 2, 3), str(p), "promises")

