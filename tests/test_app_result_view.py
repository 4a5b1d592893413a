"""A result is described once (``components.records.views.PlanView``: labels resolved, plan, truth, ends, graph
paths, verdict) and drawn: the Plan page's recorded result and the record's slide are one description, the page
shows what it holds, and no component that draws a result or a slide is handed the dataset."""

from __future__ import annotations

import ast

import pytest

from components.records import slides, views
from components.records.recorded import find
from components.records.urls import plan_query
from components.talk import playlists
from components.ui.charts import step_cards_html
from components.ui.colours import PLAN_TINT, TRUTH_TINT
from tests.helpers.app_env import APP_DIR
from tests.helpers.app_session import dataset, no_problems, open_page, prediction_table, texts

# the modules that draw a result or a slide; deck.py's build_deck / page_deck make the slides they draw
DRAWING = ["plan/result.py", "plan/plans.py", "plan/why.py", "talk/presenter.py", "talk/deck.py"]
MAKES_SLIDES = {"build_deck", "page_deck"}


def _takes_dataset(path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            and "ds" in [a.arg for a in node.args.args + node.args.kwonlyargs] and node.name not in MAKES_SLIDES]


def test_no_component_that_draws_a_result_or_a_slide_takes_the_dataset():
    assert {m: _takes_dataset(APP_DIR / "components" / m) for m in DRAWING} == {m: [] for m in DRAWING}


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_a_records_plan_page_and_its_slide_draw_one_description(monkeypatch, demo_env):
    preds, ds = prediction_table(demo_env), dataset(demo_env)
    row = preds.query("method == 'kepp-R2' and horizon == 3 and not success").iloc[0]
    rec = find(preds, row["episode"], "kepp-R2", int(row["seed"]))
    described = views.record_view(rec, ds)
    shown = slides.slide(playlists.item_of_row(row.to_dict()), ds, preds)
    assert shown.sides[0].view == described and shown.truth == described.truth
    assert described.plan == tuple(ds.labels(rec.plan)) and described.verdict == rec.verdict
    assert described.ends.steps == tuple(ds.labels((rec.endpoints[0], rec.endpoints[-1])))
    assert shown.graph == slides.graph_request([rec], ds)

    at = no_problems(open_page(monkeypatch, demo_env, "views/1_Plan.py", plan_query(dict(row))))
    html = "\n".join(texts(at.markdown))
    assert described.ends.html() in html  # the endpoints line, as described
    assert f"Recorded · {described.label}" in html and described.verdict in html
    drawn = texts(at.markdown)  # the plan's and the truth's cards, as the description names them
    # each card a link to the graph around its step (the description's action ids)
    assert step_cards_html(described.plan, described.plan_right, "plan (recorded)", PLAN_TINT,
                           ids=described.plan_ids) in drawn
    title = f"ground truth · {described.steps_right}/{len(described.truth)} steps right"
    assert step_cards_html(described.truth, None, title, TRUTH_TINT, ids=described.truth_ids) in drawn
    assert described.plan_ids == tuple(rec.plan) and described.truth_ids == tuple(rec.truth)
