"""End-to-end, a presenter view: the real app server (demo world, shipped models, a copy of their records
with a playlist of three failures and their notes beside it) in a real headless Chromium. The slides play
in one tab at 1280x720 (presentation mode), the presenter view in a second tab of the same browser: it
follows the slides through three items (the current slide, the next one, the speaker's note, the clock),
and the clicker's keys pressed in the presenter view move the slides too. Screenshots go to
``test-artifacts/``."""

from __future__ import annotations

import pytest

from components.talk import playlists
from kepp_core import api
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.browser import ARTIFACTS, idle, query, wait_plan

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}
NOTES = ["Start with the wrong endpoint: <the step model>", "Same failure, another task", "Last: ask the room"]


def presenter_shows(tab, k: int, n: int, note: str, next_label: str | None) -> None:
    """Until the presenter view shows item ``k`` of ``n``: its place, the note (as typed, escaped), the next
    slide's heading."""
    tab.get_by_text(f"Now: {k} / {n}").wait_for(timeout=60_000)
    tab.get_by_text(f"Next: {k + 1}" if k < n else "Next: the end").wait_for(timeout=60_000)
    idle(tab)
    assert tab.locator(".kepp-note").first.inner_text().strip() == note
    if next_label:
        assert tab.get_by_text(next_label).count() >= 1


def test_the_presenter_view_follows_the_slides_and_moves_them(records_server, browser, records_copy):
    preds = api.read_predictions([records_copy])
    rows = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3) & ~preds["success"]].iloc[:3]
    items = [dict(playlists.item_of_row(r), note=note) for r, note in zip(rows.to_dict("records"), NOTES)]
    PlaylistStore(records_copy.parent / "playlists").add("talk", items)
    context = browser.new_context(viewport=SCREEN)
    slides = context.new_page()
    slides.goto(f"{records_server}/Plan?playlist=talk&present=1")
    wait_plan(slides)
    view = context.new_page()
    view.goto(f"{records_server}/Presenter?playlist=talk")
    presenter_shows(view, 1, 3, NOTES[0], None)
    view.get_by_text("following the slides' tab").wait_for(timeout=30_000)
    clock = view.locator(".kepp-clock")
    first = clock.inner_text()
    for k in (2, 3):  # the speaker's clicker, in the slides' tab
        slides.bring_to_front()
        slides.keyboard.press("ArrowRight")
        slides.wait_for_function("k => new URLSearchParams(location.search).get('item') === k", arg=str(k), timeout=60_000)
        presenter_shows(view, k, 3, NOTES[k - 1], None)
    assert clock.inner_text() != first  # the clock runs
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "e2e_presenter_view.png"))
    # the clicker in the presenter view moves the slides too
    view.bring_to_front()
    view.keyboard.press("PageUp")
    slides.wait_for_function("() => new URLSearchParams(location.search).get('item') === '2'", timeout=60_000)
    presenter_shows(view, 2, 3, NOTES[1], None)
    wait_plan(slides)
    assert query(slides)["present"] == "1" and slides.locator(".st-key-playlist_bar").get_by_text("2 / 3").count() == 1
    context.close()
