"""A talk's playlist of every slide kind, an app server that can be stopped and started again on its port, and
what a playing slide shows (its bar's number, the episode and methods its content draws), for the live talk's
end-to-end tests (tests/test_e2e_live_talk.py) and the screenshots of docs/app.md (benchmarks/talk_screens.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.browser import wait_until_healthy

# The kinds of slide a talk is made of (docs/app.md, "Talks"): an episode added from Failure cases, from
# Results, from the Plan page (a record, or planned live on its slide) and an A/B pair of two methods.
KINDS = ("Failure case", "Results episode", "Plan", "Plan, live", "A/B pair")


def talk_items(records: Path, published=None) -> list[tuple[str, dict]]:
    """Eight slides of every kind from the prediction records at ``records`` (the demo's), each as
    ``(kind, item)`` (the item as a playlist file holds it), with notes on some. ``published``: a function
    giving the query the Plan page publishes when opened at a query (its clips, model and settings too):
    the Plan items hold it, as the page's own "Add to playlist" writes them."""
    from components.records import urls
    from components.talk import playlists
    from kepp_core import api

    preds = api.read_predictions([records])

    def row(method: str, horizon: int, success: bool, k: int = 0) -> dict:
        rows = preds[(preds["method"] == method) & (preds["horizon"] == horizon) & (preds["success"] == success)]
        return dict(rows.iloc[k])

    def plan(r: dict, live: bool = False) -> dict:
        query = urls.plan_query(r)
        if live:
            query = {**{k: v for k, v in query.items() if k not in ("rec", "seed")}, "plan": "1"}
        return playlists.plan_item(published(query) if published else query, r["episode"])

    failure, long = row("kepp-R2", 3, False), row("kepp-R2", 6, False)
    return [("Failure case", {**playlists.item_of_row(failure), "note": "the wrong endpoint"}),
            ("Results episode", playlists.item_of_row(row("kepp-R1", 4, True))),
            ("A/B pair", {**playlists.ab_item(row("kepp-R2", 3, True, 3), "random"), "note": "A right, B wrong"}),
            ("Plan", plan(row("kepp-R2", 5, True))),
            ("Plan, live", plan(row("kepp-R1", 3, True, 5), live=True)),
            ("Failure case", {**playlists.item_of_row(long), "note": "a long horizon"}),
            ("A/B pair", playlists.ab_item(row("kepp-R1", 4, False, 2), "kepp-nograph")),
            ("Results episode", {**playlists.item_of_row(row("kepp-R2", 3, True, 7)), "note": "the end"})]


def write_talk(records: Path, name: str, published=None) -> list[tuple[str, dict]]:
    """The playlist ``name`` of :func:`talk_items`, written beside ``records`` (where the app finds it)."""
    from kepp_core.evaluation.playlists import PlaylistStore

    items = talk_items(records, published)
    PlaylistStore(records.parent / "playlists").add(name, [item for _, item in items])
    return items


@dataclasses.dataclass
class Restartable:
    """An app server on a fixed port that a test stops and starts again (:meth:`stop`, :meth:`start`)."""
    opts: object
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://localhost:{self.opts.port}"

    def start(self) -> None:
        from app.commands import start_app

        self.proc = start_app(self.opts)
        wait_until_healthy(self.url, self.proc)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def restartable_server(opts) -> Iterator[Restartable]:
    """``kepp app`` with ``opts`` on a free port, started; stopped at the end whatever state it is in."""
    from kepp_core.api.serving import free_port

    server = Restartable(dataclasses.replace(opts, port=free_port()))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def published_by(browser, url: str):
    """A function giving the query the Plan page at ``url`` publishes when opened at a query (in a new page of
    ``browser``, once its run is over): what its "Add to playlist" would put in an item."""
    from urllib.parse import urlencode

    from tests.helpers.browser import idle, query

    def published(q: dict) -> dict:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        from tests.helpers.browser import ARTIFACTS

        page = browser.new_page()
        try:
            page.goto(f"{url}/Plan?{urlencode(q)}")
            page.locator(".kepp-shown").wait_for(state="attached", timeout=180_000)  # a cold server on a busy machine
            idle(page)
            return query(page)
        except PlaywrightTimeout:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "e2e_talk_published.png"), full_page=True)
            raise AssertionError(f"the Plan page at {q} drew no result: {page.inner_text('body')[:2000]}") from None
        finally:
            page.close()
    return published


