"""The A/B slides' screenshots of docs/app.md (a talk's slides at the projectors): one episode planned by KEPP
R=2 (A, right) and Random (B, wrong) at T=4, played from a playlist in presentation mode, at 1280x720 and at
1920x1080 (the same slide, its type and graph grown with the screen); and the hardest A/B slide, T=6, KEPP R=2
against KEPP without its graph condition (the end-to-end test's: ``tests.helpers.talk.long_ab_item``), at
1280x720 and 1024x768 (drawn compact: each card's number beside its name).

    python benchmarks/talk_screens.py       # writes assets/screenshots/present_ab_1280x720.png, ..._1920x1080.png,
                                            # present_ab6_1280x720.png, present_ab6_1024x768.png

The demo world and its shipped models and records; the playlist is written beside a copy of the records in a
scratch folder (the checkout stays clean)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from bench_app import CHROMIUM_ARGS, REPO, SLIDE_READY, idle, shot, wait_health

SCREENS = [(1, "present_ab", (1280, 720)), (1, "present_ab", (1920, 1080)),  # (item, name, window)
           (2, "present_ab6", (1280, 720)), (2, "present_ab6", (1024, 768))]


def main() -> int:
    from playwright.sync_api import sync_playwright

    from app.commands import components

    components()  # the app's plain-Python components, imported as its pages import them

    from components.talk import playlists
    from kepp_core.api import AppConfig, read_predictions
    from app.commands import start_app
    from kepp_core.api.serving import free_port
    from kepp_core.data.synth import ensure_world
    from kepp_core.evaluation.playlists import PlaylistStore
    from tests.helpers.talk import long_ab_item

    world, models = ensure_world(progress=False), REPO / "assets" / "demo"
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "predictions.jsonl"
        shutil.copyfile(models / "predictions.jsonl", records)
        preds = read_predictions([records])
        t4 = preds[preds["horizon"] == 4].set_index(["episode", "method"])["success"]
        episode = next(e for (e, m), ok in t4.items() if m == "kepp-R2" and ok and not t4.get((e, "random"), True))
        row = preds[(preds["episode"] == episode) & (preds["method"] == "kepp-R2")].iloc[0]
        six = long_ab_item(records)
        PlaylistStore(records.parent / "playlists").add("ab", [playlists.ab_item(dict(row), "random"), six])
        what = {1: f"{episode}, KEPP R=2 vs Random", 2: f"{six['episode']}, KEPP R=2 vs KEPP without graph condition"}
        port = free_port()
        proc = start_app(AppConfig(dataset="demo", root=str(world), checkpoints=str(models), predictions=str(records),
                                   port=port))
        try:
            wait_health(f"http://localhost:{port}", proc)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                for item, name, (width, height) in SCREENS:
                    page = browser.new_page(viewport={"width": width, "height": height})
                    page.goto(f"http://localhost:{port}/Plan?playlist=ab&item={item}&present=1")
                    page.wait_for_function(SLIDE_READY, timeout=300_000, polling=100)
                    idle(page)
                    shot(page, f"{name}_{width}x{height}", width=width)
                    print(f"assets/screenshots/{name}_{width}x{height}.png: {what[item]}")
                    page.close()
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
