"""The plan graph (app/components/graph/plangraph.py) and its drawing (app/components/graph/drawing.py, page.py,
network.py): distinct paths merged with one legend entry each, the ground truth drawn, arrows beyond the depth limit
marked as such (never called unseen), fixed left-to-right positions, readable labels, the node
budget, and no graph paths claimed for a model without the graph condition."""

from __future__ import annotations

import hashlib
import json
import re
from types import SimpleNamespace

import pytest

from components.ui import colours
from components.graph import plangraph
from components.plan import zeroshot
from components.graph.plangraph import COLUMN_GAP, label_colour
from kepp_core import api
from kepp_core.data import Dataset, Step, Task, Video
from kepp_core.errors import KeppError
from kepp_core.graph import ProcedureGraph, build_graph
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
ACTIONS = ["a", "b", "c", "d", "e", "x"]


def chain_graph() -> ProcedureGraph:
    """a→b→c→d→e with a shortcut b→d and a side step x after a; c→b is seen once."""
    return ProcedureGraph.from_plans(ACTIONS, [(0, 1, 2, 3, 4), (0, 1, 2, 3, 4), (0, 1, 3, 4), (0, 5), (2, 1)])


def test_identical_paths_merge_into_one_group_and_one_legend_entry():
    g = chain_graph()
    plan = (0, 1, 2, 3, 4)
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", plan), ("graph path 1", plan), ("graph path 2", (0, 1, 3, 3, 4))],
                        truth=plan)
    assert [grp.members for grp in pg.groups] == [("ground truth", "KEPP plan", "graph path 1"), ("graph path 2",)]
    entries = [e for e in pg.legend if e.group is not None]
    assert [e.group for e in entries] == [0, 1]  # one legend entry per distinct path
    assert entries[0].text == "ground truth = KEPP plan = graph path 1: a → b → c → d → e"
    # each distinct path is drawn as its own arrows, in order
    assert pg.path_edges(0) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert pg.path_edges(1) == [(0, 1), (1, 3), (3, 3), (3, 4)]
    # the two groups share a→b: their arrows are bent apart, not drawn over each other
    shared = [e.curve for e in pg.edges if e.kind == "path" and (e.source, e.target) == (0, 1)]
    assert len(shared) == 2 and len(set(shared)) == 2


def test_ground_truth_is_drawn_as_its_own_path_in_green():
    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 3, 3, 4))], truth=(0, 1, 2, 3, 4))
    truth = pg.groups[0]
    assert truth.is_truth and truth.colour == "#2e7d32"
    assert pg.path_edges(0) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert {2} <= {n.id for n in pg.nodes}  # c (only on the truth) is drawn


def test_arrows_beyond_the_depth_limit_are_marked_not_called_unseen():
    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 2, 3, 4)), ("graph path 1", (0, 1, 3, 3, 4))], depth=1)
    by_pair = {}
    for e in pg.edges:
        by_pair.setdefault((e.source, e.target), []).append(e)
    # b→c is on the plan and seen twice in training, but beyond depth 1 of a and e: solid, with its count
    (bc,) = by_pair[(1, 2)]
    assert bc.kind == "path" and not bc.dashed and bc.count == 2
    assert "count 2" in bc.title and "outside the depth-1 neighbourhood" in bc.title
    # d→d is a pair the graph never saw: dashed, and said so
    (dd,) = by_pair[(3, 3)]
    assert dd.dashed and dd.count == 0 and "never seen" in dd.title
    # c→b exists in the graph between drawn steps but beyond the depth limit: an "outside" arrow
    (cb,) = by_pair[(2, 1)]
    assert cb.kind == "outside" and cb.count == 1 and "P²KG probability" in cb.title
    styles = {e.style: e.text for e in pg.legend}
    assert "never saw" in styles["dashed"] and "beyond the depth limit" in styles["dotted"]
    # with a depth that reaches them, the same arrows are within the limit
    deep = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 2, 3, 4))], depth=3)
    assert not [e for e in deep.edges if e.kind == "outside"]
    assert all("outside" not in e.title for e in deep.edges if e.kind == "path")


