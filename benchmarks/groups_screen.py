"""The Groups page's screenshot of docs/app.md ("Group by anything"): the demo's shipped records grouped by method
and T, sorted by SR high to low, at 1280x720.

    python benchmarks/groups_screen.py       # writes assets/screenshots/grouping.png

The app server on the demo world with the shipped models and records (a free port, stopped afterwards), opened in
headless Chromium."""

from __future__ import annotations

import sys

from bench_app import CHROMIUM_ARGS, REPO, idle, shot, wait_health

ADDRESS = "Groups?by=method,T&sort=SR&desc=1"


def main() -> int:
    from playwright.sync_api import sync_playwright

    from app.commands import start_app
    from kepp_core.api import AppConfig
    from kepp_core.api.serving import free_port
    from kepp_core.data.synth import ensure_world

    models, port = REPO / "assets" / "demo", free_port()
    proc = start_app(AppConfig(dataset="demo", root=str(ensure_world(progress=False)), checkpoints=str(models),
                               predictions=str(models / "predictions.jsonl"), port=port))
    try:
        url = f"http://localhost:{port}"
        wait_health(url, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{url}/{ADDRESS}")
            page.get_by_role("button", name="Download table (CSV)").wait_for(timeout=180_000)
            idle(page)
            page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stDataFrame\"] [role=\"row\"]')"
                                   ".length > 1")
            page.wait_for_timeout(500)
            shot(page, "grouping", width=1280)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    print("wrote assets/screenshots/grouping.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
