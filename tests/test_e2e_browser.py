"""End-to-end: the real app server in a real headless Chromium (Debian's ``chromium``, driven
by Playwright; no browser download). Opens the app, runs a plan, checks that the plan and
the knowledge-graph drawing rendered, and saves screenshots to ``test-artifacts/``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from test_app_fixtures import REPO, app_env, app_world  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing: CI installs Debian's chromium ('make browser')")
        pytest.skip("chromium is not installed ('make browser' installs Debian's package)")
    return path


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the app server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"the app server did not answer within {timeout} s")


@pytest.fixture(scope="module")
def server(app_env):
    from kepp_core.commands.app import AppOptions, free_port, start_app

    port = free_port()
    proc = start_app(AppOptions(dataset="demo", root=str(app_env.world), checkpoints=str(app_env.models),
                                predictions=str(app_env.records), port=port))
    url = f"http://localhost:{port}"
    try:
        wait_until_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


def idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the script (no 'running' status widget)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def graph_frame(page, timeout: float = 30.0):
    """The iframe holding the pyvis drawing, once vis.js has drawn its nodes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if frame.locator("#mynetwork canvas").count():
                    if frame.evaluate("() => typeof network !== 'undefined' && network.body.data.nodes.length"):
                        return frame
            except Exception:  # a frame can detach while we look
                continue
        time.sleep(0.2)
    raise AssertionError("no drawn graph (pyvis iframe with a canvas and nodes) in the page")


def test_plan_and_graph_render_in_a_real_browser(server, browser, app_env):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{server}/Plan")
    plan_button = page.get_by_role("button", name="Plan", exact=True)
    plan_button.wait_for(timeout=90_000)
    idle(page)
    plan_button.click()
    page.get_by_text("KEPP plan", exact=True).wait_for(timeout=90_000)
    idle(page)
    # the header can appear a moment before the step cards: wait for the cards themselves
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=90_000)
    idle(page)
    T = int(page.locator(".kepp-plan").first.locator(".kepp-card").count())
    assert T >= 2
    # path rows + the plan + the ground truth, each a row of T step cards
    assert page.locator(".kepp-plan").count() >= 3
    assert page.get_by_text("Ground truth", exact=False).count()
    frame = graph_frame(page)
    nodes = frame.evaluate("() => network.body.data.nodes.length")
    edges = frame.evaluate("() => network.body.data.edges.length")
    assert nodes >= 2 and edges >= 1
    box = frame.locator("#mynetwork canvas").bounding_box()
    assert box and box["width"] > 100 and box["height"] > 100
    page.get_by_text("KEPP plan", exact=True).scroll_into_view_if_needed()
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
