"""A lab's shared server: several people using one ``kepp app`` at once, for a fixed time.

Starts ``kepp app`` on the demo world (listening on 127.0.0.1 only) with the shipped models and a
copy of their records in a scratch folder (playlists are written beside it), then runs
``--sessions`` browser sessions at once: one headless Chromium (Debian's, /usr/bin/chromium), one
Playwright context per session, each a person preparing a talk who uses every page in a loop
until ``--minutes`` have passed (each session starts the loop at another page):

  Plan           its own video (typed into the search, picked in the list), the next episode, Plan
                 (or Re-plan live where the page shows a record)
  Upload         on the Plan page, "Upload a video": its own short mp4 (rendered with PyAV), planned
  Graph          its own step searched, then the depth moved
  Heatmaps       another task picked
  Failure cases  the next failure, added to its own playlist, opened in Plan
  Results        the next episode, added to the lab's shared playlist
  Training       the curves
  Playlists      its own playlist: the items it added, checked, the first one removed (and a note
                 written where the page has a note field)
  Home

What a session may share with another, and what it may not (docs/reliability.md, "A lab's shared
server"): the data, models and records are the server's, read by everyone; playlists are files in
the server's one playlists folder, shared by name on purpose (one person prepares a talk, another
presents it), so everyone sees the list of names, a playlist holds exactly the items added to it, and
two sessions adding to one playlist at once both land. Everything else is the session's own: each
page's address state, widget values, the Plan page's result and uploads (a private folder per
session that no other session shows or reaches).

Checked in every session after every page and action:
- no error shown: no exception box, no error box, no traceback, no connection error;
- its state its own: a page reached again through the sidebar has the address this session left it
  with (else "state lost"; "crossed" when a value is one only another session set: its typed search,
  its step, its playlist's name, its upload's file name, its note);
- its own playlist holds exactly what it added and removed (the count the page confirms on each add,
  the rows the Playlists page lists, the file at the end), and the shared playlist every item any
  session added (no lost update);
- uploads: a session's page shows its own file's name and never another's; the server's upload
  folders (its TMPDIR, a scratch folder) never outnumber the server sessions the browser opened.
The server's memory (resident set of its process tree, from /proc) is sampled every few seconds:
its maximum and its slope (MB per minute, over the second half of the run) are reported. Page-ready
times: sidebar click → the page's title and its main content (bench_app.READY_JS: the script done,
no skeleton, every chart and drawing drawn); p50 / p95 per page, and the same for the actions.

    python benchmarks/bench_shared_server.py                                  # 10 sessions, 10 minutes
    python benchmarks/bench_shared_server.py --sessions 3 --minutes 2 --seed 1
    python benchmarks/bench_shared_server.py --out shared-server.json         # the summary as JSON too

Prints a table and a JSON summary (also written to ``--out``, default: the scratch folder); exits
1 when any error, crossing, lost state or stalled step (no answer within --timeout) was seen, and
keeps the scratch folder (screenshots of each finding) in that case. The browser runs on the same
machine as the server, as on a laptop serving a small lab; the figures include its CPU use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app import CHROMIUM_ARGS, LIVE, NEW_TABS, PAGES, READY_JS, load_average  # noqa: E402
from kepp_core.models.folders import trained_horizons  # noqa: E402

TITLES = dict(PAGES)  # sidebar label -> the page's title
ADDRESS = {label: (path, selector) for label, path, selector in NEW_TABS}  # label -> path, ready selector
STEPS = ["Plan", "Graph", "Heatmaps", "Failure cases", "Results", "Training", "Playlists", "Upload", "Home"]
SHARED = "lab-shared"  # the playlist every session adds to from Results
VIEWPORT = {"width": 1400, "height": 900}
MAX_FAILURES = 5  # a session that stalled this often stops (the others go on)

# What the page shows that no session should ever see: Streamlit's exception and error boxes, a
# traceback, a lost connection; and the upload file names and notes on show (checked against the session's own).
CHECK_JS = r"""() => {
  const found = [], text = document.body.innerText;
  for (const e of document.querySelectorAll('[data-testid="stException"]')) found.push('exception: ' + e.innerText.slice(0, 300));
  for (const e of document.querySelectorAll('[data-testid="stAlertContentError"]')) found.push('error box: ' + e.innerText.slice(0, 300));
  for (const w of ['Traceback (most recent call last)', 'Connection error', 'Bad message format'])
    if (text.includes(w)) found.push(w);
  return {found: found, uploads: [...new Set(text.match(/session-\d+\.mp4/g) || [])],
          notes: [...new Set(text.match(/note of session \d+/g) || [])]};
}"""
# No run of the script going: its run state (at once; the status widget shows only after 500 ms) and no status widget.
IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testScriptState === 'notRunning' && !document.querySelector('[data-testid="stStatusWidget"]'); }"""
QUERY_IS = "([k, v]) => new URLSearchParams(location.search).get(k) === v"
QUERY_NOT = "([k, v]) => new URLSearchParams(location.search).get(k) !== v"
# The confirmation of an "Add to playlist" naming playlist n: a toast not seen before the click (marked
# by SEEN_TOASTS), or the popover's message when it differs from b, the one shown before the click.
ADDED_JS = r"""([n, b]) => { const re = new RegExp("to playlist '" + n + "' \\((\\d+) items\\)");
  for (const t of document.querySelectorAll('[data-testid="stToast"]')) {
    const m = !t.dataset.keppSeen && t.innerText.match(re);
    if (m) return m[0];
  }
  const m = [...document.querySelectorAll('[data-testid="stPopoverBody"]')].map(e => e.innerText).join('\n').match(re);
  return m && m[0] !== b ? m[0] : null; }"""
