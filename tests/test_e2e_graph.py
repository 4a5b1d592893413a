"""End-to-end, in a real headless Chromium (as tests/test_e2e_browser.py): the plan graph drawn
by vis.js holds the ground-truth path and one legend entry per distinct path, and exports a
PNG; on the COIN annotations without models, the Plan page plans zero-shot with the graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.helpers.browser import (ARTIFACTS, app_server, drawn_frame, graph_frame, idle, planned_page,
                                   settled_drawing)


pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]

# The drawing as the page holds it: every node and edge of the vis.js network, and the legend.
READ_NETWORK = """() => ({
  nodes: network.body.data.nodes.get().map(n => ({id: n.id, label: n.label, role: n.role, x: n.x, y: n.y})),
  edges: network.body.data.edges.get().map(e => ({from: e.from, to: e.to, kind: e.kind, group: e.group})),
  legend: [...document.querySelectorAll('.kepp-legend-entry')].map(d => ({
    group: Number(d.dataset.group), style: d.dataset.style, text: d.innerText.trim()})),
})"""


def path_of(edges: list[dict], group: int) -> list[int]:
    """The steps of one path group, from its arrows (drawn in path order)."""
    pairs = [(e["from"], e["to"]) for e in edges if e["kind"] == "path" and e["group"] == group]
    return [pairs[0][0], *[v for _, v in pairs]] if pairs else []


def card_rows(page) -> list[list[str]]:
    """The step-card rows of the page (each a plan), as their labels."""
    return page.evaluate("""() => [...document.querySelectorAll('.kepp-plan')].map(r =>
        [...r.querySelectorAll('.kepp-card div:last-child')].map(d => d.innerText.trim()))""")


def check_drawing(frame, truth_labels: list[str] | None) -> dict:
    """The network's paths against its legend: one entry per distinct path, the truth drawn in full."""
    net = frame.evaluate(READ_NETWORK)
    labels = {n["id"]: n["label"] for n in net["nodes"]}
    groups = sorted({e["group"] for e in net["edges"] if e["kind"] == "path"})
    entries = [d for d in net["legend"] if d["group"] >= 0]
    assert [d["group"] for d in entries] == groups  # one legend entry per distinct path
    paths = [tuple(path_of(net["edges"], g)) for g in groups]
    assert len(set(paths)) == len(paths)  # no two entries for the same path
    if truth_labels is not None:
        truth = [d for d in entries if "ground truth" in d["text"]]
        assert len(truth) == 1
        drawn = [labels[a] for a in path_of(net["edges"], truth[0]["group"])]
        # a loop (a step repeated) is one node: compare the arrows' labels with the truth's steps
        assert drawn == truth_labels
    # fixed, left-to-right positions: the start is left of the goal (one node when they are one step)
    roles = {n["role"]: n for n in net["nodes"]}
    assert "start" in roles and ("goal" not in roles or roles["start"]["x"] < roles["goal"]["x"])
    return net


