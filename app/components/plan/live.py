"""The Plan page's live planner: the evaluation row it is, in words (:func:`live_words`), and running it on
the clips when the decision says so, its result kept in the session for these inputs (:func:`plan_now`)."""

from __future__ import annotations

import time

import streamlit as st

from components.records import backend, recorded
from components.plan.decision import Decision
from components.plan.state import SAVED
from components.ui.names import method_name
from kepp_core import api, catalog
from kepp_core.catalog import TEXT_PLANNER

__all__ = ["live_words", "plan_now"]


def live_words(planner, role) -> tuple[str, str | None]:
    """The evaluation row the live planner is, in words (its graph decoding's row, e.g. *KEPP R=2 + graph
    decoding*; graph + text endpoints' row), and what its decoding's words mean (None: no decoding)."""
    name = recorded.live_method(planner, role) if role is not None else TEXT_PLANNER
    entry = catalog.find_method(name) if name else None
    note = None if entry is None or entry.decoder is None else entry.decoder.words
    return (method_name(name) if name else "the live planner"), note


def plan_now(decision: Decision, ctl, clip, features, inputs: tuple, link) -> dict | None:
    """Run the live planner when the decision says so; the live result of these inputs (None: none)."""
    if decision.plan_now:
        t0 = time.perf_counter()
        with backend.guarded(link=link):
            planned, v_start, v_goal = api.plan_clips(ctl.planner, features, clip.start, clip.goal, ctl.T, ctl.R)
        st.session_state[SAVED] = {"inputs": inputs, "result": planned, "truth": clip.truth,
                                           "seconds": time.perf_counter() - t0, "obs": (v_start, v_goal)}
    saved = st.session_state.get(SAVED)
    return saved if saved and saved["inputs"] == inputs else None
