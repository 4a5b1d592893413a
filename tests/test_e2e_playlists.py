"""End-to-end, a speaker's playlist: the real app server (demo world, shipped models, a copy of their
records so the playlist is written beside it) in a real headless Chromium at 1280x720. Three
episodes are added with the pages' own "Add to playlist" buttons (two from Failure cases, one from
Results), the Playlists page is reloaded, and the playlist is played in presentation mode with the
keyboard (→ → ←, then Space): every item opens on the Plan page with its episode planned and its
ground truth shown. The screenshot goes to ``test-artifacts/``."""

from __future__ import annotations


import pytest
from playwright.sync_api import expect

from components.talk.playlists import BUTTONS
from kepp_core import api, catalog
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.browser import (ARTIFACTS, add_to_playlist, graph_frame, has_row, idle, query, rerun,
                                   rows_of_cards, stopped_moving)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def shows_item(page, item, labels: list[str], k: int, n: int) -> None:
    """Until the Plan page shows item ``k`` (1-based) of ``n``: its address, the progress, its
    episode planned (the plan's cards) with the episode's ground truth."""
    page.wait_for_function("k => new URLSearchParams(window.location.search).get('item') === k", arg=str(k),
                           timeout=60_000)
    truth = [labels[a] for a in item["truth"]]
    has_row(page, truth, timeout=90_000)
    idle(page)
    url = query(page)
    assert {key: url[key] for key in item["query"]} == item["query"] and url["playlist"] == "talk"
    assert page.locator(".st-key-playlist_bar").get_by_text(f"{k} / {n}").count() == 1
    assert truth in rows_of_cards(page) and len(rows_of_cards(page)[0]) == int(url["T"])
    bar = page.locator(".st-key-playlist_bar").bounding_box()
    assert bar and bar["y"] >= 0 and bar["y"] + bar["height"] <= SCREEN["height"]  # the progress stays in view


def test_a_playlist_built_from_the_pages_plays_with_the_keyboard(records_server, browser, demo_env, records_copy):
    from kepp_core.data import load_dataset

    labels = load_dataset("demo", demo_env.world).actions
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Failure_cases?method=kepp-R2&T=3")
    page.get_by_role("button", name="Add to playlist").first.wait_for(timeout=120_000)
    idle(page)
    add_to_playlist(page, "talk", 1)
    first = query(page)["episode"]
    with rerun(page):
        page.get_by_role("button", name="Next ▶").first.click()  # the next failure
    page.wait_for_function("e => new URLSearchParams(window.location.search).get('episode') !== e", arg=first,
                           timeout=30_000)
    idle(page)
    add_to_playlist(page, "talk", 2)
    second = query(page)["episode"]
    page.goto(f"{records_server}/Results?T=4&method=kepp-R1")
    page.get_by_role("button", name="Add to playlist").first.wait_for(timeout=120_000)
    idle(page)
    add_to_playlist(page, "talk", 3)
    third = query(page)["episode"]
    saved = PlaylistStore(records_copy.parent / "playlists").read("talk").items
    assert [(i.episode, i.method, i.T) for i in saved] == [(first, "kepp-R2", 3), (second, "kepp-R2", 3),
                                                            (third, "kepp-R1", 4)]
    # the Playlists page, reloaded, lists them in order
    page.goto(f"{records_server}/Playlists?playlist=talk")
    page.get_by_role("link", name="Present", exact=True).wait_for(timeout=90_000)
    page.reload()
    present = page.get_by_role("link", name="Present", exact=True)
    present.wait_for(timeout=90_000)
    idle(page)
    for episode in (first, second, third):
        task, video, step, horizon = catalog.parse_episode_id(episode)
        page.get_by_text(f"video {video} · steps {step + 1}–{step + horizon}").first.wait_for(timeout=10_000)
    # play it in presentation mode: → → ← then Space
    preds = api.read_predictions([records_copy]).set_index(["episode", "method"])
    items = [{"query": i.query, "truth": preds.loc[(i.episode, i.method)]["truth"]} for i in saved]
    present.click()
    page.locator(".kepp-present").first.wait_for(state="attached", timeout=60_000)
    shows_item(page, items[0], labels, 1, 3)
    graph_frame(page)  # the plan graph is drawn
    assert query(page)["present"] == "1"
    for key, k in [("ArrowRight", 2), ("ArrowRight", 3), ("ArrowLeft", 2)]:
        page.keyboard.press(key)
        shows_item(page, items[k - 1], labels, k, 3)
    stopped_moving(page, page.locator(".kepp-plan").first)  # the page scrolls to the result
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_playlist_present.png"))
    page.keyboard.press(" ")  # a presenter's clicker sends Space or PageDown
    shows_item(page, items[2], labels, 3, 3)
    next_button = page.locator(BUTTONS["next"]).first  # the one the key's listener finds (querySelector)
    expect(next_button).to_be_disabled()  # the last item: the key's listener clicks no disabled button
    page.keyboard.press("ArrowRight")  # so nothing further
    idle(page)
    assert query(page)["item"] == "3"
    expect(next_button).to_be_disabled()
    page.close()
