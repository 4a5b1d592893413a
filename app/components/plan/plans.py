"""More about a live plan on the Plan page: the LLM's recommendation, plans sampled for the same
query, timings and the condition (the plan itself, its endpoints and paths: :mod:`components.plan.result`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.ui.charts import show_table, step_cards
from components.ui.colours import LLM_TINT
from components.ui.text import md, plan_text
from kepp_core.catalog import endpoint_source


def endpoints_heading(source: str) -> str:
    """The heading of a plan's endpoints, by whose they are (an endpoint source's name, ``PlanResult.path_ends``).

    >>> endpoints_heading("predicted"), endpoints_heading("text")
    ('Step model', 'Text tower (S3D)')
    """
    return endpoint_source(source).heading


def recommendation_text(condition: str, scorer: str, R: int) -> str:
    """The caption's words on the graph recommendation: none for a model without the graph condition."""
    return f"recommendation: {scorer}, R={R}; " if condition == "graph" else "no graph condition; "


def show_llm_plan(rec, steps: Sequence[str], truth: Sequence[int] | None) -> None:
    """The LLM's recommendation ``rec`` (or its fallback; ``steps``: its actions named), with the voted steps and
    their similarities."""
    if rec.used_fallback:
        st.warning(f"The LLM gave no usable plan ({md(rec.fallback_reason)}); shown: the fallback "
                   f"**{md(rec.fallback)}**.")
    llm_correct = None if truth is None else [a == b for a, b in zip(rec.actions, truth)]
    step_cards(steps, llm_correct, colour=LLM_TINT, ids=rec.actions,
               title=f"LLM plan · {rec.source}" + ("" if rec.verified is None else
                                                  f" · plausibility check: {'yes' if rec.verified else 'no'}"))
    if rec.voted_steps:
        st.caption("Voted steps: " + md(plan_text(rec.voted_steps)) + " · similarity to the mapped actions: "
                   + ", ".join(f"{x:.2f}" for x in rec.similarities))


def show_samples(table: pd.DataFrame, k: int, result, truth: Sequence[int] | None) -> None:
    """Distinct sampled plans (``table``: each ``plan``, its ``steps`` in words and its frequency), marking KEPP's
    plan and the ground truth."""
    table = table.assign(KEPP_plan=lambda d: [tuple(p) == tuple(result.plan) for p in d["plan"]])
    if truth is not None:
        table["ground_truth"] = [list(p) == list(truth) for p in table["plan"]]
    st.caption(f"{len(table)} distinct plan{'s' if len(table) != 1 else ''} in {k} samples "
               "(the step model's endpoints and the condition of the plan above, new noise each)")
    show_table(table.drop(columns=["plan"]), "sampled_plans", key="plan_samples",
               column_config={"frequency": st.column_config.ProgressColumn("frequency", min_value=0.0,
                                                                           max_value=1.0, format="%.2f")})


def show_details(result, actions: Sequence[str]) -> None:
    """Timings and the graph condition (debug details, kept out of presentation mode; ``actions``: the
    dataset's step names, the condition's columns)."""
    with st.expander("Timings and condition", expanded=False):
        st.json({"timings_ms": {k: round(v, 1) for k, v in result.timings.items()}})
        show_table(pd.DataFrame(result.condition, columns=list(actions)).loc[:, lambda d: d.sum() > 0],
                   "condition", key="plan_condition")
