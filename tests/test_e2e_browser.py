"""End-to-end: the real app server in a real headless Chromium (Debian's ``chromium``, driven
by Playwright; no browser download). Opens the app, runs a plan, checks that the plan and
the knowledge-graph drawing rendered, and saves screenshots to ``test-artifacts/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import ARTIFACTS, graph_frame, idle, planned_page


pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]


def test_plan_and_graph_render_in_a_real_browser(server, browser, app_env):
    ARTIFACTS.mkdir(exist_ok=True)
    page = planned_page(browser, server, viewport={"width": 1400, "height": 1600})
    page.locator(".kepp-verdict.kepp-live").first.wait_for(timeout=90_000)  # the live planner's result
    # the header can appear a moment before the step cards: wait for the cards themselves
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=90_000)
    idle(page)
    T = int(page.locator(".kepp-plan").first.locator(".kepp-card").count())
    assert T >= 2
    # the plan + the ground truth + the graph paths, each a row of T step cards
    assert page.locator(".kepp-plan").count() >= 3
    assert page.get_by_text("ground truth", exact=False).count()
    frame = graph_frame(page)
    nodes = frame.evaluate("() => network.body.data.nodes.length")
    edges = frame.evaluate("() => network.body.data.edges.length")
    assert nodes >= 2 and edges >= 1
    box = frame.locator("#mynetwork canvas").bounding_box()
    assert box and box["width"] > 100 and box["height"] > 100
    page.locator(".kepp-verdict").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_plan.png"))
    page.close()


def test_graph_page_draws_and_exports_in_a_real_browser(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{server}/Graph")
    page.get_by_text("Procedure knowledge graph").wait_for(timeout=90_000)
    idle(page)
    frame = graph_frame(page)
    assert frame.evaluate("() => network.body.data.nodes.length") >= 1
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download graph (HTML)").first.click()
    html = Path(dl.value.path()).read_text(encoding="utf-8")
    assert "vis-network" in html or "vis.Network" in html
    assert "cdn.jsdelivr" not in html  # works offline
    page.get_by_text("Procedure knowledge graph").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_graph.png"))
    page.close()


def test_settings_panel_opens_on_demand_and_stays_open_across_pages(server, browser, app_env):
    """The sidebar's "Data and models" widgets are drawn only once the panel is opened (the first
    page loads none of their scripts); opened, they show the configuration and stay open on
    another page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server)
    page.locator('[data-testid="stMetric"]').first.wait_for(timeout=90_000)
    idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    root = sidebar.get_by_role("textbox", name="Root")
    assert root.count() == 0
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assert not [u for u in loaded if "/TextInput." in u], "the settings' input scripts loaded before opening"
    sidebar.get_by_text("Data and models").click()
    root.wait_for(timeout=30_000)
    assert root.input_value() == str(app_env.world)
    sidebar.get_by_role("link", name="Training").first.click()
    page.get_by_role("heading", name="Training curves").first.wait_for(timeout=90_000)
    idle(page)
    assert sidebar.get_by_role("textbox", name="Root").input_value() == str(app_env.world)
    page.close()
