"""End-to-end, the offline deck as a speaker meets it in a room, on a 40-slide talk of the demo records (every
horizon, successes and failures, three A/B slides: ``tests.helpers.deck.forty_slides``) opened from its file in a
real headless Chromium: every slide inside the window at 1280x720 and 1024x768 with no text under 20 px and its
frames at least 6rem (the type and the frames grow with the screen), every named path's arrows clear of the step boxes and of each other, every slide shown without
JavaScript, one printed page per slide, the speaker's keys (B . F O Esc, a number then Enter, ?) and the
presenter view's countdown."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest

from tests.helpers.browser import ARTIFACTS
from tests.helpers.deck import AB_EPISODE, export, forty_slides, records_of, write_playlist

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SHOWN = """n => document.querySelector('#deck > section.slide:not([hidden])')?.dataset.n === String(n)
  && document.querySelectorAll('#deck > section.slide:not([hidden])').length === 1"""
# The smallest type drawn in a slide (SVG text at its size on the screen), where it is, and the widest frame.
SMALLEST = """(s) => {
  let least = Infinity, where = '';
  const walk = document.createTreeWalker(s, NodeFilter.SHOW_TEXT);
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    const el = t.parentElement;
    if (!t.data.trim() || el.closest('title')) continue;
    const r = document.createRange(); r.selectNodeContents(t);
    if (![...r.getClientRects()].some(q => q.width > 0 && q.height > 0)) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    const text = el.closest('text');
    if (text) { const m = text.getScreenCTM(); px *= Math.hypot(m.a, m.b); }
    if (px < least) { least = px; where = t.data.trim().slice(0, 30) + ' <' + el.tagName + '.' + el.getAttribute('class') + '>'; }
  }
  const frames = [...s.querySelectorAll('.frames img')].map(i => i.getBoundingClientRect().width);
  return {least, where, frame: frames.length ? Math.max(...frames) : 0};
}"""
# Every named path's arrows (the drawing's units) against the step boxes they do not join and the other arrows:
# a point of an arrow under a box, or a quarter of its points under another arrow's stroke, hides it.
HIDDEN = """(s) => {
  const out = [];
  for (const svg of s.querySelectorAll('svg.graph-svg')) {
    const boxes = [...svg.querySelectorAll('g.step')].map(g => {
      const r = g.querySelector('rect');
      return {id: g.dataset.id, x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'), h: +r.getAttribute('height')};
    });
    const edges = [...svg.querySelectorAll('path.edge')].map(p => {
      const n = 40, len = p.getTotalLength(), pts = [];
      for (let i = 0; i <= n; i++) { const q = p.getPointAtLength(len * i / n); pts.push([q.x, q.y]); }
      return {kind: p.dataset.kind, group: p.dataset.group, s: p.dataset.source, t: p.dataset.target,
              w: +p.getAttribute('stroke-width'), pts};
    });
    const near = (x, y, o, reach) => o.pts.some(([a, b], k) => {
      if (!k) return false;
      const [a0, b0] = o.pts[k - 1], dx = a - a0, dy = b - b0, l2 = dx * dx + dy * dy || 1;
      const t = Math.max(0, Math.min(1, ((x - a0) * dx + (y - b0) * dy) / l2));
      return Math.hypot(x - a0 - t * dx, y - b0 - t * dy) < reach;
    });
    edges.forEach((e, i) => {
      if (e.kind !== 'path' || e.s === e.t) return;
      const inner = e.pts.slice(3, -3), name = `${e.s}->${e.t} path ${e.group}`;
      for (const b of boxes) {
        if (b.id === e.s || b.id === e.t) continue;
        if (inner.some(([x, y]) => x > b.x && x < b.x + b.w && y > b.y && y < b.y + b.h)) out.push(name + ' under step ' + b.id);
      }
      edges.forEach((o, j) => {
        if (j === i || o.s === o.t) return;
        const under = inner.filter(([x, y]) => near(x, y, o, (e.w + o.w) / 2)).length;
        if (under > inner.length / 4) out.push(`${name} under ${o.kind} ${o.s}->${o.t} ${o.group || ''}`);
      });
    });
  }
  return out;
}"""


@pytest.fixture(scope="module")
def talk(demo_env, tmp_path_factory):
    """The deck of a 40-slide playlist on a copy of the demo records (the playlists beside them)."""
    folder = tmp_path_factory.mktemp("room")
    env = dataclasses.replace(demo_env, records=folder / "predictions.jsonl")
    shutil.copyfile(demo_env.records, env.records)
    items = forty_slides(records_of(env))
    write_playlist(folder / "playlists", "forty", items)
    out = folder / "forty.html"
    r = export("forty", out, env)
    assert r.returncode == 0, r.stderr[-2000:]
    return out, items, env


def show(page, url: str, k: int) -> None:
    page.goto(f"{url}#{k}")
    page.wait_for_function(SHOWN, arg=k)


# What lies outside the window (any part, card, picture or drawing of the slide), and each frame's picture as
# drawn (object-fit: contain): its shorter side in px and the root type's size.
OUTSIDE = """(s) => {
  const out = [...s.querySelectorAll('[data-part], .card, img, svg.graph-svg')].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width && (r.bottom > innerHeight + 1 || r.right > innerWidth + 1 || r.top < -1 || r.left < -1);
  }).map(el => el.dataset.part || el.tagName.toLowerCase() + '.' + (el.getAttribute('class') || ''));
  const pictures = [...s.querySelectorAll('.frames img')].map(i => {
    const r = i.getBoundingClientRect(), k = Math.min(r.width / i.naturalWidth, r.height / i.naturalHeight);
    return Math.min(i.naturalWidth, i.naturalHeight) * k;
  });
  return {out, pictures, root: parseFloat(getComputedStyle(document.documentElement).fontSize), layout: s.dataset.layout};
}"""
FRAME_REM = 6  # a frame's picture is never drawn smaller than this (its shorter side, in rem: 120 px at 20 px type)


@pytest.mark.parametrize("width,height", [(1280, 720), (1024, 768)])
def test_every_slide_fits_the_window_with_20px_type_and_readable_frames(browser, talk, width, height):
    """Every slide of the 40 (the T=6 A/B slides among them) inside the window at 1280x720 and 1024x768: no text
    under 20 px, nothing outside the window, every start and goal frame at least 6rem (where the left column is
    short of room the legend or the frames go under the graph and the cards close up: kepp-deck.js)."""
    out, items, _ = talk
    page = browser.new_page(viewport={"width": width, "height": height})
    bad, layouts = [], {}
    for k in range(1, len(items) + 1):
        show(page, out.as_uri(), k)
        got = page.evaluate(f"() => ({SMALLEST})(document.querySelector('#slide-{k}'))")
        if got["least"] < 20 - 0.05:
            bad.append((k, round(got["least"], 1), got["where"]))
        fit = page.evaluate(f"() => ({OUTSIDE})(document.querySelector('#slide-{k}'))")
        layouts[fit["layout"]] = layouts.get(fit["layout"], 0) + 1
        if fit["out"]:
            bad.append((k, "outside the window", fit["out"], fit["layout"]))
        if not fit["pictures"] or min(fit["pictures"]) < FRAME_REM * fit["root"] - 1:
            bad.append((k, "frames", [round(p) for p in fit["pictures"]], fit["layout"]))
        if items[k - 1]["episode"] == AB_EPISODE[0] and items[k - 1].get("versus"):
            page.screenshot(path=str(ARTIFACTS / f"e2e_deck_room_ab_{width}x{height}.png"))
    page.close()
    assert not bad, (bad, layouts)
    assert len(layouts) > 1  # the heavy slides (T=6 A/B) are laid out otherwise than the light ones


def test_type_and_frames_grow_with_the_screen(browser, talk):
    out, items, _ = talk
    sizes = {}
    for width, height in [(1280, 720), (1920, 1080), (3840, 2160)]:
        page = browser.new_page(viewport={"width": width, "height": height})
        show(page, out.as_uri(), 2)
        sizes[width] = page.evaluate(f"() => ({SMALLEST})(document.querySelector('#slide-2'))")
        page.close()
    assert sizes[3840]["least"] >= 2.8 * sizes[1280]["least"] and sizes[1920]["least"] >= 1.4 * sizes[1280]["least"]
    assert sizes[3840]["frame"] > 2.5 * sizes[1280]["frame"] > 0, sizes  # no longer 480 px at 3840x2160


def test_every_named_path_is_visible_in_every_slides_graph(browser, talk):
    out, items, _ = talk
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    hidden, paths = {}, 0
    for k in range(1, len(items) + 1):
        show(page, out.as_uri(), k)
        got = page.evaluate(f"() => ({HIDDEN})(document.querySelector('#slide-{k}'))")
        paths += page.locator(f"#slide-{k} path.edge[data-kind=path]").count()
        if got:
            hidden[k] = got
    ab = next(k for k, i in enumerate(items, start=1) if i["episode"] == AB_EPISODE[0] and i.get("versus"))
    truth = page.locator(f"#slide-{ab} path.edge[data-kind=path][data-group='0']")
    assert truth.count() >= 1  # the A/B slide draws the ground truth's arrows (its legend lists them)
    show(page, out.as_uri(), ab)
    page.locator(f"#slide-{ab} .graph").screenshot(path=str(ARTIFACTS / "e2e_deck_room_ab_graph.png"))
    page.close()
    assert paths > 100 and not hidden, hidden


def test_without_javascript_every_slide_stands_one_under_the_other(browser, talk):
    out, items, _ = talk
    context = browser.new_context(viewport={"width": 1280, "height": 720}, java_script_enabled=False)
    page = context.new_page()
    page.goto(out.as_uri())
    boxes = page.evaluate("""() => [...document.querySelectorAll('#deck > section.slide')].map(s => {
      const r = s.getBoundingClientRect(); return [r.top + scrollY, r.bottom + scrollY, r.width, s.checkVisibility()]; })""")
    assert len(boxes) == len(items) and all(visible and width >= 1279 for _, _, width, visible in boxes)
    assert all(top >= boxes[k - 1][1] - 1 for k, (top, *_) in enumerate(boxes) if k)  # stacked, none over another
    assert page.evaluate(f"() => ({SMALLEST})(document.querySelector('#slide-3'))")["least"] >= 20 - 0.05
    assert not page.locator("#open-presenter").is_visible()  # a button that needs the script is not offered
    page.screenshot(path=str(ARTIFACTS / "e2e_deck_room_nojs.png"))
    context.close()


def test_printing_gives_one_page_per_slide_without_controls(browser, talk):
    out, items, _ = talk
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    show(page, out.as_uri(), 5)
    page.emulate_media(media="print")
    assert not page.locator("#open-presenter").is_visible()
    assert page.locator("#deck > section.slide:visible").count() == len(items)
    pdf = page.pdf(prefer_css_page_size=True, print_background=True)
    page.close()
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == len(items)


def test_the_speakers_keys_blank_fullscreen_overview_jump_and_list(browser, talk):
    out, items, _ = talk
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    show(page, out.as_uri(), 3)
    visible = "id => { const el = document.getElementById(id); return !!el && !el.hidden; }"
    for key in ("b", "."):  # blank, and back
        page.keyboard.press(key)
        page.wait_for_function(visible, arg="kepp-blank")
        assert page.evaluate("() => getComputedStyle(document.getElementById('kepp-blank')).backgroundColor") == "rgb(0, 0, 0)"
        page.keyboard.press(key)
        page.wait_for_function(f"id => !({visible})(id)", arg="kepp-blank")
    page.keyboard.press("f")
    page.wait_for_function("() => !!document.fullscreenElement")
    page.keyboard.press("f")
    page.wait_for_function("() => !document.fullscreenElement")
    page.keyboard.press("o")  # the overview: every slide, this one marked; a click goes there
    page.wait_for_function(visible, arg="kepp-overview")
    assert page.locator("#kepp-overview button").count() == len(items)
    assert page.locator("#kepp-overview button.kepp-here").get_attribute("data-n") == "3"
    page.screenshot(path=str(ARTIFACTS / "e2e_deck_room_overview.png"))
    page.locator("#kepp-overview button[data-n='12']").click()
    page.wait_for_function(SHOWN, arg=12)
    assert not page.locator("#kepp-overview").is_visible() and page.evaluate("() => location.hash") == "#12"
    page.keyboard.press("Escape")  # Esc opens it too, and closes it
    page.wait_for_function(visible, arg="kepp-overview")
    page.keyboard.press("Escape")
    page.wait_for_function(f"id => !({visible})(id)", arg="kepp-overview")
    for typed, k in (("27", 27), ("5", 5), ("99", 5)):  # a number then Enter; one past the end stays
        page.keyboard.type(typed)
        page.keyboard.press("Enter")
        page.wait_for_function(SHOWN, arg=k)
    page.keyboard.press("?")
    page.wait_for_function(visible, arg="kepp-help")
    listed = page.locator("#kepp-help").inner_text()
    assert all(k in listed for k in ("B or .", "F", "O or Esc", "a number, Enter", "?"))
    page.keyboard.press("Escape")
    page.wait_for_function(f"id => !({visible})(id)", arg="kepp-help")
    page.keyboard.press("ArrowRight")  # the clicker's keys still move it
    page.wait_for_function(SHOWN, arg=6)
    context.close()


def test_the_presenter_view_counts_down_the_talk(browser, talk):
    out, items, _ = talk
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{out.as_uri()}#presenter-1")
    left = page.locator("#p-left")
    left.wait_for()
    assert left.inner_text() == "no countdown"  # the playlist gives no length: set it here
    page.locator("#p-minutes").fill("20")
    page.locator("#p-minutes").press("Enter")
    page.wait_for_function("() => /^(20:00|19:5\\d) left$/.test(document.getElementById('p-left').textContent)")
    page.reload()  # the countdown runs on through a reload
    page.wait_for_function("() => /^19:5\\d left$|^20:00 left$/.test(document.getElementById('p-left').textContent)")
    page.locator("#p-minutes").fill("0")
    page.locator("#p-minutes").press("Enter")
    page.wait_for_function("() => document.getElementById('p-left').textContent === 'no countdown'")
    context.close()


def test_export_pdf_prints_one_page_per_slide(talk):
    out, items, env = talk
    pdf = out.with_suffix(".pdf")
    r = export("forty", pdf, env, "--pdf")
    assert r.returncode == 0 and r.stdout.strip() == f"wrote {pdf}", r.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and len(re.findall(rb"/Type\s*/Page[^s]", data)) == len(items)
    assert re.search(rb"/MediaBox\s*\[\s*0\s+0\s+960\s+540\s*\]", data)  # 1280x720 CSS px: 16:9 pages
    r = export("forty", pdf, env, "--pdf")  # an earlier PDF is replaced without asking; another file is not
    assert r.returncode == 0, r.stderr[-2000:]


def test_export_pdf_without_chromium_says_so_in_one_line(talk, tmp_path):
    from tests.helpers.cli import assert_one_line_error, run_kepp

    out, items, env = talk
    pdf = tmp_path / "talk.pdf"
    r = run_kepp("talk", "export", "forty", "--out", pdf, "--pdf", "--dataset", env.dataset, "--root", env.world,
                 "--checkpoints", env.models, "--predictions", env.records, env={"KEPP_CHROMIUM": str(tmp_path / "none")})
    assert_one_line_error(r, "--pdf needs Chromium", "KEPP_CHROMIUM", "nothing was written")
    assert not pdf.exists()
