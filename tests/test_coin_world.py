"""The COIN world (issue 12): 300 videos rendered from ``../shared/data/coin/COIN.json`` by
``kepp data synth --from-plans``, then read back by the loaders, cut into episodes and shown
by the app's pages (annotation-only: zero-shot planning with the graph, no models).

Every rendered video is checked against its COIN record: COIN's own split, its steps in COIN's
time order as actions (one action per COIN step id), its segments and its features."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from test_app_pages import no_problems, open_page, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("coin-world")]

VIDEOS, FPS, SIZE = 300, 2, 32
SUBSET = {"training": "train", "testing": "test"}


@pytest.fixture(scope="module")
def coin_world(coin_json, tmp_path_factory) -> Path:
    """A 300-video COIN world made by the real renderer through the command line."""
    from kepp_core.cli import main

    out = tmp_path_factory.mktemp("coin-world") / "world"
    code = main(["data", "synth", "--from-plans", str(coin_json), "--videos", str(VIDEOS), "--out", str(out),
                 "--workers", "2", "--fps", str(FPS), "--size", str(SIZE)])
    assert code == 0, "kepp data synth --from-plans COIN.json failed"
    return out


@pytest.fixture(scope="module")
def world(coin_world):
    from kepp_core.data import load_dataset

    return load_dataset("demo", coin_world)


@pytest.fixture(scope="module")
def coin_records(coin_json) -> dict[str, dict]:
    """COIN.json's records by the video id the renderer gives them (file-name safe)."""
    database = json.loads(Path(coin_json).read_text(encoding="utf-8"))["database"]
    return {re.sub(r"[^A-Za-z0-9._\-]+", "-", vid).strip("-.") or "x": rec for vid, rec in database.items()}


def coin_steps(rec: dict) -> list[tuple[float, float, str, str]]:
    """``(start, end, step id, label)`` of a COIN record in time order (as COIN's loader orders them)."""
    steps = [(float(a["segment"][0]), float(a["segment"][1]), str(a["id"]), str(a["label"])) for a in rec["annotation"]]
    return sorted(steps, key=lambda s: (s[0], s[1]))


def test_every_video_keeps_coins_split_steps_and_segments(world, coin_records):
    assert len(world.videos) == VIDEOS
    assert {v.split for v in world.videos} == {"train", "test"}
    action_of_step: dict[str, int] = {}
    for v in world.videos:
        rec = coin_records[v.id]
        assert v.split == SUBSET[rec["subset"]], v.id
        assert world.tasks[v.task].name == rec["class"]
        steps = coin_steps(rec)
        assert len(v.steps) == len(steps), f"{v.id}: {len(v.steps)} segments, COIN has {len(steps)}"
        for got, (start, end, sid, label) in zip(v.steps, steps):
            # one action per COIN step id, named by its label (commas become ';')
            assert action_of_step.setdefault(sid, got.action) == got.action, f"{v.id}: step id {sid}"
            assert world.actions[got.action].startswith(label.replace(",", ";").strip()), (v.id, sid)
            assert got.start == pytest.approx(start, abs=1e-3)
            assert got.end == pytest.approx(max(end, start + 1.0 / FPS), abs=1e-3)
    # distinct COIN steps stay distinct actions, and the world has no others
    assert len(set(action_of_step.values())) == len(action_of_step) == world.num_actions


def test_the_split_matches_coin_for_the_sampled_videos(world, coin_records):
    test = {v.id for v in world.split("test")}
    assert test == {v.id for v in world.videos if coin_records[v.id]["subset"] == "testing"}
    assert 0 < len(test) < VIDEOS
    # the 300 are spread over COIN: most of its tasks appear
    assert len(world.tasks) > 100


def test_features_and_videos_exist_with_one_row_per_second(world, coin_world, coin_records):
    manifest = json.loads((coin_world / "features" / "features.json").read_text(encoding="utf-8"))
    dim = manifest.get("dim", manifest.get("D"))
    assert dim == 256
    for v in world.videos:
        assert v.video_file is not None and v.video_file.stat().st_size > 0, v.id
        assert v.feature_file is not None, v.id
        feats = np.load(v.feature_file, mmap_mode="r")
        rec = coin_records[v.id]
        last = max(s.end for s in v.steps)
        seconds = math.ceil(max(last + 1.0, float(rec.get("duration") or 0)))
        assert feats.shape == (seconds, dim), v.id
        assert v.duration == seconds
        assert np.isfinite(feats).all(), v.id