SEEN_TOASTS = "() => document.querySelectorAll('[data-testid=\"stToast\"]').forEach(t => { t.dataset.keppSeen = '1'; })"


@dataclass
class Findings:
    """What the sessions saw, shared by all of them (one event loop: no lock needed)."""
    errors: list = field(default_factory=list)
    crossed: list = field(default_factory=list)
    lost: list = field(default_factory=list)
    stalled: list = field(default_factory=list)
    ready: dict = field(default_factory=dict)  # page -> seconds
    actions: dict = field(default_factory=dict)  # action -> seconds
    own: dict = field(default_factory=dict)  # signature value -> session that set it: "q=...", "playlist=..."
    shared_added: set = field(default_factory=set)  # episodes added to the shared playlist


def address_query(url: str) -> dict[str, str]:
    """The address's query keys (the last value of each)."""
    from urllib.parse import parse_qs, urlparse

    return {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}


async def idle(page, timeout: float) -> None:
    await page.wait_for_function(IDLE_JS, timeout=timeout)


async def ready(page, selector: str, timeout: float) -> None:
    """bench_app's page-ready, twice 100 ms apart (a rerun can follow a run)."""
    await page.wait_for_function(READY_JS, arg=selector, timeout=timeout, polling=50)
    await page.wait_for_timeout(100)
    await page.wait_for_function(READY_JS, arg=selector, timeout=timeout, polling=50)


async def choose(page, label: str, option: str, timeout: float) -> None:
    """Pick ``option`` in the select box labelled ``label``: type to filter, then Enter."""
    box = page.get_by_role("combobox", name=label).first
    await box.scroll_into_view_if_needed()
    await box.click()
    await page.keyboard.type(option)
    await page.keyboard.press("Enter")
    await idle(page, timeout)


async def changed_search(page, before: str, timeout: float) -> None:
    await page.wait_for_function("b => location.search !== b", arg=before, timeout=timeout)


