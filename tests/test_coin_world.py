"""The COIN world (docs, At scale): 300 videos rendered from ``../shared/data/coin/COIN.json`` by
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

from tests.helpers.app_session import no_problems, open_page, texts


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
    at = open_page(monkeypatch, World(coin_world), "views/1_Plan.py")
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
    at = open_page(monkeypatch, World(coin_world), "views/2_Graph.py")
    no_problems(at)
    step = at.selectbox(key="graph_step").value
    assert step in world.actions
    at.session_state["open_graph_edges"] = True  # the drawing's transitions, in their expander
    table = no_problems(at.run()).dataframe[0].value
    assert len(table) and set(table["from"]) | set(table["to"]) <= set(world.actions)
    assert any(f"of **{step}**" in t for t in texts(at.caption))


def dataset_caption(world) -> str:
    return f"{len(world.videos)} videos · {world.num_actions} actions"


def test_heatmaps_show_one_task_of_this_world(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world), "views/3_Heatmaps.py")
    no_problems(at)
    assert any("No prediction records loaded" in t for t in texts(at.info))
    assert any(dataset_caption(world) in t for t in texts(at.caption))
    task = at.selectbox(key="heat_task").value
    assert task in world.tasks
    chart = json.loads(at.get("echarts_chart")[0].proto.spec)
    assert [s["type"] for s in chart["series"]] == ["heatmap"]  # one series: every panel's cells, each clickable
    assert chart["series"][0]["selectedMode"] == "single"
    ticks = {(t["value"] if isinstance(t, dict) else t).removesuffix(" ✱") for t in chart["xAxis"][0]["data"]} - {""}
    assert ticks == set(world.labels(world.task_actions(task)))


@pytest.mark.parametrize("page", ["views/4_Failure_cases.py", "views/5_Results.py"])
def test_record_pages_say_there_are_no_records(monkeypatch, coin_world, world, page):
    at = open_page(monkeypatch, World(coin_world), page)
    no_problems(at)
    assert any("No prediction records found" in t for t in texts(at.info))
    assert any(dataset_caption(world) in t for t in texts(at.caption))


# --- the app at scale: searchable pickers, a capped graph, paged records ----------------------------------
BIG = 20_000  # prediction records (episodes) in the records file of the paging tests
EVAL_METHODS = ["random", "graph-pred", "kepp-R1"]


class Scaled(World):
    """The app pointed at the COIN world with tiny models trained on it and a big records file."""

    def __init__(self, root: Path, models: Path, records: Path, real: Path | None = None):
        super().__init__(root)
        self.models, self.records, self.real = models, records, real  # real: the records kepp eval wrote

    def environ(self) -> dict:
        return {**super().environ(), "KEPP_APP_CHECKPOINTS": str(self.models), "KEPP_APP_PREDICTIONS": str(self.records)}


@pytest.fixture(scope="module")
def scaled(coin_world, tmp_path_factory) -> Scaled:
    """Tiny models trained on the COIN world by ``kepp train`` (the pages are under test, not the
    models), their real ``kepp eval`` records, and those records repeated to :data:`BIG` records.

    Why repeated: the 300-video world has only 168 test episodes at T=3, and evaluating the full
    COIN world (about 2,800 test videos, several horizons, methods and seeds: tens of thousands of
    records) takes hours here. The paging under test only needs that many rows, so every real record
    is written again under a new episode id (``task/video~k/first:T``, the video id kept so that
    "Open in Plan" still opens a real video) by the project's own records writer."""
    from kepp_core.cli import main
    from kepp_core.evaluation.records import read_records, write_records

    out = tmp_path_factory.mktemp("coin-scaled")
    models, real = out / "models", out / "real.jsonl"
    common = ["--dataset", "demo", "--root", str(coin_world), "--threads", "1"]
    assert main(["train", "all", *common, "--out", str(models), "--horizons", "3", "--only", "step", "plan-graph-R1",
                 "--train-steps", "20", "--diffusion-steps", "10", "--dim", "16", "--val-every", "1000",
                 "--no-progress"]) == 0
    assert main(["eval", *common, "--models", str(models), "-T", "3", "--records", str(real),
                 "--methods", *EVAL_METHODS]) == 0
    recs = read_records(real)
    assert 100 < len(recs) < BIG
    big = []
    for k in range(-(-BIG // len(recs))):
        for r in recs:
            task, video, tail = r["episode"].split("/")
            big.append({**r, "episode": r["episode"] if k == 0 else f"{task}/{video}~{k}/{tail}"})
    write_records(out / "predictions.jsonl", big[:BIG])
    return Scaled(coin_world, models, out / "predictions.jsonl", real)


def session(monkeypatch, env, page: str, query: dict | None = None):
    """A fresh browser session (a new tab) on ``page`` with ``query`` in its URL."""
    at = open_page(monkeypatch, env, page, query=query, timeout=300, KEPP_THREADS="1")
    no_problems(at)
    return at


def playable(world, horizon: int = 3) -> list:
    from kepp_core import api

    return api.playable_videos(world, horizon)


def test_plan_video_picker_narrows_by_task_and_id_and_holds_at_most_200(monkeypatch, scaled, world):
    videos = playable(world)
    assert len(videos) > 200  # the bound is exercised
    at = session(monkeypatch, scaled, "views/1_Plan.py")
    picker = at.selectbox(key="plan_video")
    assert len(picker.options) == 200
    assert f"showing 200 of {len(videos):,} matches — narrow the search" in texts(at.caption)
    # by task: only that task's videos
    task = max({v.task for v in videos}, key=lambda t: sum(v.task == t for v in videos))
    at.selectbox(key="plan_vtask").set_value(task).run()
    no_problems(at)
    own = [v.id for v in videos if v.task == task]
    assert at.selectbox(key="plan_video").value in own and len(at.selectbox(key="plan_video").options) == len(own)
    assert at.query_params["vtask"] == task and at.query_params["video"] in own
    # by id, across all tasks: a piece of one video's id finds it (any case)
    target = videos[-1]  # listed last: beyond the first 200
    at.selectbox(key="plan_vtask").set_value("(all tasks)").run()
    at.text_input(key="plan_vsearch").set_value(target.id[1:6].upper()).run()
    no_problems(at)
    found = at.selectbox(key="plan_video")
    assert target.id in [o.split(" · ")[-1].split(" (")[0] for o in found.options]
    assert all(target.id[1:6].lower() in o.lower() for o in found.options)
    found.set_value(target.id).run()
    assert at.query_params["video"] == target.id and at.query_params["vq"] == target.id[1:6].upper()
    # by task name: every listed video is of a task whose name holds the word
    word = world.tasks[task].name.split()[0]
    at.text_input(key="plan_vsearch").set_value(word).run()
    names = {world.tasks[t].name for t in world.tasks if word.lower() in world.tasks[t].name.lower()}
    assert at.selectbox(key="plan_video").options and all(o.split(" · ")[0] in names or word.lower() in o.lower()
                                                           for o in at.selectbox(key="plan_video").options)
    # nothing matches: a message, not an error
    at.text_input(key="plan_vsearch").set_value("no such video 0000").run()
    assert not at.exception and any("No video matches" in t for t in texts(at.warning))


def test_a_link_to_a_video_beyond_the_first_200_matches_opens_it(monkeypatch, scaled, world):
    videos = playable(world)
    target = videos[-1]
    at = session(monkeypatch, scaled, "views/1_Plan.py", {"video": target.id, "ep": "0", "T": "3"})
    assert at.selectbox(key="plan_video").value == target.id
    assert at.selectbox(key="plan_vtask").value == "(all tasks)" and at.text_input(key="plan_vsearch").value == ""
    assert len(at.selectbox(key="plan_video").options) == 200  # the linked video first, then 199 matches
    assert any("the linked video is listed first" in t for t in texts(at.caption))
    assert at.query_params["video"] == target.id
    # the link's episode of that video is shown (its annotated steps)
    assert at.selectbox(key=f"plan_episode_{target.id}_3").value == 0


def test_zero_shot_episode_picker_searches_by_id_and_task_name(monkeypatch, coin_world, world):
    at = open_page(monkeypatch, World(coin_world), "views/1_Plan.py")
    at.selectbox(key="zs_task").set_value("(all tasks)").run()
    no_problems(at)
    box = next(s for s in at.selectbox if s.key.startswith("zs_episode_None_"))
    everything = box.options
    assert len(everything) > 20
    video = everything[-1].split("/")[1]
    at.text_input(key="zs_search").set_value(video).run()
    no_problems(at)
    box = next(s for s in at.selectbox if s.key.startswith("zs_episode_None_"))
    assert box.options and all(f"/{video}/" in o for o in box.options) and len(box.options) < len(everything)
    assert any(t.endswith("matching episodes") or t.endswith("matching episode") for t in texts(at.caption))


def drawn_nodes(at) -> set[str]:
    """The labels of the steps in the page's graph drawing (pyvis's node list)."""
    page = at.get("iframe")[0].proto.srcdoc
    return {n["label"] for n in json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))}


