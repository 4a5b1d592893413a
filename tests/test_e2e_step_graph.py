"""End-to-end, a step is one click from the graph around it: the real app server (demo world, shipped models and
records) in a real headless Chromium. A step card on the Plan page and on Failure cases opens the Graph page
centred on that step; the Graph page's list of the records through a node or an edge counts what numpy counts on
the same table, and each row opens the Plan page on a record whose plan or truth truly passes through it; the two
labels of a two-way edge sit apart, each beside its own curve (vis.js's geometry read in the frame)."""

from __future__ import annotations

import itertools
import re
from urllib.parse import urlencode

import numpy as np
import pytest

from components.records import urls
from kepp_core import api
from tests.helpers.app_session import dataset
from tests.helpers.browser import (ARTIFACTS, check_drawing_labels, idle, overlap, query, settled_drawing,
                                   shown_graph_frame, wait_plan)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("app")]
SCREEN = {"width": 1280, "height": 900}


@pytest.fixture(autouse=True)
def _artifacts():
    ARTIFACTS.mkdir(exist_ok=True)


def open_graph(page, server: str, query_: str) -> None:
    page.goto(f"{server}/Graph?{query_}")
    page.get_by_text("Hover an arrow").first.wait_for(timeout=90_000)
    idle(page)


def click_step(page, card) -> tuple[int, str]:
    """Click a step link; its action id and name (from its link), once the Graph page has drawn around it."""
    action, name = int(card.get_attribute("data-action")), card.get_attribute("title").rsplit(" · ", 1)[0]
    card.click()
    page.wait_for_url(re.compile(r"/Graph\?"), timeout=60_000)
    page.get_by_text("Hover an arrow").first.wait_for(timeout=90_000)
    idle(page)
    return action, name


def centred_on(page, action: int, name: str, ds) -> None:
    """The Graph page is drawn around ``name``: its address and its drawing's title say so."""
    assert ds.actions[action] == name
    page.wait_for_function("s => new URLSearchParams(window.location.search).get('step') === s", arg=name,
                           timeout=60_000)
    frame = shown_graph_frame(page)
    assert f"around '{name}'" in frame.locator(".kepp-head").inner_text()


def listed(page) -> list[dict]:
    """The Graph page's list of records through the chosen node or edge: each row's keys and its Plan link (once
    drawn: the list comes below the drawing, in the same run)."""
    page.locator("table.kepp-through tbody tr").first.wait_for(timeout=60_000)
    idle(page)
    return page.evaluate("""() => [...document.querySelectorAll('table.kepp-through tbody tr')].map(r => ({
        episode: r.dataset.episode, method: r.dataset.method, seed: r.dataset.seed, through: r.dataset.through,
        href: r.querySelector('a.kepp-open-plan').getAttribute('href')}))""")


def listed_count(page) -> int:
    text = page.locator("text=/records? whose plan or ground truth passes through/").first.inner_text()
    return int(re.match(r"([\d,]+) record", text).group(1).replace(",", ""))


def brute(preds, node=None, edge=None) -> tuple[np.ndarray, np.ndarray]:
    """Each record's plan and truth checked one by one (the oracle of the page's array count)."""
    def holds(p):
        return node in tuple(p) if edge is None else any((x, y) == edge for x, y in zip(p, p[1:]))
    return np.array([holds(p) for p in preds["plan"]]), np.array([holds(t) for t in preds["truth"]])


def test_a_step_card_on_the_plan_page_and_on_failure_cases_opens_the_graph_on_that_step(demo_server, browser, demo_env):
    ds, preds = dataset(demo_env), api.read_predictions([demo_env.records])
    rec = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 4) & ~preds["success"]].iloc[0]
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{demo_server}/Plan?{urlencode(urls.plan_query(dict(rec)))}")
    wait_plan(page)
    cards = page.locator(".kepp-plan a.kepp-step-link")
    assert cards.count() >= 2 * 4  # the plan's and the truth's steps, each a link
    card = cards.nth(1)  # the plan's second step
    assert int(card.get_attribute("data-action")) == int(rec["plan"][1])
    action, name = click_step(page, card)
    centred_on(page, action, name, ds)
    page.screenshot(path=str(ARTIFACTS / "e2e_step_graph_from_plan.png"))
    # Failure cases: the episode's step cards (the ground truth's first) open the graph too
    page.goto(f"{demo_server}/Failure_cases")
    page.locator(".kepp-plan a.kepp-step-link").first.wait_for(timeout=90_000)
    idle(page)
    action, name = click_step(page, page.locator(".kepp-plan a.kepp-step-link").first)
    centred_on(page, action, name, ds)
    page.close()