class Session:
    """One person: a browser context, its own video, step, playlist and upload, the pages in a loop."""

    def __init__(self, k: int, url: str, ctx, facts: dict, upload: Path, findings: Findings, args, scratch: Path):
        self.k, self.url, self.ctx, self.f, self.args, self.scratch = k, url, ctx, findings, args, scratch
        self.timeout = args.timeout * 1000
        rng = random.Random(args.seed * 1000 + k)
        self.video = facts["videos"][k % len(facts["videos"])]
        self.step = facts["steps"][(k * 5) % len(facts["steps"])]
        self.tasks = list(facts["tasks"].items())
        rng.shuffle(self.tasks)
        self.upload = upload
        self.own = f"session-{k:02d}"
        self.note = f"note of session {k:02d}"
        self.own_items: list[str] = []  # the episodes of its playlist, in order
        self.left: dict[str, dict] = {}  # page -> its address when this session last left it
        self.visits = 0
        self.failures = 0
        self.starts = 0  # server sessions this person opened (a fresh start after a stalled step opens another)
        self.page = None
        findings.own.update({f"q={self.step}": k, f"vq={self.video}": k, f"playlist={self.own}": k})

    # --- what a session checks --------------------------------------------------------------------------
    def query(self) -> dict[str, str]:
        return address_query(self.page.url)

    async def check(self, where: str) -> None:
        """No error on show; uploads and notes on show are this session's own; the address holds no
        value only another session set."""
        seen = await self.page.evaluate(CHECK_JS)
        for what in seen["found"]:
            self.f.errors.append({"session": self.k, "where": where, "what": what})
        for name in seen["uploads"]:
            if name != self.upload.name:
                self.f.crossed.append({"session": self.k, "where": where, "what": f"another session's upload {name}"})
        for note in seen["notes"]:
            if note != self.note:
                self.f.crossed.append({"session": self.k, "where": where, "what": f"another session's {note!r}"})
        for key, value in self.query().items():
            owner = self.f.own.get(f"{key}={value}")
            if owner is not None and owner != self.k:
                self.f.crossed.append({"session": self.k, "where": where,
                                       "what": f"{key}={value} in the address, set by session {owner}"})

    def restored(self, label: str) -> None:
        """The page's address, reached again through the sidebar, is the one this session left."""
        before, now = self.left.get(label), self.query()
        if before is None or before == now:
            return
        diff = {k: (before.get(k), now.get(k)) for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)}
        crossed = [k for k, (_, v) in diff.items() if self.f.own.get(f"{k}={v}") not in (None, self.k)]
        (self.f.crossed if crossed else self.f.lost).append({"session": self.k, "where": label, "step": self.visits + 1,
                                                            "what": f"address on return: {diff} (left, found)"})

    def timed(self, table: dict, name: str, t0: float) -> None:
        table.setdefault(name, []).append(time.perf_counter() - t0)

    # --- moving around ------------------------------------------------------------------------------------
    async def switch(self, label: str) -> None:
        """A click on the page's sidebar link, until the page is ready (timed); then the checks."""
        p, (path, selector) = self.page, ADDRESS[label]
        t0 = time.perf_counter()
        await p.get_by_role("link", name=label, exact=True).first.click()
        await p.wait_for_function("p => location.pathname.replace(/\\/$/, '').endsWith(p)", arg=path,
                                  timeout=self.timeout)
        await p.get_by_role("heading", name=TITLES[label]).first.wait_for(timeout=self.timeout)
        await ready(p, selector, self.timeout)
        self.timed(self.f.ready, label, t0)
        self.restored(label)
        await self.check(label)

    async def leave(self, label: str) -> None:
        """The page's address as this session leaves it, once the page is ready (its run has written it)."""
        await ready(self.page, ADDRESS[label][1], self.timeout)
        self.left[label] = self.query()

    async def add_to_playlist(self, name: str) -> int:
        """The page's "Add to playlist": the name typed, Add pressed; the count the page confirms. The
        popover is opened again when a rerun closed it before it showed, as a person would click again."""
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        p = self.page
        body = p.locator('[data-testid="stPopoverBody"]').last
        field_ = body.get_by_role("textbox", name="Playlist")
        for attempt in range(3):
            await idle(p, self.timeout)
            await p.get_by_role("button", name="Add to playlist", exact=True).first.click()
            try:
                await field_.wait_for(state="visible", timeout=30_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
        await field_.fill(name)
        await field_.press("Enter")
        await idle(p, self.timeout)
        before = await p.evaluate(ADDED_JS, [name, ""]) or ""
        await p.evaluate(SEEN_TOASTS)
        t0 = time.perf_counter()
        await body.get_by_role("button", name="Add", exact=True).click()
        said = await (await p.wait_for_function(ADDED_JS, arg=[name, before], timeout=self.timeout)).json_value()
        self.timed(self.f.actions, "Add to playlist → confirmed", t0)
        await p.keyboard.press("Escape")
        await idle(p, self.timeout)
        return int(re.search(r"\((\d+) items\)", said).group(1))

    async def plan_button(self, what: str) -> None:
        """Plan (or Re-plan live, beside a record): until the live result is shown (timed)."""
        p = self.page
        await idle(p, self.timeout)
        t0 = time.perf_counter()
        await p.get_by_role("button", name=re.compile(r"^(Plan|Re-plan live)$")).first.click()
        await p.locator(LIVE).first.wait_for(timeout=self.timeout)
        await idle(p, self.timeout)
        self.timed(self.f.actions, what, t0)

    # --- the pages, as a person uses them ---------------------------------------------------------------
    async def plan(self) -> None:
        p = self.page
        await self.switch("Plan")
        q = self.query()
        if q.get("video") != self.video or q.get("vq") != self.video:  # its own video: typed, then picked
            box = p.get_by_role("textbox", name="Search", exact=True).first
            await box.fill(self.video)
            await box.press("Enter")
            await p.wait_for_function(QUERY_IS, arg=["vq", self.video], timeout=self.timeout)
            await idle(p, self.timeout)
            if self.query().get("video") != self.video:
                await choose(p, "Video", self.video, self.timeout)
                await p.wait_for_function(QUERY_IS, arg=["video", self.video], timeout=self.timeout)
        else:  # the next episode of its video
            await p.get_by_role("button", name="Next ▶", exact=True).first.click()
            await p.wait_for_function(QUERY_NOT, arg=["ep", q.get("ep")], timeout=self.timeout)
        await self.plan_button("Plan → live result")
        said = await p.locator(".kepp-input").first.inner_text()
        if f"video {self.video} " not in said:
            self.f.crossed.append({"session": self.k, "where": "Plan", "what": f"planned its video {self.video}, "
                                   f"the page shows {said!r}"})
        await self.check("Plan, planned")
        await self.leave("Plan")

    async def upload_video(self) -> None:
        p = self.page
        await self.switch("Plan")
        await p.locator('[data-testid="stRadio"]').get_by_text("Upload a video", exact=True).first.click()
        await p.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(self.upload))
        await p.get_by_text(self.upload.name, exact=True).first.wait_for(timeout=self.timeout)
        await p.get_by_text("The upload is encoded with").first.wait_for(timeout=self.timeout)
        await self.plan_button("Upload → live result")
        await self.check("Plan, an upload planned")
        await p.locator('[data-testid="stRadio"]').get_by_text("From the dataset", exact=True).first.click()
        await p.wait_for_function(QUERY_IS, arg=["source", None], timeout=self.timeout)  # the dataset's videos again
        await p.wait_for_function(QUERY_NOT, arg=["video", None], timeout=self.timeout)
        await self.leave("Plan")

    async def graph(self) -> None:
        p = self.page
        await self.switch("Graph")
        t0 = time.perf_counter()
        if self.query().get("q") != self.step:
            box = p.get_by_role("textbox", name="Search a step").first
            await box.fill(self.step)
            await box.press("Enter")
            await p.wait_for_function(QUERY_IS, arg=["q", self.step], timeout=self.timeout)
            what = "Graph: a step searched"
        else:  # depth 1 <-> 2 (1, the default, is left out of the address)
            deeper = self.query().get("depth", "1") == "1"
            await p.get_by_role("slider", name="Depth").first.focus()
            await p.keyboard.press("ArrowRight" if deeper else "ArrowLeft")
            await p.wait_for_function("d => (new URLSearchParams(location.search).get('depth') || '1') === d",
                                      arg="2" if deeper else "1", timeout=self.timeout)
            what = "Graph: depth moved"
        await ready(p, ADDRESS["Graph"][1], self.timeout)
        self.timed(self.f.actions, what, t0)
        await self.check("Graph, changed")
        await self.leave("Graph")

    async def heatmaps(self) -> None:
        p = self.page
        await self.switch("Heatmaps")
        shown = await p.locator('[data-testid="stSelectbox"]', has_text="Task").first.inner_text()
        tid, name = next((t, n) for t, n in self.tasks if n not in shown)
        self.tasks.append(self.tasks.pop(self.tasks.index((tid, name))))  # the next visit picks another
        before = await p.evaluate("() => location.search")
        t0 = time.perf_counter()
        await choose(p, "Task", name, self.timeout)
        await changed_search(p, before, self.timeout)
        await ready(p, ADDRESS["Heatmaps"][1], self.timeout)
        self.timed(self.f.actions, "Heatmaps: a task picked", t0)
        await self.check("Heatmaps, changed")
        await self.leave("Heatmaps")

    async def next_episode(self, avoid: set, at_least: int = 1) -> str:
        """Next ▶ at least ``at_least`` times, until the page's episode is one not in ``avoid`` (at most
        10 times); that episode."""
        p = self.page
        for k in range(10):
            before = self.query().get("episode", "")
            await p.get_by_role("button", name="Next ▶", exact=True).first.click()
            await p.wait_for_function(QUERY_NOT, arg=["episode", before], timeout=self.timeout)
            await idle(p, self.timeout)
            if k + 1 >= at_least and self.query()["episode"] not in avoid:
                break
        return self.query()["episode"]

    async def failure_cases(self) -> None:
        from kepp_core import catalog

        p = self.page
        await self.switch("Failure cases")
        # each session its own failures (another one's item in its playlist then shows in the count)
        episode = await self.next_episode(set(self.own_items), at_least=1 + self.k % 4 if "Failure cases" not in self.left else 1)
        n = await self.add_to_playlist(self.own)
        if episode not in self.own_items:
            self.own_items.append(episode)
        if n != len(self.own_items):
            self.f.crossed.append({"session": self.k, "where": "Failure cases", "what": f"its playlist {self.own} "
                                   f"holds {n} items, it added {len(self.own_items)}"})
        await self.check("Failure cases, added")
        await self.leave("Failure cases")
        t0 = time.perf_counter()
        await p.get_by_role("link", name="Open in Plan").first.click()
        await p.get_by_role("heading", name=TITLES["Plan"]).first.wait_for(timeout=self.timeout)
        await p.locator(".kepp-verdict").first.wait_for(timeout=self.timeout)
        await idle(p, self.timeout)
        self.timed(self.f.actions, "Open in Plan → record shown", t0)
        _, video, first, _ = catalog.parse_episode_id(episode)
        q = self.query()
        if (q.get("video"), q.get("ep")) != (video, str(first)):
            self.f.crossed.append({"session": self.k, "where": "Open in Plan", "what": f"opened {episode}, the "
                                   f"address says video={q.get('video')} ep={q.get('ep')}"})
        await self.check("Open in Plan")
        await self.leave("Plan")

    async def results(self) -> None:
        await self.switch("Results")
        episode = await self.next_episode(set())
        await self.add_to_playlist(SHARED)
        self.f.shared_added.add(episode)
        await self.check("Results, added")
        await self.leave("Results")

    async def playlists(self) -> None:
        p = self.page
        await self.switch("Playlists")
        if not self.own_items:  # nothing added yet: the built-in scenes
            await self.leave("Playlists")
            return
        if self.query().get("playlist") != self.own:
            await choose(p, "Playlist", self.own, self.timeout)
            await p.wait_for_function(QUERY_IS, arg=["playlist", self.own], timeout=self.timeout)
        rows = p.locator('[data-testid="stMain"]').get_by_role("button", name="✕", exact=True)
        await self.rows_are(rows, len(self.own_items))
        notes = p.locator('[data-testid="stMain"]').get_by_role("textbox", name=re.compile("note", re.I))
        if await notes.count():  # a note field, where the page has one
            await notes.first.fill(self.note)
            await notes.first.press("Enter")
            await p.get_by_text(self.note).first.wait_for(timeout=self.timeout)
        t0 = time.perf_counter()
        await rows.first.click()
        self.own_items.pop(0)
        await self.rows_are(rows, len(self.own_items))
        await idle(p, self.timeout)
        self.timed(self.f.actions, "Playlists: an item removed", t0)
        await self.check("Playlists, edited")
        await self.leave("Playlists")

    async def rows_are(self, rows, n: int) -> None:
        """Until the playlist shows ``n`` rows; a crossing when it settles on another number."""
        from playwright.async_api import expect

        try:
            await expect(rows).to_have_count(n, timeout=60_000)
        except AssertionError:
            await idle(self.page, self.timeout)
            self.f.crossed.append({"session": self.k, "where": "Playlists", "what": f"its playlist {self.own} "
                                   f"shows {await rows.count()} rows, it holds {n}"})

    async def simple(self, label: str) -> None:
        await self.switch(label)
        await self.leave(label)

    # --- the loop -----------------------------------------------------------------------------------------
    async def run(self, deadline: float) -> None:
        steps = {"Plan": self.plan, "Upload": self.upload_video, "Graph": self.graph, "Heatmaps": self.heatmaps,
                 "Failure cases": self.failure_cases, "Results": self.results, "Playlists": self.playlists,
                 "Training": lambda: self.simple("Training"), "Home": lambda: self.simple("Home")}
        order = STEPS[self.k % len(STEPS):] + STEPS[:self.k % len(STEPS)]
        self.page = await self.ctx.new_page()
        self.page.set_default_timeout(self.timeout)
        fresh = True
        while time.monotonic() < deadline and self.failures < MAX_FAILURES:
            for name in order:
                if time.monotonic() >= deadline or self.failures >= MAX_FAILURES:
                    break
                try:
                    if fresh:
                        await self.start()
                        fresh = False
                    await steps[name]()
                    self.visits += 1
                except Exception as e:  # a step that stalled or failed: said, then a fresh start
                    await self.failed(name, e)
                    fresh = True
        await self.ctx.close()

    async def start(self) -> None:
        """The app's address, until its first page is ready (a new server session)."""
        self.starts += 1
        await self.page.goto(self.url)
        await ready(self.page, ADDRESS["Home"][1], self.timeout)
        self.left = {}

    async def failed(self, step: str, e: Exception) -> None:
        self.failures += 1
        shot = self.scratch / f"finding-s{self.k:02d}-{self.failures}.png"
        try:
            await self.page.screenshot(path=str(shot), full_page=True)
        except Exception:  # the page itself may be gone
            shot = None
        first = (str(e).splitlines() or [""])[0][:300]
        self.f.stalled.append({"session": self.k, "where": step, "what": f"{type(e).__name__}: {first}",
                               "url": self.page.url, "screenshot": str(shot) if shot else None})


