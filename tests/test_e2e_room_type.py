"""End-to-end, type for a room: the real app server (demo world, shipped models and records) in a real
headless Chromium at a projector's 1280x720, presentation mode on every page. Every text the page shows is
at least 20 CSS px (computed), and so is what plotly and ECharts draw (ticks, colour scales, titles) and the tables'
canvas type (the grid's font times its zoom); step names and the ✓/✗ marks that carry a verdict are at least
28 px, in the page and drawn in the graph's frame (its font times the view's scale). A slide has no download
button and no title cut short, nothing below the window's bottom edge, and its graph's legend lists only
what the drawing shows (one marker for a step that is both â₁ and â_T). Screenshots go to
``test-artifacts/``."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from components.records import urls
from kepp_core import api
from tests.helpers.browser import (ARTIFACTS, HEATMAP_DRAWN, all_loaded, check_drawing_type, check_room_type, drawn_frame,
                                   result_on_one_screen, settled_drawing, stopped_moving, wait_plan)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}
# Every page in presentation mode (the Plan page as a slide of the built-in playlist, a success and a failure),
# and what says it is drawn.
PAGES = [("Home", "?present=1", "[data-testid='stMetric']"), ("Plan", "Plan?playlist=scenes&present=1", ".kepp-plan"),
         ("Plan, a failure", "Plan?playlist=scenes&item=2&present=1", ".kepp-plan"),
         ("Graph", "Graph?present=1", "iframe"), ("Heatmaps", "Heatmaps?present=1", HEATMAP_DRAWN),
         ("Failure cases", "Failure_cases?present=1", ".kepp-plan"), ("Results", "Results?present=1", ".kepp-plan"),
         ("Training", "Training?present=1", ".js-plotly-plot .main-svg"), ("Playlists", "Playlists?present=1", "h1"),
         ("Presenter", "Presenter?present=1", ".kepp-note")]

# Text the frame's header cuts short (an ellipsis: its box narrower than its text).
CUT_SHORT = """() => [...document.querySelectorAll('.kepp-head *')].filter(e => e.scrollWidth > e.clientWidth + 1
                     && getComputedStyle(e).textOverflow === 'ellipsis').map(e => e.textContent)"""
# What the legend lists as a step's marker (its colour) and what the drawing's steps are filled with.
LEGEND_AND_STEPS = """() => ({legend: window.keppLegend.filter(e => e[0] === 'node').map(e => [e[1], e[2]]),
  fills: network.body.data.nodes.get().map(n => (typeof n.color === 'string' ? n.color : n.color.background).toLowerCase())})"""


def shown_frames(page) -> list:
    """Every graph drawing on show (a frame with a drawn vis.js network of some width)."""
    frames = []
    for frame in page.frames:
        try:
            if frame.locator("#mynetwork canvas").count() and frame.evaluate(
                    "() => typeof network !== 'undefined' && network.body.data.nodes.length "
                    "&& document.querySelector('#mynetwork').clientWidth > 0"):
                frames.append(frame)
        except Exception:  # a frame can detach while we look
            continue
    return frames


def legend_is_drawn(frame, where: str) -> None:
    got = frame.evaluate(LEGEND_AND_STEPS)
    missing = [text for colour, text in got["legend"] if colour.lower() not in got["fills"]]
    assert not missing, f"{where}: the legend lists markers no step carries: {missing}"


def test_every_page_in_presentation_mode_is_type_for_a_room(demo_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport=SCREEN)
    seen_plotly, seen_echarts = {}, {}
    for name, path, selector in PAGES:
        page.goto(f"{demo_server}/{path}")
        page.locator(selector).first.wait_for(timeout=120_000)
        all_loaded(page)  # every frame (the drawings) loaded and unchanged, no run going
        for chart in page.locator(".js-plotly-plot .main-svg").all():  # plotly's figures drawn and in place
            stopped_moving(page, chart)
        got = check_room_type(page, name)
        seen_plotly[name], seen_echarts[name] = got["plotly"], got["echarts"]
        for frame in shown_frames(page):
            check_drawing_type(settled_drawing(frame), f"{name}: a graph drawing")
        if name.startswith("Plan"):
            assert got["steps"] and got["marks"], f"{name}: no step names or verdict marks measured"
        page.screenshot(path=str(ARTIFACTS / f"e2e_room_{name.split(',')[0].lower().replace(' ', '_')}.png"))
    # the charts' own type was measured where the pages draw them: the heatmaps' labels and their colour scale's
    # ends (ECharts), Training's ticks (plotly)
    heat = {t for _, t in seen_echarts["Heatmaps"]}
    assert {"0", "1"} <= heat and len(heat) > 4, f"the heatmaps' type was not measured: {sorted(heat)[:12]}"
    assert any("tick" in cls for _, _, cls in seen_plotly["Training"]), "no axis ticks measured on Training"
    page.close()


def test_a_slide_keeps_to_one_screen_with_no_downloads_and_an_honest_legend(demo_server, browser, demo_env):
    preds = api.read_predictions([demo_env.records])
    kepp = preds[preds["method"] == "kepp-R2"]
    same_ends = kepp[[e is not None and e[0] == e[-1] for e in kepp["endpoints"]]]
    assert len(same_ends), "the demo records hold no episode whose â₁ = â_T"
    links = [("a failure, T=3", dict(kepp[(kepp["horizon"] == 3) & ~kepp["success"]].iloc[0])),
             ("a success, T=4", dict(kepp[(kepp["horizon"] == 4) & kepp["success"]].iloc[0])),
             ("â₁ = â_T", dict(same_ends.iloc[0]))]
    page = browser.new_page(viewport=SCREEN)
    for where, row in links:
        page.goto(f"{demo_server}/Plan?{urlencode(urls.plan_query(row))}&present=1")
        wait_plan(page)
        result_on_one_screen(page, where)
        frame = drawn_frame(page, "() => typeof network !== 'undefined' && network.body.data.nodes.length")
        settled_drawing(frame)
        assert not page.get_by_role("button", name="Download graph (HTML)").is_visible(), where
        assert not frame.locator("#kepp-png").count() and not frame.evaluate(CUT_SHORT), where
        legend_is_drawn(frame, where)
        # nothing below the window's bottom edge: the slide's left column (the plan, the truth, the graph
        # paths, the records' line) and the graph's frame with its legend
        bottoms = page.evaluate("""() => {
          const col = document.querySelector('.kepp-verdict').closest('[data-testid="stColumn"]');
          const last = [...col.querySelectorAll('[data-testid="stElementContainer"]')].filter(e => e.offsetHeight)
            .map(e => e.getBoundingClientRect().bottom);
          return {left: Math.max(...last), graph: document.querySelector('.st-key-plan_clicked_frame iframe').getBoundingClientRect().bottom};
        }""")
        assert bottoms["left"] <= SCREEN["height"] + 0.5 and bottoms["graph"] <= SCREEN["height"] + 0.5, (where, bottoms)
        page.screenshot(path=str(ARTIFACTS / f"e2e_slide_{where.replace(' ', '_').replace(',', '')}.png"))
    page.close()
