"""End-to-end, the Plan page as a newcomer meets it (docs/app.md, "The Plan page"): the real app server
(demo world, shipped models and records) in a real headless Chromium at 1280x720.

- Opened plainly (from the sidebar, a bookmark), the page stays at its top: the title, Copy link and
  every planning control (horizon, planning model, R, recommendation, sampler, the Plan button) lie
  inside the window, below Streamlit's header.
- A record and its live re-plan are two tabs of one result: one plan graph at a time, the live tab
  labelled with the live planner's row and kept in the address (``live=1``), the recorded tab the
  record as the records hold it.
- A dataset of features alone (the field's split lists, no mp4: ``lists_env``) plans an episode: no
  player, the annotated steps as a timeline with the start and goal windows named, then the plan cards.

Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import pytest

from components.records import urls
from kepp_core import api, catalog
from tests.helpers.browser import ARTIFACTS, env_server, idle, query, rows_of_cards, wait_plan

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}
FIRST_SCREEN = {"title": "h1", "Copy link": ".st-key-plan_link button", "horizon": ".st-key-plan_T",
                "planning model": ".st-key-plan_variant", "R": ".st-key-plan_R", "recommendation": ".st-key-plan_method",
                "sampler": ".st-key-plan_sampler", "Plan button": ".st-key-plan_go button"}


def test_the_plan_page_opens_at_its_top_with_the_title_and_every_control_on_the_first_screen(demo_server, browser):
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.goto(f"{demo_server}/Plan")
    wait_plan(page)  # the page's first state (the clean success) drawn, below the fold
    page.wait_for_timeout(1500)  # a result that scrolled itself into view would have done so by now
    idle(page)
    assert page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop"
                         " + window.scrollY") == 0, "the page scrolled away from its top"
    header = page.locator('[data-testid="stHeader"]').bounding_box()
    below = header["y"] + header["height"] if header else 0
    boxes = {name: page.locator(css).first.bounding_box() for name, css in FIRST_SCREEN.items()}
    outside = {name: b for name, b in boxes.items()
               if not b or b["y"] < below - 0.5 or b["y"] + b["height"] > SCREEN["height"] + 0.5
               or b["x"] < 0 or b["x"] + b["width"] > SCREEN["width"] + 0.5}
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_first_screen.png"))
    assert not outside, f"not on the first screen (below the {below:.0f}-px header, inside 1280x720): {outside}"
    context.close()


def test_a_record_and_its_live_re_plan_are_two_tabs_of_one_result(demo_server, browser, demo_env):
    from kepp_core.data import load_dataset

    actions = load_dataset("demo", demo_env.world).actions
    row = api.read_predictions([demo_env.records]).query("method == 'kepp-R2' and horizon == 3 and ~success").iloc[0]
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.goto(f"{demo_server}/Plan?" + "&".join(f"{k}={v}" for k, v in urls.plan_query(dict(row)).items()))
    wait_plan(page)
    recorded_tab, live_tab = page.get_by_role("tab", name="Recorded"), page.get_by_role("tab", name="Live re-plan")
    assert recorded_tab.get_attribute("aria-selected") == "true" and live_tab.count() == 1
    verdict = page.locator(".kepp-verdict").first
    assert verdict.inner_text().startswith(f"Recorded · {catalog.method_label('kepp-R2')}")
    assert rows_of_cards(page)[0] == [actions[a] for a in row["plan"]] and "live" not in query(page)
    graph = page.locator(".st-key-plan_clicked_frame iframe")
    graph.first.wait_for(timeout=60_000)
    assert graph.count() == 1  # one plan graph
    # the live tab: the live planner's result, labelled with its row, in the address; still one graph
    live_tab.click()
    page.locator(".kepp-verdict.kepp-live").first.wait_for(timeout=120_000)
    idle(page)
    assert page.locator(".kepp-verdict.kepp-live").first.inner_text().startswith("Live · KEPP R=2")
    assert query(page)["live"] == "1" and query(page)["rec"] == "kepp-R2"
    graph.first.wait_for(timeout=60_000)
    assert page.locator(".kepp-verdict").count() == 1 and graph.count() == 1
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_live_tab.png"))
    # back to the record: as recorded, the live tab's key gone from the address
    page.get_by_role("tab", name="Recorded").click()
    page.wait_for_function("() => !new URLSearchParams(window.location.search).has('live')", timeout=60_000)
    wait_plan(page)
    assert page.locator(".kepp-verdict").first.inner_text().startswith("Recorded · ")
    assert rows_of_cards(page)[0] == [actions[a] for a in row["plan"]]
    context.close()


@pytest.fixture(scope="module")
def lists_server(lists_env):
    """The app server on the split lists with features alone (tests/helpers/app_env.py's ``lists_env``)."""
    with env_server(lists_env) as url:
        yield url


def test_a_features_only_episode_is_planned_with_its_steps_timeline_and_named_windows(lists_server, browser, lists_env):
    row = api.read_predictions(sorted(lists_env.records.glob("*.jsonl"))).query("method == 'kepp-R2'").iloc[0]
    linked = {k: v for k, v in urls.plan_query(dict(row)).items() if k not in ("rec", "seed")} | {"plan": "1"}
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.goto(f"{lists_server}/Plan?" + "&".join(f"{k}={v}" for k, v in linked.items()))
    wait_plan(page)
    T = int(linked["T"])
    assert page.locator("video").count() == 0, "a video of features alone has no player"
    timeline = page.locator(".kepp-timeline").first
    assert timeline.is_visible() and timeline.locator(".kepp-tl-step").count() >= T
    assert [c.inner_text() for c in timeline.locator(".kepp-tl-clip").all()] == ["start", "goal"]
    box = page.locator(".st-key-plan_no_player")
    assert box.is_visible() and "No video file" in box.inner_text()
    assert "start clip" in box.inner_text() and "goal clip" in box.inner_text() and "during" in box.inner_text()
    assert "no videos with features" not in page.inner_text("body")
    cards = rows_of_cards(page)
    assert len(cards) >= 2 and all(len(r) == T for r in cards[:2])  # the plan (planned now) and the ground truth
    assert query(page)["plan"] == "1" and query(page)["video"] == linked["video"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_features_only.png"))  # the result, brought into view
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_features_only_inputs.png"))  # the windows and the timeline
    context.close()


@pytest.fixture(scope="module")
def lists_server_without_models(lists_env):
    """The app server on the split lists with features alone and their records, with no models folder."""
    from kepp_core.api import AppConfig
    from tests.helpers.browser import app_server

    with app_server(AppConfig(dataset=lists_env.dataset, root=str(lists_env.world),
                              predictions=str(lists_env.records))) as url:
        yield url


def test_open_in_plan_of_an_imported_methods_ab_row_without_models_shows_that_episodes_recorded_plan(
        lists_server_without_models, browser, lists_env):
    """From an imported method's A/B row on a features-only list without models, Open in Plan opened
    the task's first episode in zero-shot mode. It opens that episode, with the recorded plan labelled with
    its method."""
    from tests.helpers.app_env import IMPORTED, IMPORTED_FILE
    from tests.helpers.browser import rerun

    preds = api.read_predictions(sorted(lists_env.records.glob("*.jsonl")))
    c = api.compare_methods(preds, "kepp-R2", IMPORTED, lists_env.horizon)
    cell = max(("both", "b-only", "neither"), key=lambda n: c.counts[n])
    label = f"{IMPORTED} (imported: {IMPORTED_FILE})"
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.goto(f"{lists_server_without_models}/Results?method=kepp-R2&a=kepp-R2&b={IMPORTED}&cell={cell}")
    opener = page.get_by_role("link", name=f"Open {label} in Plan")
    opener.wait_for(timeout=120_000)
    idle(page)
    unit = c.select(cell).iloc[0]  # the cell's first episode: the one its list shows first
    with rerun(page, timeout=120_000):
        opener.click()
    wait_plan(page)
    at = query(page)
    task, video, first, T = catalog.parse_episode_id(unit["episode"])
    assert (page.url.split("?")[0].endswith("/Plan"), at["video"], at["ep"], at["T"], at["rec"]) == (
        True, video, str(first), str(T), IMPORTED)
    body = page.inner_text("body")
    assert "graph alone" not in body and "top-3 plans" not in body  # not the zero-shot page
    verdict = page.locator(".kepp-verdict-line").first.inner_text()
    assert verdict.startswith("Recorded") and label in verdict
    assert video in page.locator(".kepp-input").first.inner_text()  # that episode's video
    record = preds[(preds["method"] == IMPORTED) & (preds["episode"] == unit["episode"])].iloc[0]
    cards = rows_of_cards(page)
    assert len(cards) >= 2 and all(len(r) == T for r in cards[:2])  # the recorded plan and the ground truth
    assert len(record["plan"]) == T and "No model here re-plans it" in body
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_plan_imported_without_models.png"))
    context.close()


# every element of the A/B tiles' values and labels whose text runs past its box (Streamlit cuts them with "…")
CUT_VALUES = """() => [...document.querySelectorAll('[class*="_ab_tiles"] [data-testid^="stMetric"] *')]
  .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis')
  .map(e => e.textContent)"""


def test_the_ab_tiles_intervals_fit_their_tiles_at_1400_px(lists_server_without_models, browser):
    """At 1,400 px wide the A/B tiles' intervals and labels wrap in their tiles, never cut with "…"."""
    from tests.helpers.app_env import IMPORTED

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{lists_server_without_models}/Results?method=kepp-R2&a=kepp-R2&b={IMPORTED}")
    tiles = page.locator('[class*="_ab_tiles"] [data-testid="stMetricValue"]')
    tiles.first.wait_for(timeout=120_000)
    idle(page)
    values = [t.inner_text() for t in tiles.all()]
    assert len(values) == 4 and all("[" in v and v.rstrip().endswith("]") for v in values[:3])
    assert page.evaluate(CUT_VALUES) == []
    tiles.first.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_ab_tiles_1400.png"))
    context.close()