def test_plan_graph_holds_the_truth_and_one_legend_entry_per_path(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = planned_page(browser, server, viewport={"width": 1400, "height": 1600}, accept_downloads=True)
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=90_000)
    page.get_by_text("ground truth", exact=False).first.wait_for(timeout=30_000)
    rows = card_rows(page)
    frame = graph_frame(page)
    frame.wait_for_function("() => document.querySelectorAll('.kepp-legend-entry').length > 0", timeout=30_000)
    # the result's rows of cards: the plan, the ground truth, then the graph paths
    check_drawing(frame, rows[1])
    with page.expect_download() as dl:
        frame.get_by_role("button", name="Download PNG").click()
    png = Path(dl.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    frame.locator("#mynetwork").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_graph.png"))
    # clicking a step re-centres the graph on it
    target = frame.evaluate("""() => { const n = network.body.data.nodes.get().find(n => n.role === 'goal');
        const d = network.canvasToDOM(network.getPositions([n.id])[n.id]); return {label: n.label, x: d.x, y: d.y}; }""")
    frame.locator("#mynetwork canvas").click(position={"x": target["x"], "y": target["y"]})
    centred = f"centre of the neighbourhood: {target['label']}"
    try:  # the legend of a drawing (the one the click's rerun put in place) names the new centre
        page.wait_for_function(CENTRED_ON, arg=centred, timeout=60_000, polling=100)
    except PlaywrightTimeout:
        raise AssertionError("a click on a step did not re-centre the graph") from None
    idle(page)
    assert page.get_by_text(target["label"], exact=True).count()  # the "Centre on" box shows it
    page.close()


# Where the drawn nodes lie on the canvas, as a share of its size (inside: all within [0, 1]).
NODES_ON_CANVAS = """() => {
  const c = document.querySelector('#mynetwork canvas'), pos = network.getPositions();
  return Object.values(pos).map(p => { const d = network.canvasToDOM(p);
    return [d.x / c.clientWidth, d.y / c.clientHeight]; });
}"""


# The expert-trajectories drawing, once vis.js has drawn it in a visible frame (the other tab's
# frame is hidden, clientWidth 0; a rerun may replace either frame, so frames are told apart by
# what they draw, not by their order in the page).
EXPERT_DRAWN = """() => typeof network !== 'undefined'
  && network.body.data.edges.get().some(e => e.kind === 'expert')
  && document.querySelector('#mynetwork').clientWidth > 0"""


# The expert-trajectories drawing, as EXPERT_DRAWN, in any frame of the page (read from the page: pyvis
# frames are srcdoc frames of its own origin).
EXPERT_SHOWN = """() => [...document.querySelectorAll('iframe')].some(f => {
  let w; try { w = f.contentWindow; } catch (e) { return false; }
  const box = w && w.document && w.document.querySelector('#mynetwork');
  return !!(box && w.network && box.clientWidth > 0 && w.network.body.data.edges.get().some(e => e.kind === 'expert'));
})"""

# Whether a drawing of the page has a legend entry whose third field is the given text (the centre it names).
CENTRED_ON = """(centred) => [...document.querySelectorAll('iframe')].some(f => {
  try { return (f.contentWindow.keppLegend || []).some(e => e[2] === centred); } catch (e) { return false; }
})"""


def frames_seen(page) -> list:
    """What each frame of the page draws (for a failure's message)."""
    seen = []
    for frame in page.frames:
        try:
            seen.append(frame.evaluate("""() => ({url: location.href.slice(0, 40),
                canvas: !!document.querySelector('#mynetwork canvas'),
                width: document.querySelector('#mynetwork')?.clientWidth ?? null,
                kinds: typeof network === 'undefined' ? null : [...new Set(network.body.data.edges.get().map(e => e.kind))]})"""))
        except PlaywrightError as e:
            seen.append(str(e)[:80])
    return seen


def test_expert_trajectories_fit_the_canvas_on_first_draw(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{server}/Graph")
    page.get_by_text("Procedure knowledge graph").wait_for(timeout=90_000)
    idle(page)
    tab = page.get_by_role("tab", name="Expert trajectories of a task")
    for _ in range(3):  # a click while the page was still redrawing can be lost: click again, at most twice
        tab.click()
        try:
            expect(tab).to_have_attribute("aria-selected", "true", timeout=10_000)
            break
        except AssertionError:
            idle(page)
    try:  # two servers' pages and a test run share two cores in CI
        page.wait_for_function(EXPERT_SHOWN, timeout=150_000, polling=100)
    except PlaywrightTimeout:
        raise AssertionError(f"the expert trajectories were not drawn: {frames_seen(page)}") from None
    idle(page)
    expert = drawn_frame(page, EXPERT_DRAWN)  # the drawing, or the one a rerun put in its place
    assert expert is not None, f"the expert trajectories were not drawn: {frames_seen(page)}"
    settled_drawing(expert, timeout=60)  # settled: vis.js has fitted the drawing to its canvas
    spots = expert.evaluate(NODES_ON_CANVAS)
    assert spots and all(-0.02 <= x <= 1.02 and -0.02 <= y <= 1.02 for x, y in spots), spots
    assert expert.evaluate("() => window.keppLegend.length") >= 1
    with page.expect_download() as dl:
        expert.get_by_role("button", name="Download PNG").click()
    assert Path(dl.value.path()).read_bytes()[:4] == b"\x89PNG"
    # the drawing's transitions as a table: made when its expander opens (the open tab's; the hidden one has none)
    panel = page.get_by_role("tabpanel").filter(has=page.get_by_text("The drawing's transitions")).last
    assert not page.locator("[data-testid='stDataFrame']").count()
    panel.get_by_text("The drawing's transitions").click()
    grid = panel.locator("[data-testid='stDataFrame']")
    grid.wait_for(timeout=60_000)
    idle(page)
    assert grid.is_visible() and panel.get_by_role("button", name="Download table (CSV)").is_visible()
    page.close()


@pytest.fixture(scope="module")
def coin_server(coin_json):
    from kepp_core.api import AppConfig

    with app_server(AppConfig(dataset="coin", root=str(coin_json))) as url:
        yield url


def test_zero_shot_planning_on_coin_annotations_without_models(coin_server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{coin_server}/Plan")
    page.get_by_text("Planning with the graph alone", exact=False).wait_for(timeout=120_000)
    idle(page, timeout=120_000)
    page.get_by_text("The graph's top-3 plans").wait_for(timeout=60_000)
    # the heading can come a moment before the card rows under it (a loaded CI machine)
    page.wait_for_function("() => document.querySelectorAll('.kepp-plan .kepp-card').length >= 6", timeout=60_000)
    idle(page, timeout=120_000)
    assert not page.locator('[data-testid="stException"]').count()
    rows = card_rows(page)
    assert len(rows) >= 2 and all(len(r) == 3 for r in rows)  # graph plans + the test episode's truth, T=3
    frame = graph_frame(page)
    frame.wait_for_function("() => document.querySelectorAll('.kepp-legend-entry').length > 0", timeout=30_000)
    net = check_drawing(frame, rows[-1])
    assert len(net["nodes"]) >= 3
    page.screenshot(path=str(ARTIFACTS / "e2e_zero_shot_coin.png"))
    page.close()
