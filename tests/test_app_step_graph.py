"""A step is a link to the graph around it, and the Graph page lists the records whose plan or truth passes
through a step or a transition (``node``, ``edge``, ``epage`` of its URL): AppTest sessions on the demo world with
its shipped records, each list checked against numpy on the same table."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kepp_core import api
from tests.helpers.app_session import dataset, no_problems, open_page, prediction_table, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


def through_rows(at) -> list[dict]:
    """The listed records of the Graph page (its HTML table's rows: episode, method, seed, what passes)."""
    html = "\n".join(t for t in texts(at.markdown) if 'class="kepp-through"' in t)
    return [dict(zip(("episode", "method", "seed", "through"), m)) for m in
            re.findall(r'<tr data-episode="([^"]*)" data-method="([^"]*)" data-seed="([^"]*)" data-through="([^"]*)">', html)]


def numpy_through(preds, node=None, edge=None) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: each record's plan and truth, one by one."""
    def holds(p):
        p = list(p)
        return node in p if edge is None else any((x, y) == edge for x, y in zip(p, p[1:]))
    return np.array([holds(p) for p in preds["plan"]]), np.array([holds(t) for t in preds["truth"]])


def test_a_step_link_opens_the_graph_page_on_that_step_and_lists_its_records(monkeypatch, demo_env):
    ds, preds = dataset(demo_env), prediction_table(demo_env)
    node = ds.actions.index("add sugar")
    at = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py", {"node": str(node)}))
    assert at.selectbox(key="graph_step").value == "add sugar"
    url = dict(at.query_params)
    assert url["step"] == "add sugar" and "node" not in url  # the page writes its step by name
    in_plan, in_truth = numpy_through(preds, node=node)
    caption = next(t for t in texts(at.markdown) if "passes through" in t)
    assert f"**{int((in_plan | in_truth).sum()):,} records**" in caption
    assert f"the plan in {int(in_plan.sum()):,}, the truth in {int(in_truth.sum()):,}" in caption
    shown = through_rows(at)
    assert len(shown) == min(50, int((in_plan | in_truth).sum()))
    first = np.flatnonzero(in_plan | in_truth)[:len(shown)]
    assert [r["episode"] for r in shown] == list(preds["episode"].to_numpy()[first])
    words = {(True, True): "both", (True, False): "plan", (False, True): "truth"}
    assert [r["through"] for r in shown] == [words[(bool(in_plan[i]), bool(in_truth[i]))] for i in first]


def test_an_edge_link_lists_the_records_through_the_transition_and_pages_them(monkeypatch, demo_env):
    ds, preds = dataset(demo_env), prediction_table(demo_env)
    pairs = [(int(p[k]), int(p[k + 1])) for p in preds["truth"] for k in range(len(p) - 1)]
    a, b = max(set(pairs), key=pairs.count)  # the most travelled transition: more than a page of records
    at = no_problems(open_page(monkeypatch, demo_env, "views/2_Graph.py", {"node": str(a), "edge": f"{a}-{b}"}))
    assert at.selectbox(key="graph_through_of").value == (a, b)
    assert dict(at.query_params)["edge"] == f"{a}-{b}"
    in_plan, in_truth = numpy_through(preds, edge=(a, b))
    hits = np.flatnonzero(in_plan | in_truth)
    assert api.episodes_through(preds, edge=(a, b))["row"].tolist() == hits.tolist()
    assert len(hits) > 50
    at.number_input(key="graph_through_page").set_value(2).run()
    assert dict(at.query_params)["epage"] == "2"
    assert [r["episode"] for r in through_rows(at)] == list(preds["episode"].to_numpy()[hits[50:100]])


def test_a_step_link_to_no_step_of_the_graph_is_one_line_and_the_page_goes_on(monkeypatch, demo_env):
    at = open_page(monkeypatch, demo_env, "views/2_Graph.py", {"node": "4000", "edge": "4000-1"})
    assert not at.exception and not at.error
    said = " ".join(texts(at.warning)).replace("\\", "")  # Markdown's escapes off
    assert "node='4000': not an action id of this graph (0 to 41)" in said
    assert "edge='4000-1': not two action ids of this graph (0 to 41)" in said
    assert at.selectbox(key="graph_through_of").value is None  # the step's own records listed
