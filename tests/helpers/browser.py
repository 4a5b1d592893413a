"""The real app server and a real headless Chromium (Debian's ``chromium``, driven by Playwright
with ``executable_path``; no browser download), for the end-to-end tests."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.app_env import REPO

ARTIFACTS = REPO / "test-artifacts"


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing: CI installs Debian's chromium ('make browser')")
        pytest.skip("chromium is not installed ('make browser' installs Debian's package)")
    return path


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the app server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"the app server did not answer within {timeout} s")


@contextlib.contextmanager
def app_server(opts) -> Iterator[str]:
    """``kepp app`` started with ``opts`` (an ``AppConfig``; its port is replaced by a free one):
    yields the server's URL once it answers, and stops it afterwards."""
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    opts = dataclasses.replace(opts, port=free_port())
    proc = start_app(opts)
    url = f"http://localhost:{opts.port}"
    try:
        wait_until_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def env_server(env) -> Iterator[str]:
    """The app server on an environment's world, models and records (``app_env``, ``demo_env``, ``lists_env``)."""
    from kepp_core.api import AppConfig

    with app_server(AppConfig(dataset=env.dataset, root=str(env.world), checkpoints=str(env.models),
                               predictions=str(env.records))) as url:
        yield url


@pytest.fixture(scope="module")
def server(app_env):
    """The app server on the test world, its models and records."""
    with env_server(app_env) as url:
        yield url


@pytest.fixture(scope="module")
def demo_server(demo_env):
    """The app server on the demo world with the shipped models and records."""
    with env_server(demo_env) as url:
        yield url


@pytest.fixture(scope="module")
def records_copy(demo_env, tmp_path_factory) -> Path:
    """A copy of the shipped prediction records in a scratch folder: playlists are written beside it."""
    path = tmp_path_factory.mktemp("records") / "predictions.jsonl"
    shutil.copyfile(demo_env.records, path)
    return path


@pytest.fixture(scope="module")
def records_server(demo_env, records_copy):
    """The app server on the demo world with the shipped models and a copy of their records."""
    from kepp_core.api import AppConfig

    with app_server(AppConfig(dataset="demo", root=str(demo_env.world), checkpoints=str(demo_env.models),
                              predictions=str(records_copy))) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


# Streamlit's own run state of the script (``stApp``'s ``data-test-script-state``): notRunning once a run has
# ended. Its status widget ("Running...") shows only after a run's first 500 ms, so its absence alone is no
# sign that nothing runs.
IDLE = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && ['notRunning', 'compilationError'].includes(app.dataset.testScriptState)
         && !document.querySelector('[data-testid="stStatusWidget"]'); }"""
# How many runs of the script have ended since this document was loaded (a MutationObserver on stApp's
# run state, installed by the first call).
RUNS_ENDED = """() => { const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return -1;
  if (!window.__keppRuns) {
    window.__keppRuns = {n: 0};
    new MutationObserver(() => { if (app.dataset.testScriptState === 'notRunning') window.__keppRuns.n++; })
      .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  }
  return window.__keppRuns.n; }"""


def idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has no run of the script going (its run state, and no status widget). An
    action's run may not have begun yet: :func:`rerun` waits for that one."""
    page.wait_for_function(IDLE, timeout=timeout)


@contextlib.contextmanager
def rerun(page, timeout: float = 60_000) -> Iterator[None]:
    """Around an action that makes the app run its script (a click, a key, a typed value): on leaving the
    block, waits until a run that ended after the block began has ended and none is going, so what the
    test reads next is that run's page, not the last one's.

    >>> with rerun(page):  # doctest: +SKIP
    ...     page.get_by_role("button", name="Next ▶").click()
    """
    before = page.evaluate(RUNS_ENDED)
    yield
    page.wait_for_function(f"b => ({RUNS_ENDED})() > b && ({IDLE})()", arg=before, timeout=timeout)