@pytest.mark.parametrize("horizon", [3, 4])
def test_episodes_are_contiguous_windows_of_their_videos_steps(world, horizon):
    from kepp_core.data.episodes import make_episodes

    episodes = make_episodes(world, horizon, split=None)
    assert len(episodes) == sum(max(0, len(v.steps) - horizon + 1) for v in world.videos)
    assert {e.video.split for e in episodes} == {"train", "test"}
    for e in episodes:
        assert e.actions == e.video.plan[e.first:e.first + horizon]
        assert e.horizon == horizon
        seconds = int(e.video.duration)
        assert e.start_window and e.goal_window
        assert all(0 <= i < seconds for i in e.start_window + e.goal_window), e.id
    assert len(make_episodes(world, horizon, split="test")) > 0


# --- the app on this world: annotations and features, no models, no records -----------------------------
class World:
    """The app pointed at the COIN world (demo layout) with no models, records or runs."""

    def __init__(self, root: Path):
        self.root = root

    def environ(self) -> dict:
        return {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": str(self.root), "KEPP_APP_CHECKPOINTS": None,
                "KEPP_APP_PREDICTIONS": None, "KEPP_APP_GRAPH": None, "KEPP_APP_RUNS": None}


def test_home_summarises_the_coin_world(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world))
    no_problems(at)
    shown = {m.label: m.value for m in at.metric}
    assert shown == {"Tasks": str(len(world.tasks)), "Actions": str(world.num_actions),
                     "Train videos": str(len(world.split("train"))), "Test videos": str(len(world.split("test")))}


def test_plan_page_plans_zero_shot_with_the_graph(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world), "pages/1_Plan.py")
    no_problems(at)
    assert any("graph alone" in t for t in texts(at.info))
    assert "The graph's top-3 plans" in texts(at.subheader)
    cards = [m.value for m in at.markdown if 'class="kepp-plan"' in m.value]
    assert cards and all(c.count('class="kepp-card"') == 3 for c in cards)
    assert at.selectbox(key="zs_task").value in world.tasks
    # T=4 on a task one of whose test videos has four steps: its first episode's ends are planned
    task = min(v.task for v in world.split("test") if len(v.steps) >= 4)
    at.selectbox(key="zs_task").set_value(task).run()
    at.selectbox(key="zs_T").set_value(4).run()
    no_problems(at)
    assert "The graph's top-3 plans" in texts(at.subheader)
    cards = [m.value for m in at.markdown if 'class="kepp-plan"' in m.value]
    assert cards and all(c.count('class="kepp-card"') == 4 for c in cards)
    caption = next(t for t in texts(at.caption) if t.startswith("From "))
    assert "in 4 steps" in caption
    steps = {world.actions[a] for v in world.videos if v.task == task for a in v.plan}
    assert any(label in caption for label in steps)


def test_graph_page_centres_on_a_step_of_this_world(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world), "pages/2_Graph.py")
    no_problems(at)
    step = at.selectbox(key="graph_step").value
    assert step in world.actions
    table = at.dataframe[0].value
    assert len(table) and set(table["from"]) | set(table["to"]) <= set(world.actions)
    assert any(f"of **{step}**" in t for t in texts(at.caption))


def dataset_caption(world) -> str:
    return f"{len(world.videos)} videos · {world.num_actions} actions"


def test_heatmaps_show_one_task_of_this_world(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world), "pages/3_Heatmaps.py")
    no_problems(at)
    assert any("No prediction records loaded" in t for t in texts(at.info))
    assert any(dataset_caption(world) in t for t in texts(at.caption))
    task = at.selectbox(key="heat_task").value
    assert task in world.tasks
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [t["type"] for t in fig["data"]] and all(t["type"] == "heatmap" for t in fig["data"])
    ticks = [t.rstrip(" ✱") for t in fig["layout"]["xaxis"]["ticktext"]]
    assert set(ticks) == set(world.labels(world.task_actions(task)))


@pytest.mark.parametrize("page", ["pages/4_Failure_cases.py", "pages/5_Results.py"])
def test_record_pages_say_there_are_no_records(monkeypatch, coin_world, world, page):
    at = open_page(monkeypatch, World(coin_world), page)
    no_problems(at)
    assert any("No prediction records found" in t for t in texts(at.info))
    assert any(dataset_caption(world) in t for t in texts(at.caption))
