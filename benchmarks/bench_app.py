"""App speed against a running server, measured in a real headless Chromium.

Starts ``kepp app`` on the demo world (or the dataset/models given), then measures:
- first page ready: server start → the Home page shows its dataset summary (target ≤ 5 s);
- page switch: clicking each page in the sidebar → its content is there and the script is done (< 1 s);
- control change: moving the Graph page's depth slider → the new sub-graph caption (< 1 s);
- Plan: pressing Plan → endpoints, paths, plan and sub-graph shown, clip features included (< 2 s),
  with the models' own sampler and with the fast one (DDIM, 5 steps), side by side;
- presentation mode at 1280x720 (``?present=1``): page switch through the page bar (< 1 s), a control
  change (Failure cases' next episode, the URL follows) (< 1 s);
- deep links: "Open in Plan" from Failure cases → the episode planned (< 2 s); a link to an episode
  opened in a fresh tab (new session) → the episode planned (< 3 s);
- at scale: the Plan page's video search (a video id typed → the matches shown, and back), the
  next page of Results and of Failure cases (< 1 s each).

    python benchmarks/bench_app.py                      # demo world, shipped models
    python benchmarks/bench_app.py --screenshots        # also refresh assets/screenshots/*.png
                                                        # (present_*.png: presentation mode at 1280x720)
    python benchmarks/bench_app.py --present-shots      # only the present_*.png screenshots, no measurements
    python benchmarks/bench_app.py --slice-shots        # only slices.png and episode_map.png (Results, 1280x720)
    python benchmarks/bench_app.py --root DIR --checkpoints MODELS --predictions FILE
    python benchmarks/bench_app.py --root COIN_WORLD --repeats 3   # no models: the Plan page plans zero-shot
    python benchmarks/bench_app.py --first-page-only --repeats 5 ...  # only the first page, 5 server starts
    python benchmarks/bench_app.py --new-tabs --repeats 5            # every page in a new tab (its script cached)
    python benchmarks/bench_app.py --first-slide --repeats 5         # a playlist's first slide from a fresh browser
                                                                     # (a fresh server each time, its start work done)
    python benchmarks/bench_app.py --new-tabs --busy ...             # with one CPU-bound process beside the server
    python benchmarks/bench_app.py --profile [--first-slide] ...     # where a new tab's (a first slide's) time goes

Any dataset works: the task names, episodes, steps and scenes measured are read from the world and
the records given; what a world lacks is skipped and said (no models: no planning measures; no
records: no Failure cases or Results measures, no deep links).

Prints a table of medians with the target beside each; no assertions.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]
PAGES = [("Plan", "Plan from a video"), ("Graph", "Procedure knowledge graph"),
         ("Heatmaps", "Step transition heatmaps"), ("Failure cases", "Failure cases"),
         ("Results", "Results"), ("Training", "Training curves"), ("Playlists", "Playlists"),
         ("Home", "KEPP: knowledge-enhanced")]
SHOTS = REPO / "assets" / "screenshots"


def idle(page, timeout: float = 120_000) -> None:
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` (type to filter, then Enter)."""
    box = page.get_by_role("combobox", name=label).first
    box.scroll_into_view_if_needed()
    box.click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")
    page.wait_for_timeout(200)
    idle(page)


