"""The Plan page's state for :func:`components.plan.decision.decide`: what the address asks (a key
carried without a widget: :func:`asked`), the record it names (:func:`record_of`), the view tab open, the
live result saved for these inputs and the playlist place played (:func:`state_of`); what the records hold
for the decision (:func:`records_of`) and an A/B slide's method B (:func:`versus_of`)."""

from __future__ import annotations

import streamlit as st

from components.records import recorded
from components.plan.decision import LIVE, RECORDED, Decision, PlanState, Records
from components.ui.config import presenting
from components.ui.names import method_name
from components.ui.text import md

__all__ = ["SAVED", "TABS", "VIEWS", "asked", "record_of", "records_of", "state_of", "versus_of"]

TABS = "plan_view"  # the tabs' key: the view open when a record is shown
VIEWS = {RECORDED: "Recorded", LIVE: "Live re-plan"}  # the tabs' names
SAVED = "plan_result"  # the session's live result: its inputs, the result, the truth, the time, the observations


def asked(link, key: str) -> str | None:
    """A key the page carries without a widget: a new address's value (leaving it out drops it), else the last."""
    return link.from_url(key) if link.foreign or link.from_url(key) is not None else link.last(key)


def record_of(link, clip, records):
    """The record of the shown episode the address names (None: none named, or the records do not hold it)."""
    rec_asked = asked(link, "rec") if clip.video is not None else None
    task = clip.shown.task if clip.shown is not None else None
    return recorded.shown({**link.out, "rec": rec_asked, "seed": asked(link, "seed")}, records, task).record


def state_of(link, clip, found, playing, inputs: tuple, pressed: bool) -> PlanState:
    """The page's state for the decision: the address's keys, the record ``found`` (:func:`record_of`),
    the Plan button (``pressed``), the view tab open (its seed from the address), the live result saved for
    these ``inputs`` and the playlist place ``playing``."""
    rec_asked = asked(link, "rec") if clip.video is not None else None
    seed = recorded.whole_key({"seed": asked(link, "seed")}, "seed")
    link.seed(TABS, "live", list(VIEWS.values()), lambda t: VIEWS[LIVE] if t == "1" else VIEWS[RECORDED], absent="0")
    saved = st.session_state.get(SAVED)
    tab = {v: k for k, v in VIEWS.items()}.get(st.session_state.get(TABS)) if found is not None else None
    return PlanState(rec=rec_asked, seed=seed, live=asked(link, "live") == "1", plan=link.from_url("plan") == "1",
                     arrived=link.arrived, news=any(link.new(k) for k in link.keys), linkable=clip.linkable,
                     from_dataset=clip.video is not None, pressed=pressed, tab=tab,
                     saved=bool(saved) and saved["inputs"] == inputs,
                     playlist=playing[0] if playing else None, item=playing[1] if playing else None,
                     presenting=presenting())


def records_of(found, rec: str | None) -> Records:
    """What the records hold for the decision: the record found (None: none), its method's display name
    (the link's method's where none is found) and an imported method's predictions file."""
    if found is not None:
        return Records(record=found, label=found.label, imported=found.imported)
    return Records(label=method_name(rec or ""))


def versus_of(link, decision: Decision, records) -> recorded.Record | None:
    """Method B's record of an A/B slide (``vs=METHOD`` beside the record shown: the same episode and
    seed), kept in the URL; None where no B is asked, or the records do not hold it (said)."""
    rec, vs = decision.record, asked(link, "vs")
    other = None
    if rec is not None and vs and vs != rec.method:
        other = recorded.find(records, rec.episode, vs, rec.seed)
        if other is None:
            st.warning(f"The prediction records hold no {md(method_name(vs))} record of this episode: "
                       "the slide shows A's alone.", icon=":material/warning:")
    link.keep(vs=other.method if other is not None else None)
    return other
