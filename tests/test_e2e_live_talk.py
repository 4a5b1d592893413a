"""End-to-end, a live talk that cannot go wrong (docs/app.md, "Talks"): the real app server (demo world,
shipped models, a copy of their records with a custom 8-slide playlist of every slide kind beside it) in a
real headless Chromium, in presentation mode.

- The slide is a function of its number: a seeded random walk of clicker keys (→, ←, PageDown, PageUp, Space,
  Home, End), reloads and link opens; after each, the episode and methods the slide draws (its hidden
  ``.kepp-shown`` marker) are the bar's item.
- A server restart mid-talk: the audience keeps the slide with a quiet "reconnecting" mark and never sees
  Streamlit's "Connection error" dialog; → then works with no reload; a reload comes back on the same slide.
  On a restarted server the first → draws the next item's slide, never the old one under its number, and no
  "Running..." on the screen.
- Every slide kind at five projectors (1280×720, 1366×768, 1920×1080, 3840×2160, and 1920×1080 at device
  scale 2): plan, truth, verdict and graph inside the window, the graph's legend inside its frame, nothing
  wider than the window, every step name within its card, type and graph grown with the screen.
- The hardest slide, an A/B pair at T=6 (three rows of six cards), at 1280×720 and 1024×768: every part inside
  the window, no text under 20 px (the graph's step names as drawn too), no step name cut short on a card or in
  the graph.

Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from components.ui.config import MIN_PRESENT_PX, STEP_PRESENT_PX
from kepp_core.api import AppConfig
from tests.helpers.browser import ARTIFACTS, all_loaded, idle
from tests.helpers.talk import (CUT_NAMES, KINDS, SMALLEST_TEXT, long_ab_item, outside, published_by, restartable_server,
                                slide_boxes, wait_shown, write_talk)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
NAME = "talk"
KEYS = {"ArrowRight": 1, "PageDown": 1, " ": 1, "ArrowLeft": -1, "PageUp": -1, "Home": None, "End": None}


@pytest.fixture(scope="module")
def talk(demo_env, browser, tmp_path_factory):
    """The app server (one that a test may restart) and the playlist ``talk`` of every slide kind beside its
    records: ``(server, [(kind, item), ...])``."""
    records = tmp_path_factory.mktemp("talk") / "predictions.jsonl"
    shutil.copyfile(demo_env.records, records)
    opts = AppConfig(dataset="demo", root=str(demo_env.world), checkpoints=str(demo_env.models), predictions=str(records))
    with restartable_server(opts) as server:
        items = write_talk(records, NAME, published_by(browser, server.url))
        assert {kind for kind, _ in items} == set(KINDS) and len(items) == 8
        yield server, items


def slide_url(server, k: int) -> str:
    return f"{server.url}/Plan?playlist={NAME}&item={k}&present=1"


def test_a_seeded_walk_of_keys_reloads_and_links_always_draws_the_bars_item(talk, browser):
    server, items = talk
    count, rng = len(items), random.Random(45)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(slide_url(server, 2))
    k = 2
    wait_shown(page, items[k - 1][1], k, count, "the link to slide 2")
    done = []
    for step in range(60):
        roll = rng.random()
        if roll < 0.12:
            action = "reload"
            page.reload()
        elif roll < 0.24:
            k = rng.randint(1, count)
            action = f"open slide {k}"
            page.goto(slide_url(server, k))
        else:
            key = rng.choice(list(KEYS))
            action = f"key {key!r}"
            idle(page)
            page.keyboard.press(key)
            move = KEYS[key]
            k = (1 if key == "Home" else count) if move is None else min(max(k + move, 1), count)
        done.append(action)
        wait_shown(page, items[k - 1][1], k, count, f"step {step + 1} ({action}; the walk: {done})")
    assert len(done) == 60 and {"reload"} < set(done) and any(a.startswith("open") for a in done)
    assert sum(a.startswith("key") for a in done) >= 30
    page.close()


# Whether Streamlit's connection dialog has been drawn in a frame since the page loaded (checked at every frame).
WATCH_DIALOG = """() => { window.__keppDialogDrawn = false;
  const look = () => { document.querySelectorAll('[data-testid="stDialog"]').forEach(d => {
      if (d.getClientRects().length && getComputedStyle(d).display !== 'none' && d.textContent.includes('Connection error'))
        window.__keppDialogDrawn = true; });
    requestAnimationFrame(look); };
  look(); }"""
MARK = """(shown) => { const m = document.querySelector('.kepp-reconnecting');
  return !!m && (getComputedStyle(m).display !== 'none') === shown; }"""


def test_a_server_restart_mid_talk_keeps_the_slide_and_the_clicker_without_the_dialog(talk, browser):
    server, items = talk
    count = len(items)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(slide_url(server, 3))
    wait_shown(page, items[2][1], 3, count, "slide 3 (an A/B pair)")
    page.evaluate(WATCH_DIALOG)
    page.evaluate("() => { window.__keppSameDocument = true; }")  # gone after any reload
    server.stop()
    page.wait_for_function(MARK, arg=True, timeout=60_000)  # the quiet mark, while the server is away
    page.locator("[data-kepp-connection]").wait_for(state="attached", timeout=60_000)  # Streamlit's dialog came, hidden
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_talk_server_away.png"))
    server.start()
    page.wait_for_function(MARK, arg=False, timeout=120_000)
    wait_shown(page, items[2][1], 3, count, "the same slide after the restart")
    page.keyboard.press("ArrowRight")
    wait_shown(page, items[3][1], 4, count, "→ after the restart, with no reload", timeout=180_000)
    page.keyboard.press("ArrowRight")
    wait_shown(page, items[4][1], 5, count, "→ again")
    assert page.evaluate("() => window.__keppSameDocument === true"), "the page was reloaded"
    assert page.evaluate("() => window.__keppDialogDrawn") is False, "Streamlit's connection dialog was drawn"
    page.reload()
    wait_shown(page, items[4][1], 5, count, "a reload after the restart")
    page.close()


# The projectors: a window's CSS size and its device scale (a 4K projector at 200%: 1920x1080 at scale 2).
PROJECTORS = [(1280, 720, 1), (1366, 768, 1), (1920, 1080, 1), (3840, 2160, 1), (1920, 1080, 2)]
# the slides of the talk that stand for each kind (the longest horizon or the most rows of each)
HARDEST = {"Failure case": 6, "Results episode": 2, "Plan": 4, "Plan, live": 5, "A/B pair": 7}
# every step name on a card on one line per word, and never wider than its card
LABELS_FIT = """() => [...document.querySelectorAll('[data-testid="stMain"] .kepp-card-label')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""


def test_every_slide_kind_fits_every_projector(talk, browser):
    server, items = talk
    count, seen = len(items), {}
    assert set(HARDEST) == set(KINDS) and all(items[k - 1][0] == kind for kind, k in HARDEST.items())
    for width, height, scale in PROJECTORS:
        context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
        page = context.new_page()
        zoom = min(width / 1280, height / 720)
        for kind, k in HARDEST.items():
            where = f"{kind} (slide {k}) at {width}x{height}, scale {scale}"
            page.goto(slide_url(server, k))
            wait_shown(page, items[k - 1][1], k, count, where)
            all_loaded(page)
            boxes = slide_boxes(page)
            assert outside(boxes) == [], f"{where}: {outside(boxes)} ({boxes})"
            assert page.evaluate(LABELS_FIT) == [], where
            # the type and the graph grow with the screen: the same slide, zoomed
            assert boxes["stepPx"] >= STEP_PRESENT_PX * zoom - 0.5, (where, boxes["stepPx"])
            graph = boxes["graph"]["bottom"] - boxes["graph"]["top"]
            assert graph >= 0.6 * height, (where, graph)
            seen[(width, height, scale, kind)] = graph
            if kind == "A/B pair" and scale == 1 and width in (1280, 1920):
                page.screenshot(path=str(ARTIFACTS / f"e2e_talk_ab_{width}x{height}.png"))
        context.close()
    assert len(seen) == len(PROJECTORS) * len(KINDS)


def test_a_six_step_ab_slide_fits_the_window_with_every_name_whole_and_no_small_type(talk, browser):
    """The slide the projector test's T=4 pair does not stand for: three rows of six cards and a graph of six
    steps beside them, compact where the full cards run below the window."""
    from kepp_core.evaluation.playlists import PlaylistStore

    server, _ = talk
    item = long_ab_item(server.opts.predictions)
    PlaylistStore(Path(server.opts.predictions).parent / "playlists").add("six", [item])
    checked = []
    for width, height in ((1280, 720), (1024, 768)):
        where = f"the T=6 A/B slide {item['episode']} at {width}x{height}"
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(f"{server.url}/Plan?playlist=six&item=1&present=1")
        wait_shown(page, item, 1, 1, where)
        all_loaded(page)
        boxes = slide_boxes(page)
        page.wait_for_function("() => document.querySelector('.st-key-plan_clicked_frame iframe').contentWindow.keppArranged")
        idle(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"e2e_talk_ab6_{width}x{height}.png"))
        boxes = slide_boxes(page)
        assert len(boxes["plans"]) == 2 and outside(boxes) == [], f"{where}: {outside(boxes)} ({boxes})"
        smallest = page.evaluate(SMALLEST_TEXT)
        assert smallest[0][0] >= MIN_PRESENT_PX - 0.5, f"{where}: text under {MIN_PRESENT_PX} px: {smallest}"
        assert page.evaluate(CUT_NAMES) == [], where
        checked.append(where)
        page.close()
    assert len(checked) == 2


