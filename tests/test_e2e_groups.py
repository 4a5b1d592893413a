"""End-to-end (the real app server on the demo world with the shipped models' records, a real headless Chromium):
the Groups page's table, as the browser draws it and as its CSV downloads, equals a pandas ``groupby`` of the same
records (counts and SR) for a 2- and a 3-column grouping; sorting by SR high to low reorders the drawn table and
the CSV alike and lands in the address. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import io
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from kepp_core import api
from tests.helpers.browser import ARTIFACTS, idle, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 900}
# the drawn grid's rows (its accessible table: header first), as the browser shows them
GRID_ROWS = """() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"] [role="row"]')).map(
  r => Array.from(r.querySelectorAll('[role="gridcell"],[role="columnheader"]')).map(c => c.textContent.trim()))"""


def oracle(preds: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Counts and SR (in %, 2 decimals) per group, by pandas alone: the records' own columns, a right plan's
    pattern read ``right``, the first step right from the plans' tuples."""
    keys = pd.DataFrame({"method": preds["method"], "T": preds["horizon"].astype(int),
                         "pattern": preds["pattern"].replace("", "right"),
                         "first_right": [p[0] == t[0] for p, t in zip(preds["plan"], preds["truth"])]})[by]
    g = preds.assign(**keys).groupby(by, sort=True)["success"]
    return pd.DataFrame({"count": g.size(), "SR": (100 * g.mean()).round(2)}).reset_index()


def drawn(page, first: list[str] | None = None) -> pd.DataFrame:
    """The drawn grid as text cells, once it has rows (``first``: once its first row begins with these cells, so a
    grid redrawn after a change is read redrawn)."""
    page.wait_for_function(f"f => {{ const r = ({GRID_ROWS})(); return r.length > 1 && r[1].length > 0 && "
                           f"(!f || f.every((c, i) => r[1][i] === c)); }}", arg=first, timeout=30_000)
    rows = page.evaluate(GRID_ROWS)
    return pd.DataFrame(rows[1:], columns=rows[0])


def download(page) -> pd.DataFrame:
    with page.expect_download(timeout=60_000) as d:
        page.get_by_role("button", name="Download table (CSV)").click()
    return pd.read_csv(io.BytesIO(open(d.value.path(), "rb").read()))


def same(table: pd.DataFrame, want: pd.DataFrame, by: list[str]) -> None:
    """``table`` (text or typed cells) holds ``want``'s groups with its counts and SR, in the same order."""
    assert len(table) == len(want)
    for c in by:
        assert [str(v).lower() for v in table[c]] == [str(v).lower() for v in want[c]], c  # the grid writes true
    assert [int(v) for v in table["count"]] == want["count"].tolist()
    assert [round(float(v), 2) for v in table["SR"]] == want["SR"].tolist()


@pytest.mark.parametrize("by", [["T", "first_right"], ["method", "T", "pattern"]])
def test_the_groups_table_equals_a_pandas_groupby_of_the_same_records(demo_server, browser, demo_env, by):
    want = oracle(api.read_predictions([demo_env.records]), by)
    page = browser.new_page(viewport=SCREEN, accept_downloads=True)
    page.goto(f"{demo_server}/Groups?by={','.join(by)}")
    page.get_by_role("button", name="Download table (CSV)").wait_for(timeout=120_000)
    idle(page)
    shown = drawn(page)
    assert list(shown.columns[:len(by) + 2]) == [*by, "count", "SR"]
    n = len(shown)  # a long table scrolls: the rows drawn are its first ones
    assert n >= min(len(want), 10)
    same(shown, want.head(n), by)
    csv = download(page)
    same(csv, want, by)  # the whole table, every group
    page.screenshot(path=str(ARTIFACTS / f"e2e_groups_{'_'.join(by)}.png"))
    page.close()


def test_sorting_by_sr_high_to_low_reorders_the_table_and_its_csv_and_stays_in_the_link(demo_server, browser,
                                                                                        demo_env):
    by = ["T", "first_right"]
    want = oracle(api.read_predictions([demo_env.records]), by).sort_values("SR", ascending=False, kind="stable")
    page = browser.new_page(viewport=SCREEN, accept_downloads=True)
    page.goto(f"{demo_server}/Groups?by=T,first_right")
    page.get_by_role("button", name="Download table (CSV)").wait_for(timeout=120_000)
    idle(page)
    with rerun(page):
        page.locator(".st-key-grp_sort").click()
        page.get_by_role("option", name="SR", exact=True).click()
    with rerun(page):
        page.locator(".st-key-grp_desc").get_by_text("High to low").click()
    page.wait_for_function("() => window.location.search.includes('desc=1')", timeout=30_000)
    query = {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}
    assert query == {"by": "T,first_right", "sort": "SR", "desc": "1"}
    top = [str(v).lower() for v in want.iloc[0][by]]
    shown, csv = drawn(page, top), download(page)
    same(shown, want.reset_index(drop=True), by)
    same(csv, want.reset_index(drop=True), by)
    assert csv["SR"].is_monotonic_decreasing
    page.reload()  # the link brings the same order back
    page.get_by_role("button", name="Download table (CSV)").wait_for(timeout=120_000)
    idle(page)
    same(drawn(page, top), want.reset_index(drop=True), by)
    page.close()
