"""Graph, Heatmaps and Training pages through ``AppTest``: the probability filter follows the
weighting shown, graph exports carry title, legend and settings; heatmaps share one colour bar
over equal panels with larger ticks and out-of-task actions marked; one colour per training run
in every chart, smoothing, log scale and val_score explained."""

from __future__ import annotations

import json

import pytest

from components.ui.colours import WRONG
from kepp_core import api
from kepp_core.graph import subgraph
from tests.helpers.app_session import dataset, no_problems, open_page, texts, write_run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def heatmaps(at) -> list[dict]:
    """The page's ECharts options (the Heatmaps page's panels and their difference)."""
    return [json.loads(c.proto.spec) for c in at.get("echarts_chart")]


def test_minimum_filter_follows_the_weighting_and_exports_carry_title_and_legend(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/2_Graph.py")
    at.slider(key="graph_depth").set_value(2).run()
    at.radio(key="graph_weighting").set_value("pkg").run()
    assert at.slider(key="graph_min_p").label == "Minimum frequency weight"
    at.slider(key="graph_min_p").set_value(0.3).run()
    no_problems(at)
    assert not at.dataframe  # the drawing's transitions: a table made only in its open expander
    at.session_state["open_graph_edges"] = True
    no_problems(at.run())
    table = at.dataframe[0].value
    assert len(table) and (table["frequency weight"] >= 0.3).all()
    ds = dataset(app_env)
    graph = api.Workspace(api.AppConfig(dataset="demo", root=str(app_env.world))).graph()
    centre = graph.action_index(at.selectbox(key="graph_step").value)
    shown = sorted(zip(map(ds.actions.index, table["from"]), map(ds.actions.index, table["to"])))
    assert shown == sorted((e.source, e.target) for e in subgraph(graph, centre, 2, 0.3, scorer="pkg").edges)
    page = at.get("iframe")[0].proto.srcdoc
    assert "Frequency graph around" in page and "minimum frequency weight 0.30" in page
    assert 'class="kepp-legend-entry"' in page and "Download PNG" in page


def test_heatmaps_share_a_colour_bar_over_equal_panels_and_mark_out_of_task_actions(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/3_Heatmaps.py")
    at.selectbox(key="heat_method").set_value("random").run()
    no_problems(at)
    panels, difference = heatmaps(at)
    assert isinstance(panels["visualMap"], dict) and panels["visualMap"]["min"] == 0 and panels["visualMap"]["max"] == 1
    assert difference["visualMap"]["min"] == -1 and difference["visualMap"]["max"] == 1
    x = panels["xAxis"][0]
    labels = [v["value"] if isinstance(v, dict) else v for v in x["data"]]
    blanks = [k for k, v in enumerate(labels) if v == ""]
    assert len(blanks) == 2  # three panels, a blank column between
    edges = [-1, *blanks, len(labels)]
    widths = {b - a - 1 for a, b in zip(edges, edges[1:])}
    assert len(widths) == 1  # equal panels
    titles = [t for t in panels["xAxis"][1]["data"] if t]
    assert titles[:2] == ["training plans", "test plans"] and "predictions" in titles[2]
    assert x["axisLabel"]["fontSize"] >= 14
    ds = dataset(app_env)
    task = at.selectbox(key="heat_task").value
    own = set(ds.tasks[task].steps)
    marked = {v["value"].removesuffix(" ✱") for v in x["data"] if isinstance(v, dict)}
    assert all(v["textStyle"]["color"] == WRONG for v in x["data"] if isinstance(v, dict))
    assert marked == {v.removesuffix(" ✱") for v in labels if v and v.removesuffix(" ✱") not in own}
    assert marked  # random predictions use actions of other tasks
    assert any("outside the task's step list" in t for t in texts(at.caption))
    # every cell is one data item of the one series, named by its panel and transition, its value the matrix's
    cells = panels["series"][0]["data"]
    n = widths.pop()
    assert len(cells) == 3 * n * n and len(panels["yAxis"]["data"]) == n
    assert len({c["name"] for c in cells}) == len(cells)


def test_training_runs_keep_one_colour_with_smoothing_log_scale_and_val_score(monkeypatch, app_env, tmp_path):
    write_run(tmp_path / "a", [1.0, 0.5, 0.8, 0.2, 0.3, 0.05], [10, 20, 15, 30, 25, 40])
    write_run(tmp_path / "b", [2.0, 1.0, 1.5, 0.4, 0.6, 0.1], [5, 10, 20, 15, 35, 30])
    at = open_page(monkeypatch, app_env, "views/6_Training.py", KEPP_APP_RUNS=tmp_path)
    at.multiselect(key="train_runs").set_value(["a", "b"]).run()
    at.multiselect(key="train_y").set_value(["loss", "val_score"]).run()
    no_problems(at)
    assert any("val_score" in t and "held out" in t for t in texts(at.caption))

    def colours(fig):
        return {t["name"]: t["line"]["color"] for t in fig["data"] if t.get("showlegend", True) is not False}

    loss, val = figures(at)
    assert colours(loss) == colours(val) and len(set(colours(loss).values())) == 2  # one colour per run
    kept = [t for t in val["data"] if t.get("marker", {}).get("symbol") == "triangle-down"]
    assert {t["marker"]["color"] for t in kept} == set(colours(val).values())
    at.slider(key="train_smooth").set_value(0.6)
    at.toggle(key="train_log").set_value(True).run()
    no_problems(at)
    loss = figures(at)[0]
    assert loss["layout"]["yaxis"]["type"] == "log"
    faint = [t for t in loss["data"] if t.get("opacity") == 0.3]
    assert len(faint) == 2 and all(t["line"]["color"] == colours(loss)[t["legendgroup"]] for t in faint)
    smooth = {t["name"]: t["y"] for t in loss["data"] if t.get("showlegend", True) is not False}
    assert all(smooth[t["legendgroup"]] != t["y"] for t in faint)  # the smoothed curve differs from the raw one