def planned_page(browser, server: str, timeout: float = 90_000, **options):
    """A new page (``options``: ``browser.new_page``'s) on the Plan page as it opens, its **Plan** pressed and
    that run over: the page, ready for the live result's checks."""
    page = browser.new_page(**options)
    page.goto(f"{server}/Plan")
    button = page.get_by_role("button", name="Plan", exact=True)
    button.wait_for(timeout=timeout)
    idle(page)
    with rerun(page, timeout=timeout):
        button.click()
    return page


# True once every document of the page (the page and its same-origin frames) has loaded, images included
# (an image that failed to load is complete too; a lazy one may wait for a scroll), and the frames have stayed
# the same over three polls in a row: what a frame's scripts and handlers would run on has run. A frame still
# on its first about:blank (before its srcdoc or src is read) has not loaded, whatever its readyState says.
LOADED = """() => {
  const frames = [...document.querySelectorAll('iframe')].map(f => {
    let d = null; try { d = f.contentDocument; } catch (e) { return [f, null, 'cross-origin']; }
    const pending = !d || ((f.hasAttribute('srcdoc') || (f.src && f.src !== 'about:blank')) && d.URL === 'about:blank');
    return [f, d, pending ? 'pending' : d.URL + ':' + d.readyState]; });
  const docs = [document, ...frames.map(([, d]) => d).filter(d => d)];
  const loaded = !frames.some(([, , v]) => v === 'pending')
    && docs.every(d => d.readyState === 'complete' && [...d.images].every(i => i.complete || i.loading === 'lazy'));
  const v = frames.map(([, , v]) => v).join('|');
  const s = window.__keppLoaded || (window.__keppLoaded = {v: null, n: 0});
  s.n = loaded && v === s.v ? s.n + 1 : 0; s.v = v;
  return s.n >= 3; }"""


def all_loaded(page, timeout: float = 120_000) -> None:
    """Wait until no run of the script is going and every document of the page has loaded (:data:`LOADED`)."""
    idle(page, timeout=timeout)
    page.evaluate("() => { window.__keppLoaded = null; }")
    page.wait_for_function(LOADED, timeout=timeout, polling=100)


# True once the element's box has stayed where it is over three polls in a row (the page stopped scrolling it).
STILL_BOX = """(el) => { const r = el.getBoundingClientRect(), v = [r.x, r.y, r.width, r.height].join();
  const s = el.__keppStill || (el.__keppStill = {v: null, n: 0});
  s.n = v === s.v ? s.n + 1 : 0; s.v = v;
  return s.n >= 3; }"""


def stopped_moving(page, element, timeout: float = 30_000) -> None:
    """Wait until ``element`` (a locator or an element handle) has stopped moving on the page (:data:`STILL_BOX`)."""
    handle = element.element_handle(timeout=timeout) if hasattr(element, "element_handle") else element
    handle.evaluate("el => { el.__keppStill = null; }")
    page.wait_for_function(STILL_BOX, arg=handle, timeout=timeout, polling=100)


def drawn_frame(page, script: str):
    """The first iframe with a vis.js canvas for which ``script`` (a JS function) is true, or None."""
    for frame in page.frames:
        try:
            if frame.locator("#mynetwork canvas").count() and frame.evaluate(script):
                return frame
        except Exception:  # a frame can detach while we look
            continue
    return None


# The 1-based index of the first iframe of the page whose vis.js drawing has its nodes (and, with ``shown``, a
# canvas that has a width: a hidden tab's drawing has none); 0 while there is none. pyvis frames are srcdoc
# frames of the page's own origin, so the page reads their ``network``.
DRAWN_FRAME = """(shown) => 1 + [...document.querySelectorAll('iframe')].findIndex(f => {
  let w; try { w = f.contentWindow; } catch (e) { return false; }
  const box = w && w.document && w.document.querySelector('#mynetwork');
  if (!box || !box.querySelector('canvas') || !(w.network && w.network.body.data.nodes.length)) return false;
  return !shown || box.clientWidth > 0;
})"""