def _opens_a_record_through(page, server, row, holds, preds) -> None:
    """A listed row's Open in Plan link opens that record (episode, method, seed) whose plan or truth holds it."""
    page.goto(f"{server}/{row['href']}")
    wait_plan(page)
    q = query(page)
    assert (q["rec"], q.get("seed", "")) == (row["method"], row["seed"])
    shown = page.evaluate("""() => [...document.querySelectorAll('.kepp-plan')].map(r =>
        [...r.querySelectorAll('a.kepp-step-link')].map(a => Number(a.dataset.action)))""")
    assert any(holds(cards) for cards in shown), (row, shown)  # the plan's or the truth's cards pass through
    rec = preds[(preds["episode"] == row["episode"]) & (preds["method"] == row["method"])
                & (preds["seed"].astype(str) == row["seed"])].iloc[0]
    assert holds(rec["plan"]) or holds(rec["truth"])


def test_the_node_and_edge_lists_count_as_numpy_and_open_records_through_them(demo_server, browser, demo_env):
    ds, preds = dataset(demo_env), api.read_predictions([demo_env.records])
    page = browser.new_page(viewport=SCREEN)
    node = ds.actions.index("grind beans")
    open_graph(page, demo_server, f"node={node}")
    in_plan, in_truth = brute(preds, node=node)
    assert listed_count(page) == int((in_plan | in_truth).sum())
    rows = listed(page)
    first = np.flatnonzero(in_plan | in_truth)[:len(rows)]
    assert [r["episode"] for r in rows] == list(preds["episode"].to_numpy()[first])
    page.screenshot(path=str(ARTIFACTS / "e2e_step_graph_node_list.png"), full_page=True)
    for row in (rows[0], rows[-1]):
        _opens_a_record_through(page, demo_server, row, lambda p: node in tuple(p), preds)
    a, b = ds.actions.index("boil water"), node  # a two-way pair of the demo graph
    open_graph(page, demo_server, f"node={a}&edge={a}-{b}")
    in_plan, in_truth = brute(preds, edge=(a, b))
    assert listed_count(page) == int((in_plan | in_truth).sum()) > 0
    rows = listed(page)
    through = {(True, True): "both", (True, False): "plan", (False, True): "truth"}
    hits = np.flatnonzero(in_plan | in_truth)[:len(rows)]
    assert [r["through"] for r in rows] == [through[(bool(in_plan[i]), bool(in_truth[i]))] for i in hits]
    _opens_a_record_through(page, demo_server, rows[0],
                            lambda p: any((x, y) == (a, b) for x, y in zip(p, list(p)[1:])), preds)
    page.close()


def test_the_two_labels_of_a_two_way_edge_sit_apart_each_by_its_own_curve(demo_server, browser, demo_env):
    """grind beans: boil water → grind beans (0.27) and back (0.43), the pair the issue saw drawn one over the other."""
    ds = dataset(demo_env)
    page = browser.new_page(viewport=SCREEN)
    open_graph(page, demo_server, "step=grind+beans")
    net = settled_drawing(shown_graph_frame(page))
    check_drawing_labels(net, "Graph page around grind beans")
    for a, b in itertools.combinations(net["labels"], 2):
        assert not overlap(a, b), (a, b)
    ends = shown_graph_frame(page).evaluate("""() => network.body.edgeIndices.map(id => {
        const e = network.body.edges[id]; return [id, e.fromId, e.toId]; })""")
    ids = {(f, t): i for i, f, t in ends}
    a, b = ds.actions.index("boil water"), ds.actions.index("grind beans")
    there, back = ids[(a, b)], ids[(b, a)]
    curves = {a_["id"]: np.array(a_["points"]) for a_ in net["arrows"]}
    apart = np.linalg.norm(curves[there][50] - curves[back][50])
    assert apart > 15, f"the two arrows' middles are {apart:.1f} px apart: drawn one over the other"
    labels = {lab["edge"]: lab for lab in net["labels"]}
    assert there in labels and back in labels, "a label of the two-way pair is not drawn"
    for edge in (there, back):  # each label's anchor is a point of its own curve, nearer it than the other's
        p = np.array([labels[edge]["anchor"]["x"], labels[edge]["anchor"]["y"]])
        own = np.linalg.norm(curves[edge] - p, axis=1).min()
        other = np.linalg.norm(curves[back if edge == there else there] - p, axis=1).min()
        assert own < 1.5 and other > own, (edge, own, other)
    page.screenshot(path=str(ARTIFACTS / "e2e_two_way_labels.png"))
    page.close()
