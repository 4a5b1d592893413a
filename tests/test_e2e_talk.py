"""End-to-end, for talks and links: the real app server (demo world, shipped models and their
records) in a real headless Chromium at a projector's 1280x720. Presentation mode (bigger
type, page switches, turning it off again, the plan inside the first screen after Plan), a deep
link to an episode that survives a reload, "Open in Plan" from Failure cases, a scene loading,
and the graph of every scene and of the Graph page read from vis.js: no edge label over another
or over a step, the frame below Streamlit's header, vis.js served by the app and the HTML export
self-contained. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from components.records import urls
from components.talk.curation import choose_scenes
from kepp_core.models.folders import trained_horizons
from kepp_core import api, catalog
from tests.helpers.browser import (ARTIFACTS, check_drawing_labels, check_drawing_type, graph_frame, idle,
                                   open_popover, query, rerun, result_on_one_screen, rows_of_cards, settled_drawing,
                                   shown_graph_frame, stopped_moving, wait_plan)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def title_px(page) -> float:
    """The computed font size of the page title (its h1), in CSS pixels."""
    h1 = page.locator("h1").first
    h1.wait_for(timeout=90_000)
    return float(h1.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


def test_presentation_mode_at_1280x720(demo_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Results")
    idle(page)
    normal = title_px(page)
    page.goto(f"{demo_server}/Plan?present=1")  # it opens on the clean success's record
    wait_plan(page)
    assert title_px(page) >= 1.4 * normal
    assert page.locator('[data-testid="stSidebar"] input[type="text"]').count() == 0  # settings hidden
    # brought into view: the verdict and endpoints, the plan cards and the plan graph on one screen
    result_on_one_screen(page, "the Plan page's first result", {"verdict": ".kepp-verdict"})
    page.screenshot(path=str(ARTIFACTS / "e2e_present_plan.png"))
    # page switch with the mode on: the page bar (the sidebar's expand control stays too)
    assert page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"]').count()
    page.locator('[data-testid="stMain"]').get_by_role("link", name="Failure cases").first.click()  # the page bar
    page.get_by_role("heading", name="Failure cases").first.wait_for(timeout=60_000)
    idle(page)
    assert query(page).get("present") == "1" and title_px(page) >= 1.4 * normal
    # and off again, without a reload
    with rerun(page):
        page.get_by_role("button", name="Exit presentation").click()
    page.wait_for_function("() => !document.querySelector('.kepp-present')", timeout=30_000)
    assert abs(title_px(page) - normal) < 1 and "present" not in query(page)
    page.close()


def test_deep_link_opens_an_episode_and_survives_a_reload(demo_server, browser, demo_env):
    from kepp_core.data import load_dataset

    ds_labels = load_dataset("demo", demo_env.world).actions
    preds = api.read_predictions([demo_env.records])
    row = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 4)].iloc[7]
    q = urls.plan_query(dict(row))
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Plan?video={q['video']}&ep={q['ep']}&T=4&model=graph-R2&R=2&plan=1")
    wait_plan(page)
    truth = [ds_labels[a] for a in row["truth"]]
    assert truth in rows_of_cards(page)  # the ground truth of that very episode
    assert page.locator(".kepp-plan").first.locator(".kepp-card").count() == 4
    url = query(page)
    assert url["video"] == q["video"] and url["ep"] == q["ep"] and url["T"] == "4" and url["plan"] == "1"
    # "Copy link" shows this very address
    shown = open_popover(page, "Copy link", "code")
    assert query(page) == {k: v[-1] for k, v in parse_qs(urlparse(shown.inner_text().strip()).query).items()}
    assert shown.inner_text().strip().startswith(f"{demo_server}/Plan?")
    page.keyboard.press("Escape")
    page.reload()
    wait_plan(page)
    assert truth in rows_of_cards(page) and query(page)["ep"] == q["ep"]
    page.close()


def test_why_this_plan_shows_the_planners_own_numbers(demo_server, browser, demo_env):
    """The Plan page's "Why this plan" table, as the browser draws it, holds the numbers of the
    planner run here on the same clips: its plan, the model's score of each step, the graph's
    transition probabilities and the endpoint probabilities."""
    from kepp_core.data import load_dataset

    ds = load_dataset("demo", demo_env.world)
    preds = api.read_predictions([demo_env.records])
    row = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 4)].iloc[3]
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(f"{demo_server}/Plan?{urlencode(urls.plan_query(dict(row)))}&live=1")  # the record and a live re-plan
    page.locator(".kepp-verdict.kepp-live").first.wait_for(timeout=120_000)
    wait_plan(page)
    url = query(page)  # the clips the page planned with are in its address
    start, goal = ([float(x) for x in url[k].split("-")] for k in ("start", "goal"))
    planner = api.load_planner(demo_env.models, 4, catalog.plan_role("graph", 2), dataset=ds)
    video = next(v for v in ds.videos if v.id == url["video"])
    result, _, _ = api.plan_clips(planner, api.video_features(video), start, goal, 4, 2)
    why = page.locator('[data-testid="stExpander"]', has_text="Why this plan").first
    why.locator('[data-testid="stTable"] tbody tr').first.wait_for(timeout=60_000)
    header = why.locator('[data-testid="stTable"] thead th').all_inner_texts()
    cells = [r.locator("td").all_inner_texts() for r in why.locator('[data-testid="stTable"] tbody tr').all()]
    assert [h.strip() for h in header][-7:] == ["step", "plan", "planner score", "graph transition",
                                                "endpoint probability", "before decoding", "changed"]
    assert len(cells) == 4, cells
    number = lambda x: "" if x is None or x != x else f"{x:.4f}"  # noqa: E731  (NaN and None are empty cells)
    for t, (cell, why) in enumerate(zip(cells, result.why)):
        cell = [c.strip() for c in cell][-7:]
        assert cell[1] == ds.actions[result.plan[t]]
        assert cell[2:5] == [number(why["score"]), number(why["transition"]), number(why["endpoint"])], (t, cell)
    page.close()


def test_open_in_plan_from_failure_cases(demo_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{demo_server}/Failure_cases")
    link = page.get_by_role("link", name="Open in Plan")
    link.first.wait_for(timeout=90_000)
    idle(page)
    first_episode = query(page)["episode"]
    # a click on the second row of the failures table shows that episode (and puts it in the URL)
    table = page.locator('.st-key-tbl_fail_table [data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 + 17)
    page.wait_for_function("e => !window.location.search.includes(e)",
                           arg="episode=" + first_episode.replace("/", "%2F").replace(":", "%3A"), timeout=30_000)
    idle(page)
    episode = query(page)["episode"]
    assert episode != first_episode
    link.first.click()
    page.get_by_role("heading", name="Plan from a video").wait_for(timeout=60_000)
    wait_plan(page)
    task, video, first, horizon = catalog.parse_episode_id(episode)
    url = query(page)
    assert url["video"] == video and url["ep"] == str(first) and url["T"] == str(horizon)
    page.close()


def open_scene(browser, server: str, name: str):
    """A new 1280×1000 page on Home, the scene ``name`` clicked and its plan shown on the Plan page."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(server)
    scene = page.get_by_role("link", name=name)
    scene.first.wait_for(timeout=90_000)
    idle(page)
    scene.first.click()
    page.get_by_role("heading", name="Plan from a video").wait_for(timeout=60_000)
    wait_plan(page)
    return page


