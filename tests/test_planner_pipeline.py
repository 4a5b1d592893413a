"""The planner as a pipeline (kepp_core/planner.py): a class of at most 120 lines that wires its parts, the
"why" rows made in one place for every planner, and no planner borrowing another's methods."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MAX_PLANNER_LINES = 120


def _classes() -> dict[str, ast.ClassDef]:
    tree = ast.parse((REPO / "kepp_core" / "planner.py").read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def test_the_kepp_planner_class_wires_its_parts_in_at_most_120_lines():
    planner = _classes()["KEPPPlanner"]
    assert planner.end_lineno - planner.lineno + 1 <= MAX_PLANNER_LINES


def test_no_planner_borrows_another_planners_methods_through_class_attributes():
    classes = _classes()
    borrowed = [(c.name, ast.unparse(n)) for c in classes.values() for n in c.body
                if isinstance(n, ast.Assign) and any(isinstance(x, ast.Name) and x.id in classes and x.id != c.name
                                                     for x in ast.walk(n.value))]
    assert borrowed == []


def test_the_why_rows_are_built_in_one_place_for_every_planner():
    text = (REPO / "kepp_core" / "planner.py").read_text(encoding="utf-8")
    assert text.count('"raw_score"') == 1 and text.count("why_rows(") >= 3


def test_the_text_planners_why_rows_are_the_shared_rows_of_its_plan():
    """The plan with no trained model says per step its transition and its ends' probabilities, no model
    scores, nothing changed: what why_rows makes of it."""
    from kepp_core.graph.build import ProcedureGraph
    from kepp_core.graph.decoding import transition_log_probs
    from kepp_core.planner import TextGraphPlanner, why_rows
    from kepp_core.video.grounding import StepTexts, TextEndpoints

    g = ProcedureGraph.from_plans(["crack egg", "whisk", "fry", "serve"], [(0, 1, 2, 3), (0, 2, 2, 3)])
    p = TextGraphPlanner(g, TextEndpoints(StepTexts(tuple(g.actions), np.eye(4))), m=1)
    result = p.plan([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], horizon=4)
    assert result.why == why_rows(result.plan, result.plan, None, transition_log_probs(g), result.text_probs, g.actions)
    assert result.plan == (0, 1, 2, 3) and [r["transition"] for r in result.why][1:] == [0.5, 1.0, 0.6667] and not any(r["changed"] for r in result.why)
    assert result.why[0]["endpoint"] == round(float(result.text_probs[0, 0]), 4) and result.why[1]["endpoint"] is None
