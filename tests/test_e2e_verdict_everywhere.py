"""End-to-end, one verdict: a record's verdict reads the same on the list (Failure cases: the pattern it is filed
under), the card beside it, its Gallery tile, its slide (the Plan page playing a playlist) and the offline deck, for
a method with recorded endpoints (KEPP R=2) and one without (KEPP R=2 with graph decoding), failures of two
patterns and a success; every one is the words of the store's one judge (``kepp_core/evaluation/store/judging.py``:
the record's ``success`` and ``pattern``), read in a real Chromium from the real app server (demo world, shipped
records), and from the deck ``kepp talk export`` writes."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlencode

import pytest

from components.talk import playlists
from kepp_core import api, catalog
from components.ui.names import method_name
from kepp_core.catalog import PATTERN_LABELS
from tests.helpers.browser import idle, wait_slide, wait_text
from tests.helpers.deck import deck_slides, export, write_playlist

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1400, "height": 1000}
WITH_ENDS, WITHOUT_ENDS = "kepp-R2", "kepp-R2+dec"  # the records hold the step model's endpoints of the first only
T, PER_PAGE = 3, 12
CARD = """label => { const p = [...document.querySelectorAll('[data-testid="stMarkdownContainer"] p')]
  .find(p => p.querySelector('strong') && p.querySelector('strong').innerText.trim() === label
             && p.innerText.startsWith(label + ' · '));
  return p ? p.innerText.slice(label.length + 3).trim() : null; }"""


@pytest.fixture(scope="module")
def chosen(records_copy):
    """The records shown: per method, a failure filed under "wrong predicted endpoint", one filed under another
    pattern, and a success (the first of each at T=3), with the words the one judge gives them."""
    preds = api.read_predictions([records_copy])
    rows = []
    for method in (WITH_ENDS, WITHOUT_ENDS):
        mine = preds[(preds["method"] == method) & (preds["horizon"] == T)]
        assert mine["endpoints"].notna().all() if method == WITH_ENDS else mine["endpoints"].isna().all()
        failed = mine[~mine["success"]]
        rows += [failed[failed["pattern"] == "wrong_endpoint"].iloc[0], failed[failed["pattern"] != "wrong_endpoint"].iloc[0],
                 mine[mine["success"]].iloc[0]]
    return preds, [(r, catalog.verdict_words(bool(r["success"]), r["pattern"])) for r in rows]


def gallery_verdict(page, server: str, preds, row) -> str:
    """The verdict on the record's tile: the Gallery filtered to its method, T and pattern, on the page that holds it
    (the records' order, as pandas reads the table)."""
    pattern = row["pattern"] or "success"
    same = preds[(preds["method"] == row["method"]) & (preds["horizon"] == T)
                 & (preds["pattern"].replace("", "success") == pattern)].reset_index(drop=True)
    at = same.index[(same["episode"] == row["episode"]) & (same["seed"] == row["seed"])][0]
    page.goto(f"{server}/Gallery?" + urlencode({"method": row["method"], "T": T, "pattern": pattern,
                                                "page": at // PER_PAGE + 1}))
    tile = page.locator(f'.kepp-tile[data-episode="{row["episode"]}"][data-method="{row["method"]}"]')
    tile.wait_for(timeout=300_000)
    idle(page)
    return tile.locator(".kepp-tile-verdict").inner_text().strip()


def listed_and_card(page, server: str, row) -> tuple[str, str]:
    """Failure cases on the record's episode: the verdict its list files it under (the pattern picked, as
    "failure: <pattern>") and the one its card says."""
    page.goto(f"{server}/Failure_cases?" + urlencode({"method": row["method"], "T": T, "pattern": row["pattern"],
                                                      "episode": row["episode"]}))
    label = method_name(row["method"])
    page.wait_for_function(CARD, arg=label, timeout=300_000)
    idle(page)
    picked = page.locator('.st-key-fail_pattern label:has(input:checked)').first.inner_text().strip()
    return f"failure: {picked.rsplit(' (', 1)[0]}", page.evaluate(CARD, label)


def test_the_list_the_card_the_tile_the_slide_and_the_deck_say_the_one_judges_verdict(
        records_server, browser, demo_env, records_copy, chosen, tmp_path):
    preds, rows = chosen
    assert {w for _, w in rows} >= {"success", catalog.verdict_words(False, "wrong_endpoint")}
    page = browser.new_page(viewport=SCREEN)
    for row, words in rows:
        if not row["success"]:  # Failure cases lists the failures only
            assert PATTERN_LABELS[row["pattern"]] in words
            assert listed_and_card(page, records_server, row) == (words, words), (row["method"], row["episode"])
        assert gallery_verdict(page, records_server, preds, row) == words, (row["method"], row["episode"])
    # the slides: the playlist of these records played on the Plan page, then exported as the offline deck
    items = [{**playlists.item_of_row(row), "note": words} for row, words in rows]
    path = write_playlist(records_copy.parent / "playlists", "verdicts", items)
    for k, (row, words) in enumerate(rows, start=1):
        page.goto(f"{records_server}/Plan?playlist=verdicts&item={k}")
        wait_slide(page, k, len(rows))
        wait_text(page, ".kepp-verdict", f"{method_name(row['method'])} · {words}", exact=False)
        idle(page)
        assert page.locator(".kepp-verdict").first.inner_text().strip().endswith(f" · {words}")
    page.close()
    out = tmp_path / "verdicts.html"
    r = export(path, out, dataclasses.replace(demo_env, records=records_copy))
    assert r.returncode == 0, r.stderr[-2000:]
    assert [s["sides"][0]["verdict"] for s in deck_slides(out.read_text(encoding="utf-8"))] == [w for _, w in rows]
