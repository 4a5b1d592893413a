"""Why this plan (the Plan page): per step, the planning model's score for the step, the graph's
transition probability from the previous step and the endpoint probabilities the plan was decoded with; the
plan before and after graph decoding side by side, the steps decoding changed marked.

The numbers are the planner's own (:attr:`kepp_core.planner.PlanResult.why`, the same as
``kepp plan --json``); this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.records.views import PlanView
from components.ui import colours
from components.ui.config import presenting
from components.ui.step_links import step_link_html
from components.ui.text import css_colour, html_text, md
from kepp_core.catalog import endpoint_source

# The table's columns, by the keys of PlanResult.why
COLUMNS = {"step": "step", "label": "plan", "score": "planner score", "transition": "graph transition",
           "endpoint": "endpoint probability", "raw_label": "before decoding", "changed": "changed"}
TEXT_COLUMNS = ("label", "raw_label")  # step labels: st.table reads its cells as Markdown (escaped: md)


def why_table(rows: Sequence[dict]) -> pd.DataFrame:
    """The per-step rows of a plan as the page's table (the columns of :data:`COLUMNS`; its labels
    escaped as Markdown: ``st.table`` renders Markdown in cells); a step that decoding changed says
    "changed", the others nothing.

    >>> t = why_table([{"step": 1, "label": "a", "score": 0.9, "transition": None, "endpoint": 0.8,
    ...                 "raw_label": "a", "changed": False}, {"step": 2, "label": "b", "changed": True}])
    >>> t.columns.tolist(), t["changed"].tolist()
    (['step', 'plan', 'planner score', 'graph transition', 'endpoint probability', 'before decoding', 'changed'], ['', 'changed'])
    """
    table = pd.DataFrame([{name: md(r[key]) if key in TEXT_COLUMNS and r.get(key) is not None else r.get(key)
                           for key, name in COLUMNS.items()} for r in rows], columns=list(COLUMNS.values()))
    table["changed"] = ["changed" if bool(c) else "" for c in table["changed"]]
    return table


def decoding_text(text: str) -> str:
    r"""The sentence on how a plan was decoded (:attr:`kepp_core.planner.PlanResult.decoding_text`) as
    Markdown, its values escaped.

    >>> decoding_text("λ = 0.1 × log [graph] transitions")
    'λ = 0.1 × log \\[graph\\] transitions'
    """
    return md(text)


def plan_cards(labels: Sequence[str], changed: Sequence[bool], title: str, colour: str,
               ids: Sequence[int] | None = None) -> str:
    """A plan as a row of step cards, the changed steps with a thick blue border and "changed" (HTML,
    labels escaped); with the steps' action ``ids``, each card a step link (:mod:`components.ui.step_links`)."""
    cards, colour = [], css_colour(colour)  # an attribute value
    for t, (label, ch) in enumerate(zip(labels, changed)):
        border = f"3px solid {colours.CHANGED}" if ch else f"1px solid {colours.CARD_BORDER}"
        mark = " · changed" if ch else ""
        cards.append(f'<div class="kepp-why-card" data-changed="{str(bool(ch)).lower()}" style="flex:1;min-width:90px;'
                     f'background:{colour};border:{border};border-radius:8px;padding:6px 8px;margin:2px;'
                     f'text-align:center"><div style="font-size:0.75em;color:{colours.MUTED}">step {t + 1}{mark}</div>'
                     f'<div style="font-weight:600">{html_text(label)}</div></div>')
        if ids is not None:
            cards[-1] = step_link_html(int(ids[t]), cards[-1], label, present=presenting(),
                                       style="flex:1;min-width:90px;display:flex;flex-direction:column")
    return (f'<div style="font-size:0.9em;color:{colours.SUBTLE};margin-top:4px">{html_text(title)}</div>'
            f'<div class="kepp-why-plan" style="display:flex;flex-wrap:wrap">{"".join(cards)}</div>')


def show_why(view: PlanView, result, expanded: bool = True) -> None:
    """The "Why this plan" section of the Plan page for a planner's ``result`` (``view``: what it shows,
    :func:`components.records.views.live_view`: the plan and the planning model's own plan named)."""
    with st.expander("Why this plan", expanded=expanded):
        st.caption(decoding_text(result.decoding_text))
        raw = list(result.raw_plan or result.plan)
        changed = result.changed
        n = sum(changed)
        if result.decoding:
            st.caption(f"Graph decoding changed {n} of {len(raw)} step{'s' if len(raw) != 1 else ''}."
                       if n else "Graph decoding kept the planning model's own plan.")
        if st.toggle("Show the plan before graph decoding", value=bool(n), key="plan_why_raw",
                     help="the planning model's own plan (argmax per step) beside the decoded one"):
            after, before = st.columns(2)
            after.markdown(plan_cards(view.plan, changed, "after graph decoding (shown above)",
                                      colours.PLAN_TINT, view.plan_ids), unsafe_allow_html=True)
            before.markdown(plan_cards(view.raw_plan, changed, "before: the planning model's own plan",
                                       colours.RAW_TINT, view.raw_plan_ids), unsafe_allow_html=True)
        # a plain table (a few rows): its text reads at a distance and is there for screen readers
        numbers = ("planner score", "graph transition", "endpoint probability")
        st.table(why_table(result.why).style.format(dict.fromkeys(numbers, "{:.4f}"), na_rep="").hide(axis="index"))
        st.caption("planner score: the planning model's probability of the step at its position; graph "
                   f"transition: P(step | previous step) in the P²KG; endpoint probability: the "
                   f"{endpoint_source(result.decoded_ends_from).words}'s probability of the first and of the last step.")
