"""Browsing at the field's scale: every page of ``kepp app`` on 835,200 method-episode records, in headless Chromium.

Measures, with the machine's load (1-minute average) beside each figure:

- each page's first view after the server starts and its second view (``--views`` rounds of every page after the
  first, the median and the slowest shown; a new tab; address -> drawn, with
  ``benchmarks/bench_app.py``'s readiness: the script done, plots and graph frames drawn). The pages are the
  registry's (``app/components/ui/pages.py``): a page added there is measured too;
- a control change per page (one control each, :data:`CONTROLS`): the action -> its run ended, the page drawn;
- the server's RSS after 20 edits of one records file (one line appended, the Results page reloaded after
  each), on a copy of the records in a scratch folder, and the cache home's tables afterwards;
- ``kepp eval --from-records FOLDER`` warm (a fresh process, the cache filled) over pyarrow's floor
  (``pyarrow.json.read_json`` of the same files).

    python benchmarks/bench_browse.py                                   # writes the 835k records to a temp folder
    python benchmarks/bench_browse.py --folder /work/scale/records      # records already written (plans.jsonl beside)
    python benchmarks/bench_browse.py --folder F --only pages           # pages | controls | edits | eval (repeatable)

Targets (docs/at-scale.md): a page <= 5 s on its first view after start, <= 2 s on a second view; a control change
<= 1 s; the server <= 2 GiB after 20 edits; eval warm <= 2x the floor. Prints a markdown table; no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "app"))

from bench_app import HEATMAP_DRAWN  # noqa: E402 -- after the path it lies on

EDITS = 20
# pages whose own content shows they are drawn; any other page (one added to the registry) is drawn when its title is
SELECTORS = {"home": "[data-testid='stMetric']", "graph": "iframe", "heatmaps": HEATMAP_DRAWN,
             "failures": ".kepp-plan", "results": ".kepp-plan", "training": "h1", "presenter": "h1"}
RUNS_ENDED = """() => { const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return -1;
  if (!window.__keppRuns) {
    window.__keppRuns = {n: 0};
    new MutationObserver(() => { if (app.dataset.testScriptState === 'notRunning') window.__keppRuns.n++; })
      .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  }
  return window.__keppRuns.n; }"""


def load1() -> float:
    return os.getloadavg()[0]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far: what a figure cost the server, whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def row(rows: list, name: str, value, target: str = "", cpu: float | None = None) -> None:
    """One figure, with the load now (and the server's CPU seconds it took, where measured), said at once."""
    rows.append((name, value, target, load1(), cpu))
    print(f"  {name}: {value:.2f}" + (f" (server CPU {cpu:.2f} s)" if cpu is not None else "") + f", load {load1():.1f}",
          flush=True)


# --- one control per page -----------------------------------------------------------------------------------------
def _depth(page) -> str:
    slider = page.get_by_role("slider").first
    slider.focus()
    page.keyboard.press("ArrowRight")
    return "Graph: the depth slider one step"


def _toggle(page) -> str:
    page.get_by_text("Show the matrices as tables").first.click()
    return "Heatmaps: the matrices as tables"


def _pattern(page) -> str:
    page.get_by_role("radiogroup").first.get_by_role("radio").nth(1).click(force=True)
    return "Failure cases: another pattern"


def _metric(page) -> str:
    page.locator("[data-testid='stButtonGroup'] button", has_text="mAcc").first.click()
    return "Results: the method × T table's metric"


CONTROLS = {"graph": _depth, "heatmaps": _toggle, "failures": _pattern, "results": _metric}


# --- the server ---------------------------------------------------------------------------------------------------
def start(folder: Path, dataset: Path, home: Path, port: int):
    """``kepp app --dataset plans --root DATASET --predictions FOLDER`` with its own cache home, answering."""
    from app.commands import start_app
    from bench_app import wait_health

    from kepp_core.api import AppConfig

    os.environ["KEPP_HOME"] = str(home)
    t = time.perf_counter()
    proc = start_app(AppConfig(dataset="plans", root=str(dataset), predictions=str(folder), port=port))
    wait_health(f"http://localhost:{port}", proc, timeout=900)
    return proc, time.perf_counter() - t


def rss_mib(pid: int) -> float:
    """The process's resident memory now (MiB)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")) / 1024


def view(ctx, url: str, page, pid: int, timeout: float = 600_000) -> tuple[float, float]:
    """A new tab opened at ``page``'s address until it is drawn: seconds, and the server's CPU seconds."""
    from bench_app import ready

    tab = ctx.new_page()
    t, c = time.perf_counter(), cpu_s(pid)
    tab.goto(f"{url}/{page.url_path}")
    try:
        ready(tab, SELECTORS.get(page.name, "h1"), timeout=timeout)
        return time.perf_counter() - t, cpu_s(pid) - c
    finally:
        tab.close()


def control(ctx, url: str, page, pid: int, repeats: int) -> tuple[str, list[float], list[float]]:
    """:data:`CONTROLS`' control of ``page`` changed ``repeats`` times: seconds from the action to its run's end."""
    from bench_app import ready

    tab = ctx.new_page()
    tab.goto(f"{url}/{page.url_path}")
    ready(tab, SELECTORS.get(page.name, "h1"), timeout=600_000)
    times, cpus, what = [], [], ""
    for _ in range(repeats):
        before = tab.evaluate(RUNS_ENDED)
        t, c = time.perf_counter(), cpu_s(pid)
        what = CONTROLS[page.name](tab)
        tab.wait_for_function(f"b => ({RUNS_ENDED})() > b", arg=before, timeout=120_000, polling=20)
        ready(tab, SELECTORS.get(page.name, "h1"), timeout=120_000)
        times.append(time.perf_counter() - t)
        cpus.append(cpu_s(pid) - c)
        tab.goto(f"{url}/{page.url_path}")  # back to where the control starts
        ready(tab, SELECTORS.get(page.name, "h1"), timeout=600_000)
    tab.close()
    return what, times, cpus


def measure_pages(folder: Path, dataset: Path, home: Path, port: int, rows: list, which: set, repeats: int,
                  views: int = 3) -> None:
    """Each registered page's first view after the server starts and its second view (``views`` of them after the
    first: the median and the slowest); a control change each."""
    from bench_app import CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    from components.ui.pages import PAGES

    proc, started = start(folder, dataset, home, port)
    row(rows, "server start (records read from the cache home) (s)", started)
    url = f"http://localhost:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            if "pages" in which:
                for page in PAGES.values():
                    took, cpu = view(ctx, url, page, proc.pid)
                    row(rows, f"{page.label}: first view (s)", took, "≤ 5", cpu)
                # a second view, and as many more (--views), every page in turn each round: the median, the slowest
                seen = {page.name: [] for page in PAGES.values()}
                for _ in range(views):
                    for page in PAGES.values():
                        seen[page.name].append(view(ctx, url, page, proc.pid))
                for page in PAGES.values():
                    runs = seen[page.name]
                    took, slowest = statistics.median(t for t, _ in runs), max(t for t, _ in runs)
                    row(rows, f"{page.label}: second view (s), median of {len(runs)} (slowest {slowest:.2f})", took,
                        "≤ 2", statistics.median(c for _, c in runs))
            if "controls" in which:
                for page in PAGES.values():
                    if page.name in CONTROLS:
                        try:
                            what, times, cpus = control(ctx, url, page, proc.pid, repeats)
                        except Exception as e:  # noqa: BLE001 -- a control not found is said, the rest measured
                            print(f"  {page.label}: the control was not measured ({type(e).__name__})", flush=True)
                            continue
                        row(rows, f"control change: {what} (s)", statistics.median(times), "≤ 1",
                            statistics.median(cpus))
            browser.close()
        row(rows, "server RSS after the pages (MiB)", rss_mib(proc.pid))
    finally:
        proc.kill()
        proc.wait()


# --- memory after edits -----------------------------------------------------------------------------------------
def measure_edits(folder: Path, dataset: Path, home: Path, port: int, rows: list) -> None:
    """The server's RSS after :data:`EDITS` edits of one records file of a copy of ``folder`` (one line appended,
    the Results page reloaded after each), and the tables the cache home holds afterwards."""
    from bench_app import CHROMIUM_ARGS, ready
    from playwright.sync_api import sync_playwright

    from kepp_core import api

    scratch = Path(tempfile.mkdtemp(prefix="kepp-browse-edits-"))
    try:
        copy = scratch / "records"
        shutil.copytree(folder, copy)
        edited = max(copy.glob("*.jsonl"), key=lambda f: f.stat().st_size)  # the largest: the most to judge again
        last = json.loads(edited.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1])
        proc, _ = start(copy, dataset, home, port)
        url = f"http://localhost:{port}"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                tab = browser.new_page(viewport={"width": 1280, "height": 800})
                tab.goto(f"{url}/Results")
                ready(tab, SELECTORS["results"], timeout=600_000)
                row(rows, "server RSS, Results shown, before the edits (MiB)", rss_mib(proc.pid))
                peak, versions = 0.0, []  # the first version's table stays: the original folder's file has those bytes
                for k in range(EDITS):
                    with open(edited, "a", encoding="utf-8") as f:
                        f.write(json.dumps({**last, "episode": f"{last['episode']}#edit{k}"}) + "\n")
                    versions.append(api.records_version(edited))
                    tab.reload()
                    ready(tab, SELECTORS["results"], timeout=600_000)
                    peak = max(peak, rss_mib(proc.pid))
                browser.close()
            row(rows, f"server RSS after {EDITS} edits of one records file (MiB)", rss_mib(proc.pid), "≤ 2048")
            row(rows, f"server RSS, highest during the {EDITS} edits (MiB)", peak)
        finally:
            proc.kill()
            proc.wait()
        left = sum((home / "records" / f"{v}.arrow").is_file() for v in versions)
        row(rows, f"cache home's tables of the edited file's {len(versions)} edited versions, afterwards", left, "1")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- the command line ---------------------------------------------------------------------------------------------
def measure_eval(folder: Path, home: Path, rows: list) -> None:
    """``kepp eval --from-records FOLDER`` warm (median of 3, after one run that fills the cache) over pyarrow's
    floor of the same files."""
    from bench_records_scale import floor

    env = {**os.environ, "KEPP_HOME": str(home), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "kepp_core", "eval", "--from-records", str(folder)]

    def run() -> float:
        t = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"kepp eval --from-records failed: {out.stderr.strip()[-500:]}")
        return time.perf_counter() - t

    run()
    warm = statistics.median(run() for _ in range(3))
    fl = floor(sorted(folder.glob("*.jsonl")))
    row(rows, "kepp eval --from-records FOLDER, warm (s)", warm)
    row(rows, "pyarrow.json.read_json of the same files: the floor (s)", fl)
    row(rows, "eval warm / floor (×)", warm / fl, "≤ 2")


# --- the report ---------------------------------------------------------------------------------------------------
def table(rows: list) -> str:
    """The figures as a markdown table, the load beside each."""
    lines = ["| figure | value | target | load (1 min) | server CPU (s) |", "| --- | ---: | --- | ---: | ---: |"]
    for name, value, target, load, cpu in rows:
        text = f"{value:,.0f}" if "MiB" in name else f"{value:.2f}" if isinstance(value, float) else str(value)
        lines.append(f"| {name} | {text} | {target} | {load:.1f} | {'' if cpu is None else f'{cpu:.2f}'} |")
    return "\n".join(lines)


def records(args) -> tuple[Path, Path, Path | None]:
    """The records folder and its dataset: ``--folder`` (``plans.jsonl`` beside it, or ``--dataset``), else the
    field's 835,200 rows written by bench_records_scale's writer into a temporary folder (removed afterwards)."""
    if args.folder:
        folder = Path(args.folder)
        return folder, Path(args.dataset) if args.dataset else folder.parent / "plans.jsonl", None
    import numpy as np
    from bench_records_scale import world, write_records

    tmp = Path(tempfile.mkdtemp(prefix="kepp-browse-"))
    folder = tmp / "records"
    folder.mkdir()
    rng = np.random.default_rng(46)
    write_records(folder, world(folder, 1.0, rng), rng)
    return folder, tmp / "plans.jsonl", tmp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", default=None, help="a records folder (default: the field's 835k rows written anew)")
    ap.add_argument("--dataset", default=None, help="its plans-JSONL dataset (default: plans.jsonl beside the folder)")
    ap.add_argument("--home", default=None, help="the cache home (default: a new one; the first server fills it)")
    ap.add_argument("--port", type=int, default=8640)
    ap.add_argument("--repeats", type=int, default=3, help="control changes per page (the median is shown)")
    ap.add_argument("--views", type=int, default=3, help="views of each page after its first (the median is shown)")
    ap.add_argument("--only", action="append", choices=["pages", "controls", "edits", "eval"], default=None)
    args = ap.parse_args()
    which = set(args.only or ["pages", "controls", "edits", "eval"])
    folder, dataset, tmp = records(args)
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="kepp-browse-home-"))
    rows: list = []
    try:
        n = sum(1 for _ in folder.glob("*.jsonl"))
        print(f"{n} records files in {folder}; {os.cpu_count()} CPUs; load {load1():.1f}", flush=True)
        if "eval" in which:  # first: it fills the cache home the servers then read, as a user's earlier run would
            measure_eval(folder, home, rows)
        if which & {"pages", "controls"}:
            measure_pages(folder, dataset, home, args.port, rows, which, args.repeats, max(1, args.views))
        if "edits" in which:
            measure_edits(folder, dataset, home, args.port + 1, rows)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
        print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs\n")
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