# Every moment (a frame, a change of the page) the bar says slide ``k`` while something the last run drew (a
# stale element) is still visible: the old slide under the new number.
WATCH_STALE = """k => { window.__keppStaleShown = [];
  const look = () => {
    const bar = document.querySelector('.st-key-playlist_bar');
    if (!bar || !bar.textContent.includes(k + ' / ')) return;
    const stale = [...document.querySelectorAll('[data-testid="stMain"] [data-stale="true"]')]
      .filter(el => el.checkVisibility({visibilityProperty: true, opacityProperty: true}) && el.getClientRects().length);
    if (stale.length) window.__keppStaleShown.push(stale.length);
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, attributes: true});
  const frame = () => { look(); requestAnimationFrame(frame); }; frame(); }"""


def test_the_speakers_keys_in_live_mode_and_no_old_slide_under_a_new_number(talk, browser):
    server, items = talk
    count = len(items)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(slide_url(server, 1))
    wait_shown(page, items[0][1], 1, count, "slide 1")
    visible = "id => { const el = document.getElementById(id); return !!el && !el.hidden; }"
    for key in ("b", "."):  # blank, and back
        page.keyboard.press(key)
        page.wait_for_function(visible, arg="kepp-blank")
        page.keyboard.press(key)
        page.wait_for_function(f"id => !({visible})(id)", arg="kepp-blank")
    page.keyboard.press("?")
    page.wait_for_function(visible, arg="kepp-help")
    assert "O or Esc" in page.locator("#kepp-help").inner_text() and "presenter view" not in page.locator("#kepp-help").inner_text()
    page.keyboard.press("Escape")
    page.wait_for_function(f"id => !({visible})(id)", arg="kepp-help")
    page.keyboard.press("o")  # the overview: every item, titled; a click goes there
    page.wait_for_function(visible, arg="kepp-overview")
    assert page.locator("#kepp-overview button").count() == count
    page.locator("#kepp-overview button[data-n='4']").click()
    wait_shown(page, items[3][1], 4, count, "a click in the overview")
    page.keyboard.type("6")
    page.keyboard.press("Enter")
    wait_shown(page, items[5][1], 6, count, "6 then Enter")
    page.evaluate(WATCH_STALE, 7)
    page.keyboard.press("ArrowRight")
    wait_shown(page, items[6][1], 7, count, "→ from 6")
    assert page.evaluate("() => window.__keppStaleShown") == [], "slide 6's content showed under the number 7"
    assert not page.evaluate("() => document.documentElement.classList.contains('kepp-moving')")
    page.close()