def busiest_step(world) -> tuple[str, int]:
    """The step with the largest neighbourhood of depth 3 in the graph of the training plans, and its size."""
    from kepp_core import api
    from kepp_core.graph import subgraph

    graph = api.Workspace(api.AppConfig(dataset="demo", root=str(world.root))).graph()
    sizes = {a: len(subgraph(graph, a, 3, scorer="p2kg").nodes) for a in range(graph.num_actions)}
    best = max(sizes, key=sizes.get)
    return graph.actions[best], sizes[best]


def test_graph_page_caps_the_nodes_and_says_how_many_it_left_out(monkeypatch, coin_world, world):
    from kepp_core import api

    # COIN's step ids belong to one task each: its neighbourhoods are small, so the cap is set below one
    step, total = busiest_step(world)
    assert total >= 5
    cap = total - 3
    at = session(monkeypatch, World(coin_world), "views/2_Graph.py", {"step": step, "depth": "3", "max": str(cap)})
    assert at.number_input(key="graph_max").value == cap and at.selectbox(key="graph_step").value == step
    at.session_state["open_graph_edges"] = True  # the drawing's transitions, in their expander
    table = no_problems(at.run()).dataframe[0].value
    shown = set(table["from"]) | set(table["to"])
    assert step in shown and len(shown) == cap
    assert any(f"Showing {cap} of {total} nodes (strongest edges kept; raise the cap to see more)" in t
               for t in texts(at.info))
    graph = api.Workspace(api.AppConfig(dataset="demo", root=str(world.root))).graph()
    kept, edges, _ = api.capped_subgraph(graph, graph.action_index(step), 3, max_nodes=cap)
    assert sorted(zip(table["from"], table["to"])) == sorted((graph.actions[u], graph.actions[v]) for u, v in edges)
    assert drawn_nodes(at) == {graph.actions[a] for a in kept}
    # raising the cap to the neighbourhood's size draws it all, and the message goes
    at.number_input(key="graph_max").set_value(total).run()
    no_problems(at)
    assert len(drawn_nodes(at)) == total
    assert not any("Showing" in t for t in texts(at.info))
    assert at.query_params["max"] == str(total)


