"""The screenshot of docs/app.md's "A step opens its graph": a step card of a failed plan on the Plan page clicked,
the Graph page it opens (the P²KG around that step) and, below the drawing, the records whose plan or truth passes
through it (method, T, seed, file, what passes, Open in Plan).

    python benchmarks/step_graph_screens.py       # writes assets/screenshots/step_graph.png

The app server on the demo world, its shipped models and a copy of their records in a scratch folder (the checkout
stays clean), driven in headless Chromium as a reader would: the Plan page first, then one click."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from bench_app import CHROMIUM_ARGS, REPO, idle, shot, wait_health

EPISODE = ("kepp-R2", 4)  # the first failed record of this method and T: its plan's second step is clicked


def main() -> int:
    from playwright.sync_api import sync_playwright

    from app.commands import components, start_app
    from kepp_core.api import AppConfig, read_predictions
    from kepp_core.api.serving import free_port
    from kepp_core.data.synth import ensure_world

    components()
    from components.records import urls

    world, models = ensure_world(progress=False), REPO / "assets" / "demo"
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "predictions.jsonl"
        shutil.copyfile(models / "predictions.jsonl", records)
        preds = read_predictions([records])
        method, T = EPISODE
        rec = preds[(preds["method"] == method) & (preds["horizon"] == T) & ~preds["success"]].iloc[0]
        cfg = dataclasses.replace(AppConfig(dataset="demo", root=str(world), checkpoints=str(models),
                                            predictions=str(records)), port=free_port())
        proc = start_app(cfg)
        url = f"http://localhost:{cfg.port}"
        try:
            wait_health(url, proc)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1700})
                page.goto(f"{url}/Plan?{urlencode(urls.plan_query(dict(rec)))}")
                page.locator(".kepp-plan a.kepp-step-link").first.wait_for(timeout=180_000)
                idle(page)
                page.locator(".kepp-plan a.kepp-step-link").nth(1).click()  # the plan's second step
                page.wait_for_url("**/Graph?*", timeout=120_000)
                page.locator("table.kepp-through tbody tr").first.wait_for(timeout=180_000)
                idle(page)
                page.frame_locator("iframe").first.locator("#mynetwork canvas").wait_for(timeout=60_000)
                page.wait_for_timeout(1500)  # the frame's labels placed
                # the drawing at the top of the window, the list of records below it (the caption's paths above)
                page.evaluate("() => document.querySelector('iframe').scrollIntoView({block: 'start'})")
                page.wait_for_timeout(500)
                shot(page, "step_graph", width=1100)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
