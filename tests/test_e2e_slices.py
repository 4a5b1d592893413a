"""End-to-end at a projector's 1280x720 (the real app server on the demo world with the shipped
models' records, a real headless Chromium): a click on a row of the "by slice" table filters the
episodes and survives a reload; a click on a point of the episode map opens that episode on the
Plan page. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from kepp_core import api, catalog
from tests.helpers.browser import ARTIFACTS, idle, stopped_moving

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 720}


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def pager_text(page) -> str:
    """The episode pager's caption ("episodes 1–50 of 208")."""
    caption = page.get_by_text("episodes 1–", exact=False).first
    caption.wait_for(timeout=60_000)
    return caption.inner_text()


def test_a_slice_row_click_filters_the_episodes_and_survives_a_reload(demo_server, browser, demo_env):
    preds = api.read_predictions([demo_env.records])
    run = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)]
    wrong = api.slice_table(preds, "kepp-R2", "ends", None, 3).table.set_index("slice")["count"]["wrong"]
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Results?method=kepp-R2&T=3&by=ends")
    table = page.locator(".st-key-tbl_res_slices_ends_0")
    table.wait_for(timeout=90_000)
    idle(page)
    assert pager_text(page).endswith(f"of {len(run):,}")
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 + 17)  # the second row: first or last step wrong
    page.wait_for_function("() => window.location.search.includes('slice=ends%3Awrong')", timeout=30_000)
    idle(page)
    assert pager_text(page).endswith(f"of {wrong:,}")
    page.get_by_text("Episodes below:", exact=False).first.wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "e2e_slices.png"))
    page.reload()
    page.locator(".st-key-tbl_res_slices_ends_0").wait_for(timeout=90_000)
    idle(page)
    assert query(page)["slice"] == "ends:wrong" and pager_text(page).endswith(f"of {wrong:,}")
    clear = page.locator(".st-key-res_slice_clear button")
    clear.wait_for(timeout=30_000)
    assert "Clear slice" in clear.inner_text()
    page.close()


# The point of the map farthest from every other (a click there hits that point alone), its
# centre on the screen and the episode it carries.
LONELY_POINT = """() => {
  const gd = document.querySelector('.st-key-res_map_chart .js-plotly-plot');
  const found = [];
  gd.querySelectorAll('.scatterlayer .trace').forEach((trace, k) => {
    trace.querySelectorAll('path.point').forEach((pt, j) => {
      const b = pt.getBoundingClientRect(), i = (pt.__data__ && pt.__data__.i !== undefined) ? pt.__data__.i : j;
      found.push({x: b.x + b.width / 2, y: b.y + b.height / 2, episode: gd.data[k].customdata[i]});
    });
  });
  let best = null, far = -1;
  for (const p of found) {
    if (p.y < 120 || p.y > window.innerHeight - 10) continue;
    let near = Infinity;
    for (const q of found) if (q !== p) near = Math.min(near, Math.hypot(p.x - q.x, p.y - q.y));
    if (near > far) { far = near; best = p; }
  }
  return best;
}"""


def test_a_click_on_the_episode_map_opens_that_episode_in_plan(demo_server, browser, demo_env):
    from kepp_core.data import load_dataset

    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Results?method=kepp-R2&T=3&map=1")
    chart = page.locator(".st-key-res_map_chart .js-plotly-plot")
    chart.wait_for(timeout=120_000)
    idle(page)
    chart.scroll_into_view_if_needed()
    stopped_moving(page, chart)
    page.screenshot(path=str(ARTIFACTS / "e2e_episode_map.png"))
    point = page.evaluate(LONELY_POINT)
    assert point and point["episode"], point
    page.mouse.move(point["x"], point["y"])
    page.locator(".st-key-res_map_chart .hoverlayer .hovertext").first.wait_for(timeout=10_000)  # plotly has the point
    page.mouse.click(point["x"], point["y"])
    page.get_by_role("heading", name="Plan from a video").wait_for(timeout=60_000)
    page.locator(".kepp-plan .kepp-card").first.wait_for(timeout=120_000)
    idle(page)
    task, video, first, horizon = catalog.parse_episode_id(point["episode"])
    url = query(page)
    assert (url["video"], url["ep"], url["T"]) == (video, str(first), str(horizon))
    preds = api.read_predictions([demo_env.records])
    truth = preds[preds["episode"] == point["episode"]].iloc[0]["truth"]
    labels = load_dataset("demo", demo_env.world).actions
    shown = page.evaluate("""() => [...document.querySelectorAll('.kepp-plan')].map(r =>
        [...r.querySelectorAll('.kepp-card > div:last-child')].map(d => d.textContent.trim()))""")
    assert [labels[a] for a in truth] in shown  # the Plan page shows that episode's ground truth
    page.close()
