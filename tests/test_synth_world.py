"""The synthetic world: tasks and procedures, rendering, determinism, the CrossTask layout the
loader reads, --from-plans and ``kepp data synth``; one writer per world folder (two real processes)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from kepp_core.cli import main
from kepp_core.data import load_dataset, load_plans, make_episodes, observations
from kepp_core.data.synth import (DEFAULT_VIDEOS, DIFFICULTIES, TASKS, Knobs, default_world_root, ensure_world,
                                  generate_world, look_of, render_video, world_fingerprint)
from kepp_core.data.synth.render import Segment
from kepp_core.data.synth.world import _builtin_specs
from kepp_core.errors import KeppError
from kepp_core.video import read_frames, video_info
import os
import subprocess
import sys
import time
from tests.helpers.cli import assert_one_line_error, run_kepp

TINY = {"videos": 3, "step_min": 1.0, "step_max": 1.5, "idle": 0.4, "size": 32, "workers": 1, "progress": False}


def _sample_plans(task, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return [tuple(task.procedure.sample(rng)) for _ in range(n)]


def test_tasks_have_5_to_11_steps_and_share_at_least_4_step_names():
    assert len(TASKS) >= 6
    assert all(5 <= len(t.steps) <= 11 for t in TASKS)
    assert all("_" not in t.id for t in TASKS)
    uses = Counter(s for t in TASKS for s in t.steps)
    assert len([s for s, k in uses.items() if k >= 2]) >= 4
    assert {"pour water", "add sugar", "stir"} <= {s for s, k in uses.items() if k >= 2}


def test_same_endpoints_admit_several_plans_with_different_probabilities():
    assert len(TASKS) == 7  # the world's seven tasks, each checked below
    for task in TASKS:
        plans = _sample_plans(task)
        by_ends = Counter((p[0], p[-1]) for p in plans)
        (start, end), _ = by_ends.most_common(1)[0]
        variants = Counter(p for p in plans if (p[0], p[-1]) == (start, end))
        assert len(variants) >= 3, task.id
        counts = sorted(variants.values(), reverse=True)
        assert counts[0] > 2 * counts[-1], task.id  # not uniform


def test_procedures_have_optional_steps_repeats_and_short_loops():
    tea = _sample_plans(next(t for t in TASKS if t.id == "tea"))
    assert any("remove tea bag" not in p for p in tea) and any("remove tea bag" in p for p in tea)
    loop = ("add sugar", "stir", "add sugar", "stir")
    assert any(any(p[i:i + 4] == loop for i in range(len(p))) for p in tea)
    pancakes = _sample_plans(next(t for t in TASKS if t.id == "pancakes"))
    assert any(p[:2] == ("crack egg", "crack egg") for p in pancakes)  # a repeat
    coffee = _sample_plans(next(t for t in TASKS if t.id == "coffee"))
    assert {p[:2] for p in coffee} >= {("grind beans", "boil water"), ("boil water", "grind beans")}


def test_default_world_has_at_least_300_videos_of_tens_of_seconds():
    assert DEFAULT_VIDEOS >= 300
    _, specs = _builtin_specs(0, DEFAULT_VIDEOS, DIFFICULTIES["default"])
    durations = np.array([s.duration for s in specs])
    assert 15 <= durations.mean() <= 60 and durations.max() < 90
    assert Counter(s.split for s in specs)["test"] > 60


def test_actions_sharing_words_look_partly_alike():
    add_sugar, add_milk, pour_water, boil_water = map(look_of, ["add sugar", "add milk", "pour water", "boil water"])
    assert add_sugar.motion == add_milk.motion and add_sugar.tool_shape == add_milk.tool_shape
    assert pour_water.obj_colour == boil_water.obj_colour and pour_water.motion != boil_water.motion
    grey = look_of("add sugar", similarity=1.0)
    assert np.allclose(grey.obj_colour, 0.55)


def test_scene_keeps_the_state_of_finished_steps():
    knobs = Knobs(noise=0, jitter=0, distractors=0, lighting=0, size=64)
    segs = [Segment("add sugar", 1.0, 2.0), Segment("pour water", 3.0, 4.0)]
    frames = render_video(segs, 6, {s.label: look_of(s.label) for s in segs}, knobs,
                          np.random.default_rng(0), "tea").astype(int)
    shelf = (slice(0, 12), slice(0, 20))
    before, after_one, after_two, end = frames[4], frames[2 * 8 + 4], frames[4 * 8 + 4], frames[-1]
    assert np.abs(after_one[shelf] - before[shelf]).sum() > 0
    assert np.abs(after_two[shelf] - after_one[shelf]).sum() > 0
    np.testing.assert_array_equal(after_two[shelf], end[shelf])  # state stays while idle


def test_same_seed_gives_identical_annotations_and_decoded_frames(tmp_path):
    a = generate_world(tmp_path / "a", seed=5, **TINY)
    b = generate_world(tmp_path / "b", seed=5, **TINY)
    c = generate_world(tmp_path / "c", seed=6, **TINY)
    names = sorted(p.name for p in (a / "annotations").iterdir())
    assert names == sorted(p.name for p in (b / "annotations").iterdir())
    for n in names:
        assert (a / "annotations" / n).read_bytes() == (b / "annotations" / n).read_bytes()
    for mp4 in sorted((a / "videos").iterdir()):
        np.testing.assert_array_equal(read_frames(mp4), read_frames(b / "videos" / mp4.name))
    assert (a / "tasks_primary.txt").read_text() == (b / "tasks_primary.txt").read_text()
    differs = [(a / "annotations" / n).read_bytes() != (c / "annotations" / n).read_bytes() for n in names]
    assert any(differs)


def test_world_does_not_depend_on_the_number_of_worker_processes(tmp_path):
    one = generate_world(tmp_path / "one", seed=2, **{**TINY, "videos": 8, "workers": 1})
    two = generate_world(tmp_path / "two", seed=2, **{**TINY, "videos": 8, "workers": 2})
    assert len(list((one / "videos").iterdir())) == len(list((two / "videos").iterdir())) == 8  # one mp4 a video
    for mp4 in sorted((one / "videos").iterdir()):
        np.testing.assert_array_equal(read_frames(mp4), read_frames(two / "videos" / mp4.name))
        feats = mp4.parent.parent / "features" / f"{mp4.stem}.npy"
        np.testing.assert_array_equal(np.load(feats), np.load(two / "features" / feats.name))


@pytest.mark.slow
def test_loader_reads_the_world_with_videos_features_and_split(synth_world):
    ds = load_dataset("demo", synth_world)
    assert len(ds.videos) == 42 and len(ds.tasks) == len(TASKS)
    assert ds.split("train") and ds.split("test")
    assert len(ds.actions) == len({s for t in TASKS for s in t.steps})
    for v in ds.videos[:5]:
        info = video_info(v.video_file)
        feats = np.load(v.feature_file)
        assert feats.shape == (round(info.duration), 256) and v.duration == info.duration
        assert info.width == 64 and info.fps == 8.0
        assert max(s.end for s in v.steps) <= v.duration
    start, goal = observations(make_episodes(ds, 3, "test"))
    assert start.shape[1] == 3 * 256 and goal.shape == start.shape
    meta = json.loads((synth_world / "world.json").read_text())
    assert meta["complete"] and meta["seed"] == 0 and meta["knobs"]["size"] == 64


def test_half_built_world_is_detected_and_rebuilt(tmp_path):
    root = ensure_world(tmp_path / "w", seed=1, **TINY)
    fp = world_fingerprint(root)
    victim = sorted((root / "videos").iterdir())[0]
    victim.unlink()
    (root / ".complete").unlink()  # as if the build had been interrupted
    assert world_fingerprint(root) is None
    assert ensure_world(root, seed=1, **TINY) == root
    assert victim.is_file() and world_fingerprint(root) == fp


def test_other_knobs_rebuild_the_world(tmp_path):
    root = ensure_world(tmp_path / "w", seed=1, **TINY)
    before = world_fingerprint(root)
    ensure_world(root, seed=1, **{**TINY, "videos": 2})
    assert world_fingerprint(root) != before
    assert len(list((root / "annotations").iterdir())) == 2  # stale files removed


def test_generate_refuses_a_folder_that_is_not_a_world(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(KeppError, match="not a synthetic world"):
        generate_world(tmp_path, **TINY)
    assert (tmp_path / "thesis.tex").read_text() == "precious"


def test_default_world_root_follows_kepp_home(monkeypatch, tmp_path):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path))
    assert default_world_root() == tmp_path / "demo-world"
    monkeypatch.delenv("KEPP_HOME")
    assert default_world_root().parts[-3:] == (".cache", "kepp", "demo-world")


@pytest.mark.slow
def test_from_plans_renders_the_niv_plans(niv_world, niv_plans):
    src = load_plans(niv_plans)
    ds = load_dataset("demo", niv_world)
    assert len(ds.videos) == 30 and len(ds.tasks) == 5
    assert all("_" not in t for t in ds.tasks)
    by_id = {v.id: v for v in src.videos}
    for v in ds.videos:
        original = by_id[v.id]
        assert ds.labels(v.plan) == src.labels(original.plan)
        assert v.split == original.split
        assert v.feature_file is not None and v.video_file is not None


def test_from_plans_keeps_coin_segments_and_sanitises_labels(tmp_path):
    coin = {"database": {
        "vid1": {"class": "Make_Juice", "subset": "training", "duration": 9.0, "recipe_type": 1,
                 "annotation": [{"id": "1", "label": "cut fruit, peel", "segment": [1.0, 3.0]},
                                {"id": "2", "label": "blend", "segment": [4.0, 6.5]}]},
        "vid2": {"class": "Make_Juice", "subset": "testing", "duration": 8.0, "recipe_type": 1,
                 "annotation": [{"id": "2", "label": "blend", "segment": [2.0, 5.0]}]}}}
    path = tmp_path / "COIN.json"
    path.write_text(json.dumps(coin))
    root = generate_world(tmp_path / "w", from_plans=path, **{**TINY, "videos": None})
    ds = load_dataset("demo", root)
    v1 = ds.video("vid1")
    assert [(s.start, s.end) for s in v1.steps] == [(1.0, 3.0), (4.0, 6.5)]
    assert ds.labels(v1.plan) == ["cut fruit; peel", "blend"]
    assert list(ds.tasks) == ["Make-Juice"] and ds.tasks["Make-Juice"].name == "Make_Juice"
    assert ds.video("vid2").split == "test" and video_info(v1.video_file).duration == 9.0


def test_cli_synth_writes_a_world_and_rejects_bad_knobs(tmp_path, capsys):
    out = tmp_path / "w"
    assert main(["data", "synth", "--out", str(out), "--videos", "2", "--size", "32", "--step-min", "1",
                 "--step-max", "1.5", "--workers", "1", "--seed", "3"]) == 0
    assert "wrote 2 videos" in capsys.readouterr().out
    assert json.loads((out / "world.json").read_text())["seed"] == 3
    assert main(["data", "synth", "--out", str(tmp_path / "x"), "--similarity", "2"]) == 2
    assert "similarity" in capsys.readouterr().err
    assert main(["data", "synth", "--out", str(tmp_path / "y"), "--from-plans", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: plans file not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["data", "synth", "--difficulty", "extreme"])
    assert e.value.code == 2


# --- one writer per folder ------------------------------------------------------------------------------
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
