"""The app for talks and links: scenes chosen from prediction records, the method x T table,
page state in the URL (restored on load and reload), presentation mode from ``?present=``,
next/previous episodes, "Open in Plan" links. Logic through ``kepp_core.api``; pages through
``streamlit.testing.v1.AppTest`` on the small synthetic world of ``test_app_fixtures``."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from components.ui import names
from components.records import urls
from components.talk import curation
from kepp_core import api, catalog
from kepp_core.api import analysis
from kepp_core.evaluation.stats import mean_ci
from tests.helpers.app_env import APP, REPO
from tests.helpers.app_session import cards, no_problems, open_page, page_scenes, prediction_table

DEMO_RECORDS = REPO / "assets" / "demo" / "predictions.jsonl"


# --- logic: scenes, the method x T table, links -----------------------------------------------------
@pytest.fixture(scope="module")
def demo_preds():
    return api.read_predictions([DEMO_RECORDS])


def test_scenes_are_named_curated_and_deterministic(demo_preds):
    scenes = curation.choose_scenes(demo_preds)
    by_kind = {s["kind"]: s for s in scenes}
    assert list(by_kind) == ["success", "wrong_endpoint", "repeated", "long"]  # no uploads in these records
    rows = demo_preds.set_index(["episode", "method"])
    ok = rows.loc[(by_kind["success"]["episode"], by_kind["success"]["method"])]
    assert ok["success"] and ok["endpoints"] == (ok["truth"][0], ok["truth"][-1])
    assert "wrong_endpoint" in rows.loc[(by_kind["wrong_endpoint"]["episode"], "kepp-R2")]["patterns"]
    assert "repeated_subsequence" in rows.loc[(by_kind["repeated"]["episode"], "kepp-R2")]["patterns"]
    assert by_kind["long"]["T"] == 6 and by_kind["long"]["name"] == "A long horizon (T=6)"
    assert {s["method"] for s in scenes} == {"kepp-R2"}
    q = by_kind["success"]["query"]  # the record itself (rec, seed), and the model a live re-plan runs
    assert q == {"video": ok["video"], "ep": q["ep"], "T": str(ok["horizon"]), "rec": "kepp-R2", "seed": "0",
                 "model": "graph-R2", "R": "2"}
    assert curation.choose_scenes(demo_preds) == scenes  # same records, same scenes
    # only what the app can open: another horizon set, and an unknown (uploaded) video
    short = curation.choose_scenes(demo_preds, horizons=[3])
    assert {s["T"] for s in short} == {3} and "long" not in {s["kind"] for s in short}
    videos = set(demo_preds["video"]) - {by_kind["success"]["video"]}
    uploaded = curation.choose_scenes(demo_preds, videos=videos)
    assert uploaded[-1]["kind"] == "upload" and uploaded[-1]["video"] == by_kind["success"]["video"]


def test_scenes_of_no_records_are_none():
    assert curation.choose_scenes(None) == [] and curation.choose_scenes(pd.DataFrame(columns=analysis.RECORD_COLUMNS)) == []


def test_remembered_scenes_are_the_chosen_ones_and_judge_the_records_once_per_file_version(
        demo_preds, tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    records = tmp_path / "predictions.jsonl"
    records.write_bytes(DEMO_RECORDS.read_bytes())
    reads = []

    def read():
        reads.append(1)
        return demo_preds

    args = {"horizons": [3, 4], "videos": set(demo_preds["video"]), "upload_example": True}
    expected = curation.choose_scenes(demo_preds, **args)
    assert curation.remembered_scenes([records], read, **args) == expected and len(reads) == 1
    assert curation.remembered_scenes([records], read, **args) == expected and len(reads) == 1  # from disk
    assert curation.remembered_scenes([records], read, **{**args, "horizons": [3]}) == \
        curation.choose_scenes(demo_preds, **{**args, "horizons": [3]}) and len(reads) == 2  # other arguments
    records.write_bytes(records.read_bytes() + b"\n")  # the file changed: judged again
    assert curation.remembered_scenes([records], read, **args) == expected and len(reads) == 3
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "a-file" / "home"))  # a cache that cannot be written
    assert curation.remembered_scenes([records], read, **args) == expected and len(reads) == 4
    assert curation.remembered_scenes([records], read, **args) == expected and len(reads) == 5  # chosen every time


def test_method_by_horizon_table_marks_the_best_and_gives_intervals_over_seeds(demo_preds):
    grid, best = api.method_horizon_table(demo_preds)
    assert list(grid.columns[:3]) == ["T=3 SR", "T=3 mAcc", "T=3 mIoU"] and len(grid.columns) == 12
    assert set(grid.index) == {catalog.method_label(m) for m in demo_preds["method"].unique()}
    assert "±" not in grid.iloc[0, 0] and " [" in grid.iloc[0, 0]  # one seed: no interval over seeds, one over episodes
    for col, name in best.items():
        assert float(grid.loc[name, col].split()[0]) == max(float(v.split()[0]) for v in grid[col])
    # three seeds: seed 1 and 2 make kepp-R1 fail every T=3 episode, so its interval is wide
    t3 = demo_preds[demo_preds["horizon"] == 3]
    worse = t3.assign(plan=[tuple(a + 10_000 for a in t) if m == "kepp-R1" else p
                            for p, t, m in zip(t3["plan"], t3["truth"], t3["method"])])
    seeds = pd.concat([t3, worse.assign(seed=1), worse.assign(seed=2)])
    grid3, best3 = api.method_horizon_table(seeds)
    r1 = grid3.loc[catalog.method_label("kepp-R1"), "T=3 SR"]
    mean, half = (float(x) for x in r1.split(" ± "))
    sr = [float(grid.loc[catalog.method_label("kepp-R1"), "T=3 SR"].split()[0]), 0.0, 0.0]
    m, h = mean_ci(sr)  # the one interval (90%, Student t) of every result table
    assert (mean, half) == (round(m, 2), round(h, 2)) and half > 10
    means = {name: float(v.split(" ± ")[0]) for name, v in grid3["T=3 SR"].items()}
    assert means[best3["T=3 SR"]] == max(means.values()) and best3["T=3 SR"] != catalog.method_label("kepp-R1")


def test_readable_names_and_plan_queries():
    assert catalog.pattern_label("repeated_subsequence") == "repeated sub-sequence"
    assert "_" not in catalog.pattern_label("wrong_endpoint, same_start_end")
    assert names.episode_label("lemonade/0009/4:6", {"lemonade": "make lemonade"}) == \
        "make lemonade · video 0009 · steps 5–10"
    assert names.episode_label("odd id") == "odd id"
    assert urls.plan_query({"episode": "a/v1/2:4", "video": "v1", "horizon": 4, "method": "kepp-nograph"}) == \
        {"video": "v1", "ep": "2", "T": "4", "rec": "kepp-nograph", "model": "none"}
    # a baseline's record opens too (its live re-plan runs the page's model); a decoded row's runs its base's
    random = urls.plan_query({"episode": "a/v1/0:3", "video": "v1", "horizon": 3, "method": "random", "seed": 1})
    assert "model" not in random and random["rec"] == "random" and random["seed"] == "1"
    assert urls.plan_query({"episode": "a/v1/0:3", "video": "v1", "horizon": 3, "method": "kepp-R1+dec"})["model"] == "graph-R1"


# --- pages ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_plan_page_opens_on_the_clean_success_scene(monkeypatch, demo_env):
    scene = page_scenes(demo_env)["success"]
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py"))
    assert at.selectbox(key="plan_video").value == scene["video"]
    assert at.query_params["video"] == scene["video"] and at.query_params["ep"] == scene["query"]["ep"]
    # the scene's record is shown at once (no planning): KEPP R=2's plan, a success
    assert at.query_params["rec"] == "kepp-R2" and "plan" not in at.query_params
    assert any("Recorded · KEPP R=2" in str(m.value) and ">success<" in str(m.value) for m in at.markdown)
    # the scene bar: a scene's button loads its episode's record
    wrong = page_scenes(demo_env)["wrong_endpoint"]
    at.button(key="plan_scene_wrong_endpoint").click().run()
    no_problems(at)
    assert at.selectbox(key="plan_video").value == wrong["video"]
    assert at.query_params["ep"] == wrong["query"]["ep"] and at.query_params["rec"] == "kepp-R2"
    truth_link = re.compile(r'\(truth: <a class="kepp-step-link"[^>]*><b class="kepp-step">')  # the true end, a step link
    assert cards(at) >= 2 * demo_env.horizon and any(truth_link.search(str(m.value)) for m in at.markdown)
    assert any("failure: wrong predicted endpoint" in str(m.value) for m in at.markdown)


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_a_plan_link_restores_the_episode_and_plans_and_survives_a_reload(monkeypatch, demo_env):
    preds = prediction_table(demo_env)
    row = preds[(preds["method"] == "kepp-R1") & (preds["horizon"] == demo_env.horizon)].iloc[-1]
    query = {**urls.plan_query(dict(row)), "sampler": "ddim5"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", query))
    vid, ep = query["video"], int(query["ep"])
    assert at.selectbox(key="plan_video").value == vid
    assert at.selectbox(key=f"plan_episode_{vid}_{demo_env.horizon}").value == ep
    assert at.selectbox(key="plan_R").value == 1 and "R=1" in at.selectbox(key="plan_variant").value
    assert at.selectbox(key="plan_R").options == ["1"]  # R is the model's: no R = 2 for an R = 1 model
    assert at.selectbox(key="plan_sampler").value.startswith("fast")
    assert cards(at) >= 2 * demo_env.horizon  # planned at once
    url = dict(at.query_params)
    assert {k: url[k] for k in query} == query and url["start"] and url["goal"]
    # a control change goes into the URL; a reload (new session, same URL) brings it back
    r2 = next(v for v in at.selectbox(key="plan_variant").options if "R=2" in v and "structured" not in v)
    at.selectbox(key="plan_variant").select(r2).run()
    assert at.query_params["R"] == "2" and at.query_params["model"] == "graph-R2"
    assert "plan" not in at.query_params  # the shown plan was R=1's
    at.button(key="plan_go").click().run()
    url = dict(at.query_params)
    again = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", url))
    assert at.selectbox(key="plan_R").value == again.selectbox(key="plan_R").value == 2
    assert again.selectbox(key=f"plan_episode_{vid}_{demo_env.horizon}").value == ep and cards(again) > 0
    # next / previous episode buttons
    again.button(key="plan_ep_next").click().run()
    assert again.query_params["ep"] == str(ep + 1 if ep + 1 < len(again.selectbox(
        key=f"plan_episode_{vid}_{demo_env.horizon}").options) else 0)
    # junk in the URL is ignored, not an error
    no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", {"video": "nope", "ep": "x", "T": "99", "model": "?"}))


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_presentation_mode_from_the_url_and_back(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, None, {"present": "1"}))
    css = lambda: any("kepp-present" in str(m.value) for m in at.markdown)  # noqa: E731
    assert css() and at.toggle(key="cfg_presentation").value is True
    assert not at.sidebar.text_input  # settings hidden
    assert at.button(key="present_exit")  # the page bar's way out
    at.switch_page("views/5_Results.py").run()
    assert css() and at.query_params.get("present") == "1"
    at.button(key="present_exit").click().run()
    no_problems(at)
    assert not css() and "present" not in at.query_params and at.toggle(key="cfg_presentation").value is False
    at.toggle(key="cfg_presentation").set_value(True).run()
    assert css() and at.query_params.get("present") == "1"


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_failure_cases_link_to_plan_step_episodes_and_keep_state_in_the_url(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, "views/4_Failure_cases.py", {"method": "kepp-R1"}))
    assert at.selectbox(key="fail_method").value == "kepp-R1"
    table = next(d.value for d in at.dataframe if "ground truth" in d.value)  # the failures
    assert "episode" in table and not any("_" in str(p) for p in table["pattern"])
    stats = at.dataframe[0].value
    assert "None" not in stats.astype(str).to_string() and "nan" not in stats.astype(str).to_string()
    ids = at.selectbox(key="fail_episode").options
    first = at.selectbox(key="fail_episode").value
    assert at.query_params["episode"] == first
    row = prediction_table(demo_env).query("episode == @first and method == 'kepp-R1'").iloc[0]
    links = [e.proto for e in at.get("page_link") if "Open in Plan" in e.proto.label]
    assert len(links) == 1 and links[0].page.endswith("1_Plan.py") or "Plan" in links[0].page
    assert dict(p.split("=") for p in links[0].query_string.split("&")) == urls.plan_query(dict(row))
    if len(ids) > 1:
        at.button(key="fail_ep_next").click().run()
        second = at.selectbox(key="fail_episode").value
        assert second != first and at.query_params["episode"] == second
        assert at.selectbox(key="fail_episode").options[1] == names.episode_label(second, {"coffee": "make coffee",
            "lemonade": "make lemonade", "tea": "make tea"}) or "·" in at.selectbox(key="fail_episode").options[1]
        again = no_problems(open_page(monkeypatch, demo_env, "views/4_Failure_cases.py", dict(at.query_params)))
        assert again.selectbox(key="fail_episode").value == second


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_results_table_and_comparing_up_to_four_methods(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, "views/5_Results.py"))
    grid = at.dataframe[0].value  # one metric at a time: every T of it fits the page beside the names
    assert list(grid.columns) == [f"T={h} SR" for h in (3, 4, 5, 6)] and "metric" not in at.query_params
    methods = sorted(prediction_table(demo_env)["method"].unique())
    assert set(grid.index) == {catalog.method_label(m) for m in methods}
    at.segmented_control(key="res_metric").set_value("all").run()
    assert list(at.dataframe[0].value.columns) == [f"T={h} {m}" for h in (3, 4, 5, 6) for m in ("SR", "mAcc", "mIoU")]
    assert at.query_params["metric"] == "all"
    at.segmented_control(key="res_metric").set_value("SR").run()
    chosen = at.multiselect(key="res_compare")
    assert chosen.value == names.compare_default("kepp-R2", methods) and chosen.max_selections == 4
    everything = ["kepp-R1", "kepp-R2", "kepp-nograph"]
    chosen.set_value(everything).run()
    no_problems(at)
    assert at.query_params["compare"] == ",".join(everything)
    at.selectbox(key="res_outcome").select("incorrect").run()
    at.button(key="res_ep_next").click().run()
    url = dict(at.query_params)
    assert url["outcome"] == "incorrect" and url["episode"] == at.selectbox(key="res_episode").value
    again = no_problems(open_page(monkeypatch, demo_env, "views/5_Results.py", url))
    assert again.multiselect(key="res_compare").value == everything
    assert again.selectbox(key="res_episode").value == url["episode"]
    # aligned rows: one "plan" card row per method, in one row of columns
    assert sum('plan</div>' in str(m.value) for m in again.markdown) == 3


def table_downloads(monkeypatch) -> dict[str, bytes]:
    """What each table's CSV download holds (by the table's key), filled at every later run of the
    app: a paged table's download is made on click (a deferred download), so it is made here."""
    import sys

    charts = sys.modules["components.ui.charts"]  # the app's module, loaded by a first run
    shown, real = {}, charts.show_table

    def spy(df, name, key, csv=None, **kwargs):
        shown[key] = csv() if csv else df.to_csv(index=False).encode()
        return real(df, name, key, csv=csv, **kwargs)

    monkeypatch.setattr(charts, "show_table", spy)
    return shown


