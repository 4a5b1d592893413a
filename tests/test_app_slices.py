"""The "by slice" table and the episode map in real app sessions (AppTest) on the demo world with
the shipped models' records: the table is the API's, a slice in the URL filters the episodes
(and comes back in a new session: a reload), the map is drawn only when asked, with every
evaluated test episode; dataset text through both is escaped."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from components.records import slices as slice_view
from components.ui.text import md
from kepp_core import api
from kepp_core.catalog import SLICE_BY
from tests.helpers.app_session import no_problems, open_page, prediction_table, texts, with_a_second_seed

RESULTS, FAILURES = "views/5_Results.py", "views/4_Failure_cases.py"


def slice_frame(at, by: str) -> pd.DataFrame:
    """The page's slice table (the dataframe whose first column is named after the cut)."""
    found = [d.value for d in at.dataframe if list(d.value.columns)[:1] == [SLICE_BY[by]]]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def episode_frame(at) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if "ground truth" in d.value.columns]
    assert found, "no episode table"
    return found[0]


def map_specs(at) -> list[dict]:
    """The figures of the page's plotly charts that are episode maps (points carry episode ids)."""
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return [s for s in specs if s["data"] and "customdata" in s["data"][0] and "PC 1" in json.dumps(s["layout"])]


@pytest.mark.slow
@pytest.mark.parametrize("by", list(SLICE_BY))
def test_results_slice_table_is_the_apis_with_the_reference_method(monkeypatch, demo_env, by):
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"by": by, "method": "kepp-R2", "T": "4"}))
    shown = slice_frame(at, by)
    preds = prediction_table(demo_env)
    want = api.slice_table(preds, "kepp-R2", by, "kepp-nograph", None if by == "horizon" else 4).table
    assert list(shown.columns[1:]) == [c for c in want.columns[1:] if c != "p"]  # one seed: no p-values
    np.testing.assert_allclose(shown[["count", "SR", "mAcc", "ends right", "Δ SR"]].to_numpy(float),
                               want[["count", "SR", "mAcc", "ends right", "Δ SR"]].to_numpy(float))
    assert at.query_params.get("ref") in (["kepp-nograph"], "kepp-nograph")
    if by == "horizon":
        assert list(shown[SLICE_BY[by]]) == ["T=3", "T=4", "T=5", "T=6"]


@pytest.mark.slow
def test_with_several_seeds_the_table_gives_the_paired_p_value(monkeypatch, demo_env, tmp_path):
    records = with_a_second_seed(demo_env, tmp_path / "two-seeds.jsonl")
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"by": "task", "method": "kepp-R2", "T": "3"},
                               KEPP_APP_PREDICTIONS=str(records)))
    shown = slice_frame(at, "task")
    want = api.slice_table(api.read_predictions([records]), "kepp-R2", "task", "kepp-nograph", 3).table
    assert want["p"].notna().all()
    np.testing.assert_allclose(shown["p"].to_numpy(float), want["p"].to_numpy(float))
    assert list(shown["count"]) == list(want["count"]) and want["count"].sum() == 2 * 585


def test_a_slice_in_the_url_filters_the_episodes_and_survives_a_reload(monkeypatch, demo_env):
    # a link made while the ends cut was called "endpoints" opens it under its name now
    query = {"method": "kepp-R2", "T": "3", "by": "endpoints", "slice": "endpoints:wrong"}
    preds = prediction_table(demo_env)
    run = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)]
    wrong = run[[p[0] != t[0] or p[-1] != t[-1] for p, t in zip(run["plan"], run["truth"])]]
    for _ in range(2):  # the link, then a reload (a new session on the same address)
        at = no_problems(open_page(monkeypatch, demo_env, RESULTS, query))
        query = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
        assert any(f"of {len(wrong):,}" in c for c in texts(at.caption)), texts(at.caption)
        shown = episode_frame(at)
        assert len(shown) == min(50, len(wrong))
        assert all(not ok for ok in shown["correct"])  # a wrong endpoint is a wrong plan
        assert any("first or last step wrong" in m for m in texts(at.markdown))
        assert at.query_params.get("slice") in (["ends:wrong"], "ends:wrong") and at.query_params.get("by") in (["ends"], "ends")
    # "Clear slice" lists every episode again and drops the slice from the URL
    at.button(key="res_slice_clear").click().run()
    no_problems(at)
    assert any(f"of {len(run):,}" in c for c in texts(at.caption))
    assert "slice" not in at.query_params


