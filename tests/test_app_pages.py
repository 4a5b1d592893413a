"""Every page of the Streamlit app through ``streamlit.testing.v1.AppTest``, with real
interactions on a small synthetic world and the shipped demo models."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_env import AppEnv, HORIZON, MEMBERS, METHODS
from tests.helpers.app_session import cards, dataset, no_problems, open_page, open_settings, texts


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


# --- Home and sidebar --------------------------------------------------------------------------------
def test_home_summarises_the_loaded_dataset(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env)
    no_problems(at)
    ds = dataset(app_env)
    shown = {m.label: m.value for m in at.metric}
    assert shown == {"Tasks": str(len(ds.tasks)), "Actions": str(ds.num_actions),
                     "Train videos": str(len(ds.split("train"))), "Test videos": str(len(ds.split("test")))}


def test_nonexistent_dataset_path_is_a_message_and_the_sidebar_recovers(monkeypatch, app_env, tmp_path):
    # the world is not among the start paths here: the person running the server allows it
    at = open_page(monkeypatch, app_env, KEPP_APP_ROOT=tmp_path / "nowhere", KEPP_APP_ALLOW_ROOTS=app_env.world)
    assert not at.exception
    assert any("does not exist" in t for t in texts(at.error))
    assert not at.metric
    open_settings(at).text_input(key="cfg_root").set_value(str(app_env.world)).run()
    no_problems(at)
    assert len(at.metric) == 4


def test_config_file_loaded_from_the_sidebar_replaces_the_settings(monkeypatch, app_env, tmp_path):
    at = open_page(monkeypatch, app_env, KEPP_APP_ROOT=tmp_path / "nowhere", KEPP_APP_ALLOW_ROOTS=app_env.world)
    bad = tmp_path / "bad.toml"
    bad.write_text('colour = "blue"\n')
    open_settings(at).text_input(key="cfg_file").set_value(str(bad))
    at.button(key="cfg_load").click().run()
    assert any("unknown key 'colour'" in t for t in texts(at.sidebar.error))
    good = tmp_path / "app.toml"
    good.write_text(f'[app]\ndataset = "demo"\nroot = "{app_env.world}"\ncheckpoints = "{app_env.models}"\n')
    at.text_input(key="cfg_file").set_value(str(good))
    at.button(key="cfg_load").click().run()
    no_problems(at)
    assert len(at.metric) == 4
    assert at.text_input(key="cfg_root").value == str(app_env.world)


def test_presentation_mode_switches_to_large_type_and_survives_page_changes(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env)
    assert not any("font-size: 143%" in t for t in texts(at.markdown))
    at.toggle(key="cfg_presentation").set_value(True).run()
    assert any("font-size: 143%" in t for t in texts(at.markdown))
    at.switch_page("views/6_Training.py").run()
    assert at.toggle(key="cfg_presentation").value is True
    assert any("font-size: 143%" in t for t in texts(at.markdown))


# --- Plan ---------------------------------------------------------------------------------------------
def plan_page(monkeypatch, env, **overrides) -> AppTest:
    at = open_page(monkeypatch, env, "views/1_Plan.py", **overrides)
    no_problems(at)
    return at


def test_plan_shows_endpoints_paths_plan_and_ground_truth(monkeypatch, app_env):
    ds = dataset(app_env)
    T = app_env.horizon
    # the last test video listed; its first episode's clips are the defaults; no record named: planned live
    video = [v for v in ds.split("test") if v.video_file is not None and len(v.steps) >= T][-1]
    at = plan_page(monkeypatch, app_env, query={"video": video.id, "T": str(T)})
    assert len(at.selectbox(key="plan_video").options) > 1
    R = at.selectbox(key="plan_R").value
    at.button(key="plan_go").click().run()
    no_problems(at)
    shown = texts(at.markdown)
    # the live view names its method (the evaluation row the live planner is) and its verdict
    assert any("Live · KEPP" in t and ("success" in t or "failure" in t) for t in shown)
    # marked against the truth, each step a link to the graph around it (components.ui.step_links)
    ends = next(t for t in shown if t.startswith('Step model: â₁ <a class="kepp-step-link"'))
    assert 'â_T <a class="kepp-step-link"' in ends and sum(f'<b class="kepp-step">{a}</b>' in ends for a in ds.actions) >= 1
    # the plan and the ground truth, T cards each, and each distinct graph path of the R once
    heads = [t for t in shown if "graph path" in t]
    assert 1 <= len(heads) <= R and cards(at) == (2 + len(heads)) * T
    assert any("ground truth · " in t and " steps right" in t for t in shown)
    assert any("Planned by" in t and "encoder" in t for t in texts(at.caption))
    # the plan graph: its drawing (in a frame that reports clicks on steps) with its legend
    drawn = at.get("bidi_component")
    assert drawn, "the plan graph was not drawn"
    html = json.loads(drawn[0].proto.json)["html"]
    assert 'class="kepp-legend-entry"' in html and "ground truth" in html


def test_moving_a_clip_changes_the_query_and_needs_a_new_plan(monkeypatch, app_env):
    at = plan_page(monkeypatch, app_env)
    at.button(key="plan_go").click().run()
    assert cards(at) > 0
    start = next(s for s in at.slider if s.label == "Start clip (s)")
    lo, hi = start.value
    start.set_range(lo + 0.5, hi + 0.5).run()
    assert cards(at) == 0 and any("press **Plan**" in t for t in texts(at.info))
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert cards(at) > 0


def test_fast_sampler_plans_and_says_so(monkeypatch, app_env):
    at = plan_page(monkeypatch, app_env)
    at.selectbox(key="plan_sampler").select("fast (DDIM, 5 steps)").run()
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert cards(at) > 0
    assert any("sampler ddim, 5 steps" in t for t in texts(at.caption))


def test_goal_clip_before_start_clip_is_refused(monkeypatch, app_env):
    at = plan_page(monkeypatch, app_env)
    goal = next(s for s in at.slider if s.label == "Goal clip (s)")
    goal.set_range(0.0, 3.0)
    start = next(s for s in at.slider if s.label == "Start clip (s)")
    start.set_range(4.0, 7.0)
    at.button(key="plan_go").click().run()
    assert not at.exception
    assert any("starts before the start clip" in t for t in texts(at.error))


def test_clip_shorter_than_the_observation_window_is_refused(monkeypatch, app_env):
    at = plan_page(monkeypatch, app_env)
    start = next(s for s in at.slider if s.label == "Start clip (s)")
    start.set_range(1.0, 2.0)
    at.button(key="plan_go").click().run()
    assert any("shorter than the model's observation window" in t for t in texts(at.error))


def test_only_trained_horizons_are_offered_and_a_link_to_another_says_so(monkeypatch, app_env):
    from kepp_core.models.folders import trained_horizons

    at = plan_page(monkeypatch, app_env)
    assert [int(t) for t in at.selectbox(key="plan_T").options] == trained_horizons(app_env.models)
    at = plan_page(monkeypatch, app_env, query={"T": "5"})
    (said,) = [t for t in texts(at.warning) if t.startswith("Not taken from this link")]
    assert "T='5'" in said and at.selectbox(key="plan_T").value == app_env.horizon
    # the rest of the app keeps working
    at.switch_page("views/6_Training.py").run()
    no_problems(at)


@pytest.mark.parametrize("kind", ["not a video", "truncated video"])
def test_upload_that_is_not_a_video_or_is_corrupt_is_a_message(monkeypatch, app_env, kind):
    if kind == "not a video":
        name, data = "notes.mp4", b"this is not a video at all"
    else:
        video = next(v for v in dataset(app_env).videos if v.video_file is not None)
        name, data = "cut.mp4", video.video_file.read_bytes()[:4000]
    at = plan_page(monkeypatch, app_env)
    at.radio(key="plan_source").set_value("Upload a video").run()
    at.file_uploader(key="plan_upload").set_value((name, data, "video/mp4")).run()
    assert not at.exception
    assert any(name in t and "decode" in t for t in texts(at.error))
    # the rest of the page's controls still answer
    at.radio(key="plan_source").set_value("From the dataset").run()
    no_problems(at)


def test_uploaded_video_is_encoded_with_the_dataset_encoder_and_planned(monkeypatch, app_env):
    ds = dataset(app_env)
    video = next(v for v in ds.split("test") if v.video_file is not None)
    at = plan_page(monkeypatch, app_env)
    at.radio(key="plan_source").set_value("Upload a video").run()
    at.file_uploader(key="plan_upload").set_value(("clip.mp4", video.video_file.read_bytes(), "video/mp4")).run()
    no_problems(at)
    assert any("encoded with the dataset's encoder" in t for t in texts(at.caption))
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert cards(at) > 0 and not any("ground truth · " in t for t in texts(at.markdown))  # an upload: no truth


# --- Graph --------------------------------------------------------------------------------------------
def test_graph_depth_and_minimum_probability_filter_the_edges(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/2_Graph.py")
    no_problems(at)
    at.session_state["open_graph_edges"] = True  # the drawing's transitions as a table, in their expander
    step = at.selectbox(key="graph_step").options[0]
    at.selectbox(key="graph_step").select(step)
    at.slider(key="graph_depth").set_value(1).run()
    one = at.dataframe[0].value
    at.slider(key="graph_depth").set_value(2).run()
    two = at.dataframe[0].value
    assert len(two) >= len(one) > 0
    assert any("within 2 steps" in t for t in texts(at.caption))
    at.slider(key="graph_min_p").set_value(0.3).run()
    high = at.dataframe[0].value
    assert len(high) <= len(two) and (high["P²KG probability"] >= 0.3).all()
    assert at.get("iframe")


def test_graph_search_narrows_the_step_list(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/2_Graph.py")
    everything = at.selectbox(key="graph_step").options
    word = everything[0].split()[0]
    at.text_input(key="graph_query").set_value(word).run()
    narrowed = at.selectbox(key="graph_step").options
    assert narrowed and all(word.lower() in s.lower() for s in narrowed)
    assert len(narrowed) <= len(everything)


def test_expert_trajectories_count_the_task_training_transitions(monkeypatch, app_env):
    ds = dataset(app_env)
    task = sorted(ds.tasks)[0]
    expected = Counter((ds.actions[u], ds.actions[v]) for v in ds.split("train") if v.task == task
                       for u, v in zip(v.plan, v.plan[1:]))
    at = open_page(monkeypatch, app_env, "views/2_Graph.py", {"tab": "expert"})
    at.selectbox(key="graph_expert_task").select(task).run()
    at.session_state["open_graph_expert_edges"] = True  # its table's expander opened
    no_problems(at.run())
    table = next(d.value for d in at.dataframe if "count in task" in d.value.columns)
    shown = {(r["from"], r["to"]): r["count in task"] for _, r in table.iterrows()}
    assert shown == dict(expected)


# --- Heatmaps -----------------------------------------------------------------------------------------
def test_heatmaps_share_one_action_order_and_rows_are_distributions(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/3_Heatmaps.py")
    no_problems(at)
    assert not at.dataframe
    at.toggle(key="heat_tables").set_value(True).run()
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 3  # training, test, predictions
    orders = [list(t["from"]) for t in tables]
    assert orders[0] == orders[1] == orders[2]
    for t in tables:
        sums = t.drop(columns="from").sum(axis=1)
        assert (((sums - 1).abs() < 1e-6) | (sums == 0)).all()
    assert len(at.get("echarts_chart")) == 2  # the three heatmaps side by side, and the difference


# --- Training -----------------------------------------------------------------------------------------
def test_training_page_overlays_the_runs_logs(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/6_Training.py", KEPP_APP_RUNS=app_env.models)
    no_problems(at)
    runs = at.multiselect(key="train_runs").options
    assert any(r.endswith("step") for r in runs)
    at.multiselect(key="train_runs").set_value(runs[:2]).run()
    no_problems(at)
    table = at.dataframe[0].value
    assert len(table) == 2 and (table["steps"] > 0).all()
    assert at.get("plotly_chart")


# --- Results and failure cases ------------------------------------------------------------------------
def records(env):
    from kepp_core.evaluation.records import read_records

    return read_records(env.records)


def test_results_metrics_match_the_records(monkeypatch, app_env):
    recs = records(app_env)
    at = open_page(monkeypatch, app_env, "views/5_Results.py")
    no_problems(at)
    before = len(at.dataframe)
    at.session_state["open_res_metrics"] = True  # the expander opened
    no_problems(at.run())
    assert len(at.dataframe) == before + 1  # all metrics: made only in their open expander
    table = next(d.value for d in at.dataframe if "method" in d.value and "episodes" in d.value)
    row = table[table["method"] == "kepp-R1"].iloc[0]
    sr = 100 * sum(r["plans"]["kepp-R1"] == r["gt"] for r in recs) / len(recs)
    assert row["SR"] == pytest.approx(sr, abs=0.01) and row["episodes"] == len(recs)
    grid = at.dataframe[0].value  # method x T
    assert float(grid.loc["KEPP R=1", "T=3 SR"].split()[0]) == pytest.approx(sr, abs=0.01)  # then its interval


def test_results_filters_and_method_comparison(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/5_Results.py")
    at.selectbox(key="res_method").select("kepp-R1")
    at.selectbox(key="res_outcome").select("incorrect").run()
    no_problems(at)
    episodes = next(d.value for d in at.dataframe if "correct" in d.value)
    assert len(episodes) and not episodes["correct"].any()
    at.multiselect(key="res_compare").set_value(["kepp-R1", "kepp-nograph"]).run()
    no_problems(at)
    assert any(t.startswith("**KEPP R=1**") for t in texts(at.markdown))
    assert any(t.startswith("**KEPP without graph condition**") for t in texts(at.markdown))


def test_failure_statistics_match_the_analysis_module(monkeypatch, app_env):
    from kepp_core.evaluation.failures import failure_stats, outcome_from_record

    recs = records(app_env)
    expected = failure_stats([outcome_from_record(r, "kepp-R1") for r in recs])
    at = open_page(monkeypatch, app_env, "views/4_Failure_cases.py")
    at.selectbox(key="fail_method").select("kepp-R1").run()
    no_problems(at)
    stats = {r["statistic"]: r["value"] for _, r in at.dataframe[0].value.iterrows()}
    assert stats["failures"] == expected.failures
    assert stats["wrong endpoint, failures (%)"] == pytest.approx(expected.wrong_endpoint_of_failures, abs=0.005)
    pattern = next(p for p, n in expected.pattern_counts.items() if n)
    at.radio(key="fail_pattern").set_value(pattern).run()
    no_problems(at)
    count = expected.pattern_counts[pattern]  # the failures of the pattern, 50 to a page
    assert len(next(d.value for d in at.dataframe if "ground truth" in d.value)) == min(count, 50)
    assert f"episodes 1–{min(count, 50)} of {count:,}" in texts(at.caption)
    assert any(t.startswith("Patterns that apply") for t in texts(at.markdown))


# --- a second world, given by path ----------------------------------------------------------------------
def test_a_world_rendered_from_niv_plans_works_by_path(monkeypatch, app_env, niv_world):
    from kepp_core.data import load_dataset

    ds = load_dataset("demo", niv_world)
    at = open_page(monkeypatch, app_env, KEPP_APP_ROOT=niv_world, KEPP_APP_CHECKPOINTS=None,
                   KEPP_APP_PREDICTIONS=None, KEPP_APP_ALLOW_ROOTS=app_env.models)
    no_problems(at)
    assert {m.label: m.value for m in at.metric}["Actions"] == str(ds.num_actions)
    at.switch_page("views/2_Graph.py").run()
    no_problems(at)
    assert set(at.selectbox(key="graph_step").options) == set(ds.actions)
    at.switch_page("views/3_Heatmaps.py").run()
    no_problems(at)
    at.toggle(key="heat_tables").set_value(True).run()
    assert len(at.dataframe) == 2  # training and test plans; no predictions for this world
    # no models for it: said so, and the page plans with the graph alone (zero-shot)
    at.switch_page("views/1_Plan.py").run()
    no_problems(at)
    assert any("no checkpoints folder" in t and "graph alone" in t for t in texts(at.info))
    assert at.selectbox(key="zs_T").value == 3 and at.markdown
    # the demo models do not fit its vocabulary: said so
    open_settings(at).text_input(key="cfg_checkpoints").set_value(str(app_env.models)).run()
    assert not at.exception
    assert any("vocabulary" in t for t in texts(at.error))


@pytest.fixture(scope="module")
def niv_env(niv_world, tmp_path_factory):
    """The NIV-plans world given by path, with models and records that kepp makes for it."""

    from kepp_core.cli import main

    out = tmp_path_factory.mktemp("niv-models")
    models, records = out / "models", out / "predictions.jsonl"
    common = ["--dataset", "demo", "--root", str(niv_world)]
    assert main(["train", "all", *common, "--out", str(models), "--horizons", str(HORIZON), "--only", *MEMBERS,
                 "--train-steps", "20", "--diffusion-steps", "10", "--dim", "16", "--val-every", "1000",
                 "--no-progress"]) == 0
    assert main(["eval", *common, "--models", str(models), "-T", str(HORIZON), "--records", str(records),
                 "--methods", *METHODS]) == 0
    return AppEnv(niv_world, models, records, HORIZON)


def test_every_page_works_on_the_niv_world_with_its_own_models(monkeypatch, niv_env):
    ds = dataset(niv_env)
    at = plan_page(monkeypatch, niv_env, KEPP_APP_RUNS=niv_env.models)
    at.selectbox(key="plan_T").select(niv_env.horizon).run()
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert all(m.value in ds.actions for m in at.metric)
    assert cards(at) >= 3 * niv_env.horizon  # graph path(s), the plan and the ground truth
    for page in ("views/2_Graph.py", "views/3_Heatmaps.py", "views/4_Failure_cases.py",
                 "views/5_Results.py", "views/6_Training.py", "views/7_Playlists.py"):
        at.switch_page(page).run()
        no_problems(at)
    at.switch_page("views/5_Results.py")
    at.session_state["open_res_metrics"] = True  # all metrics, below the method x T table, in their expander
    metrics = next(d.value for d in at.run().dataframe if "method" in d.value and "episodes" in d.value)
    assert set(metrics["method"]) >= {"kepp-R1", "kepp-nograph"}
    assert {"KEPP R=1", "KEPP without graph condition"} <= set(at.dataframe[0].value.index)