def wait_health(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the app server did not start")


def shot(page, name: str, width: int = 1100) -> None:
    """A small PNG of the page for the README."""
    from PIL import Image

    SHOTS.mkdir(parents=True, exist_ok=True)
    tmp = SHOTS / f".{name}.full.png"
    page.screenshot(path=str(tmp), full_page=False)
    img = Image.open(tmp)
    img = img.resize((width, round(img.height * width / img.width)), Image.Resampling.LANCZOS)
    from kepp_core.io import atomic_path

    with atomic_path(SHOTS / f"{name}.png") as out:
        img.convert("RGB").quantize(colors=192).save(out, format="PNG", optimize=True)
    tmp.unlink()


PRESENT = {"width": 1280, "height": 720}


def bar_switch(page, label: str, title: str) -> None:
    """Switch page through presentation mode's page bar and wait until it is ready."""
    page.locator('[data-testid="stMain"]').get_by_role("link", name=label, exact=True).first.click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
    idle(page)


def measure_presentation(page, url: str, repeats: int, results: dict, records: bool = True) -> None:
    """Presentation mode at 1280x720: page switches through the page bar, a control change (with records)."""
    page.set_viewport_size(PRESENT)
    page.goto(f"{url}/?present=1")
    page.locator(".kepp-present").first.wait_for(state="attached", timeout=120_000)
    idle(page)
    for warm in (True, False):
        for _ in range(1 if warm else repeats):
            for label, title in PAGES:
                if label == "Playlists":  # not in the page bar (components.ui.config.OFF_BAR)
                    continue
                t = time.perf_counter()
                bar_switch(page, label, title)
                if not warm:
                    results.setdefault("page switch, presentation (s)", []).append(time.perf_counter() - t)
    if not records:
        return
    bar_switch(page, "Failure cases", "Failure cases")
    for _ in range(repeats):
        before = page.url
        t = time.perf_counter()
        page.get_by_role("button", name="Next ▶").first.click()
        page.wait_for_function("u => window.location.href !== u", arg=before, timeout=60_000)
        idle(page)
        results.setdefault("control change, presentation (s)", []).append(time.perf_counter() - t)


def measure_links(page, url: str, repeats: int, results: dict, deep_links: list[str]) -> None:
    """Deep links: Open in Plan from Failure cases; a link to an episode opened in a new tab."""
    for k in range(repeats + 1):
        bar_switch(page, "Failure cases", "Failure cases")
        for _ in range(k):  # another episode each time
            page.get_by_role("button", name="Next ▶").first.click()
            page.wait_for_timeout(300)
            idle(page)
        t = time.perf_counter()
        page.get_by_role("link", name="Open in Plan").first.click()
        page.get_by_role("heading", name="Plan from a video").wait_for(timeout=120_000)
        page.locator(".kepp-verdict").first.wait_for(timeout=120_000)  # the record shown, not Failure cases' cards
        page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
        idle(page)
        if k:  # the first one warms the Plan page's models
            results.setdefault("Open in Plan → plan (s)", []).append(time.perf_counter() - t)
    ctx = page.context.browser.new_context(viewport=PRESENT)
    for k, link in enumerate(deep_links[:repeats + 1]):
        tab = ctx.new_page()  # a new tab is a new session, as someone opening a shared link
        t = time.perf_counter()
        tab.goto(f"{url}/Plan?{link}")
        tab.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
        idle(tab)
        if k:  # the first one fills the browser's cache with the app's scripts
            results.setdefault("deep link, new tab → plan (s)", []).append(time.perf_counter() - t)
        tab.close()
    ctx.close()


LIVE = ".kepp-verdict.kepp-live"  # the Plan page's live result (its tab beside a record, or alone)


HEATMAP_DRAWN = "[data-testid='stEChartsChart'] svg text"  # the Heatmaps page's chart (ECharts) drawn: its labels are
# Every page of the app, as a new tab opens it: its address and what says its first screen is there.
NEW_TABS = [("Home", "", "[data-testid='stMetric']"), ("Plan", "Plan", ".st-key-plan_go button"),
            ("Graph", "Graph", "iframe"), ("Heatmaps", "Heatmaps", HEATMAP_DRAWN),
            ("Failure cases", "Failure_cases", ".kepp-plan"), ("Results", "Results", ".kepp-plan"),
            ("Training", "Training", ".js-plotly-plot .main-svg"), ("Playlists", "Playlists", "h1"),
            ("Presenter", "Presenter", ".kepp-note")]
# Ready: the script has finished (its run state says so), the page's own content is there, every plotly chart and every vis.js
# drawing is drawn (a frame that holds a network has its nodes), and no element still waits for its data.
READY_JS = """(sel) => {
  if (document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"]')) return false;
  // the script's run state, at once (the status widget shows only after a run's first 500 ms)
  if ((document.querySelector('[data-testid="stApp"]') || {dataset: {}}).dataset.testScriptState !== 'notRunning') return false;
  if (!document.querySelector('h1') || !document.querySelector(sel)) return false;
  for (const p of document.querySelectorAll('.js-plotly-plot')) if (!p.querySelector('.main-svg')) return false;
  for (const c of document.querySelectorAll('[data-testid="stEChartsChart"]')) if (!c.querySelector('svg text')) return false;
  for (const f of document.querySelectorAll('iframe')) {
    let w; try { w = f.contentWindow; } catch (e) { continue; }
    if (!w || !w.document || !w.document.querySelector('#mynetwork')) {
      if (f.srcdoc && f.srcdoc.includes('mynetwork')) return false;  // a drawing not parsed yet
      continue;
    }
    if (!(w.network && w.network.body.data.nodes.length)) return false;
  }
  return true;
}"""


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min), as the figures are stated with them."""
    try:
        return " / ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    except OSError:
        return "unknown"


def ready(page, selector: str, timeout: float = 120_000) -> None:
    """Until the page is ready (:data:`READY_JS`) twice in a row 100 ms apart (a rerun can follow a run)."""
    page.wait_for_function(READY_JS, arg=selector, timeout=timeout, polling=50)
    page.wait_for_timeout(100)
    page.wait_for_function(READY_JS, arg=selector, timeout=timeout, polling=50)


def measure_new_tabs(browser, url: str, repeats: int, results: dict, pages=NEW_TABS) -> None:
    """Every page opened in a new tab (a new session; the browser's cache kept, as a reader who has
    the app open in another tab), ``repeats`` times after one warm-up round: address → ready."""
    ctx = browser.new_context(viewport=PRESENT)
    for k in range(repeats + 1):
        for label, path, selector in pages:
            tab = ctx.new_page()
            t = time.perf_counter()
            tab.goto(f"{url}/{path}")
            ready(tab, selector)
            if k:  # the first round fills the browser's cache and warms each page's server caches
                results.setdefault(f"new tab → ready: {label} (s)", []).append(time.perf_counter() - t)
            tab.close()
    ctx.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / __import__("os").sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


TIMELINE_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const scripts = res.filter(r => r.initiatorType === 'script' || r.name.endsWith('.js'));
  return {html: nav.responseEnd, dom: nav.domContentLoadedEventEnd,
          scripts: scripts.length ? Math.max(...scripts.map(r => r.responseEnd)) : 0,
          script_bytes: scripts.reduce((a, r) => a + (r.transferSize || 0), 0),
          first_h1: window.__keppH1 || 0};
}"""


