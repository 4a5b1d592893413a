"""The offline deck's screenshots of docs/app.md: a slide at 1280x720 and at 1024x768 (the A/B slide of
pancakes/0199/0:6, T=6: KEPP R=1 + joint decoding against KEPP without the graph condition, every path of both
plans and the truth on its graph; at 1024x768 its legend under the graph and its cards closed up) and the
overview the speaker's O key opens (every slide, click one to go there).

    python benchmarks/deck_screens.py       # writes assets/screenshots/deck_slide_1280x720.png,
                                            # deck_slide_1024x768.png, deck_overview.png

A 12-slide playlist on the demo world and its shipped records, exported by `kepp talk export`'s own function
in a scratch folder (the checkout stays clean), opened from its file in headless Chromium."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from bench_app import CHROMIUM_ARGS, REPO, shot

AB = ("pancakes/0199/0:6", "kepp-R1+jdec", "kepp-nograph")


def _items(preds, playlists) -> list[dict]:
    """The A/B slide first, then eleven records over the horizons and methods."""
    episode, a, b = AB
    row = preds[(preds["episode"] == episode) & (preds["method"] == a)].iloc[0]
    items = [playlists.ab_item(dict(row), b)]
    for k, method in enumerate(["kepp-R1+jdec", "kepp-R2", "kepp-nograph", "pdpp"] * 3):
        rows = preds[(preds["horizon"] == 3 + k % 4) & (preds["method"] == method)]
        if len(items) < 12:
            items.append(playlists.item_of_row(dict(rows.iloc[(k * 37) % len(rows)])))
    return items


def main() -> int:
    from playwright.sync_api import sync_playwright

    from app.commands import components
    from kepp_core.api import AppConfig, read_predictions
    from kepp_core.data.synth import ensure_world
    from kepp_core.evaluation.playlists import PlaylistStore

    components()
    from components.talk import deck, playlists

    world, models = ensure_world(progress=False), REPO / "assets" / "demo"
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "predictions.jsonl"
        shutil.copyfile(models / "predictions.jsonl", records)
        PlaylistStore(records.parent / "playlists").add("talk", _items(read_predictions([records]), playlists))
        cfg = AppConfig(dataset="demo", root=str(world), checkpoints=str(models), predictions=str(records))
        out = deck.export(cfg, "talk", Path(scratch) / "talk.html")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(out.as_uri() + "#1")
            page.wait_for_function("() => document.querySelector('#slide-1:not([hidden]) svg.graph-svg')")
            shot(page, "deck_slide_1280x720", width=1280)
            page.keyboard.press("o")
            page.wait_for_function("() => !document.getElementById('kepp-overview').hidden")
            shot(page, "deck_overview", width=1280)
            page = browser.new_page(viewport={"width": 1024, "height": 768})
            page.goto(out.as_uri() + "#1")
            page.wait_for_function("() => document.querySelector('#slide-1:not([hidden]) svg.graph-svg')")
            shot(page, "deck_slide_1024x768", width=1024)
            browser.close()
    print("assets/screenshots/deck_slide_1280x720.png, deck_slide_1024x768.png, deck_overview.png: 12 slides, "
          "the A/B slide first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