def test_positions_are_fixed_left_to_right_by_plan_position():
    g = chain_graph()
    args = (g, (0, 4), [("KEPP plan", (0, 1, 2, 3, 4)), ("graph path 1", (0, 1, 3, 3, 4))])
    one, two = plangraph.plan_graph(*args, truth=(0, 1, 2, 3, 4)), plangraph.plan_graph(*args, truth=(0, 1, 2, 3, 4))
    pos = {n.id: (n.x, n.y) for n in one.nodes}
    assert pos == {n.id: (n.x, n.y) for n in two.nodes}  # same input, same picture
    assert [pos[a][0] for a in (0, 1, 2, 3, 4)] == [k * COLUMN_GAP for k in range(5)]
    assert len(set(pos.values())) == len(pos)  # no two steps on one spot
    roles = {n.id: n.role for n in one.nodes}
    assert roles[0] == "start" and roles[4] == "goal" and roles[5] == "context"
    assert pos[5][0] == COLUMN_GAP  # x follows a: one column right of it


def test_labels_stay_readable_on_dark_fills():
    assert label_colour("#1b5e20") == label_colour("#b71c1c") == "#ffffff"
    assert label_colour("#e3eaf4") == label_colour("#fff3c4") == "#1a1a1a"
    pg = plangraph.plan_graph(chain_graph(), (0, 4), [("KEPP plan", (0, 1, 2, 3, 4))])
    for n in pg.nodes:
        assert n.font_colour == label_colour(n.colour)


def test_node_budget_keeps_path_steps_and_says_what_it_left_out():
    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 2, 3, 4))], depth=2, max_nodes=5)
    assert {n.id for n in pg.nodes} == {0, 1, 2, 3, 4} and pg.hidden == 1
    assert plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 2, 3, 4))], depth=2, max_nodes=6).hidden == 0
    with pytest.raises(KeppError, match="max nodes"):
        plangraph.plan_graph(g, (0, 4), [], max_nodes=0)


def test_centre_moves_the_neighbourhood():
    g = chain_graph()
    pg = plangraph.plan_graph(g, (1, 3), [("KEPP plan", (1, 2, 3))], depth=1, centre=0)
    assert {n.id for n in pg.nodes if n.role == "context"} == {5}  # x is next to a, not to b or d
    assert any(n.role == "centre" or n.id == 0 for n in pg.nodes)
    assert pg.settings["centre"] == "a"
    assert any("centre of the neighbourhood: a" in e.text for e in pg.legend)


def test_no_graph_paths_claimed_without_the_graph_condition():
    result = SimpleNamespace(plan=[0, 1, 2], paths=[(0, 1, 2), (0, 3, 2)], fallback=False)
    assert plangraph.graph_paths(result, "none", 2) == [("KEPP plan", (0, 1, 2))]
    fallback = SimpleNamespace(plan=[0, 1, 2], paths=[(0, 0, 2), (0, 2, 2)], fallback=True)
    assert plangraph.graph_paths(fallback, "none", 2) == [("KEPP plan", (0, 1, 2))]
    assert [n for n, _ in plangraph.graph_paths(fallback, "graph", 2)] == ["KEPP plan", "fallback path 1", "fallback path 2"]
    assert [n for n, _ in plangraph.graph_paths(result, "graph", 2)] == ["KEPP plan", "graph path 1", "graph path 2"]
    assert [n for n, _ in plangraph.graph_paths(result, "graph", 1)] == ["KEPP plan", "graph path 1"]
    # the page's wording follows the same rule
    from components.plan.plans import recommendation_text  # on the path from tests/conftest.py

    assert recommendation_text("none", "P²KG", 2) == "no graph condition; "
    assert recommendation_text("graph", "P²KG", 2) == "recommendation: P²KG, R=2; "


def test_zero_shot_plans_and_episodes_without_models():
    videos = [Video("v1", "t", [Step(a) for a in (0, 1, 2, 3, 4)], split="train"),
              Video("v2", "t", [Step(a) for a in (0, 1, 3, 4)], split="train"),
              Video("v3", "t", [Step(a) for a in (0, 1, 2, 3)], split="test")]
    ds = Dataset("toy", ACTIONS, {"t": Task("t", "Make things")}, videos)
    g = build_graph(ds)
    found = api.retrieve(g, "a", "d", 4, R=3)
    assert found.paths[0] == (0, 1, 2, 3) and not found.fallback
    named = zeroshot.named_plans(found)
    assert [n for n, _, _ in named] == [f"graph plan {k + 1}" for k in range(found.found)]
    assert [s for _, _, s in named] == list(found.scores[:found.found])
    assert zeroshot.plan_episodes(ds, 3) == [("t/v3/0:3", (0, 1, 2)), ("t/v3/1:3", (1, 2, 3))]
    assert zeroshot.plan_episodes(ds, 5, split="none") == [("t/v1/0:5", (0, 1, 2, 3, 4))]
    assert api.retrieve(g, "e", "a", 3, R=2).fallback  # no way back: KEPP's fallback


