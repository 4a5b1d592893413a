"""End-to-end, for talks and links: the real app server (demo world, shipped models and their
records) in a real headless Chromium at a projector's 1280x720. Presentation mode (bigger
type, page switches, turning it off again, the plan inside the first screen after Plan), a deep
link to an episode that survives a reload, "Open in Plan" from Failure cases, a scene loading,
and the graph of every scene and of the Graph page read from vis.js: no edge label over another
or over a step, the frame below Streamlit's header, vis.js served by the app and the HTML export
self-contained. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import itertools
import re
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from components import urls
from components.curation import choose_scenes
from kepp_core import api, catalog
from tests.helpers.browser import ARTIFACTS, graph_frame, idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def title_px(page) -> float:
    """The computed font size of the page title (its h1), in CSS pixels."""
    h1 = page.locator("h1").first
    h1.wait_for(timeout=90_000)
    return float(h1.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def wait_plan(page) -> None:
    """Until the plan's step cards are drawn and the script is done."""
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
    idle(page)


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return bool(box) and box["y"] >= 0 and box["y"] + box["height"] <= SCREEN["height"] and box["x"] >= 0 \
        and box["x"] + box["width"] <= SCREEN["width"]


def test_presentation_mode_at_1280x720(demo_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Results")
    idle(page)
    normal = title_px(page)
    page.goto(f"{demo_server}/Plan?present=1")
    button = page.get_by_role("button", name="Plan", exact=True)
    button.wait_for(timeout=120_000)
    idle(page)
    assert title_px(page) >= 1.4 * normal
    assert page.locator('[data-testid="stSidebar"] input[type="text"]').count() == 0  # settings hidden
    button.click()
    wait_plan(page)
    page.wait_for_timeout(1200)  # the page scrolls to the result
    plan_cards = page.locator(".kepp-plan").first.locator(".kepp-card")
    assert all(in_view(page, plan_cards.nth(k)) for k in range(plan_cards.count())), "plan cards below the fold"
    assert in_view(page, page.locator('[data-testid="stMetricValue"]').first)  # the endpoints
    frame = graph_frame(page)
    top = frame.frame_element().bounding_box()
    assert top and 0 <= top["y"] < SCREEN["height"] - 200  # the graph starts on the first screen
    page.screenshot(path=str(ARTIFACTS / "e2e_present_plan.png"))
    # page switch with the mode on: the page bar (the sidebar's expand control stays too)
    assert page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"]').count()
    page.locator('[data-testid="stMain"]').get_by_role("link", name="Failure cases").first.click()  # the page bar
    page.get_by_role("heading", name="Failure cases").first.wait_for(timeout=60_000)
    idle(page)
    assert query(page).get("present") == "1" and title_px(page) >= 1.4 * normal
    # and off again, without a reload
    page.get_by_role("button", name="Exit presentation").click()
    page.wait_for_function("() => !document.querySelector('.kepp-present')", timeout=30_000)
    idle(page)
    assert abs(title_px(page) - normal) < 1 and "present" not in query(page)
    page.close()


def rows_of_cards(page) -> list[list[str]]:
    """Each row of step cards in the page as its step labels."""
    return page.evaluate("""() => [...document.querySelectorAll('.kepp-plan')].map(r =>
        [...r.querySelectorAll('.kepp-card > div:last-child')].map(d => d.textContent.trim()))""")


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
    page.get_by_role("button", name="Copy link").click()
    shown = page.locator('[data-testid="stPopoverBody"] code').first
    shown.wait_for(timeout=30_000)
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
    page.goto(f"{demo_server}/Plan?{urlencode(urls.plan_query(dict(row)))}")
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
    page.get_by_text("wrong: truth is").first.wait_for(timeout=30_000)
    assert query(page)["plan"] == "1"
    # the scene bar on the Plan page loads another scene in one click
    page.get_by_role("button", name="A clean success").click()
    page.get_by_text("steps correct · success").first.wait_for(timeout=60_000)  # not the button's "success"
    wait_plan(page)
    assert page.get_by_text("wrong: truth is").count() == 0
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
    page.get_by_role("button", name="Copy link").click()
    code = page.locator('[data-testid="stPopoverBody"] code').first
    code.wait_for(timeout=30_000)
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


# The drawn network as vis.js holds it (canvas coordinates): every step's box, and for each edge label
# vis.js draws (its label module's text, not the data's), its box, the width its text measures in the
# label's current font, and its arrow's midpoint.
READ_LABELS = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const nodes = Object.keys(network.body.nodes).map(id => ({id: id, ...network.getBoundingBox(id)}));
  const labels = Object.values(network.body.edges).filter(edge => edge.labelModule.elementOptions.label).map(edge => {
    const s = edge.labelModule.size, font = edge.labelModule.fontOptions, text = edge.labelModule.elementOptions.label;
    ctx.font = `${font.size}px ${font.face}`;
    return {text: text, left: s.left, top: s.top, right: s.left + s.width, bottom: s.top + s.height,
            measured: ctx.measureText(text).width,
            mid: edge.fromId === edge.toId ? null : edge.edgeType.getPoint(0.5)};
  });
  return {nodes: nodes, labels: labels, scaled: !!window.__keppScaled, edges: network.body.data.edges.length};
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def settled_labels(frame, timeout: float = 30.0) -> dict:
    """The drawing's labels once placed: the type grown (presentation mode), then two equal reads."""
    deadline, before = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        now = frame.evaluate(READ_LABELS)
        if now["scaled"] and now == before:
            return now
        before = now
        time.sleep(0.6)
    raise AssertionError("the graph's labels did not settle")


def check_labels(net: dict, where: str) -> None:
    """No edge label's box overlaps another's or a step's; each box is its text's, at its arrow's middle."""
    labels = net["labels"]
    assert labels, f"{where}: no edge label drawn"
    for b in labels:
        assert abs((b["right"] - b["left"]) - b["measured"]) < 1.5, f"{where}: {b} is not its text's box"
        if b["mid"]:
            assert abs((b["left"] + b["right"]) / 2 - b["mid"]["x"]) < 1 and abs((b["top"] + b["bottom"]) / 2 - b["mid"]["y"]) < 1
        hit = [n["id"] for n in net["nodes"] if overlap(b, n)]
        assert not hit, f"{where}: label {b['text']!r} covers step(s) {hit}"
    for a, b in itertools.combinations(labels, 2):
        assert not overlap(a, b), f"{where}: labels {a['text']!r} and {b['text']!r} overlap"


def shown_graph_frame(page, timeout: float = 60.0):
    """The frame of the graph drawing that is on show (a hidden tab's drawing has no size)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        graph_frame(page, timeout)
        for frame in page.frames[1:]:
            try:
                box = frame.frame_element().bounding_box()
                if box and box["width"] > 0 and frame.evaluate("() => typeof network !== 'undefined'"):
                    return frame
            except Exception:  # a rerun can replace the frame while we look
                continue
        time.sleep(0.2)
    raise AssertionError("no graph drawing on show")


def below_header(page, frame) -> tuple[float, float]:
    """The bottom of Streamlit's header and the top of the graph's frame, once the page stopped scrolling."""
    before = None
    for _ in range(20):
        head = page.locator('[data-testid="stHeader"]').bounding_box()
        now = (head["y"] + head["height"], frame.frame_element().bounding_box()["y"])
        if now == before:
            return now
        before = now
        page.wait_for_timeout(400)
    return now


def test_every_scene_draws_its_graph_readable_below_the_header(demo_server, browser, demo_env):
    preds = api.read_predictions([demo_env.records])
    scenes = choose_scenes(preds, horizons=api.trained_horizons(demo_env.models), upload_example=True)
    assert len(scenes) >= 4
    page = browser.new_page(viewport=SCREEN)
    for k, scene in enumerate(scenes):
        page.goto(f"{demo_server}/Plan?{urlencode(scene['query'])}&present=1")
        wait_plan(page)
        frame = graph_frame(page)
        net = settled_labels(frame)
        check_labels(net, scene["name"])
        header, top = below_header(page, frame)
        assert top >= header, f"{scene['name']}: the graph's frame starts {header - top:.0f} px under the header"
        # vis.js comes from the app's static files, not inline in the frame
        assert frame.evaluate("() => [...document.scripts].map(s => s.src).filter(Boolean)") == [
            f"{demo_server}/app/static/vis-network.min.js"]
        page.screenshot(path=str(ARTIFACTS / f"e2e_present_graph_{scene['kind']}.png"))
        if k == 0:  # vis.js is served by the app as a script; the HTML export carries it inline (works offline, alone)
            served = page.request.get(f"{demo_server}/app/static/vis-network.min.js")
            assert served.ok and "javascript" in served.headers["content-type"]
            with page.expect_download() as got:
                page.get_by_role("button", name="Download graph (HTML)").click()
            html = open(got.value.path(), encoding="utf-8").read()
            assert not re.search(r"<script[^>]*\bsrc=", html) and "new vis.Network" in html and len(html) > 400_000
    # the Graph page, scrolled to its drawing as a speaker shows it
    page.goto(f"{demo_server}/Graph?step=add+sugar&min=0.1&present=1")
    page.get_by_text("Hover an arrow").first.wait_for(timeout=90_000)
    idle(page)
    frame = shown_graph_frame(page)
    frame.frame_element().evaluate("e => e.scrollIntoView({block: 'end'})")
    check_labels(settled_labels(frame), "Graph page")
    header, top = below_header(page, frame)
    assert top >= header, f"Graph page: the frame starts {header - top:.0f} px under the header"
    page.close()