def _drawn(page, shown: bool, timeout: float, what: str):
    """The frame of the first iframe :data:`DRAWN_FRAME` finds, waiting for it (``timeout`` s)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        k = page.wait_for_function(DRAWN_FRAME, arg=shown, timeout=timeout * 1000, polling=100).json_value()
    except PlaywrightTimeout:
        raise AssertionError(what) from None
    return page.locator("iframe").nth(k - 1).element_handle().content_frame()


def graph_frame(page, timeout: float = 30.0):
    """The iframe holding the pyvis drawing, once vis.js has drawn its nodes."""
    return _drawn(page, False, timeout, "no drawn graph (pyvis iframe with a canvas and nodes) in the page")


# --- what a page shows a reader: type sizes, the result on one screen, a drawing's labels --------------------
# Every text the page shows (outside the collapsed sidebar) whose computed size is under ``px``: its size,
# its first characters, its tag and the nearest Streamlit element it lies in.
SMALL_TEXT = """(px) => {
  const small = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const t = walker.currentNode, el = t.parentElement;
    if (!t.textContent.trim() || !el || el.closest('[data-testid="stSidebar"], script, style, noscript')) continue;
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (!r.width || !r.height || cs.visibility === 'hidden' || cs.display === 'none') continue;
    const size = parseFloat(cs.fontSize);
    if (size < px) small.push([size, t.textContent.trim().slice(0, 40), el.tagName,
                               (el.closest('[data-testid]') || {dataset: {}}).dataset.testid || '']);
  }
  return small;
}"""

# A vis.js drawing as the reader sees it: every step's box and drawn label size (its font size times the
# view's scale), every edge label the frame's script drew (its box, its drawn size, the width its text measures
# in its font, the point of its arrow it sits beside), every drawn arrow's line (points along it, its half
# width) and head (vis.js's own geometry: the triangle's corners), and the type size of the frame's own text
# (header and legend). All in the drawing's canvas coordinates.
READ_DRAWING = """() => {
  const ctx = document.createElement("canvas").getContext("2d"), scale = network.getScale();
  const nodes = network.body.nodeIndices.map(id => ({id: id, label: network.body.nodes[id].options.label,
    px: network.body.nodes[id].options.font.size * scale, ...network.getBoundingBox(id)}));
  const labels = (window.keppLabels || []).map(b => {
    ctx.font = `${b.size}px arial`;
    return {text: b.text, edge: b.id, left: b.left, top: b.top, right: b.right, bottom: b.bottom, px: b.size * scale,
            measured: ctx.measureText(b.text).width, anchor: b.anchor, leader: b.leader};
  });
  const draw = network.canvas.frame.canvas.getContext("2d");
  const arrows = network.body.edgeIndices.map(id => {
    const edge = network.body.edges[id], via = edge.edgeType.getViaNode(), values = edge.getFormattingValues();
    const points = [];
    for (let k = 0; k <= 100; k++) { const p = edge.edgeType.getPoint(k / 100, via); points.push([p.x, p.y]); }
    let head = null;
    if (values.toArrow) {
      const a = edge.edgeType.getArrowData(draw, "to", via, false, false, values), c = Math.cos(a.angle), s = Math.sin(a.angle);
      const L = a.length, bx = a.point.x - L * c, by = a.point.y - L * s;
      head = [[a.point.x, a.point.y], [bx - 0.3 * L * s, by + 0.3 * L * c], [bx + 0.3 * L * s, by - 0.3 * L * c]];
    }
    return {id: id, points: points, half: values.width / 2, head: head};
  });
  const own = [...document.querySelectorAll('.kepp-head *, .kepp-legend-entry *')].filter(e => e.textContent.trim())
    .map(e => parseFloat(getComputedStyle(e).fontSize));
  return {nodes: nodes, labels: labels, arrows: arrows, own_px: own, settled: !!window.keppPlaced && !!window.keppArranged,
          canvas: [document.getElementById('mynetwork').clientWidth, document.getElementById('mynetwork').clientHeight]};
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


# READ_DRAWING once the drawing says it is laid out and its labels placed, and it reads the same as at the
# frame's previous poll; null until then.
SETTLED_DRAWING = "() => { const now = (%s)(), text = JSON.stringify(now), same = text === window.__keppRead;" \
    " window.__keppRead = text; return now.settled && same ? now : null; }" % READ_DRAWING


def settled_drawing(frame, timeout: float = 30.0) -> dict:
    """The drawing (:data:`READ_DRAWING`) once laid out and its labels placed: two equal reads, 0.5 s apart."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    frame.evaluate("() => { window.__keppRead = null; }")
    try:
        return frame.wait_for_function(SETTLED_DRAWING, timeout=timeout * 1000, polling=500).json_value()
    except PlaywrightTimeout:
        raise AssertionError(f"the drawing did not settle within {timeout} s; last read: "
                             f"{frame.evaluate(READ_DRAWING)}") from None


def _segment_box_distance(p: tuple, q: tuple, box: dict) -> float:
    """The distance between the segment p-q and the box (0 when they meet)."""
    def inside(x, y):
        return box["left"] <= x <= box["right"] and box["top"] <= y <= box["bottom"]

    if inside(*p) or inside(*q):
        return 0.0
    corners = [(box["left"], box["top"]), (box["right"], box["top"]), (box["right"], box["bottom"]), (box["left"], box["bottom"])]
    sides = list(zip(corners, corners[1:] + corners[:1]))
    if any(_crosses(p, q, a, b) for a, b in sides):
        return 0.0
    return min([_point_segment(c, p, q) for c in corners] + [_point_segment(x, a, b) for x in (p, q) for a, b in sides])


def _point_segment(c: tuple, a: tuple, b: tuple) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((c[0] - a[0]) * dx + (c[1] - a[1]) * dy) / (dx * dx + dy * dy)))
    return ((a[0] + t * dx - c[0]) ** 2 + (a[1] + t * dy - c[1]) ** 2) ** 0.5


def _crosses(p, q, a, b) -> bool:
    def side(o, x, y):
        return (x[0] - o[0]) * (y[1] - o[1]) - (x[1] - o[1]) * (y[0] - o[0])

    d1, d2, d3, d4 = side(a, b, p), side(a, b, q), side(p, q, a), side(p, q, b)
    return (d1 > 0) != (d2 > 0) and (d3 > 0) != (d4 > 0)


def _triangle_meets_box(tri: list, box: dict) -> bool:
    """Whether a triangle (three corners) and a box share any point (separating axes)."""
    corners = [(box["left"], box["top"]), (box["right"], box["top"]), (box["right"], box["bottom"]), (box["left"], box["bottom"])]
    axes = [(1.0, 0.0), (0.0, 1.0)] + [(a[1] - b[1], b[0] - a[0]) for a, b in zip(tri, tri[1:] + tri[:1])]
    for ax in axes:
        t = [x * ax[0] + y * ax[1] for x, y in tri]
        c = [x * ax[0] + y * ax[1] for x, y in corners]
        if max(t) < min(c) or max(c) < min(t):
            return False
    return True


def check_labels_off_arrows(net: dict, where: str) -> None:
    """No edge label's box touches any arrow's line (its drawn width) or any arrow head, and each label lies
    beside its own arrow: within 12 px of the point it names, or within 70 px with a leader line to it."""
    for b in net["labels"]:
        for a in net["arrows"]:
            pts = a["points"]
            near = min(_segment_box_distance(p, q, b) for p, q in zip(pts, pts[1:]))
            assert near > a["half"], f"{where}: label {b['text']!r} lies on arrow {a['id']} ({near:.1f} px from its line)"
            assert not (a["head"] and _triangle_meets_box(a["head"], b)), \
                f"{where}: label {b['text']!r} touches arrow {a['id']}'s head"
        x, y = b["anchor"]["x"], b["anchor"]["y"]
        gap = max(b["left"] - x, x - b["right"], b["top"] - y, y - b["bottom"], 0.0)
        assert gap <= (70 if b["leader"] else 12), f"{where}: label {b['text']!r} is {gap:.1f} px from its arrow"


def check_drawing_labels(net: dict, where: str) -> None:
    """No two steps' boxes overlap; no edge label's box overlaps another's, a step's, an arrow's line or an
    arrow head; each label box is its text's (with its 2-px pad), beside its arrow."""
    import itertools

    for a, b in itertools.combinations(net["nodes"], 2):
        assert not overlap(a, b), f"{where}: steps {a['label']!r} and {b['label']!r} overlap"
    for b in net["labels"]:
        assert abs((b["right"] - b["left"]) - b["measured"] - 4) < 1.5, f"{where}: {b} is not its text's box"
        hit = [n["label"] for n in net["nodes"] if overlap(b, n)]
        assert not hit, f"{where}: label {b['text']!r} covers step(s) {hit}"
    for a, b in itertools.combinations(net["labels"], 2):
        assert not overlap(a, b), f"{where}: labels {a['text']!r} and {b['text']!r} overlap"
    check_labels_off_arrows(net, where)


# Every step of a vis.js drawing as drawn: its label, its hover text and the lines vis.js wrapped the label
# into (its label module's lines, each the text of its blocks).
DRAWN_LINES = """() => network.body.nodeIndices.map(id => {
  const n = network.body.nodes[id];
  return {label: String(n.options.label), title: String(n.options.title || ""),
          lines: (n.labelModule.lines || []).map(l => l.blocks.map(b => b.text).join(""))};
})"""


def check_whole_words(frame, where: str) -> int:
    """Every step's drawn lines (:data:`DRAWN_LINES`) are runs of whole words of its name: no line ends or
    begins inside a word; a word may be cut short with "…" where its name is, the full name then first in
    its hover text. The number of steps checked."""
    steps = frame.evaluate(DRAWN_LINES)
    for s in steps:
        shortened = "\u2026" in s["label"]
        name = s["title"].split("\n")[0] if shortened else s["label"]
        words = name.split()
        drawn = [w for line in s["lines"] for w in line.split()]

        def same(d: str, w: str) -> bool:
            return d == w or (shortened and d.endswith("\u2026") and len(d) > 1 and w.startswith(d[:-1]))

        assert len(drawn) == len(words) and all(map(same, drawn, words)), (
            f"{where}: step {name!r} is drawn as lines {s['lines']} (hover text {s['title'][:60]!r}): "
            "a line ends or begins inside a word")
    return len(steps)

# Presentation mode's least sizes for a room (docs/app.md): every text, and step names with the ✓/✗ marks
# that carry a verdict (CSS px at 1280x720).
MIN_PX, STEP_PX = 20.0, 28.0
HEATMAP_DRAWN = "[data-testid='stEChartsChart'] svg text"  # the Heatmaps page's chart drawn (its labels are)


def check_drawing_type(net: dict, where: str, px: float = MIN_PX, step_px: float | None = STEP_PX) -> None:
    """Every label of the drawing is drawn at least ``px`` CSS pixels (steps, edge labels, header, legend),
    its steps' names at least ``step_px``."""
    small = [(n["label"], round(n["px"], 1)) for n in net["nodes"] if n["px"] < (step_px or px) - 1e-6]
    small += [(e["text"], round(e["px"], 1)) for e in net["labels"] if e["px"] < px - 1e-6]
    small += [("header or legend", s) for s in net["own_px"] if s < px - 1e-6]
    assert not small, f"{where}: drawn smaller than {px} px (step names: {step_px} px): {small}"


def check_page_type(page, where: str, px: float = MIN_PX) -> None:
    """Every text of the page (the collapsed sidebar aside) is at least ``px`` CSS pixels."""
    small = page.evaluate(SMALL_TEXT, px)
    assert not small, f"{where}: text smaller than {px} px: {small[:12]}"


# The box of the first element of each selector (name -> CSS selector; null where none is on show), once all
# lie wholly inside the w x h window and have not moved for two polls; null until then (the last read is kept
# in window.__keppBoxes for a failure's message).
BOXES_IN_VIEW = """([selectors, w, h]) => {
  const boxes = {};
  for (const [name, css] of Object.entries(selectors)) {
    const el = document.querySelector(css), r = el && el.getBoundingClientRect();
    boxes[name] = r && (r.width || r.height) ? {x: r.x, y: r.y, width: r.width, height: r.height} : null;
  }
  const text = JSON.stringify(boxes);
  window.__keppSame = text === window.__keppBoxes ? (window.__keppSame || 0) + 1 : 0;
  window.__keppBoxes = text;
  const inside = Object.values(boxes).every(b => b && b.x >= 0 && b.y >= 0 && b.x + b.width <= w + 0.5
                                                   && b.y + b.height <= h + 0.5);
  return inside && window.__keppSame >= 2 ? boxes : null;
}"""


# What a room reads, beyond the page's own text: step names and verdict marks (the app's classes), the text
# plotly and ECharts draw in their SVG (ticks, colour bars, titles; its computed size is its drawn size), the type of the
# tables' canvas (the data grid's font times the zoom it is drawn at), and download buttons on show.
ROOM_TYPE = """() => {
  const shown = e => { const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
                       return r.width && r.height && cs.visibility !== 'hidden' && cs.display !== 'none'; };
  const size = e => parseFloat(getComputedStyle(e).fontSize);
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const steps = [...main.querySelectorAll('.kepp-card-label, .kepp-step')].filter(shown).map(e => [size(e), e.textContent.trim()]);
  const marks = [...main.querySelectorAll('*')].filter(e => shown(e) && [...e.childNodes].some(n => n.nodeType === 3 && /[✓✗]/.test(n.textContent)))
    .map(e => [size(e), e.textContent.trim().slice(0, 30), e.className || e.tagName]);
  const plotly = [...main.querySelectorAll('.js-plotly-plot text')].filter(t => t.textContent.trim() && shown(t))
    .map(t => [size(t), t.textContent.trim().slice(0, 20), (t.closest('g[class]') || {getAttribute: () => ''}).getAttribute('class')]);
  const echarts = [...main.querySelectorAll('[data-testid="stEChartsChart"] svg text')].filter(t => t.textContent.trim() && shown(t))
    .map(t => [size(t), t.textContent.trim().slice(0, 20)]);
  const grids = [...main.querySelectorAll('[data-testid="stDataFrame"] *')].filter(e => getComputedStyle(e).getPropertyValue('--gdg-base-font-style'))
    .slice(0, 20).map(e => [parseFloat(getComputedStyle(e).getPropertyValue('--gdg-base-font-style').match(/([0-9.]+)px/)[1]) * (e.currentCSSZoom || 1)]);
  const downloads = [...main.querySelectorAll('[data-testid="stDownloadButton"]')].filter(shown).length;
  return {steps: steps, marks: marks, plotly: plotly, echarts: echarts, grids: grids, downloads: downloads};
}"""


def check_room_type(page, where: str, px: float = MIN_PX, step_px: float = STEP_PX) -> dict:
    """Every text of the page at least ``px`` (:func:`check_page_type`), and so is plotly's and the tables'
    drawn type; step names and ✓/✗ marks at least ``step_px``. Returns what was read."""
    check_page_type(page, where, px)
    got = page.evaluate(ROOM_TYPE)
    small = [("step name", t, s) for s, t in got["steps"] if s < step_px - 1e-6]
    small += [("verdict mark", t, s) for s, t, _ in got["marks"] if s < step_px - 1e-6]
    small += [("plotly", t, s) for s, t, _ in got["plotly"] if s < px - 1e-6]
    small += [("echarts", t, s) for s, t in got["echarts"] if s < px - 1e-6]
    small += [("table", "", s[0]) for s in got["grids"] if s[0] < px - 1e-6]
    assert not small, f"{where}: too small for a room: {small[:12]}"
    return got


def boxes_in_view(page, selectors: dict[str, str], timeout: float = 30.0) -> dict:
    """Until the first element of each ``selectors`` entry (name -> CSS selector) lies wholly inside the
    window and stays there (the page scrolls to a new result; bounded by ``timeout``); returns their
    boxes. A failure names every box seen and the window's size."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    size = page.viewport_size
    page.evaluate("() => { window.__keppBoxes = null; window.__keppSame = 0; }")
    try:
        return page.wait_for_function(BOXES_IN_VIEW, arg=[selectors, size["width"], size["height"]],
                                      timeout=timeout * 1000, polling=300).json_value()
    except PlaywrightTimeout:
        seen = page.evaluate("() => window.__keppBoxes")
        raise AssertionError(f"not all within the {size['width']}x{size['height']} window: {seen}") from None


# How much of its canvas a drawing covers: the steps' centres as shares of the canvas's width and height
# (the smallest and the largest of each).
SPREAD = """() => { const c = document.querySelector('#mynetwork canvas'), xs = [], ys = [];
  Object.values(network.getPositions()).forEach(p => { const d = network.canvasToDOM(p);
    xs.push(d.x / c.clientWidth); ys.push(d.y / c.clientHeight); });
  return [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)]; }"""


def fills_its_frame(frame, where: str) -> None:
    """The drawing is spread over its canvas (fitted to the steps, not to a fixed box): all inside,
    reaching about half of its width and of its height or more (two rows: their centres at a quarter and three quarters)."""
    x0, x1, y0, y1 = frame.evaluate(SPREAD)
    assert -0.01 <= x0 and x1 <= 1.01 and -0.01 <= y0 and y1 <= 1.01, (where, x0, x1, y0, y1)
    assert x1 - x0 >= 0.49 and y1 - y0 >= 0.49, f"{where}: the steps cover {x1 - x0:.0%} x {y1 - y0:.0%} of the canvas"



# --- the Plan page as a reader meets it ----------------------------------------------------------------------
def query(page) -> dict[str, str]:
    """The page's address as its query keys (the last value of each)."""
    from urllib.parse import parse_qs, urlparse

    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def rows_of_cards(page) -> list[list[str]]:
    """Each row of step cards in the page as its step labels, top to bottom."""
    return page.evaluate("""() => [...document.querySelectorAll('.kepp-plan')].map(r =>
        [...r.querySelectorAll('.kepp-card > div:last-child')].map(d => d.textContent.trim()))""")