def test_drawing_carries_title_settings_legend_and_png_export(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.graph import drawing as drawings, page as graph_page

    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 3, 3, 4))], truth=(0, 1, 2, 3, 4))
    drawing = drawings.plan_drawing(g, pg, title="Plan graph of a test")
    page = _page(graph_page, drawing, inline=True)
    assert "Plan graph of a test" in page and "depth: 1" in page and "keppPng" in page
    assert page.count('class="kepp-legend-entry"') == len(pg.legend)
    assert len(re.findall(r'data-style="line" data-group="[01]"', page)) == 2
    nodes = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    # grid cells (column = place in the plan), no physics: the frame's script spreads them over its canvas
    assert all(n["physics"] is False for n in nodes)
    assert {n["id"]: n["gx"] for n in nodes if n["role"] != "context"} == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    assert drawing.grid[0] == (0, 4)
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    assert {(e["from"], e["to"]) for e in edges if e["group"] == 0} == {(0, 1), (1, 2), (2, 3), (3, 4)}
    assert "cdn.jsdelivr" not in page and "https://" not in page.split("vis-network.min.js.map")[-1]


def _edge_data(page: str) -> list[dict]:
    """The edges a drawing's page hands to vis.js."""
    return json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))


def _page(graph_page, drawing, inline: bool) -> str:
    from dataclasses import astuple

    return graph_page.graph_html(tuple(astuple(n) for n in drawing.nodes.values()),
                              tuple(astuple(e) for e in drawing.edges.values()), 400, drawing.grid,
                              drawing.title, drawing.settings, tuple(tuple(x) for x in drawing.legend), inline=inline)


def test_only_the_paths_carry_their_weight_each_step_pair_once(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.graph import drawing as drawings, page as graph_page

    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 3, 3, 4)), ("graph path 1", (0, 1, 2, 3, 4))],
                              truth=(0, 1, 2, 3, 4), depth=2)
    labelled = [(e.source, e.target, e.group) for e in pg.edges if e.labelled]
    # the truth's arrows first, then the plan's pairs the truth does not use; d→d (never seen) bare
    assert labelled == [(0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 4, 0), (1, 3, 1)]
    assert {e.kind for e in pg.edges} >= {"path", "context"}  # the graph's own arrows: hover only
    assert not [e for e in pg.edges if e.kind != "path" and e.labelled]
    assert any("(hover for it)" in x.text for x in pg.legend if x.colour == colours.EDGE)
    drawing = drawings.plan_drawing(g, pg)
    edges = _edge_data(_page(graph_page, drawing, inline=True))
    shown = [(e["from"], e["to"], e["klabel"]) for e in edges if e["klabel"]]
    assert shown == [(0, 1, f"{float(g.probability(0, 1)):.2f}"), (1, 2, f"{float(g.probability(1, 2)):.2f}"),
                     (2, 3, f"{float(g.probability(2, 3)):.2f}"), (3, 4, f"{float(g.probability(3, 4)):.2f}"),
                     (1, 3, f"{float(g.probability(1, 3)):.2f}")]
    # every arrow keeps its number in its hover text; the frame's script draws the labels, beside their arrows
    assert all("P²KG probability" in e["title"] or "never seen" in e["title"] for e in edges)
    assert not any("label" in e for e in edges)


