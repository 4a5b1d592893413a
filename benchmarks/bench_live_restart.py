"""Live mode after a server restart: how long the first key takes to draw the next slide (docs/app.md, "A clicker
that outlives the server"; the target: within 5 s on an idle machine).

The demo world, its shipped models and a copy of their records in a scratch folder with an 8-slide playlist
beside them (KEPP R=2 episodes of every horizon, successes and failures, and two A/B slides, one of T=6). The
app server (``kepp app``, a real process) plays slide ``--slide`` in presentation mode in headless Chromium; then,
``--runs`` times: the server is stopped and started again, the page reconnects by itself on the same slide, and
→ is pressed once: the time from the key to the next slide drawn (the bar's number and the slide's own episode,
the page's run over), then ← goes back for the next run. Prints each phase (the server's start to its health
answer, the page's reconnection, the first key) and the load average.

    python benchmarks/bench_live_restart.py                 # 3 restarts, slide 4 -> 5
    python benchmarks/bench_live_restart.py --runs 5 --slide 7
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from bench_app import CHROMIUM_ARGS, REPO, load_average, wait_health

# The slide drawn: the bar's "k / n", the one slide marker's episode, the page's run over (null while running).
SHOWN = """() => { const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning' || document.querySelector('[data-testid="stStatusWidget"]')) return null;
  const bar = document.querySelector('.st-key-playlist_bar'), marks = document.querySelectorAll('.kepp-shown');
  const at = bar && bar.innerText.match(/(\\d+) \\/ (\\d+)/);
  if (!at || marks.length !== 1) return null;
  const mark = document.querySelector('.kepp-reconnecting');
  if (mark && getComputedStyle(mark).display !== 'none') return null;
  return {item: Number(at[1]), episode: marks[0].dataset.episode,
          ready: typeof window.__keppButton === 'function' && !!window.__keppButton('next')}; }"""


def playlist(preds, playlists) -> list[dict]:
    """Eight slides: KEPP R=2 records of T=3..6 (successes and failures) and two A/B pairs (T=4, T=6)."""
    kepp = preds[preds["method"] == "kepp-R2"]
    items = []
    for k, horizon in enumerate((3, 4, 5, 6, 3, 5)):
        rows = kepp[(kepp["horizon"] == horizon) & (kepp["success"] == bool(k % 2))]
        items.append(playlists.item_of_row(dict(rows.iloc[k])))
    for horizon, versus in ((4, "random"), (6, "kepp-nograph")):
        row = kepp[kepp["horizon"] == horizon].iloc[5]
        items.insert(3 if horizon == 4 else 5, playlists.ab_item(dict(row), versus))
    return items


def wait_slide(page, k: int, episode: str, timeout: float = 600_000) -> None:
    page.wait_for_function(f"w => {{ const s = ({SHOWN})(); return !!s && s.item === w.k && s.episode === w.e && s.ready; }}",
                           arg={"k": k, "e": episode}, timeout=timeout, polling=50)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slide", type=int, default=4, help="the slide played when the server restarts (1..7)")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from app.commands import components, start_app
    from kepp_core.api import AppConfig, read_predictions
    from kepp_core.api.serving import free_port
    from kepp_core.data.synth import ensure_world
    from kepp_core.evaluation.playlists import PlaylistStore

    components()
    from components.talk import playlists

    world, models = ensure_world(progress=False), REPO / "assets" / "demo"
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "predictions.jsonl"
        shutil.copyfile(models / "predictions.jsonl", records)
        items = playlist(read_predictions([records]), playlists)
        PlaylistStore(records.parent / "playlists").add("talk", items)
        port = args.port or free_port()
        cfg = AppConfig(dataset="demo", root=str(world), checkpoints=str(models), predictions=str(records), port=port)
        url, k = f"http://localhost:{port}", args.slide
        proc = start_app(cfg)
        starts, reconnects, keys = [], [], []
        try:
            wait_health(url, proc)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(f"{url}/Plan?{urlencode({'playlist': 'talk', 'item': k, 'present': 1})}")
                wait_slide(page, k, items[k - 1]["episode"])
                for run in range(args.runs):
                    proc.terminate()
                    proc.wait(timeout=30)
                    t = time.perf_counter()
                    proc = start_app(cfg)
                    wait_health(url, proc)
                    starts.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    wait_slide(page, k, items[k - 1]["episode"])
                    reconnects.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    page.keyboard.press("ArrowRight")
                    wait_slide(page, k + 1, items[k]["episode"])
                    keys.append(time.perf_counter() - t)
                    print(f"restart {run + 1}: server up {starts[-1]:.1f} s, page back {reconnects[-1]:.1f} s, "
                          f"first key -> slide {k + 1} drawn {keys[-1]:.2f} s", flush=True)
                    page.keyboard.press("ArrowLeft")
                    wait_slide(page, k, items[k - 1]["episode"])
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"first key after a restart (slide {k} -> {k + 1}, {args.runs} restarts): median "
          f"{statistics.median(keys):.2f} s, max {max(keys):.2f} s; load average {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