def csv_table(data: bytes) -> pd.DataFrame:
    import io

    return pd.read_csv(io.BytesIO(data))


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_results_and_failure_downloads_hold_every_row_of_the_filter_not_one_page(monkeypatch, demo_env):
    preds = prediction_table(demo_env)
    rows = preds[(preds["method"] == "kepp-R1") & (preds["horizon"] == 3)]
    at = no_problems(open_page(monkeypatch, demo_env, "views/5_Results.py", {"method": "kepp-R1", "T": "3"}))
    assert len(rows) > 50 and len(next(d.value for d in at.dataframe if "ground truth" in d.value)) == 50
    downloads = table_downloads(monkeypatch)
    no_problems(at.run())
    table = csv_table(downloads["res_episodes"])
    assert len(table) == len(rows) and list(table.columns)[:4] == ["episode", "T", "method", "correct"]
    assert table["correct"].tolist() == rows["success"].tolist()
    at.selectbox(key="res_outcome").select("incorrect")
    no_problems(at.run())
    table = csv_table(downloads["res_episodes"])
    assert len(table) == (~rows["success"]).sum() > 50 and not table["correct"].any()

    query = {"method": "kepp-R1", "T": "3", "pattern": "wrong_endpoint"}
    at = no_problems(open_page(monkeypatch, demo_env, "views/4_Failure_cases.py", query))
    assert at.radio(key="fail_pattern").value == "wrong_endpoint"
    failures = rows[rows["pattern"] == "wrong_endpoint"]
    assert len(failures) > 50 and len(next(d.value for d in at.dataframe if "ground truth" in d.value)) == 50
    table = csv_table(downloads["fail_table"])
    assert len(table) == len(failures) and not table["correct"].any()
    assert table["pattern"].tolist() == [catalog.pattern_label(p) for p in failures["patterns"]]


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_home_page_loads_no_torch_and_once_its_scenes_are_remembered_no_pandas(demo_env, tmp_path):
    """Home's first page waits for no model (torch: 2 s) and, from the second start on, for no records
    table (pandas: 0.7 s, judging the records: seconds at scale). Fresh processes, as fresh servers."""
    import subprocess
    import sys

    env = {**demo_env.environ(), "KEPP_HOME": str(tmp_path)}
    script = (f"import os, sys; os.environ.update({env!r})\n"
              "from streamlit.testing.v1 import AppTest\n"
              f"at = AppTest.from_file({str(APP)!r}, default_timeout=180).run()\n"
              "assert not at.exception and not at.error, [str(e.value) for e in [*at.exception, *at.error]]\n"
              "assert any('A clean success' in e.proto.label for e in at.get('page_link'))\n"
              "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))\n")
    loaded = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        loaded.append(r.stdout.strip().splitlines()[-1])
    assert loaded == ["['pandas']", "[]"]


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_home_lists_the_scenes_as_links_to_the_plan_page(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env))
    labels = [e.proto.label for e in at.get("page_link")]
    assert any("A clean success" in label for label in labels)
    assert any("A wrong-endpoint failure" in label for label in labels)
    assert Path(APP).is_file()
