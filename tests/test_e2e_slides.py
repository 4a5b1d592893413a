"""End-to-end, a talk that tells the truth on one screen (docs/app.md): the real app server (demo world,
shipped models, a copy of their records so that playlists are written beside it) in a real headless
Chromium at a projector's 1280x720.

- A failure added to a playlist from Failure cases is, on its slide, the same failure: the record's
  plan, truth and verdict, labelled with its method; a live re-plan is a second, labelled view (the
  result's second tab).
- Every playlist link form (``?playlist=NAME``, ``&item=K``, ``&present=1``) opens its item from a
  fresh browser context (no session, no cookies), with the record shown.
- The plan cards and the plan graph's frame lie inside one 1280x720 window after each arrival: Plan,
  Open in Plan, a deep link and a slide change; the slide's input (task, video, the start and goal
  frames) is on that screen too.
- In presentation mode no text is under 20 CSS px, in the page and drawn inside the vis.js frame
  (step labels, edge labels, header, legend: the drawn size, the font times the view's scale)
  (tests/test_e2e_room_type.py checks every page); the labels of the slide's drawing lie off its arrows
  (tests/test_e2e_path_labels.py).

Screenshots go to ``test-artifacts/``."""

from __future__ import annotations


import pytest

from components.records import urls
from kepp_core import api, catalog
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.browser import (ARTIFACTS, add_to_playlist, check_drawing_labels, check_drawing_type,
                                   check_page_type, has_row, idle, query, rerun, result_on_one_screen, rows_of_cards, settled_drawing,
                                   shown_graph_frame, wait_plan, wait_query, wait_rows, wait_slide, wait_text)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}
INPUT = {"start frame": ".st-key-kepp_slide_start img", "goal frame": ".st-key-kepp_slide_goal img",
         "task and video": ".kepp-input"}


@pytest.fixture(scope="module")
def labels(demo_env):
    from kepp_core.data import load_dataset

    ds = load_dataset("demo", demo_env.world)
    return ds.actions, {t: task.name for t, task in ds.tasks.items()}


def episode_words(record, task_names) -> str:
    """The episode of ``record`` as the slide says it: task · video · steps."""
    task, video, first, horizon = catalog.parse_episode_id(record["episode"])
    return f"{task_names[task]} · video {video} · steps {first + 1}–{first + horizon}"


def shows_record(page, record, actions, task_names, where: str) -> None:
    """The slide shows ``record`` (a predictions row): its plan first, then its truth, its verdict with
    its method, and the episode in words."""
    plan, truth = [actions[a] for a in record["plan"]], [actions[a] for a in record["truth"]]
    rows = rows_of_cards(page)
    assert rows[:2] == [plan, truth], f"{where}: the slide's plan and truth are {rows[:2]}, the record's {[plan, truth]}"
    verdict = page.locator(".kepp-verdict").first
    assert verdict.get_attribute("data-success") == str(bool(record["success"])).lower(), where
    assert verdict.inner_text().startswith(f"Recorded · {catalog.method_label(record['method'])}"), where
    assert ("failure" in verdict.inner_text()) == (not record["success"]), where
    said = page.locator(".kepp-input").first.inner_text()
    assert said == episode_words(record, task_names), (where, said)


def open_fresh(browser, url: str):
    """``url`` in a new browser context (no session, no cookies, nothing cached) at 1280x720."""
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.goto(url)
    wait_plan(page)
    return context, page


