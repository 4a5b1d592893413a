"""Showing a plan from the Plan page: the step model's endpoints, the graph paths, the LLM's
recommendation, the final plan against the truth, and plans sampled for the same query."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.charts import show_table, step_cards
from components.text import md, plan_text


def show_endpoints(ds, result, truth: Sequence[int] | None) -> None:
    """â₁ and â_T with the step model's confidence (and whether they are right)."""
    st.subheader("Step model")
    e1, e2 = st.columns(2)
    for col, name, a, score, t_i in [(e1, "first step â₁", result.step_endpoints[0], result.step_scores[0], 0),
                                     (e2, "last step â_T", result.step_endpoints[1], result.step_scores[1], -1)]:
        col.metric(name, ds.actions[a], help="the step model's prediction and its confidence")
        verdict = "" if truth is None else (" · :green-badge[correct]" if a == truth[t_i] else
                                            f" · :red-badge[wrong: truth is {md(ds.actions[truth[t_i]])}]")
        col.markdown(f"confidence {score:.2f}{verdict}")


def recommendation_text(condition: str, method_label: str, R: int) -> str:
    """The caption's words on the graph recommendation: none for a model without the graph condition."""
    return f"recommendation: {method_label}, R={R}; " if condition == "graph" else "no graph condition; "


def show_paths(ds, result, R: int, condition: str = "graph") -> None:
    """The top-R graph paths the planning model was conditioned on (none without the graph condition)."""
    if condition != "graph":
        st.caption("This planning model has no graph condition: no graph paths were recommended to it.")
        return
    st.subheader(f"Top-{R} graph paths")
    distinct = len(set(result.paths))
    if result.fallback:
        st.caption("No path of this length joins â₁ and â_T in the graph: these are KEPP's fallback "
                   "variations of the two endpoints.")
    elif distinct < R:
        st.caption(f"The graph has only {distinct} distinct path{'s' if distinct > 1 else ''} of this length "
                   "between â₁ and â_T; as in KEPP, they repeat in rank order up to R.")
    for k, (p, s) in enumerate(zip(result.paths, result.path_scores)):
        step_cards(ds.labels(p), title=f"path {k + 1} · probability {s:.3f}", colour="#ede7f6")


def show_llm_plan(ds, rec, truth: Sequence[int] | None) -> None:
    """The LLM's recommendation (or its fallback), with the voted steps and their similarities."""
    if rec.used_fallback:
        st.warning(f"The LLM gave no usable plan ({md(rec.fallback_reason)}); shown: the fallback "
                   f"**{md(rec.fallback)}**.")
    llm_correct = None if truth is None else [a == b for a, b in zip(rec.actions, truth)]
    step_cards(ds.labels(rec.actions), llm_correct, colour="#e0f7fa",
               title=f"LLM plan · {rec.source}" + ("" if rec.verified is None else
                                                  f" · plausibility check: {'yes' if rec.verified else 'no'}"))
    if rec.voted_steps:
        st.caption("Voted steps: " + md(plan_text(rec.voted_steps)) + " · similarity to the mapped actions: "
                   + ", ".join(f"{x:.2f}" for x in rec.similarities))


def show_plan(ds, result, truth: Sequence[int] | None) -> None:
    """KEPP's plan, and the ground truth with the number of steps right."""
    st.subheader("KEPP plan")
    correct = None if truth is None else [a == b for a, b in zip(result.plan, truth)]
    step_cards(ds.labels(result.plan), correct, colour="#fff8e1")
    if truth is not None:
        st.markdown(f"**Ground truth** · {sum(correct)}/{len(truth)} steps correct · "
                    f"{'success' if all(correct) else 'failure'}")
        step_cards(ds.labels(truth), colour="#e8f5e9")


def show_samples(ds, table: pd.DataFrame, k: int, result, truth: Sequence[int] | None) -> None:
    """Distinct sampled plans with their frequency, marking KEPP's plan and the ground truth."""
    table = table.assign(steps=lambda d: [plan_text(ds.labels(p)) for p in d["plan"]],
                         KEPP_plan=lambda d: [tuple(p) == tuple(result.plan) for p in d["plan"]])
    if truth is not None:
        table["ground_truth"] = [list(p) == list(truth) for p in table["plan"]]
    st.caption(f"{len(table)} distinct plan{'s' if len(table) != 1 else ''} in {k} samples "
               "(the step model's endpoints and the condition of the plan above, new noise each)")
    show_table(table.drop(columns=["plan"]), "sampled_plans", key="plan_samples",
               column_config={"frequency": st.column_config.ProgressColumn("frequency", min_value=0.0,
                                                                           max_value=1.0, format="%.2f")})


def show_details(ds, result) -> None:
    """Timings and the graph condition (debug details, kept out of presentation mode)."""
    with st.expander("Timings and condition", expanded=False):
        st.json({"timings_ms": {k: round(v, 1) for k, v in result.timings.items()}})
        show_table(pd.DataFrame(result.condition, columns=ds.actions).loc[:, lambda d: d.sum() > 0],
                   "condition", key="plan_condition")
