"""End-to-end, a clicker that never stops: the real app server (demo world, shipped models and records)
in a real headless Chromium at 1280x720, the built-in playlist of scenes played in presentation mode. The
speaker clicks in the plan graph (its canvas is in a frame: the frame takes the focus), on empty canvas and
on a step, and the keys a presenter's clicker sends (→, ←, PageDown, PageUp) still change the slide, also
when a slider has the focus (only a slider being dragged keeps its arrows)."""

from __future__ import annotations

import pytest

from tests.helpers.browser import idle, query, shown_graph_frame, wait_plan

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def at_item(page, k: int) -> None:
    """Until the slide shown is item ``k`` (its address, its progress, its plan drawn)."""
    page.wait_for_function("k => new URLSearchParams(window.location.search).get('item') === k", arg=str(k),
                           timeout=120_000)
    page.wait_for_function("k => (document.querySelector('.st-key-playlist_bar strong') || {}).textContent === k",
                           arg=f"{k} / 5", timeout=120_000)
    wait_plan(page)


def click_in_graph(page, on_step: bool) -> None:
    """Click the plan graph's canvas: on a step (its centre, as vis.js places it) or on empty canvas (a corner);
    the frame then has the focus."""
    frame = shown_graph_frame(page)
    canvas = frame.locator("#mynetwork canvas").bounding_box()  # in the page's coordinates
    if on_step:
        at = frame.evaluate("() => { const id = network.body.nodeIndices[0]; return network.canvasToDOM(network.getPositions([id])[id]); }")
        x, y = canvas["x"] + at["x"], canvas["y"] + at["y"]
    else:
        x, y = canvas["x"] + 6, canvas["y"] + canvas["height"] - 6
    page.mouse.click(x, y)
    page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'IFRAME'", timeout=10_000)
    assert frame.evaluate("() => document.hasFocus()"), "the click did not give the drawing the focus"


def test_the_slide_keys_work_after_a_click_in_the_graph(demo_server, browser):
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Plan?playlist=scenes&item=2&present=1")
    at_item(page, 2)
    idle(page)
    for on_step, key, k in ((False, "ArrowRight", 3), (True, "PageDown", 4), (False, "PageUp", 3), (True, "ArrowLeft", 2)):
        click_in_graph(page, on_step)
        if on_step:
            idle(page)  # a click on a step re-centres the drawing (a rerun): the focus may stay in its frame
        page.keyboard.press(key)
        at_item(page, k)
        assert query(page)["present"] == "1"
    # a slider that merely has the focus (it kept it after a click) does not take → : the slide moves, the slider
    # stays (it never moves a clip behind the speaker's back); PageDown, what clickers send, too
    thumb = page.locator(".st-key-plan_depth input[type=range]").first
    thumb.focus()
    before = thumb.input_value()
    page.keyboard.press("ArrowRight")
    at_item(page, 3)
    assert page.locator(".st-key-plan_depth input[type=range]").first.input_value() == before
    idle(page)
    page.locator(".st-key-plan_depth input[type=range]").first.focus()
    page.keyboard.press("PageDown")
    at_item(page, 4)
    page.close()
