"""Deep links on the Graph, Heatmaps and Training pages (their state in the URL query, restored on
load and on reload, a control change written back), and the upload scene: a dataset video loaded
through the upload path, listed with the other scenes and planned in one click. Pages through
``streamlit.testing.v1.AppTest`` on the demo world with the shipped models and records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.talk import curation
from kepp_core import api
from kepp_core.models.folders import trained_horizons
from tests.helpers.app_session import (cards, dataset, no_problems, open_page, page_scenes, prediction_table, texts,
                                       write_run)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


def srcdocs(at) -> str:
    """The drawn graphs' pages (pyvis iframes), joined."""
    return "\n".join(e.proto.srcdoc for e in at.get("iframe"))


def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_graph_page_opens_in_the_linked_state_and_writes_changes_back(monkeypatch, demo_env):
    query = {"w": "pkg", "tab": "expert", "step": "add sugar", "depth": "2", "min": "0.05", "task": "lemonade",
             "etask": "tea", "emin": "2"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py", query))
    assert at.radio(key="graph_weighting").value == "pkg"
    assert at.session_state["graph_tab"] == "Expert trajectories of a task"
    assert at.selectbox(key="graph_step").value == "add sugar" and at.slider(key="graph_depth").value == 2
    assert at.slider(key="graph_min_p").value == pytest.approx(0.05)
    assert at.selectbox(key="graph_task").value == "lemonade"
    assert at.selectbox(key="graph_expert_task").value == "tea" and at.slider(key="graph_expert_min").value == 2
    assert dict(at.query_params) == query
    drawn = srcdocs(at)
    assert "Expert trajectories of make tea" in drawn and "minimum count 2" in drawn
    assert "Frequency graph around" not in drawn  # the hidden tab draws nothing: a switch reruns the page
    # the other tab (its controls kept their state while hidden): its drawing, the expert one's gone
    at.session_state["graph_tab"] = "Around a step"
    drawn = srcdocs(no_problems(at.run()))
    assert "Frequency graph around 'add sugar'" in drawn and "depth 2 · minimum frequency weight 0.05" in drawn
    assert "Expert trajectories" not in drawn and at.selectbox(key="graph_expert_task").value == "tea"
    # a control change goes into the URL; defaults leave it
    at.slider(key="graph_depth").set_value(3).run()
    at.radio(key="graph_weighting").set_value("p2kg").run()
    url = dict(at.query_params)
    assert url["depth"] == "3" and "w" not in url and url["step"] == "add sugar"
    # a reload (a new session on the same URL) brings the same state back
    again = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py", url))
    assert again.slider(key="graph_depth").value == 3 and again.radio(key="graph_weighting").value == "p2kg"
    assert again.selectbox(key="graph_step").value == "add sugar" and dict(again.query_params) == url
    # junk in the URL is ignored, not an error
    junk = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py",
                      {"step": "no such step", "depth": "9", "min": "2", "w": "x", "tab": "?", "task": "nope"}))
    assert junk.slider(key="graph_depth").value == 1 and junk.slider(key="graph_min_p").value == 0.0
    assert junk.radio(key="graph_weighting").value == "p2kg" and junk.selectbox(key="graph_task").value == "(all tasks)"
    assert "depth" not in junk.query_params and junk.query_params["step"] in junk.selectbox(key="graph_step").options