def episodes_of(env, method: str, horizon: int = 3, pattern: str | None = None) -> list[str]:
    """The episode ids of a method's records in file order (of one primary failure pattern)."""
    from kepp_core import api

    preds = api.read_predictions([env.records])
    sel = preds[(preds["method"] == method) & (preds["horizon"] == horizon)]
    if pattern is not None:
        sel = sel[sel["pattern"] == pattern]
    return list(sel["episode"])


def page_caption(at) -> str:
    return next(t for t in texts(at.caption) if t.startswith("episodes "))


def episode_rows(at):
    """The page's table of episodes (the one with a ground-truth column)."""
    return next(d.value for d in at.dataframe if "ground truth" in d.value.columns)


def test_results_page_through_20000_records_one_page_at_a_time(monkeypatch, scaled):
    at = session(monkeypatch, scaled, "views/5_Results.py")
    method = at.selectbox(key="res_method").value
    ids = episodes_of(scaled, method)
    assert len(ids) == BIG
    assert page_caption(at) == f"episodes 1–50 of {BIG:,}"
    assert len(episode_rows(at)) == 50 and at.selectbox(key="res_episode").value == ids[0]
    assert len(at.selectbox(key="res_episode").options) == 50
    at.button(key="res_page_next").click().run()
    no_problems(at)
    assert page_caption(at) == f"episodes 51–100 of {BIG:,}" and at.number_input(key="res_page").value == 2
    assert at.selectbox(key="res_episode").value == ids[50] and at.query_params["episode"] == ids[50]
    # the episode buttons cross page borders
    at.button(key="res_ep_prev").click().run()
    assert at.number_input(key="res_page").value == 1 and at.selectbox(key="res_episode").value == ids[49]
    # a page number: straight to the last page
    at.number_input(key="res_page").set_value(BIG // 50).run()
    no_problems(at)
    assert page_caption(at) == f"episodes {BIG - 49:,}–{BIG:,} of {BIG:,}"
    assert at.selectbox(key="res_episode").value == ids[-50]


def test_a_link_to_an_episode_on_a_later_page_opens_that_page(monkeypatch, scaled):
    method = "kepp-R1"
    ids = episodes_of(scaled, method)
    target = ids[12_345]
    at = session(monkeypatch, scaled, "views/5_Results.py", {"method": method, "T": "3", "episode": target})
    assert at.selectbox(key="res_episode").value == target
    assert at.number_input(key="res_page").value == 12_345 // 50 + 1
    assert page_caption(at) == f"episodes 12,301–12,350 of {BIG:,}"
    assert at.query_params["episode"] == target


def test_failure_cases_page_through_the_failures_and_open_a_linked_one(monkeypatch, scaled):
    method = "kepp-R1"
    at = session(monkeypatch, scaled, "views/4_Failure_cases.py", {"method": method, "T": "3"})
    pattern = at.radio(key="fail_pattern").value
    ids = episodes_of(scaled, method, pattern=pattern)
    assert len(ids) > 1000
    assert page_caption(at) == f"episodes 1–50 of {len(ids):,}"
    assert len(episode_rows(at)) == 50 and len(at.selectbox(key="fail_episode").options) == 50
    at.button(key="fail_page_next").click().run()
    no_problems(at)
    assert at.selectbox(key="fail_episode").value == ids[50] and page_caption(at).startswith("episodes 51–100 of")
    # a new tab on a link to a failure far down the list opens its page
    target = ids[len(ids) - 7]
    again = session(monkeypatch, scaled, "views/4_Failure_cases.py",
                    {"method": method, "T": "3", "pattern": pattern, "episode": target})
    assert again.selectbox(key="fail_episode").value == target
    assert again.number_input(key="fail_page").value == (len(ids) - 7) // 50 + 1
    links = [e.proto for e in again.get("page_link") if "Open in Plan" in e.proto.label]
    assert links and f"video={target.split('/')[1].split('~')[0]}" in links[0].query_string


def test_an_episode_of_two_seeds_opens_on_the_linked_seeds_page(monkeypatch, scaled, tmp_path):
    from kepp_core.evaluation.records import read_records, write_records

    recs = read_records(scaled.real)  # records of two seeds list every episode twice, 168 rows apart
    path = write_records(tmp_path / "predictions.jsonl", [{**r, "seed": s} for s in (0, 1) for r in recs])
    env = Scaled(scaled.root, scaled.models, path)
    ids = [r["episode"] for r in recs]
    second = len(recs) + 5  # the second seed's row of the sixth episode
    query = {"method": "kepp-R1", "T": "3", "episode": ids[5]}
    at = session(monkeypatch, env, "views/5_Results.py", {**query, "page": str(second // 50 + 1)})
    # the list spans two seeds: each row reads with its seed (episodes.unit_ids), the linked page's row is seed 1's
    assert at.number_input(key="res_page").value == second // 50 + 1
    assert at.selectbox(key="res_episode").value == f"{ids[5]} · seed 1"
    at.button(key="res_ep_next").click().run()  # the next row of that seed, not of the first
    assert at.selectbox(key="res_episode").value == f"{ids[6]} · seed 1"
    assert at.number_input(key="res_page").value == (second + 1) // 50 + 1
    assert at.query_params["page"] == str((second + 1) // 50 + 1)
    first = session(monkeypatch, env, "views/5_Results.py", query)  # no page: the first seed's
    assert first.number_input(key="res_page").value == 1 and "page" not in first.query_params