def test_a_scene_loads_and_plans(demo_server, browser):
    page = open_scene(browser, demo_server, "A wrong-endpoint failure")
    page.locator('.kepp-verdict[data-success="false"]').first.wait_for(timeout=30_000)  # the record's failure
    page.get_by_text("(truth:").first.wait_for(timeout=30_000)  # an endpoint is wrong
    assert query(page)["rec"]
    # the scene bar on the Plan page loads another scene in one click
    page.get_by_role("button", name="Clean success").click()
    page.locator('.kepp-verdict[data-success="true"]').first.wait_for(timeout=60_000)
    wait_plan(page)
    assert page.get_by_text("(truth:").count() == 0
    page.close()


def test_graph_deep_link_survives_a_reload(demo_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{demo_server}/Graph?step=add+sugar&depth=2&min=0.05&w=pkg")
    caption = page.get_by_text("within 2 steps of add sugar")
    caption.first.wait_for(timeout=90_000)
    idle(page)

    def shown() -> tuple[str, str, str, list[str]]:
        """The Depth slider's value, the chosen step, the weighting, and the drawn graph's node labels."""
        depth = page.locator(".st-key-graph_depth input[type=range]").first.input_value()
        step = page.get_by_role("combobox", name="Step").first.input_value()
        weights = page.locator('.st-key-graph_weighting label[data-selected="true"]').first.inner_text()
        graph_frame(page)  # drawn
        around = [f for f in page.frames if f != page.main_frame and "graph around 'add sugar'" in f.content()]
        assert len(around) == 1, "no drawing of the graph around the step"
        nodes = around[0].evaluate("() => network.body.data.nodes.get().map(n => n.label)")
        return depth, step, weights.strip(), sorted(nodes)

    before = shown()
    assert before[:2] == ("2", "add sugar") and before[2].startswith("frequency graph") and "add sugar" in before[3]
    assert query(page) == {"step": "add sugar", "depth": "2", "min": "0.05", "w": "pkg"}
    # the copy-link control holds this very address
    code = open_popover(page, "Copy link", "code")
    assert {k: v[-1] for k, v in parse_qs(urlparse(code.inner_text().strip()).query).items()} == query(page)
    page.keyboard.press("Escape")
    page.reload()
    caption.first.wait_for(timeout=90_000)
    idle(page)
    assert shown() == before and query(page)["depth"] == "2"
    page.screenshot(path=str(ARTIFACTS / "e2e_graph_link.png"))
    page.close()


def test_the_upload_scene_plans_a_video_loaded_as_an_upload(demo_server, browser):
    page = open_scene(browser, demo_server, "An uploaded video")
    url = query(page)
    assert url["source"] == "upload" and url["plan"] == "1" and "video" not in url
    page.get_by_text("Example upload").first.wait_for(timeout=30_000)
    assert page.locator('[data-testid="stVideo"]').count() == 1  # the stored upload plays
    assert page.get_by_text("Ground truth").count() == 0  # an upload has no annotations
    assert len(page.locator(".kepp-plan").first.locator(".kepp-card").all()) == int(url["T"])
    page.close()


def below_header(page, frame) -> tuple[float, float]:
    """The bottom of Streamlit's header and the top of the graph's frame, once the page stopped scrolling."""
    stopped_moving(page, frame.frame_element())
    head = page.locator('[data-testid="stHeader"]').bounding_box()
    return head["y"] + head["height"], frame.frame_element().bounding_box()["y"]


def test_every_scene_draws_its_graph_readable_below_the_header(demo_server, browser, demo_env):
    preds = api.read_predictions([demo_env.records])
    scenes = choose_scenes(preds, horizons=trained_horizons(demo_env.models), upload_example=True)
    assert len(scenes) >= 4
    page = browser.new_page(viewport=SCREEN)
    for scene in scenes:
        page.goto(f"{demo_server}/Plan?{urlencode(scene['query'])}&present=1")
        wait_plan(page)
        frame = graph_frame(page)
        net = settled_drawing(frame)
        assert net["labels"], f"{scene['name']}: no edge label drawn"
        check_drawing_labels(net, scene["name"])
        check_drawing_type(net, scene["name"])
        header, top = below_header(page, frame)
        assert top >= header, f"{scene['name']}: the graph's frame starts {header - top:.0f} px under the header"
        # vis.js and the drawing's own script come from the app's static files, not inline in the frame
        sources = frame.evaluate("() => [...document.scripts].map(s => s.src).filter(Boolean)")
        assert sources[0] == f"{demo_server}/app/static/vis-network.min.js" and len(sources) == 2
        assert sources[1].startswith(f"{demo_server}/app/static/kepp-graph.js?v=")
        # a slide has no download button: the exports are for the desk
        assert not page.get_by_role("button", name="Download graph (HTML)").is_visible()
        assert not frame.locator("#kepp-png").count()
        page.screenshot(path=str(ARTIFACTS / f"e2e_present_graph_{scene['kind']}.png"))
    # vis.js is served by the app as a script; the HTML export (normal mode) carries it inline (works offline, alone)
    served = page.request.get(f"{demo_server}/app/static/vis-network.min.js")
    assert served.ok and "javascript" in served.headers["content-type"]
    own = page.request.get(f"{demo_server}/app/static/kepp-graph.js")
    assert own.ok and "javascript" in own.headers["content-type"]
    page.goto(f"{demo_server}/Plan?{urlencode(scenes[0]['query'])}&present=0")
    wait_plan(page)
    with page.expect_download() as got:
        page.get_by_role("button", name="Download graph (HTML)").click()
    html = open(got.value.path(), encoding="utf-8").read()
    assert not re.search(r"<script[^>]*\bsrc=", html) and "new vis.Network" in html and len(html) > 400_000
    assert "keppPng" in html and "kepp-graph-data" in html  # the drawing's own script inline too
    # the Graph page, scrolled to its drawing as a speaker shows it
    page.goto(f"{demo_server}/Graph?step=add+sugar&min=0.1&present=1")
    page.get_by_text("Hover an arrow").first.wait_for(timeout=90_000)
    idle(page)
    frame = shown_graph_frame(page)
    frame.frame_element().evaluate("e => e.scrollIntoView({block: 'end'})")
    net = settled_drawing(frame)
    check_drawing_labels(net, "Graph page")
    check_drawing_type(net, "Graph page")
    header, top = below_header(page, frame)
    assert top >= header, f"Graph page: the frame starts {header - top:.0f} px under the header"
    page.close()
