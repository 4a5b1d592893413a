"""End-to-end, the numbers on the plan path read from the back of the room: the real app server (demo world,
shipped models, a copy of their records) in a real headless Chromium at a projector's 1280x720. Every edge
label the frame's script draws (app/static/kepp-graph.js) is measured against vis.js's own geometry of the
drawing: its box covers no arrow's line (at its drawn width), no arrow head, no step and no other label, and
lies beside its own arrow; on slides (a failure with a wrong endpoint, a six-step success), on a 22-step plan
graph and on the Graph page at depths 1-3. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from components.records import urls
from components.talk.curation import choose_scenes
from kepp_core.models.folders import trained_horizons
from kepp_core import api
from tests.helpers.browser import (ARTIFACTS, check_drawing_labels, check_drawing_type, check_whole_words,
                                   fills_its_frame, idle, read_shown_drawing, settled_drawing, shown_graph_frame,
                                   wait_plan)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def test_path_labels_lie_off_every_arrow_on_slides(demo_server, browser, demo_env):
    preds = api.read_predictions([demo_env.records])
    scenes = {s["kind"]: s for s in choose_scenes(preds, horizons=trained_horizons(demo_env.models))}
    page = browser.new_page(viewport=SCREEN)
    ARTIFACTS.mkdir(exist_ok=True)
    placed = 0
    for kind in ("wrong_endpoint", "clean_success", "repeated_step", "long"):
        if kind not in scenes:
            continue
        page.goto(f"{demo_server}/Plan?{urlencode(scenes[kind]['query'])}&present=1")
        wait_plan(page)
        net = settled_drawing(shown_graph_frame(page))
        check_drawing_labels(net, f"the {kind} slide")
        check_drawing_type(net, f"the {kind} slide")
        placed += len(net["labels"])
        page.screenshot(path=str(ARTIFACTS / f"e2e_path_labels_{kind}.png"))
    assert placed >= 4, f"only {placed} path labels drawn on the slides"
    page.close()


def test_labels_stay_off_the_arrows_at_depths_1_to_3_and_on_a_22_step_graph(demo_server, browser, demo_env):
    page, counts = browser.new_page(viewport=SCREEN), []
    for depth in (1, 2, 3):
        page.goto(f"{demo_server}/Graph?step=add+sugar&depth={depth}&present=1")
        page.get_by_text("Hover an arrow").first.wait_for(timeout=90_000)
        idle(page)
        frame = shown_graph_frame(page)
        box = frame.frame_element().bounding_box()
        assert box["y"] < SCREEN["height"] - 200, f"depth {depth}: the drawing starts at {box['y']:.0f} px"
        net = settled_drawing(frame)
        where = f"Graph page, depth {depth}"
        counts.append(len(net["nodes"]))
        check_drawing_labels(net, where)
        check_drawing_type(net, where)
        fills_its_frame(frame, where)
        # the chosen step alone in the middle column (or at the left edge)
        xs = {n["label"]: (n["left"] + n["right"]) / 2 for n in net["nodes"]}
        lo, hi = min(xs.values()), max(xs.values())
        assert xs["add sugar"] == lo or 0.3 <= (xs["add sugar"] - lo) / (hi - lo) <= 0.7, (where, xs)
        if depth == 3:
            page.screenshot(path=str(ARTIFACTS / "e2e_graph_depth3.png"))
    assert counts == sorted(counts) and counts[-1] > counts[0], counts  # deeper: more of the graph
    # a six-step failure's plan graph, two steps deep with 22 steps drawn (other tasks' steps asked for) in the
    # normal layout; in presentation mode (the task's own steps) one screen holds fewer at a room's type size
    preds = api.read_predictions([demo_env.records])
    rec = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 6) & ~preds["success"]].iloc[0]
    link = "&".join(f"{k}={v}" for k, v in urls.plan_query(dict(rec)).items())
    for mode, wanted in (("&present=0", 22), ("&present=1", None)):
        page.goto(f"{demo_server}/Plan?{link}{mode}")
        wait_plan(page)
        for key, value in (("plan_depth", 2), ("plan_max_nodes", 22)):
            thumb = page.locator(f".st-key-{key} input[type=range]").first
            thumb.focus()
            while int(thumb.input_value()) < value:
                thumb.press("ArrowRight")
            idle(page)
        if wanted:  # other tasks' steps too (a slide keeps to its task's own)
            page.locator(".st-key-plan_others label").first.click()
            idle(page)
            page.wait_for_function("n => [...document.querySelectorAll('iframe')].some(f => { try { "
                                   "return f.contentWindow.network.body.data.nodes.length === n } catch (e) { return false } })",
                                   arg=wanted, timeout=60_000)
        else:
            page.wait_for_timeout(1500)
            idle(page)

        def check(frame, net, mode=mode, wanted=wanted):
            where = f"a six-step plan graph{mode}, {len(net['nodes'])} steps"
            assert len(net["nodes"]) == (wanted or len(net["nodes"])) >= 8, where
            check_drawing_labels(net, where)
            if not wanted:
                check_drawing_type(net, where)
            fills_its_frame(frame, where)

        read_shown_drawing(page, check)
    page.close()


def test_step_names_wrap_at_spaces_only_on_a_six_step_slide_at_1280x720_and_1920x1080(demo_server, browser, demo_env):
    """vis.js breaks a word wider than a step's box mid-word ("boil wate/r"): the frame's script widens each box
    to its longest word in the step's drawn font (or cuts the word short with "…", the name on hover)."""
    from kepp_core.data import load_dataset

    actions = load_dataset("demo", demo_env.world).actions
    preds = api.read_predictions([demo_env.records])
    six = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 6)]
    # the six-step plan whose steps hold the longest word (the hardest to fit in a column)
    longest = six.apply(lambda r: max(len(w) for a in (*r["plan"], *r["truth"]) for w in actions[a].split()), axis=1)
    rec = six.loc[longest.idxmax()]
    link = urlencode(urls.plan_query(dict(rec)))
    checked = []  # the steps checked on each screen
    for screen in ({"width": 1280, "height": 720}, {"width": 1920, "height": 1080}):
        page = browser.new_page(viewport=screen)
        page.goto(f"{demo_server}/Plan?{link}&present=1")
        wait_plan(page)
        frame = shown_graph_frame(page)
        settled_drawing(frame)
        where = f"{rec['episode']} at {screen['width']}x{screen['height']}"
        checked.append(check_whole_words(frame, where))
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"e2e_step_names_{screen['width']}.png"))
        page.close()
    assert len(checked) == 2 and min(checked) >= 6, f"steps checked per screen: {checked}"