def test_a_failure_from_failure_cases_is_that_failure_on_its_slide(records_server, browser, records_copy, labels):
    actions, task_names = labels
    preds = api.read_predictions([records_copy]).set_index(["episode", "method"])
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Failure_cases?method=kepp-R2&T=3")
    page.get_by_role("button", name="Add to playlist").first.wait_for(timeout=120_000)
    idle(page)
    shown = []  # each failure as Failure cases shows it: its episode and its rows of cards
    for k in range(3):
        if k:
            before = query(page)["episode"]
            page.get_by_role("button", name="Next ▶").first.click()
            page.wait_for_function("e => new URLSearchParams(window.location.search).get('episode') !== e",
                                   arg=before, timeout=30_000)
            idle(page)
        episode = query(page)["episode"]
        rec = preds.loc[(episode, "kepp-R2")].to_dict() | {"episode": episode, "method": "kepp-R2"}
        assert not rec["success"]
        has_row(page, [actions[a] for a in rec["plan"]])  # Failure cases shows the record's plan
        add_to_playlist(page, "talk", k + 1)
        shown.append(rec)
    page.close()
    items = PlaylistStore(records_copy.parent / "playlists").read("talk").items
    assert [(i.episode, i.method) for i in items] == [(r["episode"], "kepp-R2") for r in shown]
    recs = shown

    # ?playlist=NAME&item=K&present=1 from a fresh context: the second failure, recorded, on one screen
    context, slide = open_fresh(browser, f"{records_server}/Plan?playlist=talk&item=2&present=1")
    assert slide.locator(".kepp-present").count() and query(slide)["item"] == "2"
    assert slide.locator(".st-key-playlist_bar").get_by_text("2 / 3").count() == 1
    shows_record(slide, recs[1], actions, task_names, "item 2")
    result_on_one_screen(slide, "deep link to a slide", INPUT)
    check_page_type(slide, "slide 2")
    check_drawing_type(settled_drawing(shown_graph_frame(slide)), "slide 2's plan graph")
    ARTIFACTS.mkdir(exist_ok=True)
    slide.screenshot(path=str(ARTIFACTS / "e2e_slide_recorded.png"))
    # a slide change (→): the third failure, brought into view
    with rerun(slide):
        slide.keyboard.press("ArrowRight")
    wait_query(slide, "item", "3")
    wait_slide(slide, 3, 3)  # the slide's item marker, then the slide itself: its episode and its rows
    wait_text(slide, ".kepp-input", episode_words(recs[2], task_names))
    wait_rows(slide, [[actions[a] for a in recs[2][key]] for key in ("plan", "truth")])
    wait_plan(slide)
    has_row(slide, [actions[a] for a in recs[2]["plan"]])  # the new slide's cards drawn (a busy machine draws late)
    shows_record(slide, recs[2], actions, task_names, "item 3 after →")
    result_on_one_screen(slide, "a slide change", INPUT)
    check_page_type(slide, "slide 3")
    check_drawing_type(settled_drawing(shown_graph_frame(slide)), "slide 3's plan graph")
    # re-plan live: the result's second tab, labelled with the live planner's method; the record's tab
    # is still the record
    slide.get_by_role("button", name="Re-plan live").click()
    live = slide.locator(".kepp-verdict.kepp-live").first
    live.wait_for(timeout=120_000)
    idle(slide)
    assert live.inner_text().startswith("Live · ") and query(slide)["live"] == "1"
    assert slide.get_by_role("tab", name="Live re-plan").get_attribute("aria-selected") == "true"
    slide.get_by_role("tab", name="Recorded").click()
    slide.wait_for_function("() => !new URLSearchParams(window.location.search).has('live')", timeout=60_000)
    wait_plan(slide)
    shows_record(slide, recs[2], actions, task_names, "item 3 after its live re-plan")
    context.close()

    # ?playlist=NAME (its first item) and ?playlist=NAME&item=K, each from a fresh context
    for link, k in [("?playlist=talk", 1), ("?playlist=talk&item=3", 3)]:
        context, slide = open_fresh(browser, f"{records_server}/Plan{link}")
        assert query(slide)["item"] == str(k) and query(slide)["rec"] == "kepp-R2", link
        assert slide.locator(".st-key-playlist_bar").get_by_text(f"{k} / 3").count() == 1, link
        shows_record(slide, recs[k - 1], actions, task_names, link)
        result_on_one_screen(slide, link, INPUT)
        context.close()


def test_the_result_shares_one_screen_after_plan_open_in_plan_and_a_deep_link(records_server, browser, records_copy, labels):
    actions, task_names = labels
    preds = api.read_predictions([records_copy]).set_index(["episode", "method"])
    row = api.read_predictions([records_copy]).query("method == 'kepp-R2' and horizon == 4").iloc[5]
    episode_query = "&".join(f"{k}={v}" for k, v in urls.plan_query(dict(row)).items() if k not in ("rec", "seed"))
    for mode in ("", "&present=1"):  # an episode chosen, no record named: Plan, in both modes
        page = browser.new_page(viewport=SCREEN)
        page.goto(f"{records_server}/Plan?{episode_query}{mode}")
        button = page.get_by_role("button", name="Plan", exact=True)
        button.wait_for(timeout=120_000)
        idle(page)
        button.click()
        wait_plan(page)
        page.locator(".kepp-verdict.kepp-live").first.wait_for(timeout=60_000)
        result_on_one_screen(page, f"Plan{mode}")
        if mode:
            check_page_type(page, "Plan in presentation mode")
            check_drawing_type(settled_drawing(shown_graph_frame(page)), "the plan graph in presentation mode")
            page.screenshot(path=str(ARTIFACTS / "e2e_present_plan_one_screen.png"))
        page.close()
    # Open in Plan from Failure cases: the recorded plan of that method, on one screen
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Failure_cases?method=kepp-R2&T=4")
    link = page.get_by_role("link", name="Open in Plan").first
    link.wait_for(timeout=120_000)
    idle(page)
    episode, href = query(page)["episode"], link.get_attribute("href")
    link.click()
    page.get_by_role("heading", name="Plan from a video").wait_for(timeout=60_000)
    wait_plan(page)
    record = preds.loc[(episode, "kepp-R2")].to_dict() | {"episode": episode, "method": "kepp-R2"}
    shows_record(page, record, actions, task_names, "Open in Plan")
    result_on_one_screen(page, "Open in Plan", INPUT)
    page.close()
    # the same link in a fresh context (a deep link), in presentation mode
    context, page = open_fresh(browser, f"{records_server}/{href}&present=1")
    shows_record(page, record, actions, task_names, "deep link")
    result_on_one_screen(page, "deep link", INPUT)
    context.close()