def profile_new_tabs(browser, url: str, pid: int, repeats: int, pages=NEW_TABS, fresh: bool = False) -> list[dict]:
    """Where a new tab's time goes, per page (medians of ``repeats`` loads after a warm-up): the HTML,
    Streamlit's scripts, the websocket opened, the first and last message of the script's run, ready;
    the server's CPU seconds and the bytes its messages carry. ``fresh``: each load in a fresh browser
    context (nothing cached: a fresh browser)."""
    ctx = browser.new_context(viewport=PRESENT)
    rows = []
    for label, path, selector in pages:
        got: dict[str, list[float]] = {}
        for k in range(repeats + 1):
            if fresh:
                ctx.close()
                ctx = browser.new_context(viewport=PRESENT)
            tab = ctx.new_page()
            events: dict = {"frames": []}
            t0 = time.perf_counter()

            def on_ws(ws, events=events):
                events.setdefault("ws", time.perf_counter() - t0)
                ws.on("framereceived", lambda payload: events["frames"].append(
                    (time.perf_counter() - t0, len(payload))))

            tab.on("websocket", on_ws)
            cdp = ctx.new_cdp_session(tab)  # the page's renderer: its main thread's busy time
            cdp.send("Performance.enable")
            cpu = cpu_seconds(pid)
            tab.goto(f"{url}/{path}")
            ready(tab, selector)
            t_ready = time.perf_counter() - t0
            cpu = cpu_seconds(pid) - cpu
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            tl = tab.evaluate(TIMELINE_JS)
            frames = events["frames"]
            tab.close()
            if not k:
                continue
            for name, v in (("html", tl["html"] / 1000), ("scripts", tl["scripts"] / 1000),
                            ("websocket", events.get("ws", float("nan"))),
                            ("first message", frames[0][0] if frames else float("nan")),
                            ("last message", frames[-1][0] if frames else float("nan")), ("ready", t_ready),
                            ("server CPU", cpu), ("browser busy", metrics.get("TaskDuration", float("nan"))),
                            ("browser JS", metrics.get("ScriptDuration", float("nan"))),
                            ("layout+style", metrics.get("LayoutDuration", 0.0) + metrics.get("RecalcStyleDuration", 0.0)),
                            ("messages kB", sum(n for _, n in frames) / 1000),
                            ("script kB", tl["script_bytes"] / 1000)):
                got.setdefault(name, []).append(v)
        rows.append({"page": label, **{k: statistics.median(v) for k, v in got.items()}})
    ctx.close()
    cols = ["html", "scripts", "websocket", "first message", "last message", "ready", "server CPU", "browser busy",
            "browser JS", "layout+style", "messages kB", "script kB"]
    print(f"where a new tab's time goes (medians of {repeats} loads, seconds from the address; load {load_average()})")
    print(f"{'page':<14}" + "".join(f"{c:>14}" for c in cols))
    for r in rows:
        print(f"{r['page']:<14}" + "".join(f"{r[c]:14.2f}" for c in cols))
    return rows


GRAPH_LINK = "step=add+sugar&min=0.1"  # the Graph page's presentation screenshot (a deep link)


def graph_shot(page) -> None:
    """graph.png: the Graph page as it opens, its drawing beside its controls."""
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(2000)  # let the drawing settle
    shot(page, "graph")