# --- the server, its memory, the files it keeps --------------------------------------------------------------
def tree_rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and its descendants (MB; Linux /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(d.name)] = int(stat[1])
            rss[int(d.name)] = int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    tree, grew = {pid}, True
    while grew:
        more = {p for p, pp in parents.items() if pp in tree and p not in tree}
        tree |= more
        grew = bool(more)
    return sum(rss.get(p, 0) for p in tree) / 1e6


class Sampler(threading.Thread):
    """Every ``every`` seconds: the server's resident memory and how many upload folders it keeps."""

    def __init__(self, pid: int, every: float, tmp: Path):
        super().__init__(daemon=True)
        self.pid, self.every, self.tmp = pid, every, tmp
        self.samples: list[tuple[float, float, int]] = []
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while True:
            self.samples.append((time.monotonic() - self.t0, tree_rss_mb(self.pid), len(list(self.tmp.glob("kepp-upload-*")))))
            if self.stop.wait(self.every):
                return


def slope_mb_per_min(samples: list[tuple[float, float, int]]) -> float:
    """Least-squares slope of the resident memory over time (MB per minute)."""
    if len(samples) < 3:
        return float("nan")
    xs, ys = [s[0] / 60 for s in samples], [s[1] for s in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else float("nan")


def world_facts(world: Path, models: Path) -> dict:
    """The sessions' own videos (playable at every trained horizon, more than one episode at the
    shortest), steps to search, and the tasks, read from the world."""
    from kepp_core import api

    ds = api.Workspace(api.AppConfig(dataset="demo", root=str(world), checkpoints=str(models))).dataset
    horizons = trained_horizons(models)
    videos = [v.id for v in api.playable_videos(ds, max(horizons)) if len(v.steps) > min(horizons)]
    return {"videos": videos, "steps": list(ds.actions), "tasks": {t: task.name for t, task in ds.tasks.items()}}


def render_uploads(folder: Path, n: int, seed: int) -> list[Path]:
    """One short real mp4 per session (20 s, 96x96, 8 fps; moving colour bands, its own colours)."""
    import numpy as np

    from kepp_core.video.write import write_video

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n):
        rng = np.random.default_rng(seed * 1000 + k)
        base = rng.integers(0, 256, size=(4, 3))
        frames = []
        for i in range(160):
            img = np.zeros((96, 96, 3), np.uint8)
            for b in range(4):
                img[:, (b * 24 + i) % 96:(b * 24 + i) % 96 + 24] = (base[b] + 3 * i) % 256
            frames.append(img)
        out.append(write_video(folder / f"session-{k:02d}.mp4", np.stack(frames), fps=8))
    return out