def test_a_bad_slice_in_the_url_is_ignored(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"slice": "colour:red"}))
    assert "slice" not in at.query_params and not any("Clear slice" in b.label for b in at.button)


def test_failure_cases_filters_its_failures_by_a_task_slice(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, FAILURES, {"method": "kepp-R2", "T": "3", "slice": "task:tea"}))
    shown = slice_frame(at, "task")
    assert "make tea" in list(shown["task"])
    rows = episode_frame(at)
    assert len(rows) and all(e.startswith("make tea ·") for e in rows["episode"])
    assert at.query_params.get("slice") in (["task:tea"], "task:tea")


def test_the_episode_map_is_drawn_only_when_asked_with_every_evaluated_episode(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3"}))
    assert map_specs(at) == [] and at.toggle(key="res_map").value is False
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3", "map": "1"}))
    (spec,) = map_specs(at)
    preds = prediction_table(demo_env)
    run = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)]
    ids = [e for trace in spec["data"] for e in trace["customdata"]]
    assert sorted(ids) == sorted(run["episode"])
    right = {t["name"]: len(t["customdata"]) for t in spec["data"]}
    assert right == {"right": int(run["success"].sum()), "wrong": int((~run["success"]).sum())}
    hover = spec["data"][0]["text"][0]
    assert "plan right" in hover or "plan wrong" in hover
    # coloured by task: one trace per task, named by the task's name
    at.radio(key="res_map_colour").set_value("task").run()
    (spec,) = map_specs(no_problems(at))
    assert {t["name"] for t in spec["data"]} == {api.open_dataset(api.AppConfig(root=str(demo_env.world))).tasks[t].name
                                                   for t in run["task"].unique()}
    assert at.query_params.get("colour") in (["task"], "task")


def test_slice_labels_and_url_codec():
    assert slice_view.parse_slice(slice_view.slice_text("task", "<b>a:b</b>")) == ("task", "<b>a:b</b>")
    with pytest.raises(ValueError):
        slice_view.parse_slice("task:")