def test_labels_are_placed_truth_first_then_the_plan_then_the_strongest_arrows(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.graph.drawing import GraphEdge
    from components.graph.page import label_ranks

    edges = [GraphEdge(5, 6, "0.30", kind="context", weight=0.3), GraphEdge(0, 1, "0.50", kind="path", group=1),
             GraphEdge(6, 7, "0.90", kind="graph", weight=0.9), GraphEdge(2, 3, "", kind="context", weight=1.0),
             GraphEdge(1, 2, "0.20", kind="path", group=0), GraphEdge(2, 4, "0.70", kind="path", group=0),
             GraphEdge(7, 8, "0.30", kind="context", weight=0.3)]
    ranks = label_ranks(edges)
    assert sorted(ranks) == list(range(len(edges)))
    order = [edges[k] for k in sorted(range(len(edges)), key=ranks.__getitem__)]
    assert [(e.source, e.target) for e in order] == [(1, 2), (2, 4), (0, 1), (6, 7), (5, 6), (7, 8), (2, 3)]
    assert label_ranks([]) == []


def test_a_graph_frame_fits_one_screen_below_the_header(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.graph.drawing import GraphDrawing
    from components.graph.network import MIN_CANVAS, SCREEN_FRAME, canvas_height, drawing_height

    crowded = GraphDrawing(legend=[("line", "#000000", "an entry of a long legend, on its own line", -1)] * 20)
    crowded_canvas = {}
    for present in (False, True):
        for entries in (0, 2, 6):
            d = GraphDrawing(legend=[("line", "#000000", "an entry", -1)] * entries)
            assert canvas_height(d, 600, False) == 600  # asked for: the normal page's own height
            assert drawing_height(d, canvas_height(d, 900, present, screen=True), present) <= SCREEN_FRAME[present]
            assert canvas_height(d, 300, present, screen=True) == max(300, MIN_CANVAS)  # never taller than asked
        crowded_canvas[present] = canvas_height(crowded, 600, present, screen=True)
    assert crowded_canvas == dict.fromkeys(SCREEN_FRAME, MIN_CANVAS)  # every mode: still a canvas to draw on


def test_the_export_carries_vis_js_inline_while_the_frame_refers_to_the_installed_copy(monkeypatch, tmp_path):
    """vis.js is pyvis's, copied where the app serves it by ``make install`` (``vis.install``), never while a
    drawing is made: without the copy a frame carries vis.js inline and nothing is written."""
    monkeypatch.syspath_prepend(str(REPO / "app"))
    from components.ui import scripts
    from components.graph import drawing as drawings, page as graph_page, vis

    g = chain_graph()
    pg = plangraph.plan_graph(g, (0, 4), [("KEPP plan", (0, 1, 3, 3, 4))], truth=(0, 1, 2, 3, 4))
    drawing = drawings.plan_drawing(g, pg, title="Plan graph of a test of the served copy")
    static = tmp_path / "static"
    monkeypatch.setattr(vis, "STATIC", static)
    graph_page.graph_html.clear()
    try:
        bare = _page(graph_page, drawing, inline=False)  # not installed: vis.js inline, the folder left alone
        assert vis.served() == () and not static.exists()
        assert not re.search(r'<script[^>]*\bsrc="[^"]*vis-network', bare) and "new vis.Network" in bare
        assert sorted(p.name for p in vis.install()) == ["vis-network.css", "vis-network.min.js"]
        assert vis.install() == []  # in place and equal: left alone
        graph_page.graph_html.clear()
        export, frame = _page(graph_page, drawing, inline=True), _page(graph_page, drawing, inline=False)
        served = vis.served()
    finally:
        graph_page.graph_html.clear()
    assert [url for _, url in served] == ["app/static/vis-network.min.js", "app/static/vis-network.css"]
    script, style = (text for text, _ in served)
    assert [(static / p.name).read_text(encoding="utf-8") for p in vis.files()] == [script, style]
    # the export: self-contained, no external script, style sheet or asset
    assert not re.search(r"<script[^>]*\bsrc=", export) and not re.search(r"<link[^>]*\bhref=", export)
    assert f"<script>{script}</script>" in export and f"<style>{style}</style>" in export
    # the frame: vis.js and the drawing's script from the app's static files, nothing else from outside; the
    # export carries the drawing's script inline too
    digest = hashlib.sha1(scripts.source("kepp-graph.js").encode()).hexdigest()[:12]
    assert re.findall(r'<script[^>]*\bsrc="([^"]*)"', frame) == ["app/static/vis-network.min.js",
                                                                 f"app/static/kepp-graph.js?v={digest}"]
    assert scripts.source("kepp-graph.js") in export and "keppPng" in scripts.source("kepp-graph.js")
    assert re.findall(r'<link[^>]*\bhref="([^"]*)"', frame) == ["app/static/vis-network.css"]
    assert script not in frame and style not in frame and len(frame) < len(export) / 10