def presentation_shots(page, url: str, success: str, graph_link: str = GRAPH_LINK) -> None:
    """README screenshots of presentation mode at 1280x720: a Plan result, Failure cases, Results, the
    Graph page opened from a deep link, scrolled to its drawing, and a playlist played."""
    page.set_viewport_size(PRESENT)
    page.goto(f"{url}/Plan?{success}&present=1")
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
    idle(page)
    page.wait_for_timeout(2500)  # the page scrolls to the result; the graph settles
    shot(page, "present_plan", width=PRESENT["width"])
    for label, title, name in [("Failure cases", "Failure cases", "present_failures"),
                               ("Results", "Results", "present_results")]:
        bar_switch(page, label, title)
        page.wait_for_timeout(800)  # let plotly draw
        shot(page, name, width=PRESENT["width"])
    page.goto(f"{url}/Graph?{graph_link}&present=1")
    page.get_by_text("Hover an arrow").first.wait_for(timeout=120_000)
    idle(page)
    page.locator("iframe").first.evaluate("e => e.scrollIntoView({block: 'end'})")  # the drawing, its caption above
    page.wait_for_timeout(2500)  # let the drawing settle
    shot(page, "present_graph", width=PRESENT["width"])
    playlist_shot(page, url)


def playlist_shot(page, url: str) -> None:
    """A playlist played in presentation mode: the built-in scenes, from the Playlists page's Present
    link, moved to the second item with the keyboard (→) as a presenter's clicker would."""
    page.goto(f"{url}/Playlists?present=1")
    page.get_by_role("link", name="Present", exact=True).first.click()
    page.locator(".st-key-playlist_bar").wait_for(timeout=120_000)
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
    idle(page)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('item') === '2'", timeout=60_000)
    page.wait_for_timeout(1000)
    idle(page)
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
    page.wait_for_timeout(2500)  # the page scrolls to the result; the graph settles
    shot(page, "present_playlist", width=PRESENT["width"])


def slice_shots(page, url: str) -> None:
    """Screenshots of the Results page at 1280x720: the "by slice" table cut by failure pattern with
    its second row clicked (the episodes filtered to it), and the episode map coloured by task with
    one episode's hover shown."""
    page.set_viewport_size(PRESENT)
    page.goto(f"{url}/Results?by=pattern")
    table = page.locator("[class*='st-key-tbl_res_slices_pattern']").first
    table.wait_for(timeout=120_000)
    idle(page)
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the grid draws its canvas
    for _ in range(3):  # a click while the grid still draws can be lost: try again
        box = table.bounding_box()
        page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 + 17)  # the second row
        try:
            page.wait_for_function("() => window.location.search.includes('slice=')", timeout=20_000)
            break
        except Exception:
            continue
    idle(page)
    page.locator("h4", has_text="By slice").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)
    shot(page, "slices", width=PRESENT["width"])
    page.goto(f"{url}/Results?map=1&colour=task")
    chart = page.locator(".st-key-res_map_chart .js-plotly-plot")
    chart.wait_for(timeout=120_000)
    idle(page)
    chart.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(1000)
    point = chart.locator("path.point").nth(7).bounding_box()
    page.mouse.move(point["x"] + point["width"] / 2, point["y"] + point["height"] / 2)
    page.wait_for_timeout(600)
    shot(page, "episode_map", width=PRESENT["width"])


def world_facts(args) -> dict:
    """What the configured world offers: trained horizons, record files, and a video id, a task and
    the first step of the loaded world (for the search and the Graph link), read from the world itself."""
    from kepp_core import api
    from kepp_core.errors import KeppError

    cfg = api.AppConfig(dataset=args.dataset, root=args.root, checkpoints=args.checkpoints,
                        predictions=args.predictions)
    ws = api.Workspace(cfg)
    try:
        horizons = ws.horizons()
    except KeppError:
        horizons = []
    try:
        files = [str(f) for f in ws.prediction_files()]
    except KeppError:
        files = []
    ds = ws.dataset
    if horizons:  # the Plan page lists the playable videos of its horizon
        videos = api.playable_videos(ds, max(horizons))  # playable at every horizon
    else:  # zero-shot: the test episodes of the first task (its default) at T=3
        first = sorted(ds.tasks)[0]
        videos = [v for v in ds.split("test") if v.task == first and len(v.steps) >= 3] or ds.split("test")
    return {"horizons": horizons, "records": files, "video": videos[-1].id if videos else None,
            "step": ds.actions[0]}


def measure_plan(page, url: str, video: str, repeats: int, results: dict) -> None:
    """Pressing Plan (clip features + step model + graph + planning model + drawing), with the models'
    own sampler and with the fast one, a new query each time, on a dataset episode with no record named
    (a record's page re-plans in its live tab as soon as a control changes)."""
    page.goto(f"{url}/Plan?video={video}")
    button = page.locator(".st-key-plan_go button").first
    button.wait_for(timeout=120_000)
    idle(page)
    scorers = ["P²KG", "frequency"]  # the Recommendation's options (their labels begin so): one per press, in turn
    for sampler, label in [(None, "Plan (s)"), ("fast (DDIM, 5 steps)", "Plan, fast sampler (s)")]:
        if sampler:
            choose(page, "Sampler", sampler)
        for k in range(repeats + 1):
            # a new query each time: another path scorer, so the old result is cleared, then press Plan
            choose(page, "Recommendation", scorers[k % 2])
            page.wait_for_function(f"() => !document.querySelector('{LIVE}')", timeout=60_000)
            idle(page)
            t = time.perf_counter()
            button.click()
            page.locator(LIVE).first.wait_for(timeout=120_000)  # the live result: endpoints, paths, plan, graph
            idle(page)
            if k:  # the first press also warms the caches (and loads the models)
                results.setdefault(label, []).append(time.perf_counter() - t)