# What the playing slide shows: the bar's "k / n", the one slide marker's episode and methods, and the item the
# page's key listener knows it is at and whether it finds the bar's buttons (app/static/kepp-keys.js): null while
# a run is going, or while the page holds no bar or not exactly one marker.
SHOWN = """() => { const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning' || document.querySelector('[data-testid="stStatusWidget"]')) return null;
  const bar = document.querySelector('.st-key-playlist_bar'), marks = document.querySelectorAll('.kepp-shown');
  const at = bar && bar.innerText.match(/(\\d+) \\/ (\\d+)/);
  if (!at || marks.length !== 1) return null;
  return {item: Number(at[1]), count: Number(at[2]), episode: marks[0].dataset.episode, methods: marks[0].dataset.methods,
          keys: (window.__keppPlaying || {}).item || null,
          ready: typeof window.__keppButton === 'function' && !!window.__keppButton('next') && !!window.__keppButton('prev')}; }"""


def expected_shown(item: dict, k: int, count: int) -> dict:
    """What :data:`SHOWN` reads on item ``k`` (1-based) of ``count``: its episode and its methods, A first
    (none for an item planned live), the key listener at ``k``."""
    methods = [m for m in (item["method"], item.get("versus", "")) if m]
    return {"item": k, "count": count, "episode": item["episode"], "methods": ",".join(methods), "keys": k, "ready": True}


