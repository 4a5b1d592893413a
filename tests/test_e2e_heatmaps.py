"""End-to-end, the Heatmaps page in a real headless Chromium (the demo world, its shipped records): the three
panels and their difference are drawn (ECharts, SVG), a hover names the cell under the pointer (its panel and
transition), and a click on a cell of the predictions' panel lists the episodes with exactly that transition, each
row's plan or truth passing through it, the cell kept in the page's address."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.helpers.browser import ARTIFACTS, HEATMAP_DRAWN, all_loaded, idle, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 900}
# The hover's text: ECharts draws its tooltip as SVG text in the chart ("panel: from → to", then the value).
HOVER = """() => { const t = [...document.querySelectorAll('[data-testid="stEChartsChart"]')][0].querySelectorAll('svg text');
  const texts = [...t].map(e => e.textContent);
  const k = texts.findIndex(s => s.includes(' → '));
  return k < 0 ? null : [texts[k], texts[k + 1]]; }"""
# The hover's text once it has stayed the same over three polls (the tooltip follows the pointer a moment late).
SETTLED_HOVER = f"""() => {{ const h = ({HOVER})(), v = JSON.stringify(h), s = window.__keppHover || (window.__keppHover = {{}});
  s.n = v === s.v ? s.n + 1 : 0; s.v = v;
  return h && s.n >= 3 ? h : null; }}"""


def test_a_click_on_a_heatmap_cell_lists_the_episodes_with_that_transition(demo_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Heatmaps")
    page.locator(HEATMAP_DRAWN).first.wait_for(timeout=120_000)
    all_loaded(page)
    charts = page.locator("[data-testid='stEChartsChart']")
    assert charts.count() == 2  # the three panels, their difference
    chart = charts.first
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    # the predictions' panel is the right third: find a cell with a share above 0 under the pointer
    found = None
    for fy in (0.2, 0.3, 0.4, 0.5, 0.6):
        for fx in (0.70, 0.74, 0.78, 0.82, 0.86):
            x, y = box["x"] + box["width"] * fx, box["y"] + box["height"] * fy
            page.mouse.move(x, y)
            try:  # the hover's text, if a cell is under the pointer (a gap or a margin has none)
                hover = page.wait_for_function(SETTLED_HOVER, timeout=2_000, polling=50).json_value()
            except PlaywrightTimeout:
                hover = None
            if hover and "predictions" in hover[0] and float(hover[1]) > 0:
                found = (x, y, hover[0])
                break
        if found:
            break
    assert found, "no cell of the predictions' panel with a share above 0 under the pointer"
    x, y, name = found
    start, goal = re.fullmatch(r".*: (.+) → (.+)", name).groups()
    page.mouse.click(x, y)
    heading = page.get_by_role("heading", name=re.compile("^Episodes with"))
    heading.wait_for(timeout=60_000)
    idle(page)
    assert heading.inner_text().strip() == f"Episodes with {start} → {goal}"
    assert re.fullmatch(r"\d+-\d+", query(page).get("cell", "")), page.url
    # the list is of episodes whose plan or truth has the transition: at least the plan of one (the share > 0)
    caption = page.get_by_text(re.compile(r"^\d+ episodes?: in ")).first.inner_text()
    in_plan = int(re.search(r"plan (\d+)", caption).group(1))
    assert in_plan >= 1, caption
    page.screenshot(path=str(ARTIFACTS / "e2e_heatmap_cell.png"), full_page=True)
    page.close()