def test_graph_search_travels_with_the_step(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py"))
    at.text_input(key="graph_query").input("sugar").run()
    options = at.selectbox(key="graph_step").options
    assert options and all("sugar" in o for o in options)
    at.selectbox(key="graph_step").select(options[-1]).run()
    url = dict(at.query_params)
    assert url["q"] == "sugar" and url["step"] == options[-1]
    again = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py", url))
    assert again.text_input(key="graph_query").value == "sugar"
    assert again.selectbox(key="graph_step").value == options[-1]


def test_heatmaps_page_opens_in_the_linked_state_and_writes_changes_back(monkeypatch, demo_env):
    query = {"task": "tea", "of": "kepp-nograph", "T": "4", "tables": "1", "a": "test", "b": "train"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/3_Heatmaps.py", query))
    assert at.selectbox(key="heat_task").value == "tea" and at.selectbox(key="heat_method").value == "kepp-nograph"
    assert at.selectbox(key="heat_T").value == 4 and at.toggle(key="heat_tables").value is True
    assert at.selectbox(key="heat_diff_a").value == "test plans"
    assert at.selectbox(key="heat_diff_b").value == "training plans"
    assert dict(at.query_params) == query
    panels, difference = (json.loads(c.proto.spec) for c in at.get("echarts_chart"))
    assert [t for t in difference["xAxis"][1]["data"] if t] == ["test plans − training plans"]
    assert "KEPP without graph condition predictions (T=4, test)" in panels["xAxis"][1]["data"]
    # a control change goes into the URL; another method's panel replaces the old one in the difference
    at.selectbox(key="heat_diff_a").select("KEPP without graph condition predictions (T=4, test)").run()
    at.selectbox(key="heat_method").select("kepp-R1").run()
    at.toggle(key="heat_tables").set_value(False).run()
    url = dict(at.query_params)
    assert url["of"] == "kepp-R1" and url["a"] == "pred" and "tables" not in url
    assert at.selectbox(key="heat_diff_a").value == "KEPP R=1 predictions (T=4, test)"
    again = no_problems(open_page(monkeypatch, demo_env, "views/3_Heatmaps.py", url))
    assert again.selectbox(key="heat_method").value == "kepp-R1" and again.selectbox(key="heat_task").value == "tea"
    assert again.selectbox(key="heat_diff_a").value == "KEPP R=1 predictions (T=4, test)"
    assert again.toggle(key="heat_tables").value is False and dict(again.query_params) == url


def test_training_page_opens_in_the_linked_state_and_writes_changes_back(monkeypatch, demo_env, tmp_path):
    for name, shift in (("a", 0.0), ("b", 0.5), ("c", 1.0)):
        write_run(tmp_path / name, [1.0 + shift, 0.5, 0.8, 0.2, 0.3, 0.05], [10, 20, 15, 30, 25, 40])
    monkeypatch.setenv("KEPP_APP_RUNS", str(tmp_path))
    query = {"runs": "b,c", "x": "step", "y": "val_score", "smooth": "0.6", "log": "1"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/6_Training.py", query))
    assert at.multiselect(key="train_runs").value == ["b", "c"] and at.radio(key="train_x").value == "step"
    assert at.multiselect(key="train_y").value == ["val_score"]
    assert at.slider(key="train_smooth").value == pytest.approx(0.6) and at.toggle(key="train_log").value is True
    assert dict(at.query_params) == query
    (fig,) = figures(at)
    assert fig["layout"]["yaxis"]["type"] == "log" and {t["legendgroup"] for t in fig["data"]} == {"b", "c"}
    at.slider(key="train_smooth").set_value(0.0).run()
    at.multiselect(key="train_runs").set_value(["a"]).run()
    at.multiselect(key="train_y").set_value(["loss", "val_score"]).run()
    url = dict(at.query_params)
    assert url == {"runs": "a", "x": "step", "y": "loss,val_score", "log": "1"}
    again = no_problems(open_page(monkeypatch, demo_env, "views/6_Training.py", url))
    assert again.multiselect(key="train_runs").value == ["a"] and again.slider(key="train_smooth").value == 0.0
    assert again.multiselect(key="train_y").value == ["loss", "val_score"] and dict(again.query_params) == url
    # unknown runs and curves in a link are dropped, not an error
    junk = no_problems(open_page(monkeypatch, demo_env, "views/6_Training.py", {"runs": "zz,c", "y": "nope", "smooth": "7"}))
    assert junk.multiselect(key="train_runs").value == ["c"] and junk.slider(key="train_smooth").value == 0.0


# --- the upload scene ----------------------------------------------------------------------------------
def test_the_upload_scene_is_offered_only_when_asked_and_is_a_success_on_another_video(demo_env):
    preds = prediction_table(demo_env)
    plain = curation.choose_scenes(preds)
    assert "upload" not in {s["kind"] for s in plain}
    scenes = page_scenes(demo_env)  # what the app asks for: no upload records, so not without the example
    assert "upload" not in scenes
    from kepp_core.data import load_dataset

    ds, hs = load_dataset("demo", demo_env.world), trained_horizons(demo_env.models)
    videos = {v.id for h in hs for v in api.playable_videos(ds, h)}
    chosen = curation.choose_scenes(preds, horizons=hs, videos=videos, upload_example=True)
    by_kind = {s["kind"]: s for s in chosen}
    up = by_kind["upload"]
    assert list(by_kind)[-1] == "upload" and up["success"] and up["T"] == min(hs)
    assert up["video"] in videos and up["video"] != by_kind["success"]["video"]
    assert up["query"]["source"] == "upload" and up["query"]["upload"] == up["video"] and "video" not in up["query"]
    assert chosen == curation.choose_scenes(preds, horizons=hs, videos=videos, upload_example=True)  # deterministic


def test_the_upload_scene_loads_a_video_through_the_upload_path_and_plans_it(monkeypatch, demo_env):
    from kepp_core.data import load_dataset

    home = no_problems(open_page(monkeypatch, demo_env))
    links = [e.proto for e in home.get("page_link") if "An uploaded video" in e.proto.label]
    assert len(links) == 1 and "source=upload" in links[0].query_string
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py"))
    assert at.radio(key="plan_source").value == "From the dataset"
    at.button(key="plan_scene_upload").click().run()
    no_problems(at)
    url = dict(at.query_params)
    assert at.radio(key="plan_source").value == "Upload a video" and url["source"] == "upload" and url["plan"] == "1"
    assert "video" not in url and url["start"] and url["goal"]
    assert any("Example upload" in str(c.value) for c in at.caption)
    assert any("encoded with the dataset's encoder" in str(c.value) for c in at.caption)
    # the file went through the upload path: this session's private folder holds a copy of the video
    stored = Path(at.session_state["kepp_upload_example"]["path"])
    ds = load_dataset("demo", demo_env.world)
    video = ds.video(url["upload"])
    assert stored.parent.name.startswith("kepp-upload-") and stored.read_bytes() == video.video_file.read_bytes()
    # planned from the pixels: the recorded plan of that episode (features encoded again match the dataset's)
    preds = prediction_table(demo_env)
    row = preds[(preds["method"] == "kepp-R2") & (preds["video"] == video.id)
                & (preds["episode"].str.endswith(f"/{url['ep']}:{url['T']}"))].iloc[0]
    kepp_plan = next(str(m.value) for m in at.markdown if "#fff8e1" in str(m.value))
    labels = ds.labels(row["plan"])
    assert all(label in kepp_plan for label in labels) and cards(at) >= 2 * int(url["T"])
    assert not any("Ground truth" in str(m.value) for m in at.markdown)  # an upload has no annotations
    # a reload brings back the example upload, its clips and the plan
    again = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", url))
    assert again.radio(key="plan_source").value == "Upload a video" and dict(again.query_params) == url
    assert cards(again) >= 2 * int(url["T"])
    # junk in an upload link is ignored, not an error
    no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", {**url, "ep": "x", "start": "9-1"}))
    no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", {**url, "upload": "no such video"}))
    # another scene goes back to the dataset's videos
    again.button(key="plan_scene_success").click().run()
    assert no_problems(again).radio(key="plan_source").value == "From the dataset" and "source" not in again.query_params


def test_the_scene_buttons_have_names_that_fit_and_the_full_one_on_hover(monkeypatch, demo_env):
    names = {"plan_scene_success": "Clean success", "plan_scene_wrong_endpoint": "Wrong endpoint",
             "plan_scene_repeated": "Repeated step", "plan_scene_long": "Long (T=6)", "plan_scene_upload": "Uploaded video"}
    shown = []
    for query in ({"present": "1"}, {}):  # the same in presentation mode: each button as wide as its name
        at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query))
        shown.append({b.key: b.label for b in at.button if b.key.startswith("plan_scene_")})
        assert at.button(key="plan_scene_upload").help.startswith("An uploaded video: ")
    assert shown == [names, names]


# --- the Plan page's state (components.ui.plan_link) ---------------------------------------------------------------
def url(at) -> dict[str, str]:
    """The session's URL query, one value per key."""
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def test_the_plan_pages_state_is_one_table_of_keys():
    from components.ui import plan_link

    assert plan_link.query(T=4, video="v", plan=True) == {"T": "4", "video": "v", "plan": "1"}
    with pytest.raises(KeyError, match="not a key of the Plan page's URL"):
        plan_link.query(colour="red")
    # the page, the playlists, the scenes, the picker and the links name no Plan-page key the table lacks,
    # and the page stops only through its link (which publishes the state first)
    from components.ui.pages import PAGES

    page = (Path(__file__).resolve().parents[1] / "app" / PAGES["plan"].path).read_text(encoding="utf-8")
    assert "st.stop()" not in page and "link.url" not in page and "link.mem" not in page


def test_every_exit_of_the_plan_page_publishes_its_state(monkeypatch, app_env):
    """An exit (a link's search that matches no video, a search typed, an upload still to come) writes
    the page's state into the URL before it stops: what the page reached this run, and the linked
    values of what it did not reach, so that a reload or a copied link shows the same page."""
    from kepp_core.models.folders import trained_horizons

    ds = dataset(app_env)
    video = next(v for v in ds.split("test") if v.video_file is not None and len(v.steps) >= 4)
    # a link to the upload source with no file yet: the exit keeps what the page reached, drops what no
    # link can carry (a user's own upload's episode and plan)
    assert trained_horizons(app_env.models) == [3]  # only trained horizons are offered (no exit for another)
    at = open_page(monkeypatch, app_env, "views/1_Plan.py", {"T": "3", "source": "upload", "model": "graph-R1",
                                                              "plan": "1", "ep": "1"})
    assert any("Upload a video to plan from it" in t for t in texts(at.info))
    assert url(at) == {"T": "3", "R": "1", "model": "graph-R1", "method": "p2kg", "sampler": "own", "source": "upload"}
    # a search that matches no video: the search is in the URL, no video is
    at = no_problems(open_page(monkeypatch, app_env, "views/1_Plan.py", {"T": "3", "video": video.id, "ep": "1"}))
    at.text_input(key="plan_vsearch").set_value("no such video 0000").run()
    assert not at.exception and any("No video matches" in t for t in texts(at.warning))
    assert url(at)["vq"] == "no such video 0000" and "video" not in url(at) and url(at)["T"] == "3"
    # the upload source, no file yet: the source is in the URL, the dataset video's keys are not
    at.text_input(key="plan_vsearch").set_value("").run()
    at.radio(key="plan_source").set_value("Upload a video").run()
    assert not at.exception and url(at)["source"] == "upload"
    assert not {"video", "vq", "vtask", "start", "goal", "plan"} & set(url(at)), url(at)
    # back to the dataset: the page is where it was
    at.radio(key="plan_source").set_value("From the dataset").run()
    no_problems(at)
    assert "source" not in url(at) and url(at)["T"] == "3" and "video" in url(at)


def test_a_heatmap_cell_lists_its_episodes_and_opens_one_in_plan(monkeypatch, demo_env):
    """cell=a-b (a click on a heatmap cell): the episodes of the method, T and task whose plan
    or truth has that transition, and an Open in Plan link for the picked one."""
    from kepp_core.data import load_dataset

    ds = load_dataset("demo", demo_env.world)
    preds = api.read_predictions([demo_env.records])
    rows = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 4) & (preds["task"] == "tea")]
    a, b = next((p[k], p[k + 1]) for p in rows["truth"] for k in range(len(p) - 1))
    query = {"task": "tea", "of": "kepp-R2", "T": "4", "cell": f"{a}-{b}"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/3_Heatmaps.py", query))
    assert dict(at.query_params)["cell"] == f"{a}-{b}"
    assert any(h.value == f"Episodes with {ds.actions[a]} → {ds.actions[b]}" for h in at.subheader)
    holds = lambda p: any((x, y) == (a, b) for x, y in zip(p, p[1:]))  # noqa: E731
    expected = {e for e, p, t in zip(rows["episode"], rows["plan"], rows["truth"]) if holds(p) or holds(t)}
    from components.ui.names import episode_label

    names = {episode_label(e, {"tea": ds.tasks["tea"].name}) for e in expected}
    assert set(at.selectbox(key="heat_episode").options) == names  # each named in words
    links = [el.proto for el in at.get("page_link")]
    assert [p.label for p in links if p.label == "Open in Plan"], "no Open in Plan link"
