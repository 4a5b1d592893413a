"""The app on the field's split lists with features alone (no mp4, no features.json: the released
CrossTask / COIN / NIV features' case), KEPP's records beside another method's predictions brought in with
``kepp records import``, the published numbers of the benchmark the dataset is, and the evaluation code
the Results page's metrics come from. Real sessions through ``streamlit.testing.v1.AppTest``
(``lists_env``: tests/helpers/app_env.py)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from urllib.parse import parse_qsl

import pytest

from components.records import metric_codes, urls
from components.talk import playlists
from components.ui.text import md
from kepp_core.catalog.benchmark import family
from kepp_core import api, catalog
from tests.helpers.app_env import IMPORTED, IMPORTED_FILE
from tests.helpers.app_session import cards, no_problems, open_page, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]

LABEL = f"{IMPORTED} (imported: {IMPORTED_FILE})"
FALSE = "no videos with features and step segments"  # the old message, false on features alone


def page_links(at, label: str) -> list[dict[str, str]]:
    """The query of every page link whose label holds ``label``."""
    return [dict(parse_qsl(e.proto.query_string)) for e in at.get("page_link") if label in e.proto.label]


def everything_said(at) -> str:
    return "\n".join(texts(at.markdown) + texts(at.caption) + texts(at.info) + texts(at.warning) + texts(at.error))


def test_open_in_plan_from_results_lands_on_a_features_only_episode_and_plans_it(monkeypatch, lists_env):
    results = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"method": "kepp-R2"}))
    query = page_links(results, "Open in Plan")
    assert len(query) == 1 and query[0]["rec"] == "kepp-R2"
    at = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", query[0]))
    said = everything_said(at)
    assert FALSE not in said and "No video file" in said and not at.get("video")  # no player, said why
    assert at.selectbox(key="plan_video").value == query[0]["video"]
    assert any(v.startswith("Recorded") or "Recorded ·" in v for v in texts(at.markdown))
    assert cards(at) >= 2 * int(query[0]["T"])  # the recorded plan and the ground truth
    assert "start clip" in said and "goal clip" in said and "during" in said  # the windows named by their steps
    at.button(key="plan_go").click().run()  # the live re-plan, from the features
    assert no_problems(at).query_params["live"] == "1" and cards(at) >= 2 * int(query[0]["T"])


def test_home_scenes_on_features_alone_open_their_episodes_and_offer_no_upload(monkeypatch, lists_env):
    home = no_problems(open_page(monkeypatch, lists_env))
    scenes = [dict(parse_qsl(e.proto.query_string)) for e in home.get("page_link") if "rec=" in e.proto.query_string]
    assert scenes and not [e for e in home.get("page_link") if "upload" in e.proto.label.lower()]
    scene = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", scenes[0]))  # a scene opens its episode
    assert FALSE not in everything_said(scene) and scene.selectbox(key="plan_video").value == scenes[0]["video"]
    assert cards(scene) >= 2 * int(scenes[0]["T"])
    at = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py"))
    scene_keys = [b.key for b in at.button if b.key.startswith("plan_scene_")]
    assert scene_keys and "plan_scene_upload" not in scene_keys
    assert not [r for r in at.radio if r.key == "plan_source"]  # no upload offered: no encoder the models accept
    assert any(c.startswith("No upload: the dataset's features do not say which encoder") for c in texts(at.caption))
    at.button(key=scene_keys[0]).click().run()
    no_problems(at)
    assert FALSE not in everything_said(at) and cards(at) >= 6 and at.query_params["rec"]
    # a link to the upload source is not taken, and said so
    link = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", {"source": "upload"}))
    assert any("source='upload'" in w for w in texts(link.warning))


def test_a_world_without_mp4_files_plans_from_features_and_says_what_a_video_lacks(monkeypatch, app_env, tmp_path):
    """The demo-format world without its videos/ folder (features.json kept: the encoder is known, so an
    upload is offered, but no scene is an upload: no video file to load as one) and one test video's
    feature file removed: a link to that video is said to lack it."""
    world = tmp_path / "world"
    shutil.copytree(app_env.world, world, ignore=shutil.ignore_patterns("videos"))
    ds = api.open_dataset(api.AppConfig(dataset="demo", root=str(world)))
    assert all(v.video_file is None for v in ds.videos)
    gone = next(v for v in ds.split("test") if len(v.steps) >= app_env.horizon)
    gone.feature_file.unlink()
    env = dataclasses.replace(app_env, world=world)
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"video": gone.id, "T": str(app_env.horizon)}))
    lacks = md(f"video {gone.id} cannot be planned at T={app_env.horizon}: it has no per-second feature file")
    assert any(lacks in w for w in texts(at.warning))
    assert at.radio(key="plan_source").options == ["From the dataset", "Upload a video"]  # an encoder the models take
    assert "plan_scene_upload" not in {b.key for b in at.button} and not at.get("video")
    assert FALSE not in everything_said(at) and "No video file" in everything_said(at)
    at.button(key="plan_go").click().run()
    assert cards(no_problems(at)) >= 2 * app_env.horizon  # planned from the features: plan and ground truth


def test_imported_predictions_are_named_with_their_file_in_results_and_failure_cases(monkeypatch, lists_env):
    at = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"method": IMPORTED}))
    assert LABEL in at.dataframe[0].value.index  # the method x T table
    method = at.selectbox(key="res_method")
    assert method.value == IMPORTED and method.format_func(IMPORTED) == LABEL
    episodes = next(d.value for d in at.dataframe if "ground truth" in d.value)
    assert set(episodes["method"]) == {LABEL}
    assert any(md(LABEL) in m for m in texts(at.markdown))  # the episode's column title
    assert any("not recorded: the imported predictions" in m for m in texts(at.markdown))  # endpoints: —, not invented
    preds = api.read_predictions(sorted(lists_env.records.glob("*.jsonl")))
    pattern = preds[(preds["method"] == IMPORTED) & ~preds["success"]]["pattern"].iloc[0]
    fail = no_problems(open_page(monkeypatch, lists_env, "views/4_Failure_cases.py", {"method": IMPORTED,
                                                                                      "pattern": pattern}))
    assert fail.selectbox(key="fail_method").format_func(IMPORTED) == LABEL
    assert any(md(LABEL) in m for m in texts(fail.markdown))
    # its record on the Plan page: the recorded plan, and said that nothing re-plans it
    query = page_links(fail, "Open in Plan")[0]
    assert query["rec"] == IMPORTED and "model" not in query
    plan = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", query))
    said = everything_said(plan)
    assert md(LABEL) in said and "the app has no model of it" in said and "not recorded: the imported predictions" in said
    assert cards(plan) >= 2 * lists_env.horizon


def test_the_ab_comparison_takes_an_imported_method(monkeypatch, lists_env):
    query = {"method": "kepp-R2", "a": "kepp-R2", "b": IMPORTED, "cell": "a-only"}
    at = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", query))
    assert at.selectbox(key="res_ab_b").value == IMPORTED and at.selectbox(key="res_ab_b").format_func(IMPORTED) == LABEL
    assert any(m.label == f"SR B: {md(LABEL)}" for m in at.metric)
    preds = api.read_predictions(sorted(lists_env.records.glob("*.jsonl")))
    expected = api.compare_methods(preds, "kepp-R2", IMPORTED, lists_env.horizon)
    assert any(f"{expected.counts['a-only']:,}" in b.label for b in at.button if b.key == "res_ab_a-only")
    if expected.counts["a-only"]:
        assert page_links(at, f"Open {md(LABEL)} in Plan")


def test_published_numbers_show_apart_only_where_the_benchmark_matches(monkeypatch, lists_env):
    niv = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"code": "pdpp"}, KEPP_APP_BENCHMARK="niv"))
    published = next(d.value for d in niv.dataframe if "source" in d.value)
    rows = api.literature_rows("niv", lists_env.horizon, "pdpp")
    assert list(published["method"]) == [f"{r.method} (published)" for r in rows] and len(rows) == 2
    assert all(r.paper in s and r.table in s for r, s in zip(rows, published["source"]))
    assert any(c.startswith(metric_codes.PUBLISHED) for c in texts(niv.caption))
    assert not set(published["method"]) & set(niv.dataframe[0].value.index)  # a table of its own
    kepp_code = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", KEPP_APP_BENCHMARK="niv"))
    assert not [d for d in kepp_code.dataframe if "source" in d.value]
    assert any("choose that code above" in c and "(`pdpp`)" in c for c in texts(kepp_code.caption))
    none = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"code": "pdpp"}, KEPP_APP_BENCHMARK=None))
    assert not [d for d in none.dataframe if "source" in d.value]
    assert not any(c.startswith(metric_codes.PUBLISHED) or "choose that code" in c for c in texts(none.caption))


def test_unconfirmed_published_rows_are_marked_so_on_results(monkeypatch, lists_env):
    from kepp_core.catalog.benchmark import LITERATURE_UNCONFIRMED

    at = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"code": "vpn"},
                               KEPP_APP_BENCHMARK="crosstask-133"))
    published = next(d.value for d in at.dataframe if "source" in d.value)
    rows = api.literature_rows("crosstask-133", lists_env.horizon, "vpn")
    assert list(published["method"]) == [r.label for r in rows]
    assert sorted(m for m in published["method"] if m.endswith("(published, unconfirmed)")) == sorted(
        f"{r.method} (published, unconfirmed)" for r in rows if not r.confirmed) and len(rows) == 6
    assert "ViterbiPlanNet (published)" in list(published["method"])
    (caption,) = [c for c in texts(at.caption) if c.startswith(metric_codes.PUBLISHED)]
    assert md(LITERATURE_UNCONFIRMED) in caption
    niv = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"code": "vpn"}, KEPP_APP_BENCHMARK="niv"))
    confirmed = next(d.value for d in niv.dataframe if "source" in d.value)
    assert list(confirmed["method"]) == ["ViterbiPlanNet (published)"] and "32.37" in str(confirmed.iloc[0].to_dict())
    assert not [c for c in texts(niv.caption) if md(LITERATURE_UNCONFIRMED) in c]


def test_the_evaluation_code_picked_names_every_header_of_results(monkeypatch, lists_env):
    at = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py"))
    assert list(at.dataframe[0].value.columns) == ["T=3 SR"] and "code" not in at.query_params
    assert any(c.startswith("Metrics computed by KEPP (this package)'s code") for c in texts(at.caption))
    at.segmented_control(key="res_code").set_value("vpn").run()
    no_problems(at)
    assert list(at.dataframe[0].value.columns) == ["T=3 SR (ViterbiPlanNet)"] and at.query_params["code"] == "vpn"
    at.segmented_control(key="res_metric").set_value("all").run()
    headers = [m.header for m in family("vpn").metrics if m.key != "first_acc"]
    assert list(at.dataframe[0].value.columns) == [f"T=3 {h}" for h in headers]
    again = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"code": "pdpp", "metric": "mIoU"}))
    assert list(again.dataframe[0].value.columns) == ["T=3 mIoU (PDPP, per batch)", "T=3 mIoU (PDPP, per episode)"]
    assert catalog.method_label("kepp-R2") in again.dataframe[0].value.index


def test_a_playlist_item_of_an_imported_method_is_named_with_its_file(monkeypatch, lists_env, tmp_path):
    from components.talk import playlists
    from kepp_core.evaluation.playlists import PlaylistStore

    records = tmp_path / "records"
    shutil.copytree(lists_env.records, records)  # the playlists go beside this copy
    env = dataclasses.replace(lists_env, records=records)
    preds = api.read_predictions(sorted(records.glob("*.jsonl")))
    PlaylistStore(records / "playlists").add("talk", [playlists.item_of_row(preds[preds["method"] == IMPORTED].iloc[0])])
    at = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": "talk"}))
    assert [m for m in texts(at.markdown) if " · T=" in m and md(LABEL) in m]
    played = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "1"}))
    said = everything_said(played)  # the item played on the Plan page: the record, on features alone
    assert md(LABEL) in said and "No video file" in said and FALSE not in said and cards(played) >= 2 * env.horizon
    shown = everything_said(no_problems(open_page(monkeypatch, env, "views/8_Presenter.py", {"playlist": "talk"})))
    assert md(LABEL) in shown and "not recorded: the imported predictions" in shown  # the presenter view says so too
    # without models the item plays the same record (nothing re-plans it), not the zero-shot page
    bare = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "1"},
                                 KEPP_APP_CHECKPOINTS=None))
    said = everything_said(bare)
    assert md(LABEL) in said and "graph alone" not in said and cards(bare) >= 2 * env.horizon and not bare.warning


def test_the_episode_map_of_a_features_only_dataset_links_its_episodes_to_the_plan_page(monkeypatch, lists_env):
    at = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"method": "kepp-R2", "map": "1"}))
    maps = [s for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart")) if "PC 1" in json.dumps(s["layout"])]
    ids = [e for trace in maps[0]["data"] for e in trace["customdata"]]
    preds = api.read_predictions(sorted(lists_env.records.glob("*.jsonl")))
    shown = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == lists_env.horizon)]
    assert len(maps) == 1 and sorted(ids) == sorted(shown["episode"])  # every test episode is on the map
    assert any("Click a point to open its episode in Plan" in c for c in texts(at.caption))
    at.session_state["res_map_open"] = ids[-1]  # what a click on the last point leaves for the next run
    at.run()
    task, video, first, horizon = catalog.parse_episode_id(ids[-1])
    assert dict(at.query_params) | {"video": video, "ep": str(first), "rec": "kepp-R2"} == dict(at.query_params)
    said = everything_said(no_problems(at))  # on the Plan page: that episode, from its features, no player
    assert "No video file" in said and FALSE not in said and not at.get("video") and cards(at) >= 2 * horizon
    # without models: the same click opens that episode's record (no live planner to plan it)
    bare = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py", {"method": "kepp-R2", "map": "1"},
                                 KEPP_APP_CHECKPOINTS=None))
    bare.session_state["res_map_open"] = ids[-1]
    bare.run()
    said = everything_said(no_problems(bare))
    assert bare.query_params["video"] == video and bare.query_params["rec"] == "kepp-R2" and "graph alone" not in said
    assert md(catalog.method_label("kepp-R2")) in said and cards(bare) >= 2 * horizon


NO_MODELS = {"KEPP_APP_CHECKPOINTS": None}  # the lists and the records alone: no models folder


def test_open_in_plan_of_an_imported_methods_ab_row_without_models_opens_that_episodes_recorded_plan(monkeypatch,
                                                                                                    lists_env):
    """From an imported method's A/B row on a features-only list without models, Open in Plan showed
    the task's first episode in zero-shot mode. It shows that episode's recorded plan, labelled with its method,
    and names the keys it cannot honour."""
    preds = api.read_predictions(sorted(lists_env.records.glob("*.jsonl")))
    c = api.compare_methods(preds, "kepp-R2", IMPORTED, lists_env.horizon)
    cell = max(("both", "b-only", "neither"), key=lambda n: c.counts[n])
    ab = no_problems(open_page(monkeypatch, lists_env, "views/5_Results.py",
                               {"method": "kepp-R2", "a": "kepp-R2", "b": IMPORTED, "cell": cell}, **NO_MODELS))
    (query,) = page_links(ab, f"Open {md(LABEL)} in Plan")  # the label is Markdown: the name escaped for it
    assert query["rec"] == IMPORTED and "model" not in query
    at = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", query, **NO_MODELS))
    said = everything_said(at)
    episode = catalog.episode_id(api.open_dataset(api.AppConfig(dataset=lists_env.dataset, root=str(lists_env.world)))
                                 .video(query["video"]).task, query["video"], int(query["ep"]), int(query["T"]))
    record = preds[(preds["method"] == IMPORTED) & (preds["episode"] == episode)].iloc[0]
    assert "graph alone" not in said and md(LABEL) in said and "No model here re-plans it" in said
    assert any(f"Recorded plan · {LABEL}" in m for m in texts(at.markdown)) or md(LABEL) in said
    assert cards(at) >= 2 * int(query["T"])  # the recorded plan and the ground truth
    assert {k: at.query_params[k] for k in ("T", "video", "ep", "rec")} == {k: query[k] for k in ("T", "video", "ep", "rec")}
    assert not at.warning  # every key of the link was taken
    assert query["video"] in said and list(record["plan"]) != []
    # a trained method's link (its planner's keys, and a live view asked) on the same page: the record, the keys
    # a live re-plan would need named as not taken
    kepp = preds[(preds["method"] == "kepp-R2") & (preds["episode"] == episode)].iloc[0]
    link = {**urls.plan_query(kepp.to_dict()), "live": "1"}
    live = no_problems(open_page(monkeypatch, lists_env, "views/1_Plan.py", link, **NO_MODELS))
    (notice,) = texts(live.warning)
    assert "model=" in notice and "live='1'" in notice and "no models here" in notice
    assert cards(live) >= 2 * int(query["T"]) and "graph alone" not in everything_said(live)


def untrained_horizon_record(app_env, tmp_path):
    """``app_env`` (models of T=3 only) with its records and a T=4 record of another method ("other-method") of
    a test video's first episode, in a scratch records folder (its playlists are written beside it): the
    environment and the video."""
    from kepp_core.evaluation.records import write_records

    ds = api.open_dataset(api.AppConfig(dataset="demo", root=str(app_env.world)))
    video = next(v for v in ds.split("test") if len(v.steps) >= 4 and v.feature_file is not None)
    truth = [int(a) for a in video.plan[:4]]
    records = tmp_path / "records"
    records.mkdir()
    shutil.copy(app_env.records, records / "predictions.jsonl")
    write_records(records / "t4-records.jsonl", [{"episode": catalog.episode_id(video.task, video.id, 0, 4),
                                                  "video": video.id, "task": video.task, "T": 4, "gt": truth,
                                                  "plans": {"other-method": truth[:3] + [truth[0]]}}])
    return dataclasses.replace(app_env, records=records), video


def test_a_record_of_a_horizon_without_a_model_opens_as_recorded_with_the_models_of_another(monkeypatch, app_env,
                                                                                             tmp_path):
    """Models of T=3 only, and a record of T=4 (another method's, imported): Open in Plan shows that episode's
    recorded plan (no model re-plans it), not the first T=3 episode."""
    env, video = untrained_horizon_record(app_env, tmp_path)
    query = {"T": "4", "video": video.id, "ep": "0", "rec": "other-method"}
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", query))
    said = everything_said(at)
    assert md("no model is trained for T=4 (trained: 3)") in said and "graph alone" not in said
    assert {k: at.query_params[k] for k in query} == query and cards(at) >= 2 * 4 and not at.warning
    assert any("Recorded" in m and "other-method" in m for m in texts(at.markdown))


def test_a_playlist_item_of_a_horizon_without_a_model_plays_its_own_record(monkeypatch, app_env, tmp_path):
    """A playlist whose second item is a T=4 record (models of T=3 only): played from its place alone
    (``playlist=NAME&item=2``, as the Playlists page and the presenter link it) and by the bar's next button
    from a T=3 item, it shows that episode and its method's recorded plan, the reason named, not a T=3 one."""
    from kepp_core.evaluation.playlists import PlaylistStore

    env, video = untrained_horizon_record(app_env, tmp_path)
    preds = api.read_predictions([app_env.records])
    first = preds[preds["horizon"] == 3].iloc[0]
    episode = catalog.episode_id(video.task, video.id, 0, 4)
    row = {"episode": episode, "video": video.id, "horizon": 4, "method": "other-method"}
    PlaylistStore(env.records / "playlists").add("talk", [playlists.item_of_row(first), playlists.item_of_row(row)])
    query = {"T": "4", "video": video.id, "ep": "0", "rec": "other-method"}

    def plays_the_record(at) -> None:
        said = everything_said(no_problems(at))
        assert md("no model is trained for T=4 (trained: 3)") in said and "graph alone" not in said
        assert {k: at.query_params.get(k) for k in query} == query and at.query_params["item"] == "2"
        assert any("Recorded" in m and "other-method" in m for m in texts(at.markdown)) and cards(at) >= 2 * 4

    plays_the_record(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "2"}))
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "1"}))
    assert at.query_params["T"] == "3" and at.query_params["rec"] == first["method"]
    at.button(key="playlist_next").click().run()
    plays_the_record(at)
