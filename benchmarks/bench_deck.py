"""How long the offline deck takes to open: ``kepp talk export`` of a playlist on the demo world (its videos'
frames, the shipped records' plans, the graph), then the file opened from disk (``file://``, no server) in
Debian's headless Chromium (/usr/bin/chromium), a fresh browser context each time (no cache): the browser's
own times from the navigation's start to the first paint, to the first slide drawn (the largest contentful
paint, once the slide's number is in the fragment and its frames are decoded) and to the load event, over ``--runs`` opens.

The playlist is the demo records' KEPP R=2 episodes, ``--slides`` of them (successes and failures, every
horizon), each with a note. Prints the deck's size, the export's time, and min / median / max of both
measures, at 1920x1080 (``--width``/``--height``).

    python benchmarks/bench_deck.py                       # 12 slides, 10 opens
    python benchmarks/bench_deck.py --slides 40 --runs 5  # a long talk
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

# The first slide drawn: its number in the fragment, the one slide shown, its images decoded; then the browser's
# own times since the navigation started: the first paint with content, the largest paint (the slide's frames
# or its text: the slide is on the screen) and the load event.
FIRST = """async () => {
  const s = document.querySelectorAll('#deck > section.slide:not([hidden])');
  if (location.hash !== '#1' || s.length !== 1 || s[0].dataset.n !== '1') return null;
  await Promise.all([...s[0].querySelectorAll('img')].map(i => i.decode()));
  const lcp = await new Promise(done => new PerformanceObserver((list) => {
    const e = list.getEntries(); done(e[e.length - 1].startTime); }).observe({type: 'largest-contentful-paint', buffered: true}));
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {fcp: fcp ? fcp.startTime : null, lcp, load: performance.getEntriesByType('navigation')[0].loadEventEnd}; }"""


def playlist(folder: Path, slides: int) -> Path:
    from kepp_core import api
    from kepp_core.evaluation.playlists import PlaylistStore

    preds = api.read_predictions([REPO / "assets" / "demo" / "predictions.jsonl"])
    rows = preds[preds["method"] == "kepp-R2"].sort_values(["horizon", "success", "episode"])
    step = max(1, len(rows) // slides)
    items = [{"episode": str(r.episode), "method": "kepp-R2", "T": int(r.horizon), "query": {"seed": str(int(r.seed))},
              "note": f"slide {k + 1}: what to say about {r.episode}"}
             for k, r in enumerate(rows.iloc[::step].head(slides).itertuples())]
    store = PlaylistStore(folder)
    store.add("bench", items)
    return store.path("bench")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slides", type=int, default=12)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    scratch = Path(tempfile.mkdtemp(prefix="bench-deck-"))
    try:
        out = scratch / "talk.html"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kepp_core", "talk", "export", str(playlist(scratch, args.slides)),
                        "--out", str(out), "--predictions", str(REPO / "assets" / "demo" / "predictions.jsonl")],
                       check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
        export_s = time.perf_counter() - started
        times = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            for _ in range(args.runs):
                context = browser.new_context(viewport={"width": args.width, "height": args.height})
                page = context.new_page()
                page.goto(out.as_uri() + "#1", wait_until="load")
                times.append(page.evaluate(FIRST))
                context.close()
            browser.close()
        assert all(times), "the first slide was not shown on opening"

        def spread(key: str) -> dict:
            values = [t[key] for t in times]
            return {"min": round(min(values)), "median": round(statistics.median(values)), "max": round(max(values))}

        summary = {"slides": args.slides, "deck_bytes": out.stat().st_size, "export_s": round(export_s, 2),
                   "viewport": f"{args.width}x{args.height}", "runs": args.runs, "first_paint_ms": spread("fcp"),
                   "first_slide_ms": spread("lcp"), "load_event_ms": spread("load"),
                   "load_average": [round(x, 2) for x in os.getloadavg()]}
        print(f"deck: {args.slides} slides, {summary['deck_bytes'] / 1e6:.2f} MB, exported in {export_s:.1f} s")
        print(f"open → first slide drawn (largest contentful paint): median {summary['first_slide_ms']['median']} ms "
              f"(min {summary['first_slide_ms']['min']}, max {summary['first_slide_ms']['max']}) over {args.runs} opens")
        print(f"open → load event: median {summary['load_event_ms']['median']} ms")
        print(json.dumps(summary))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