# Every moment Streamlit's "Running... Stop" is drawn on the room's screen.
WATCH_RUNNING = """() => { window.__keppRunningShown = 0;
  const frame = () => { const w = document.querySelector('[data-testid="stStatusWidget"]');
    if (w && w.checkVisibility({visibilityProperty: true, opacityProperty: true}) && w.getClientRects().length)
      window.__keppRunningShown += 1;
    requestAnimationFrame(frame); };
  frame(); }"""


def test_the_first_key_after_a_restart_draws_the_next_slide_and_only_it(talk, browser):
    """A fresh server (a real process stopped and started again: its caches empty but for what its start
    prepares), a live talk opened on it, → pressed once: the bar's next number with that item's own slide, the
    old slide never under the new number, Streamlit's "Running..." never on the screen (how long it takes:
    ``benchmarks/bench_live_restart.py``)."""
    server, items = talk
    count = len(items)
    server.stop()
    server.start()
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(slide_url(server, 4))
    wait_shown(page, items[3][1], 4, count, "slide 4 opened on the restarted server", timeout=300_000)
    page.evaluate(WATCH_STALE, 5)
    page.evaluate(WATCH_RUNNING)
    page.keyboard.press("ArrowRight")
    wait_shown(page, items[4][1], 5, count, "the first → on the restarted server", timeout=300_000)
    assert page.evaluate("() => window.__keppStaleShown") == [], "slide 4's content showed under the number 5"
    assert page.evaluate("() => window.__keppRunningShown") == 0, "Streamlit's running indicator was drawn"
    page.close()


def test_the_live_presenter_view_counts_down_the_talk(talk, browser):
    server, items = talk
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server.url}/Presenter?playlist={NAME}&item=1")
    left = page.locator(".kepp-left")
    left.wait_for(timeout=90_000)
    page.wait_for_function("() => document.querySelector('.kepp-left')?.textContent === 'no countdown'")
    page.locator(".kepp-minutes").fill("15")
    page.locator(".kepp-minutes").press("Enter")
    page.wait_for_function("() => /^(15:00|14:5\\d) left$/.test(document.querySelector('.kepp-left').textContent)")
    page.close()