# --- hostile dataset text ------------------------------------------------------------------------------------------
class PlansEnv:
    """The app's environment for a plans dataset with records and no models."""

    def __init__(self, plans, records):
        self.values = {"KEPP_APP_DATASET": "plans", "KEPP_APP_ROOT": str(plans), "KEPP_APP_CHECKPOINTS": None,
                       "KEPP_APP_PREDICTIONS": str(records)}

    def environ(self) -> dict:
        return self.values


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory):
    """A plans dataset whose task ids and step labels are script-injection strings, with records
    of its test episodes (every other plan wrong at its last step)."""
    from kepp_core.data import load_dataset, make_episodes

    folder = tmp_path_factory.mktemp("hostile-slices")
    # task ids hold no "/" (an id names files): markup that needs none
    bad = ["<img src=x onerror=alert(1)>", "<script>alert(2)<script>", "![x](http:127.0.0.1:9)"]
    labels = bad + ["cut", "spread", "serve"]
    lines = []
    for i in range(30):
        steps = [labels[(i + k) % len(labels)] for k in range(4)]
        lines.append(json.dumps({"video": f"v{i}", "task": bad[i % 3], "split": "test" if i % 2 == 0 else "train",
                                 "steps": steps}))
    plans = folder / "plans.jsonl"
    plans.write_text("\n".join(lines) + "\n")
    ds = load_dataset("plans", plans)
    records = []
    for k, ep in enumerate(make_episodes(ds, 3, "test")):
        wrong = [ep.actions[0], ep.actions[1], (ep.actions[2] + 1) % ds.num_actions]
        records.append({"episode": ep.id, "video": ep.video.id, "task": ep.video.task, "T": 3, "setting": "conventional",
                        "seed": 0, "gt": list(ep.actions), "plans": {"graph-gt": list(ep.actions) if k % 2 else wrong}})
    (folder / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return PlansEnv(plans, folder / "preds.jsonl"), bad, {t: ds.tasks[t].name for t in ds.tasks}


@pytest.mark.parametrize("page", [RESULTS, FAILURES])
def test_hostile_task_names_pass_through_the_slice_table_as_text(monkeypatch, hostile_env, page):
    env, bad, names = hostile_env
    at = open_page(monkeypatch, env, page, {"by": "task", "slice": f"task:{bad[0]}", "map": "1"})
    assert not at.exception, texts(at.exception)
    shown = slice_frame(at, "task")
    assert set(shown["task"]) == {names[b] for b in bad}  # the names, exactly, as table text
    markdown = [m for m in texts(at.markdown) if not m.startswith("<")]  # HTML blocks (step cards) use html.escape
    for m in markdown + texts(at.caption) + texts(at.error) + texts(at.info):
        assert not re.search(r"(?<!\\)(<img|<script|\]\(http)", m), m  # only escaped: \<img, \](http
    assert any(md(bad[0]) in m for m in texts(at.markdown))  # the slice named, escaped
    assert any("Clear slice" in b.label for b in at.button)  # the hostile slice was taken from the URL
    if page == RESULTS:  # the map says what is missing: a plans dataset has no features
        assert any("observation features" in e for e in texts(at.error)), texts(at.error)


def test_map_points_sample_at_the_cap_and_escape_the_hover():
    from components.records.episode_map import map_figure, map_points

    n = 50
    coords = {"episodes": [f"t{i % 3}/v{i}/0:3" for i in range(n)], "x": list(range(n)), "y": [0.5] * n}
    rows = pd.DataFrame({"episode": coords["episodes"] * 2, "task": [f"t{i % 3}" for i in range(n)] * 2,
                         "video": [f"v{i}" for i in range(n)] * 2, "truth": [(0, 1, 2)] * (2 * n),
                         "success": [i % 2 == 0 for i in range(n)] + [i % 4 == 0 for i in range(n)]})  # two seeds
    names = {"t0": "<img src=x onerror=alert(1)>", "t1": "b", "t2": "c"}
    points, total = map_points(coords, rows, lambda plan: [f"<s{a}>" for a in plan], names, cap=20)
    again, _ = map_points(coords, rows, lambda plan: [f"<s{a}>" for a in plan], names, cap=20)
    assert total == n and len(points) == 20 and list(points["episode"]) == list(again["episode"])  # a fixed sample
    outcome = dict(zip(points["episode"], points["outcome"]))
    for e, o in outcome.items():
        i = int(e.split("/v")[1].split("/")[0])
        assert o == ("right" if i % 4 == 0 else "mixed" if i % 2 == 0 else "wrong")
    hover = " ".join(points["hover"])
    assert "<img" not in hover and "<s0>" not in hover and "&lt;s0&gt;" in hover
    fig = map_figure(points, "task")
    assert {t.name for t in fig.data} == {"&lt;img src=x onerror=alert(1)&gt;", "b", "c"}
    assert sorted(e for t in fig.data for e in t.customdata) == sorted(points["episode"])


def test_the_episodes_of_a_slice_export_as_csv_every_row_not_one_page(monkeypatch, demo_env):
    import io
    import sys

    query = {"method": "kepp-R2", "T": "3", "by": "pattern", "slice": "pattern:wrong_endpoint"}
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, query))
    charts = sys.modules["components.ui.charts"]  # the app's module, loaded by the first run
    made, real = {}, charts.show_table

    def spy(df, name, key, csv=None, **kwargs):  # what each table's CSV download holds
        made[key] = csv() if csv else df.to_csv(index=False).encode()
        return real(df, name, key, csv=csv, **kwargs)

    monkeypatch.setattr(charts, "show_table", spy)
    no_problems(at.run())
    table = pd.read_csv(io.BytesIO(made["res_episodes"]))
    preds = prediction_table(demo_env)
    run = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)]
    assert len(table) == (run["pattern"] == "wrong_endpoint").sum() > 50  # more than one page
    assert set(table["pattern"]) == {"wrong predicted endpoint"}  # the primary pattern, as the slice


def test_a_method_without_records_at_the_horizon_is_a_message_not_a_traceback(monkeypatch, demo_env, tmp_path):
    lines = [json.loads(x) for x in demo_env.records.read_text().splitlines()]
    for rec in lines:  # KEPP R=1 evaluated at T=3 only
        if rec["T"] != 3:
            rec["plans"].pop("kepp-R1", None)
    records = tmp_path / "partial.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in lines))
    at = open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R1", "T": "4", "slice": "endpoints:wrong"},
                   KEPP_APP_PREDICTIONS=str(records))
    assert not at.exception, texts(at.exception)
    assert any("'kepp-R1' at T=4" in e and "pick another method or horizon" in e for e in texts(at.error))
