"""The Gallery's screenshot of docs/app.md, and its first and second view timed (measured, never asserted).

    python benchmarks/gallery_screens.py                 # writes assets/screenshots/gallery.png (demo world, shipped records)
    python benchmarks/gallery_screens.py --time --dataset plans --root SCALE/plans.jsonl --predictions SCALE/records
                                                         # times the Gallery on another world's records, writes nothing

The screenshot shows the failures of KEPP R=2 and Random at T=4 whose first step is wrong, sorted by steps right
(largest first): a view a person reaches with the page's filters, opened from its address. The timing opens the
page in a fresh tab twice after the server answers (the first view reads and indexes the records, the second finds
them cached) and a third time on another filter; each figure with the machine's load beside it."""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench_app import CHROMIUM_ARGS, REPO, idle, shot, wait_health

VIEW = "Gallery?method=kepp-R2,random&T=4&outcome=failure&first=wrong&sort=steps&desc=1"
FILTERED = "Gallery?T=5&outcome=failure&sort=seed"


def _open(browser, url: str) -> float:
    """Seconds until a fresh tab on ``url`` shows its tiles (or its "no record" line) and the run is over."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    t = time.perf_counter()
    page.goto(url)
    page.locator(".kepp-tile, [data-testid='stAlert']").first.wait_for(timeout=600_000)
    idle(page, timeout=600_000)
    seconds = time.perf_counter() - t
    page.close()
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time", action="store_true", help="time the first and second view; no screenshot")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--root", default=None, help="the dataset (default: the demo world)")
    ap.add_argument("--checkpoints", default=None)
    ap.add_argument("--predictions", default=None, help="records file or folder (default: the shipped records)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from app.commands import start_app
    from kepp_core.api import AppConfig
    from kepp_core.api.serving import free_port
    from kepp_core.data.synth import ensure_world

    demo = REPO / "assets" / "demo"
    cfg = AppConfig(dataset=args.dataset, root=args.root or str(ensure_world(progress=False)), port=free_port(),
                    checkpoints=args.checkpoints or (str(demo) if args.dataset == "demo" else None),
                    predictions=args.predictions or str(demo / "predictions.jsonl"))
    proc = start_app(cfg)
    url = f"http://localhost:{cfg.port}"
    try:
        wait_health(url, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            if args.time:
                for name, address in (("first view", "Gallery"), ("second view", "Gallery"),
                                      ("another filter", FILTERED)):
                    seconds = _open(browser, f"{url}/{address}")
                    print(f"{name}: {seconds:.2f} s (load {os.getloadavg()[0]:.1f})")
            else:
                page = browser.new_page(viewport={"width": 1400, "height": 1500})
                page.goto(f"{url}/{VIEW}")
                page.locator(".kepp-tile").first.wait_for(timeout=300_000)
                idle(page)
                page.wait_for_function("() => [...document.querySelectorAll('.kepp-tile img')].every(i => i.complete)")
                shot(page, "gallery", width=1200)
                print("assets/screenshots/gallery.png")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