def episode_links(files: list[str], horizons: list[int], n: int) -> tuple[list[str], str | None]:
    """``n`` Plan-page queries of recorded episodes of a KEPP method at a trained horizon (spread over
    the records), and the clean success scene's query (None when the records have none)."""
    from urllib.parse import urlencode

    from kepp_core import api
    from app.commands import components

    components()  # the app's plain-Python components, imported as its pages import them
    from components.talk.curation import choose_scenes
    from components.ui.names import default_method
    from components.records.urls import plan_query
    from kepp_core import catalog

    if not files or not horizons:
        return [], None
    preds = api.read_predictions(files)
    kepp = sorted(m for m in preds["method"].unique()
                  if catalog.find_method(m) is not None and catalog.find_method(m).planner_role is not None)
    if not kepp:
        return [], None
    method = kepp[default_method(kepp)]
    rows = preds[(preds["method"] == method) & (preds["horizon"] == min(horizons))]  # models loaded
    picked = [dict(rows.iloc[i]) for i in range(0, len(rows), max(1, len(rows) // max(n, 1)))][:n]
    success = next((s for s in choose_scenes(preds, horizons=horizons) if s["kind"] == "success"), None)
    return [urlencode(plan_query(r)) for r in picked], urlencode(success["query"]) if success else None


def changed_text(page, pattern: str, before: str, timeout: float = 60_000) -> str:
    """Wait until the first element whose text matches ``pattern`` (a regular expression) shows a
    text other than ``before``; returns it."""
    page.wait_for_function(
        """([p, b]) => { const r = new RegExp(p);
             const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
                        .find(e => r.test(e.innerText));
             return el && el.innerText !== b; }""", arg=[pattern, before], timeout=timeout)
    return page.evaluate("""(p) => { const r = new RegExp(p);
        return [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
               .find(e => r.test(e.innerText)).innerText; }""", pattern)


def caption_text(page, pattern: str) -> str:
    """The text of the first caption matching ``pattern`` (waits for one)."""
    return changed_text(page, pattern, "\u0000")


def measure_search(page, video: str, repeats: int, results: dict) -> None:
    """The Plan page's video search: a video id typed (its matches shown), then the search cleared."""
    page.get_by_role("link", name="Plan", exact=True).first.click()
    page.get_by_role("heading", name="Plan from a video").first.wait_for(timeout=120_000)
    idle(page)
    box = page.get_by_role("textbox", name="Search").first
    before = caption_text(page, "match")
    for k in range(2 * repeats):
        t = time.perf_counter()
        box.fill(video if k % 2 == 0 else "")
        box.press("Enter")
        before = changed_text(page, "match", before)
        idle(page)
        results.setdefault("control change, video search (s)", []).append(time.perf_counter() - t)


def measure_paging(page, label: str, title: str, repeats: int, results: dict) -> None:
    """Next page / previous page of a records page (its caption "episodes 1–50 of N" follows)."""
    page.get_by_role("link", name=label, exact=True).first.click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
    idle(page)
    before = caption_text(page, r"^episodes \d")
    if re.search(r"of (\d+)$", before.replace(",", "")) and int(before.replace(",", "").split()[-1]) <= 50:
        print(f"{label}: one page of episodes only, paging not measured")
        return
    for k in range(2 * repeats):
        t = time.perf_counter()
        page.get_by_role("button", name="Page ▶" if k % 2 == 0 else "◀ Page", exact=True).first.click()
        before = changed_text(page, r"^episodes \d", before)
        idle(page)
        results.setdefault(f"control change, {label} next page (s)", []).append(time.perf_counter() - t)


def first_page(page, url: str, proc: subprocess.Popen, t0: float) -> tuple[float, float]:
    """Server start (``t0``) → the server answers, and → the Home page shows its dataset summary and
    its script is done (seconds)."""
    wait_health(url, proc)
    t_health = time.perf_counter() - t0
    page.goto(url)
    page.locator('[data-testid="stMetric"]').first.wait_for(timeout=120_000)
    idle(page)
    return t_health, time.perf_counter() - t0


class Busy:
    """One CPU-bound process beside the server for the measurement (``--busy``: a talk laptop also runs a screen
    recorder and a browser full of tabs), stopped afterwards; a no-op when not asked for."""

    def __init__(self, on: bool) -> None:
        self.on, self.proc = on, None

    def __enter__(self) -> Busy:
        if self.on:
            self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            print(f"busy: one CPU-bound process (pid {self.proc.pid}) runs beside the server")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def settled(pid: int, timeout: float = 180.0, quiet: float = 0.05) -> float:
    """Until the server (process ``pid``) has done its start work: less than ``quiet`` CPU seconds in one
    second; returns the seconds waited."""
    t0 = time.perf_counter()
    before = cpu_seconds(pid)
    while time.perf_counter() - t0 < timeout:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - before < quiet:
            break
        before = now
    return time.perf_counter() - t0


FIRST_SLIDE = "Plan?playlist=scenes&present=1"  # the built-in playlist's first slide, in presentation mode
# A slide is ready: its plan's cards, its verdict and its graph drawn, the script done.
SLIDE_READY = """() => !document.querySelector('[data-testid="stStatusWidget"]') && document.querySelector('.kepp-plan .kepp-card')
  && document.querySelector('.kepp-verdict') && [...document.querySelectorAll('iframe')].some(f => {
    try { return f.contentWindow.network && f.contentWindow.network.body.data.nodes.length && f.contentWindow.keppPlaced; }
    catch (e) { return false; } })"""


def measure_first_slide(args, results: dict) -> None:
    """A playlist's first slide opened from a fresh browser (a new browser context: no cache, no cookies, no
    session), ``--repeats`` times, each against a fresh server whose start work is done (it prepares what the
    first slide needs while it starts): address → the slide drawn, and the server's start → ready."""
    from playwright.sync_api import sync_playwright

    from kepp_core.api import AppConfig
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    link = args.slide or FIRST_SLIDE
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for k in range(args.repeats):
            port = free_port()
            t0 = time.perf_counter()
            proc = start_app(AppConfig(dataset=args.dataset, root=args.root, checkpoints=args.checkpoints,
                                        predictions=args.predictions, port=port))
            try:
                wait_health(f"http://localhost:{port}", proc)
                waited = settled(proc.pid)
                ctx = browser.new_context(viewport=PRESENT)
                tab = ctx.new_page()
                t = time.perf_counter()
                tab.goto(f"http://localhost:{port}/{link}")
                tab.wait_for_function(SLIDE_READY, timeout=180_000, polling=50)
                took = time.perf_counter() - t
                ctx.close()
            finally:
                proc.terminate()
                proc.wait(timeout=15)
            results.setdefault("first slide, fresh browser → drawn (s)", []).append(took)
            results.setdefault("server start → its start work done (s)", []).append(time.perf_counter() - t0 - took)
            print(f"run {k + 1}: start work done after {waited:.1f} s of settling; first slide drawn in {took:.2f} s "
                  f"(load {load_average()})")
        browser.close()


def measure_first_page(args) -> int:
    """The first page only, ``--repeats`` times: a fresh server and a fresh browser tab each time."""
    from playwright.sync_api import sync_playwright

    from kepp_core.api import AppConfig
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    health, ready = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for _ in range(args.repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            port = free_port()
            t0 = time.perf_counter()
            proc = start_app(AppConfig(dataset=args.dataset, root=args.root, checkpoints=args.checkpoints,
                                        predictions=args.predictions, port=port))
            try:
                h, r = first_page(page, f"http://localhost:{port}", proc, t0)
            finally:
                proc.terminate()
                proc.wait(timeout=15)
                page.close()
            health.append(h)
            ready.append(r)
            print(f"server answering after {h:.2f} s; first page ready after {r:.2f} s")
        browser.close()
    print(f"{'measure':<32} {'median':>8} {'max':>8} {'target':>8} {'median/target':>14} {'n':>4}")
    for name, vals, target in (("server answering (s)", health, None), ("first page ready (s)", ready, 5.0)):
        med = statistics.median(vals)
        ratio = f"{med / target:14.2f}" if target else f"{'':>14}"
        print(f"{name:<32} {med:8.2f} {max(vals):8.2f} {target or float('nan'):8.2f} {ratio} {len(vals):4d}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="dataset root (default: the demo world)")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--checkpoints", default=None, help="models folder (default: the shipped demo models)")
    ap.add_argument("--predictions", default=None)
    ap.add_argument("--repeats", type=int, default=5, help="measurements per interaction")
    ap.add_argument("--screenshots", action="store_true", help="write assets/screenshots/*.png")
    ap.add_argument("--first-page-only", action="store_true",
                    help="only measure the first page: start the server --repeats times, a fresh one each time")
    ap.add_argument("--present-shots", action="store_true",
                    help="only write the presentation-mode screenshots (assets/screenshots/present_*.png), "
                         "measure nothing")
    ap.add_argument("--new-tabs", action="store_true",
                    help="only open every page in a new tab (--repeats times each, after a warm-up) and time it to ready")
    ap.add_argument("--profile", action="store_true",
                    help="only say where a new tab's time goes on every page (HTML, scripts, websocket, the "
                         "script's messages, ready; the server's CPU seconds and the bytes)")
    ap.add_argument("--first-slide", action="store_true",
                    help="only open a playlist's first slide from a fresh browser, against a fresh server each time "
                         "(--repeats times), and time it to drawn")
    ap.add_argument("--slide", default=None, help=f"the slide's address for --first-slide (default: {FIRST_SLIDE})")
    ap.add_argument("--busy", action="store_true",
                    help="run one CPU-bound process beside the server while measuring (a busy talk laptop)")
    ap.add_argument("--slice-shots", action="store_true",
                    help="only write the Results page's slice table and episode map screenshots "
                         "(assets/screenshots/slices.png, episode_map.png), measure nothing")
    args = ap.parse_args()
    print(f"load average at start (1 / 5 / 15 min): {load_average()}")
    if args.dataset == "demo" and args.root is None:
        from kepp_core.data.synth import ensure_world

        ensure_world()  # built once; not part of the measured start
    with Busy(args.busy):
        return measure(args)


def measure(args) -> int:
    """The measurements ``args`` ask for (see the module's docstring)."""
    from playwright.sync_api import sync_playwright

    from kepp_core.api import AppConfig
    from app.commands import start_app
    from kepp_core.api.serving import free_port

    if args.first_page_only:
        return measure_first_page(args)
    if args.first_slide and not args.profile:
        results: dict[str, list[float]] = {}
        measure_first_slide(args, results)
        report(results, {}, args.busy)
        return 0
    from urllib.parse import urlencode

    facts = world_facts(args)  # read before the server starts: not part of the measured start
    links, success = episode_links(facts["records"], facts["horizons"], args.repeats + 1)
    graph_link = GRAPH_LINK if args.dataset == "demo" and args.root is None else urlencode({"step": facts["step"]})
    if not facts["horizons"]:
        print("no trained models for this world: the Plan page plans zero-shot; planning is not measured")
    if not facts["records"]:
        print("no prediction records: Failure cases, Results and deep links are not measured")
    elif not links:
        print("no KEPP records at a trained horizon: deep links are not measured")
    port = free_port()
    url = f"http://localhost:{port}"
    results: dict[str, list[float]] = {}
    per_page: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.perf_counter()
        proc = start_app(AppConfig(dataset=args.dataset, root=args.root, checkpoints=args.checkpoints,
                                    predictions=args.predictions, port=port))
        try:
            t_health, t_ready = first_page(page, url, proc, t0)
            results["first page ready (s)"] = [t_ready]
            print(f"server answering after {t_health:.2f} s; home page shown {t_ready - t_health:.2f} s later")
            if args.slice_shots:
                slice_shots(page, url)
                return 0
            if args.profile and args.first_slide:  # a playlist's first slide from a fresh browser, its server's start work done
                settled(proc.pid)
                profile_new_tabs(browser, url, proc.pid, args.repeats,
                                 [("first slide", args.slide or FIRST_SLIDE, ".kepp-plan .kepp-card")], fresh=True)
                return 0
            if args.profile:
                profile_new_tabs(browser, url, proc.pid, args.repeats)
                return 0
            if args.new_tabs:
                measure_new_tabs(browser, url, args.repeats, results)
                report(results, per_page, args.busy)
                return 0
            if args.present_shots:
                if success is None:
                    raise SystemExit("the records hold no clean success to take the Plan screenshot from")
                presentation_shots(page, url, success, graph_link)
                return 0
            if args.screenshots:
                shot(page, "home")

            # every page in a new tab (a new session), then page switches in one tab
            measure_new_tabs(browser, url, args.repeats, results)
            # page switches: warm each page once (first visit loads models), then measure
            for warm in (True, False):
                for _ in range(1 if warm else args.repeats):
                    for label, title in PAGES:
                        t = time.perf_counter()
                        page.get_by_role("link", name=label, exact=True).first.click()
                        page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
                        idle(page)
                        if not warm:
                            results.setdefault("page switch (s)", []).append(time.perf_counter() - t)
                            per_page.setdefault(label, []).append(time.perf_counter() - t)

            # a control change: the Graph page's depth slider
            page.get_by_role("link", name="Graph", exact=True).first.click()
            page.get_by_role("heading", name="Procedure knowledge graph").wait_for()
            idle(page)
            slider = page.get_by_role("slider", name="Depth").first
            for k in range(args.repeats):
                depth = 2 if k % 2 == 0 else 1
                t = time.perf_counter()
                slider.focus()
                page.keyboard.press("ArrowRight" if depth == 2 else "ArrowLeft")
                page.get_by_text(f"within {depth} step{'s' if depth > 1 else ''} of").first.wait_for(timeout=60_000)
                idle(page)
                results.setdefault("control change (s)", []).append(time.perf_counter() - t)
            if args.screenshots:
                graph_shot(page)

            # Plan (clip features + step model + graph + planning model + drawing)
            if facts["horizons"]:
                measure_plan(page, url, facts["video"], args.repeats, results)
            # presentation mode and deep links (1280x720)
            measure_presentation(page, url, args.repeats, results, records=bool(facts["records"]))
            if links:
                measure_links(page, url, args.repeats, results, links)
            if args.screenshots and success:
                presentation_shots(page, url, success, graph_link)
            page.set_viewport_size({"width": 1400, "height": 900})
            page.goto(f"{url}/Plan?present=0")  # back to the normal mode for the rest
            page.get_by_role("heading", name="Plan from a video").first.wait_for(timeout=120_000)
            idle(page)
            # at scale: the video search, the records pages' next page
            if facts["video"]:
                measure_search(page, facts["video"], args.repeats, results)
            if facts["records"]:
                for label, title in (("Results", "Results"), ("Failure cases", "Failure cases")):
                    measure_paging(page, label, title, args.repeats, results)
            if facts["horizons"]:
                page.goto(f"{url}/Plan?present=0")
                button = page.locator(".st-key-plan_go button").first
                button.wait_for(timeout=120_000)
                idle(page)
                choose(page, "Sampler", "the model's own")
                button.click()
                page.locator(LIVE).first.wait_for(timeout=120_000)
                idle(page)
            if args.screenshots and facts["horizons"]:
                page.set_viewport_size({"width": 1400, "height": 1300})
                page.get_by_role("heading", name="Plan from a video").evaluate("e => e.scrollIntoView({block: 'start'})")
                shot(page, "plan_inputs")
                page.locator(".kepp-result").first.evaluate("e => e.scrollIntoView({block: 'start'})")
                page.wait_for_timeout(2000)  # let the graph settle
                shot(page, "plan")
                page.set_viewport_size({"width": 1400, "height": 900})
                for label, title, name in [("Heatmaps", "Step transition heatmaps", "heatmaps"),
                                           ("Failure cases", "Failure cases", "failures"),
                                           ("Results", "Results", "results"), ("Training", "Training curves", "training")]:
                    page.get_by_role("link", name=label, exact=True).first.click()
                    page.get_by_role("heading", name=title).first.wait_for()
                    idle(page)
                    page.wait_for_timeout(800)  # let plotly draw
                    shot(page, name)
        except Exception:
            print(f"failed at {page.url}; the page as it was: /tmp/bench_app_failure.png", file=sys.stderr)
            page.screenshot(path="/tmp/bench_app_failure.png", full_page=True)
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            browser.close()

    report(results, per_page, args.busy)
    return 0


def report(results: dict[str, list[float]], per_page: dict[str, list[float]], busy: bool = False) -> None:
    """The table of medians with each target beside it (``busy``: the targets beside a CPU hog), and the
    machine's load."""
    targets = {"first page ready (s)": 5.0, "page switch (s)": 1.0, "control change (s)": 1.0, "Plan (s)": 2.0,
               "page switch, presentation (s)": 1.0, "control change, presentation (s)": 1.0,
               "Open in Plan → plan (s)": 2.0, "deep link, new tab → plan (s)": 3.0,
               "Plan, fast sampler (s)": 2.0}
    targets.update({name: 5.0 if busy else 3.0 for name in results if name.startswith("new tab")})
    targets["first slide, fresh browser → drawn (s)"] = 5.0 if busy else 3.0
    targets["server start → its start work done (s)"] = 60.0
    print(f"load average (1 / 5 / 15 min): {load_average()}")
    width = max(32, *(len(name) for name in results))
    print(f"{'measure':<{width}} {'median':>8} {'max':>8} {'target':>8} {'median/target':>14} {'n':>4}")
    for name, vals in results.items():
        med, target = statistics.median(vals), targets.get(name, 1.0)  # every control change: < 1 s
        print(f"{name:<{width}} {med:8.2f} {max(vals):8.2f} {target:8.2f} {med / target:14.2f} {len(vals):4d}")
    for name in ("Plan (s)", "Plan, fast sampler (s)"):
        if name in results:
            print(f"{name[:-4]} presses (s): " + ", ".join(f"{v:.2f}" for v in results[name]))
    if "Plan, fast sampler (s)" in results:
        ratio = statistics.median(results["Plan (s)"]) / statistics.median(results["Plan, fast sampler (s)"])
        print(f"fast sampler: {ratio:.1f}x faster than the models' own (medians, same run)")
    if per_page:
        print("page switch by page (median s): " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in per_page.items()))


if __name__ == "__main__":
    sys.exit(main())