def wait_shown(page, item: dict, k: int, count: int, where: str, timeout: float = 90_000) -> dict:
    """Until the page is idle with the bar at ``k / count`` and the slide drawing ``item``; a failure says what
    the page showed instead (the bar's number over another item's content)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    want = expected_shown(item, k, count)
    try:
        page.wait_for_function(f"w => JSON.stringify(({SHOWN})()) === JSON.stringify(w)", arg=want, timeout=timeout,
                               polling=200)
    except PlaywrightTimeout:
        raise AssertionError(f"{where}: the slide shows {page.evaluate(SHOWN)}, expected {want}") from None
    return want


# Where a slide's parts lie in the window: its plan(s), the ground truth (its cards, or the line saying it is the
# plan's steps), the verdict(s), the plan graph's frame and its legend (inside the frame), and whether anything
# is wider than the window. Boxes in CSS px of the window; null for a part the slide lacks.
SLIDE_BOXES = """() => {
  const box = (e) => { if (!e) return null; const r = e.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const main = document.querySelector('[data-testid="stMain"]') || document;
  const heads = [...main.querySelectorAll('.kepp-plan')].map(p => [p, (p.previousElementSibling || {}).textContent || '']);
  const plans = heads.filter(([, h]) => h.startsWith('plan')).map(([p]) => box(p));
  const truth = heads.find(([, h]) => h.startsWith('ground truth'));
  const same = [...main.querySelectorAll('.kepp-same-path')].find(e => e.textContent.startsWith('ground truth'));
  const frame = main.querySelector('.st-key-plan_clicked_frame iframe');
  let legend = null;
  try { const d = frame && frame.contentDocument, l = d && d.querySelector('.kepp-legend');
    if (l) { const f = frame.getBoundingClientRect(), r = l.getBoundingClientRect(), z = f.width / d.documentElement.clientWidth;
      legend = {left: f.left + r.left * z, top: f.top + r.top * z, right: f.left + r.right * z, bottom: f.top + r.bottom * z,
                frameBottom: f.bottom, frameRight: f.right}; } } catch (e) { legend = null; }
  return {plans: plans, truth: truth ? box(truth[0]) : box(same), verdicts: [...main.querySelectorAll('.kepp-verdict')].map(box),
          graph: box(frame), legend: legend, width: innerWidth, height: innerHeight,
          wider: document.documentElement.scrollWidth > innerWidth + 1,
          stepPx: Math.min(...[...main.querySelectorAll('.kepp-card-label')].map(e => parseFloat(getComputedStyle(e).fontSize) * (e.currentCSSZoom || 1))),
  };
}"""


def outside(boxes: dict) -> list[str]:
    """The parts of :data:`SLIDE_BOXES` that do not lie wholly inside the window (or, for the legend, its frame)."""
    w, h = boxes["width"], boxes["height"]

    def out(b) -> bool:
        return b is None or b["left"] < -1 or b["top"] < -1 or b["right"] > w + 1 or b["bottom"] > h + 1

    bad = [f"plan {k + 1}" for k, b in enumerate(boxes["plans"]) if out(b)] + (["no plan"] if not boxes["plans"] else [])
    bad += ["truth"] * out(boxes["truth"]) + ["graph"] * out(boxes["graph"]) + ["wider than the window"] * boxes["wider"]
    bad += [f"verdict {k + 1}" for k, b in enumerate(boxes["verdicts"]) if out(b)] + (["no verdict"] if not boxes["verdicts"] else [])
    legend = boxes["legend"]
    if legend is None or legend["bottom"] > legend["frameBottom"] + 1 or legend["right"] > legend["frameRight"] + 1:
        bad.append("legend outside its frame")
    return bad


def slide_boxes(page, timeout: float = 60_000) -> dict:
    """:data:`SLIDE_BOXES` once the graph's frame has drawn its legend (a frame loads after the page's run)."""
    page.wait_for_function(f"() => {{ const b = ({SLIDE_BOXES})(); return b.graph !== null && b.legend !== null; }}",
                           timeout=timeout, polling=200)
    return page.evaluate(SLIDE_BOXES)


def long_ab_item(records: Path) -> dict:
    """The hardest A/B slide to fit of the records at ``records``: KEPP R=2 against KEPP without its graph
    condition at T=6 (three rows of six cards), on the first episode (by its id) whose ground truth has the most
    distinct steps (the widest graph)."""
    from components.talk import playlists
    from kepp_core import api

    preds = api.read_predictions([records])
    six = preds[preds["horizon"] == 6]
    both = set(six[six["method"] == "kepp-R2"]["episode"]) & set(six[six["method"] == "kepp-nograph"]["episode"])
    rows = six[(six["method"] == "kepp-R2") & six["episode"].isin(both)].sort_values("episode", kind="stable")
    widest = rows["truth"].map(lambda steps: len(set(steps))).idxmax()  # the first of the widest, in episode order
    return playlists.ab_item(dict(rows.loc[widest]), "kepp-nograph")


# The smallest type a slide draws, in CSS px of the window: every visible text of the page's main part and of the
# graph's frame (its step names as the canvas draws them: font size times the drawing's scale), the five smallest.
SMALLEST_TEXT = """() => {
  const sizes = (doc, root, z) => { const out = [], walk = doc.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walk.nextNode()) { const t = walk.currentNode, e = t.parentElement, text = t.textContent.trim();
      if (!text || !e || !e.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
      const r = e.getBoundingClientRect(); if (!r.width || !r.height) continue;
      out.push([parseFloat(getComputedStyle(e).fontSize) * (e.currentCSSZoom || 1) * z, text.slice(0, 40)]); }
    return out; };
  const main = document.querySelector('[data-testid="stMain"]');
  const frame = main.querySelector('.st-key-plan_clicked_frame iframe'), d = frame.contentDocument, w = frame.contentWindow;
  const z = frame.getBoundingClientRect().width / d.documentElement.clientWidth;
  const all = sizes(document, main, 1).concat(sizes(d, d.body, z));
  for (const n of w.network.body.data.nodes.get())
    all.push([w.network.body.nodes[n.id].labelModule.fontOptions.size * w.keppScale * z, String(n.label)]);
  return all.sort((a, b) => a[0] - b[0]).slice(0, 5); }"""
# The step names drawn short: a card's word wider than its box (cut with "…"), a graph step whose drawn label is
# not its whole name.
CUT_NAMES = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const cards = [...main.querySelectorAll('.kepp-card-label .kepp-word')].filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => e.textContent);
  const w = main.querySelector('.st-key-plan_clicked_frame iframe').contentWindow;
  const graph = w.network.body.data.nodes.get().filter(n => n.full !== undefined && n.label !== n.full).map(n => n.label);
  return cards.concat(graph); }"""
