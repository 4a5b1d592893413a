"""End-to-end, the deck that needs no server: ``kepp talk export`` of a playlist of every slide kind (the demo
world's videos, the shipped records), opened from its file (``file://``, no server anywhere) in a real headless
Chromium. A clicker's keys walk it (→ ← PageDown PageUp Home End), the slide's number follows in the fragment
and a reload or a link keeps it; at 1280x720, 1366x768, 1920x1080 and 3840x2160 (device scale 1 and 2) every
slide's plan, truth, verdict and graph lie inside the window, step names wrap at spaces only, the type grows
with the screen; the presenter window follows the deck and moves it; hostile labels stay text; the Playlists
page's **Export deck** downloads the deck (the one test with a server). Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.browser import ARTIFACTS
from tests.helpers.deck import every_kind, export, hostile_deck, records_of, write_playlist

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
VIEWPORTS = [(1280, 720, 1), (1366, 768, 1), (1920, 1080, 1), (3840, 2160, 1), (1280, 720, 2), (1366, 768, 2),
             (1920, 1080, 2), (3840, 2160, 2)]
SHOWN = """n => location.hash === '#' + n
  && document.querySelector('#deck > section.slide:not([hidden])').dataset.n === String(n)
  && document.querySelectorAll('#deck > section.slide:not([hidden])').length === 1"""
# The shown slide's parts (their boxes), the step names a line break cuts inside a word, the root type size.
MEASURE = """() => {
  const s = document.querySelector('#deck > section.slide:not([hidden])');
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const parts = {};
  for (const el of s.querySelectorAll('[data-part]')) parts[el.dataset.part + (el.dataset.side ? ':' + el.dataset.side : '')] = box(el);
  const svg = s.querySelector('svg.graph-svg');
  if (svg) parts.drawing = box(svg);
  const cut = [];
  for (const name of s.querySelectorAll('.card .name')) {
    const text = name.firstChild, words = /\\S+/g;
    if (name.scrollWidth > name.clientWidth + 1) cut.push(name.textContent);
    let m;
    while (text && (m = words.exec(text.data))) {
      const r = document.createRange(); r.setStart(text, m.index); r.setEnd(text, m.index + m[0].length);
      const lines = new Set([...r.getClientRects()].map(q => Math.round(q.top)));
      if (lines.size > 1) cut.push(m[0]);
    }
  }
  return {w: innerWidth, h: innerHeight, parts, cut, font: parseFloat(getComputedStyle(document.documentElement).fontSize)};
}"""


@pytest.fixture(scope="module")
def talk(demo_env, tmp_path_factory):
    """The deck of a playlist of every slide kind on a copy of the demo records (the playlists beside it)."""
    import dataclasses

    folder = tmp_path_factory.mktemp("deck")
    env = dataclasses.replace(demo_env, records=folder / "predictions.jsonl")
    shutil.copyfile(demo_env.records, env.records)
    items = every_kind(records_of(env))
    write_playlist(folder / "playlists", "talk", items)
    out = folder / "talk.html"
    r = export("talk", out, env, "--allow-missing")  # its last item's method is not in the records
    assert r.returncode == 0, r.stderr[-2000:]
    return out, items


def goto(page, url: str, k: int) -> None:
    page.goto(url)
    page.wait_for_function(SHOWN, arg=k)


def test_the_deck_opened_from_its_file_walks_with_a_clickers_keys(browser, talk):
    out, items = talk
    n = len(items)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    goto(page, out.as_uri(), 1)
    for key, k in [("ArrowRight", 2), ("ArrowRight", 3), ("ArrowLeft", 2), ("PageDown", 3), ("PageUp", 2),
                   ("End", n), ("PageDown", n), ("Home", 1), ("ArrowLeft", 1), ("PageDown", 2)]:
        page.keyboard.press(key)
        page.wait_for_function(SHOWN, arg=k)
    page.reload()
    page.wait_for_function(SHOWN, arg=2)  # a reload keeps the slide
    goto(page, f"{out.as_uri()}#{n - 1}", n - 1)  # a link names its slide
    page.evaluate("() => { location.hash = '#4'; }")  # a fragment typed in the address bar
    page.wait_for_function(SHOWN, arg=4)
    page.close()


@pytest.mark.parametrize("width,height,scale", VIEWPORTS)
def test_every_slide_fits_the_projector_and_its_type_grows_with_it(browser, talk, width, height, scale):
    out, items = talk
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
    page = context.new_page()
    measured = []
    for k, item in enumerate(items, start=1):
        goto(page, f"{out.as_uri()}#{k}", k)
        got = page.evaluate(MEASURE)
        measured.append(k)
        assert (got["w"], got["h"]) == (width, height)
        recorded = item["method"] and item["method"] != "no-such-method"
        plans = {"plan:A", "plan:B"} if item.get("versus") else {"plan"}
        wanted = {"title", "verdict"} | (plans | {"truth", "graph", "drawing", "frames"} if recorded else set())
        assert wanted <= set(got["parts"]), (k, got["parts"])
        for part, (left, top, right, bottom) in got["parts"].items():
            assert left >= -1 and top >= -1 and right <= width + 1 and bottom <= height + 1, (k, part, got["parts"][part])
            assert right - left > 0 and bottom - top > 0, (k, part)
        assert not got["cut"], (k, got["cut"])  # step names break at spaces, never inside a word
        assert got["font"] >= min(width / 64, height * 0.028) - 0.5 and got["font"] >= 16
        if k == 3 and scale == 1:
            page.screenshot(path=str(ARTIFACTS / f"e2e_deck_{width}x{height}.png"))
    assert measured == list(range(1, len(items) + 1))
    context.close()


def test_the_presenter_window_follows_the_deck_and_moves_it(browser, talk):
    out, items = talk
    n = len(items)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    goto(page, f"{out.as_uri()}#2", 2)
    with context.expect_page() as opened:
        page.keyboard.press("p")
    view = opened.value
    view.wait_for_function("() => location.hash === '#presenter-2'")
    note = "() => document.getElementById('p-note').textContent"
    view.wait_for_function(f"t => ({note})() === t && document.getElementById('p-count').textContent === '2 / {n}'",
                           arg=items[1]["note"])
    assert view.locator("#p-current section.slide").count() == 1 and view.locator("#p-next section.slide").count() == 1
    assert view.locator("#p-clock").is_visible()
    page.keyboard.press("ArrowRight")  # the clicker on the audience's window: the presenter follows
    view.wait_for_function(f"t => ({note})() === t && document.getElementById('p-count').textContent === '3 / {n}'",
                           arg=items[2]["note"])
    view.keyboard.press("PageDown")  # and on the presenter's: the audience follows
    page.wait_for_function(SHOWN, arg=4)
    view.keyboard.press("End")
    page.wait_for_function(SHOWN, arg=n)
    view.wait_for_function("() => document.getElementById('p-next-head').textContent === 'Next: the end'")
    view.screenshot(path=str(ARTIFACTS / "e2e_deck_presenter.png"))
    context.close()


def test_hostile_labels_stay_text_in_the_browser(browser, tmp_path):
    text, steps, items = hostile_deck()
    out = tmp_path / "hostile.html"
    out.write_text(text, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    goto(page, out.as_uri(), 1)
    assert page.evaluate("() => window.pwned") is None and page.locator("img").count() == 0 and not dialogs
    shown = page.locator("#slide-1 [data-part=plan]").inner_text()
    assert steps[2].split("<script>")[1].split("<")[0] in shown and "</script>" in shown  # the label, as text
    with context.expect_page() as opened:
        page.keyboard.press("p")
    view = opened.value
    view.wait_for_function("t => document.getElementById('p-note').textContent === t", arg=items[0]["note"])
    assert view.evaluate("() => window.pwned") is None and view.locator("#p-note img").count() == 0
    context.close()


def test_a_presenter_view_opened_by_hand_follows_the_deck_too(browser, talk):
    out, items = talk
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page, view = context.new_page(), context.new_page()  # two tabs of the file, neither opened by the other
    goto(page, f"{out.as_uri()}#1", 1)
    view.goto(f"{out.as_uri()}#presenter-1")
    view.wait_for_function("() => document.getElementById('p-count').textContent.startsWith('1 / ')")
    page.bring_to_front()
    page.keyboard.press("PageDown")
    view.wait_for_function("() => location.hash === '#presenter-2'")
    view.bring_to_front()
    view.keyboard.press("PageDown")
    page.wait_for_function(SHOWN, arg=3)
    assert page.evaluate("() => window.opener") is None and view.evaluate("() => window.opener") is None
    context.close()


def test_export_deck_on_the_playlists_page_downloads_the_deck(records_server, records_copy, browser, tmp_path):
    from kepp_core import api
    from tests.helpers.browser import idle

    items = every_kind(api.read_predictions([records_copy]))[:3]
    write_playlist(records_copy.parent / "playlists", "exported", items)
    context = browser.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{records_server}/Playlists?playlist=exported")
    button = page.get_by_role("button", name="Export deck")
    button.wait_for(timeout=90_000)
    idle(page)
    with page.expect_download(timeout=120_000) as got:
        button.click()
    out = tmp_path / "exported.html"
    got.value.save_as(out)
    assert got.value.suggested_filename == "exported.html"
    deck = context.new_page()  # the file, from disk: the server plays no part
    goto(deck, out.as_uri(), 1)
    assert deck.locator("#deck > section.slide").count() == len(items)
    assert deck.locator("#slide-1 [data-part=plan] .name").count() == items[0]["T"]
    context.close()