def start_server(world: Path, models: Path, records: Path, tmp: Path):
    """``kepp app`` on 127.0.0.1 with its temporary folder (uploads) in ``tmp``; the process and URL."""
    from kepp_core.api import AppConfig
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    port = free_port("127.0.0.1")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp)  # the server's environment is this one's
    try:
        proc = start_app(AppConfig(dataset="demo", root=str(world), checkpoints=str(models),
                                   predictions=str(records), port=port, address="127.0.0.1"))
    finally:
        if saved is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = saved
    return proc, f"http://127.0.0.1:{port}"


async def run_sessions(url: str, facts: dict, uploads: list[Path], findings: Findings, args, scratch: Path) -> list:
    """Every session at once in one headless Chromium, until ``--minutes`` have passed."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        sessions = [Session(k, url, await browser.new_context(viewport=VIEWPORT), facts, uploads[k], findings, args,
                            scratch) for k in range(args.sessions)]
        deadline = time.monotonic() + args.minutes * 60

        async def staggered(s: Session) -> None:
            await asyncio.sleep(random.Random(args.seed + s.k).uniform(0, 5))  # people do not click in step
            await s.run(deadline)

        # the last step of each session may start just before the deadline: bounded by its own timeouts
        try:
            await asyncio.wait_for(asyncio.gather(*(staggered(s) for s in sessions)),
                                   timeout=args.minutes * 60 + MAX_FAILURES * args.timeout + 60)
        except asyncio.TimeoutError:
            findings.stalled.append({"session": None, "where": "the run", "what": "the sessions did not stop by themselves"})
        await browser.close()
    return sessions


def percentiles(values: list[float]) -> dict:
    """n, p50, p95 and max (seconds)."""
    vals = sorted(values)
    p95 = statistics.quantiles(vals, n=20, method="inclusive")[18] if len(vals) > 1 else vals[0]
    return {"n": len(vals), "p50": round(statistics.median(vals), 3), "p95": round(p95, 3), "max": round(vals[-1], 3)}


def check_playlists(folder: Path, sessions: list[Session], findings: Findings) -> dict:
    """At the end, the files: each session's playlist holds exactly the episodes it kept, in its order;
    the shared one every episode any session added."""
    from kepp_core.errors import KeppError
    from kepp_core.evaluation.playlists import PlaylistStore

    store = PlaylistStore(folder)
    for s in sessions:
        try:
            held = [i.episode for i in store.read(s.own).items] if store.exists(s.own) else []
        except KeppError as e:
            findings.errors.append({"session": s.k, "where": "its playlist's file", "what": str(e)})
            continue
        if held != s.own_items:
            findings.crossed.append({"session": s.k, "where": "its playlist's file",
                                     "what": f"holds {held}, the session kept {s.own_items}"})
    shared = {i.episode for i in store.read(SHARED).items} if store.exists(SHARED) else set()
    lost = sorted(findings.shared_added - shared)
    if lost:
        findings.crossed.append({"session": None, "where": f"the shared playlist {SHARED}",
                                 "what": f"{len(lost)} added episodes missing (a lost update): {lost[:5]}"})
    return {"own": {s.own: len(s.own_items) for s in sessions}, "shared_items": len(shared),
            "shared_added": len(findings.shared_added), "shared_lost": len(lost)}


def memory(samples: list[tuple[float, float, int]]) -> dict:
    """The server's resident memory: start, maximum, end, slopes, and the series (about 60 points)."""
    if not samples:
        return {}
    half = [s for s in samples if s[0] >= samples[-1][0] / 2]
    return {"start": round(samples[0][1], 1), "max": round(max(s[1] for s in samples), 1),
            "end": round(samples[-1][1], 1), "slope_mb_per_min": round(slope_mb_per_min(samples), 2),
            "slope_second_half_mb_per_min": round(slope_mb_per_min(half), 2), "samples": len(samples),
            "series": [[round(t), round(mb)] for t, mb, _ in samples[::max(1, len(samples) // 60)]]}


def summary(args, findings: Findings, sessions: list[Session], sampler: Sampler, playlists: dict,
            load_before: str, wall: float) -> dict:
    samples = sampler.samples
    folders, opened = max((s[2] for s in samples), default=0), sum(s.starts for s in sessions)
    if folders > opened:  # one private folder per session at most: more is a leak
        findings.errors.append({"session": None, "where": "the server's upload folders",
                                "what": f"{folders} folders for {opened} sessions"})
    return {
        "sessions": args.sessions, "minutes": args.minutes, "seed": args.seed, "wall_s": round(wall, 1),
        "load_before": load_before, "load_after": load_average(), "cpus": os.cpu_count(),
        "steps_done": {s.k: s.visits for s in sessions},
        "page_ready_s": {k: percentiles(v) for k, v in sorted(findings.ready.items())},
        "actions_s": {k: percentiles(v) for k, v in sorted(findings.actions.items())},
        "server_rss_mb": memory(samples),
        "upload_folders_max": folders, "server_sessions_opened": opened,
        "playlists": playlists,
        "errors": findings.errors, "crossed": findings.crossed, "state_lost": findings.lost,
        "stalled": findings.stalled,
    }


def print_table(result: dict) -> None:
    print(f"\n{result['sessions']} sessions for {result['minutes']} min, seed {result['seed']}; load (1/5/15 min) "
          f"before {result['load_before']}, after {result['load_after']} on {result['cpus']} CPUs")
    print(f"{'page ready (s)':<34} {'n':>5} {'p50':>7} {'p95':>7} {'max':>7}")
    for title, table in (("page ready (s)", result["page_ready_s"]), ("action (s)", result["actions_s"])):
        if title != "page ready (s)":
            print(f"{title:<34}")
        for name, r in table.items():
            print(f"  {name:<32} {r['n']:5d} {r['p50']:7.2f} {r['p95']:7.2f} {r['max']:7.2f}")
    m = result["server_rss_mb"]
    if m:
        print(f"server memory (MB): start {m['start']:.0f}, max {m['max']:.0f}, end {m['end']:.0f}; slope "
              f"{m['slope_mb_per_min']:+.1f} MB/min over the run, {m['slope_second_half_mb_per_min']:+.1f} over its second half")
    print(f"upload folders at most {result['upload_folders_max']} (server sessions opened: "
          f"{result['server_sessions_opened']}); playlists: {result['playlists']}")
    print(f"steps done per session: {result['steps_done']}")
    for name in ("errors", "crossed", "state_lost", "stalled"):
        print(f"{name}: {len(result[name])}")
        for f in result[name][:20]:
            print(f"  {f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=10, help="browser sessions at once (default 10)")
    ap.add_argument("--minutes", type=float, default=10.0, help="how long each session goes on (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="the sessions' choices and start times")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a step may wait for the page (default 180)")
    ap.add_argument("--sample-s", type=float, default=2.0, help="seconds between memory samples (default 2)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON summary here too")
    args = ap.parse_args()
    if not 1 <= args.sessions <= 50 or not 0 < args.minutes <= 120 or args.timeout <= 0 or args.sample_s <= 0:
        ap.error("--sessions 1..50, --minutes up to 120, --timeout and --sample-s positive")
    from kepp_core.data.synth import ensure_world

    load_before = load_average()
    world, models = ensure_world(progress=False), REPO / "assets" / "demo"
    scratch = Path(tempfile.mkdtemp(prefix="kepp-shared-server-"))
    records = scratch / "records" / "predictions.jsonl"
    records.parent.mkdir()
    shutil.copyfile(models / "predictions.jsonl", records)  # its playlists are written beside it
    (scratch / "tmp").mkdir()
    facts = world_facts(world, models)
    uploads = render_uploads(scratch / "uploads", args.sessions, args.seed)
    findings = Findings()
    proc, url = start_server(world, models, records, scratch / "tmp")
    sampler = Sampler(proc.pid, args.sample_s, scratch / "tmp")
    t0 = time.monotonic()
    try:
        from bench_app import wait_health

        wait_health(url, proc)
        sampler.start()
        print(f"server {url} (pid {proc.pid}); {args.sessions} sessions for {args.minutes} min; scratch {scratch}")
        sessions = asyncio.run(run_sessions(url, facts, uploads, findings, args, scratch))
    finally:
        sampler.stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(timeout=30)
    result = summary(args, findings, sessions, sampler, check_playlists(records.parent / "playlists", sessions, findings),
                     load_before, time.monotonic() - t0)
    print_table(result)
    out = args.out or scratch / "shared-server.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"summary: {out}")
    bad = any(result[k] for k in ("errors", "crossed", "state_lost", "stalled"))
    if not bad:  # nothing to look at: only the summary stays
        for name in ("uploads", "records", "tmp"):
            shutil.rmtree(scratch / name, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
