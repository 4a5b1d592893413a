"""The presenter view (app/views/8_Presenter.py): a second tab of the speaker's browser that follows the
tab playing a playlist's slides (and moves it: the clicker's keys work in either). It shows the current
slide small, the next one, the speaker's note and the elapsed time. The two tabs talk through a
BroadcastChannel (app/static/kepp-presenter.js here, app/static/kepp-keys.js on the Plan page); what a
slide shows comes from the same records the slide shows (:func:`components.talk.playlists.item_record`)."""

from __future__ import annotations

import streamlit as st

from components.ui import scripts
from components.records import backend, episodes, slides
from components.talk import playlists
from components.ui.charts import step_cards
from components.ui.config import presenting
from components.ui.text import html_text, md

__all__ = ["controls", "slide_summary"]

_CONTROLS = st.components.v2.component("kepp_presenter", js=scripts.source("kepp-presenter.js"), isolate_styles=False)


def controls(name: str, item: int, count: int, key: str = "presenter_controls", minutes: float | None = None) -> int | None:
    """The clock, the countdown (``minutes``: the talk's length, the playlist's; else typed there), previous / next
    and the link to the slides' tab; the item (1-based) this view was moved to in this run (a key, a button, the
    slides' tab), or None."""
    got = _CONTROLS(key=key, data={"playlist": name, "item": item, "count": count, "channel": playlists.CHANNEL,
                                   "keys": scripts.SLIDE_KEYS, "own": playlists.OWN_KEYS, "minutes": minutes},
                    on_goto_change=lambda: None, height=56)
    return None if got.goto is None else int(got.goto)


def slide_summary(shown: slides.Slide, small: bool = False) -> None:
    """What an item's slide shows (``shown``: :func:`components.records.slides.slide`, as the offline deck shows
    it), small: the episode in words, its method(s) and verdict(s) (the records'), the start and goal frames, the
    plan(s) against the ground truth (``small``: the plans' cards alone). An A/B pair shows both methods' plans
    and verdicts, A first."""
    st.markdown(f"**{md(shown.title)}**  \n" + " · ".join(
        (f"{side.name}: " if side.name else "") + playlists.verdict_markdown(side.verdict, side.success)
        for side in shown.sides))
    if shown.record is None:
        return
    if not small:
        if shown.frames:
            frames = st.columns(4)
            for col, frame in zip(frames, shown.frames):
                with col, backend.guarded(stop=False):
                    st.image(backend.thumbnail_png(str(shown.video_file), frame.seconds, 160), caption=frame.caption)
    for side in shown.sides:
        if side.record is not None:
            step_cards(side.plan, side.plan_right, title=f"plan {side.name}" if side.name else "plan", colour=episodes.PLAN_TINT,
                       ids=side.view.plan_ids)
    if not small:
        step_cards(shown.truth, title="ground truth", colour=episodes.TRUTH_TINT, ids=shown.sides[0].view.truth_ids)
        if len(shown.sides) == 1:
            st.markdown(shown.sides[0].view.ends.html(presenting()), unsafe_allow_html=True)


def note_html(note: str) -> str:
    """The speaker's note, large, escaped for HTML in Markdown (:func:`~components.ui.text.html_text`; line breaks kept)."""
    text = "<br>".join(html_text(line) for line in str(note).splitlines()) or "<i>no note for this slide</i>"
    return f'<div class="kepp-note" style="font-size:1.6rem;line-height:1.35;padding:0.4rem 0">{text}</div>'
