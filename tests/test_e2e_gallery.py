"""End-to-end, the Gallery (docs/app.md, "The Gallery"): the real app server (demo world, shipped models, a copy of
their records so that a playlist is written beside it) in a real headless Chromium. The grid is read from its
tiles' ``data-`` attributes and held to the records table read apart (pandas): a page is the table's rows in its
order, the next page the following ones, a filter's tiles all match it and their count is pandas' count of the
same filter; the page's address reopens the same grid; a tile's **Open in Plan** opens that record; **Add to
playlist** puts the page's tiles in the playlist."""

from __future__ import annotations

import pytest

from kepp_core import api
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.browser import add_to_playlist, idle, query, rerun, wait_rows

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1400, "height": 1000}
PER_PAGE = 12
# every tile of the grid, in the page's order (its containers are keyed by position), as its data- attributes
TILES = """() => [...document.querySelectorAll('[class*="st-key-gal_tile_"]')]
  .map(c => [Number([...c.classList].find(k => k.startsWith('st-key-gal_tile_')).slice(16)), c.querySelector('.kepp-tile')])
  .filter(([, t]) => t).sort((a, b) => a[0] - b[0]).map(([, t]) => ({...t.dataset,
    plan: [...t.querySelectorAll('.kepp-tile-plan .kepp-chip')].map(c => c.childNodes[0].textContent.trim()),
    graph: [...t.querySelectorAll('.kepp-tile-plan a.kepp-step-link')].map(a => a.getAttribute('href'))}))"""


@pytest.fixture(scope="module")
def preds(records_copy):
    return api.read_predictions([records_copy])


def tiles(page) -> list[dict]:
    """The grid's tiles once the page's run is over."""
    page.locator(".kepp-tile").first.wait_for(timeout=120_000)
    idle(page)
    return page.evaluate(TILES)


def keys(rows) -> list[tuple[str, str, str]]:
    """Rows of the records table as the tiles name them: (episode, method, seed)."""
    return [(str(r["episode"]), str(r["method"]), "" if r["seed"] != r["seed"] else str(int(r["seed"])))
            for _, r in rows.iterrows()]


def shown(grid: list[dict]) -> list[tuple[str, str, str]]:
    return [(t["episode"], t["method"], t["seed"]) for t in grid]


def total(page) -> int:
    """N of the pager's caption "episodes a–b of N"."""
    text = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
        .map(c => c.innerText.trim()).find(t => /^(episodes [0-9,]+–[0-9,]+ of [0-9,]+|no episodes)$/.test(t))""")
    return 0 if text == "no episodes" else int(text.rsplit(" of ", 1)[1].replace(",", ""))


def test_the_gallery_pages_over_the_whole_table_in_its_order(records_server, browser, preds):
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Gallery")
    first = tiles(page)
    assert shown(first) == keys(preds.iloc[:PER_PAGE]) and total(page) == len(preds)
    # each plan chip names the record's step and opens the Graph page centred on it
    for tile, row in zip(first, preds.iloc[:PER_PAGE].itertuples()):
        assert tile["graph"] == [f"Graph?node={a}" for a in row.plan] and len(tile["plan"]) == row.horizon
    with rerun(page):
        page.get_by_role("button", name="Page ▶").click()
    page.wait_for_function("() => new URLSearchParams(window.location.search).get('page') === '2'", timeout=30_000)
    second = tiles(page)
    assert shown(second) == keys(preds.iloc[PER_PAGE:2 * PER_PAGE]) and shown(second) != shown(first)
    n = 57  # page N of a link holds the table's rows (N-1)*k .. N*k
    page.goto(f"{records_server}/Gallery?page={n}&per=24")
    assert shown(tiles(page)) == keys(preds.iloc[(n - 1) * 24:n * 24])
    page.close()


def test_a_filter_shows_only_matching_tiles_as_many_as_pandas_counts_and_its_link_reopens_the_grid(
        records_server, browser, preds):
    first_wrong = preds["plan"].str[0] != preds["truth"].str[0]
    want = preds[preds["method"].isin(["kepp-R2", "random"]) & (preds["horizon"] == 4) & ~preds["success"]
                 & first_wrong]
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Gallery?method=kepp-R2,random&T=4&outcome=failure&first=wrong&sort=steps&desc=1")
    grid = tiles(page)
    assert total(page) == len(want) > PER_PAGE
    assert {t["method"] for t in grid} <= {"kepp-R2", "random"} and {t["horizon"] for t in grid} == {"4"}
    assert all(t["success"] == "false" for t in grid)
    rows = {k: r for k, r in zip(keys(want), want.itertuples())}
    assert all(k in rows and rows[k].plan[0] != rows[k].truth[0] for k in shown(grid))
    right = [sum(a == b for a, b in zip(rows[k].plan, rows[k].truth)) for k in shown(grid)]
    assert right == sorted(right, reverse=True)  # sorted by steps right, largest first
    # the widgets say the view; the next page's address, opened in another tab, shows that grid again
    with rerun(page):
        page.get_by_role("button", name="Page ▶").click()
    page.wait_for_function("() => new URLSearchParams(window.location.search).get('page') === '2'", timeout=30_000)
    grid2, saved = tiles(page), page.url
    assert set(shown(grid2)).isdisjoint(shown(grid))
    again = browser.new_page(viewport=SCREEN)
    again.goto(saved)
    assert shown(tiles(again)) == shown(grid2) and total(again) == len(want)
    assert query(again) == query(page)
    page.close()
    again.close()


def test_a_tile_opens_its_record_on_the_plan_page(records_server, browser, preds):
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Gallery?method=kepp-R2&outcome=failure&T=3&page=2")
    grid = tiles(page)
    k = 5
    tile = grid[k]
    page.locator(f".st-key-gal_tile_{k}").get_by_role("link", name="Open in Plan").click()
    page.wait_for_url("**/Plan?**", timeout=60_000)
    wait_rows(page, [tile["plan"]], timeout=120_000)
    idle(page)
    url = query(page)
    row = preds[(preds["episode"] == tile["episode"]) & (preds["method"] == "kepp-R2")].iloc[0]
    assert (url["rec"], url["seed"], url["T"], url["video"]) == ("kepp-R2", tile["seed"], "3", row["video"])
    assert page.locator(".kepp-verdict").first.inner_text().endswith(tile["verdict"])
    page.close()


def test_add_to_playlist_puts_the_pages_tiles_in_the_playlist(records_server, browser, records_copy):
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{records_server}/Gallery?method=kepp-R1,pdpp&T=5&page=3")
    grid = tiles(page)
    add_to_playlist(page, "gallery", len(grid))
    saved = PlaylistStore(records_copy.parent / "playlists").read("gallery").items
    assert [(i.episode, i.method, i.T, i.query.get("seed")) for i in saved] == \
        [(t["episode"], t["method"], 5, t["seed"]) for t in grid]
    page.close()