def wait_plan(page, timeout: float = 120_000) -> None:
    """Until the plan's step cards are drawn and the script is done."""
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=timeout)
    idle(page, timeout=timeout)


def open_popover(page, button: str, inside: str, tries: int = 3):
    """Click the popover button named ``button`` and return the locator ``inside`` its body once shown. A rerun
    of the page that closed the popover before it showed (a busy machine) is met as a person would meet it:
    click again; it must open within ``tries`` clicks."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    shown = page.locator(f'[data-testid="stPopoverBody"] {inside}').first
    for attempt in range(tries):
        idle(page)
        page.get_by_role("button", name=button).first.click()
        try:
            shown.wait_for(state="visible", timeout=15_000)
            return shown
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def add_to_playlist(page, name: str, count: int) -> None:
    """A records page's "Add to playlist" control: type the name, press Add, see it confirmed. The
    popover is opened again when a rerun of the page closed it before it showed (a busy machine), as a
    person would click again; it must open within three tries."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    body = page.locator('[data-testid="stPopoverBody"]').last
    field = body.get_by_role("textbox", name="Playlist")
    for attempt in range(3):
        idle(page)
        page.get_by_role("button", name="Add to playlist").first.click()
        try:
            field.wait_for(state="visible", timeout=15_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    field.fill(name)
    field.press("Enter")
    idle(page)
    body.get_by_role("button", name="Add", exact=True).click()
    page.get_by_text(f"to playlist '{name}' ({count} items)").first.wait_for(timeout=30_000)
    page.keyboard.press("Escape")
    idle(page)


def shown_graph_frame(page, timeout: float = 60.0):
    """The frame of the first graph drawing on show (a hidden tab's drawing has no size)."""
    return _drawn(page, True, timeout, "no graph drawing on show")


def read_shown_drawing(page, check, tries: int = 4):
    """``check(frame, net)`` on the drawing on show once settled (:func:`settled_drawing`); the frame is found
    again and read anew when a rerun replaced it while it was read (Playwright: "Frame was detached")."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(tries):
        idle(page)
        frame = shown_graph_frame(page)
        try:
            net = settled_drawing(frame)
            return check(frame, net)
        except PlaywrightError as e:
            if "detached" not in str(e) or attempt == tries - 1:
                raise


# The Plan page's result: its first row of step cards (the plan shown first) and its plan graph's frame.
RESULT = {"plan cards": ".kepp-plan", "plan graph": ".st-key-plan_clicked_frame iframe"}


def result_on_one_screen(page, where: str, also: dict[str, str] | None = None, timeout: float = 30.0) -> dict:
    """The plan cards and the plan graph's frame (and ``also``) wholly inside the window, once the page
    has brought the result into view; their boxes."""
    try:
        return boxes_in_view(page, {**RESULT, **(also or {})}, timeout)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e}") from None


def has_row(page, labels: list[str], timeout: float = 60_000) -> None:
    """Until a row of step cards in the page reads ``labels``."""
    import json

    page.wait_for_function("""t => [...document.querySelectorAll('.kepp-plan')].some(r =>
        JSON.stringify([...r.querySelectorAll('.kepp-card > div:last-child')].map(d => d.textContent.trim())) === t)""",
                           arg=json.dumps(labels, ensure_ascii=False, separators=(",", ":")), timeout=timeout)


# --- waiting on what a test asserts, never on a timer: a page that is still changing is read once it shows it --------
def wait_text(page, selector: str, text: str, exact: bool = True, timeout: float = 90_000) -> None:
    """Until the first element matching ``selector`` reads ``text`` (``exact``: all of its text, trimmed;
    else: contains it). After a slide change, a click or a rerun the page keeps the last run's elements
    until the new run replaces them: waiting on the text the test then asserts reads the new one."""
    page.wait_for_function("""([css, t, exact]) => { const el = document.querySelector(css);
        return !!el && (exact ? el.innerText.trim() === t : el.innerText.includes(t)); }""",
                           arg=[selector, text, exact], timeout=timeout)


def wait_rows(page, rows: list[list[str]], timeout: float = 90_000) -> None:
    """Until the page's first rows of step cards (:func:`rows_of_cards`, top to bottom) read ``rows``."""
    page.wait_for_function("""t => JSON.stringify([...document.querySelectorAll('.kepp-plan')].slice(0, t.length).map(r =>
        [...r.querySelectorAll('.kepp-card > div:last-child')].map(d => d.textContent.trim()))) === JSON.stringify(t)""",
                           arg=rows, timeout=timeout)


def wait_query(page, key: str, value: str | None, timeout: float = 60_000) -> None:
    """Until the page's address has ``key`` = ``value`` (None: no ``key``)."""
    page.wait_for_function("([k, v]) => new URLSearchParams(window.location.search).get(k) === v",
                           arg=[key, value], timeout=timeout)


def wait_slide(page, item: int, of: int, timeout: float = 90_000) -> None:
    """Until the playing bar, the slide's item marker, reads ``item / of``."""
    wait_text(page, ".st-key-playlist_bar", f"{item} / {of}", exact=False, timeout=timeout)
