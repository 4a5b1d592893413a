"""The presenter view (app/pages/8_Presenter.py): a second tab of the speaker's browser that follows the
tab playing a playlist's slides (and moves it: the clicker's keys work in either). It shows the current
slide small, the next one, the speaker's note and the elapsed time. The two tabs talk through a
BroadcastChannel (app/static/kepp-presenter.js here, app/static/kepp-keys.js on the Plan page); what a
slide shows comes from the same records the slide shows (:func:`components.playlists.item_record`)."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from components import backend, episodes, playlists, scripts
from components.charts import step_cards
from components.text import html_text, md

__all__ = ["controls", "slide_summary"]

_CONTROLS = st.components.v2.component("kepp_presenter", js=scripts.source("kepp-presenter.js"), isolate_styles=False)


def controls(name: str, item: int, count: int, key: str = "presenter_controls") -> int | None:
    """The clock, previous / next and the link to the slides' tab; the item (1-based) this view was moved
    to in this run (a key, a button, the slides' tab), or None."""
    got = _CONTROLS(key=key, data={"playlist": name, "item": item, "count": count, "channel": playlists.CHANNEL,
                                   "keys": scripts.SLIDE_KEYS, "own": playlists.OWN_KEYS},
                    on_goto_change=lambda: None, height=56)
    return None if got.goto is None else int(got.goto)


def slide_summary(ds, item: Mapping, preds, small: bool = False) -> None:
    """What an item's slide shows, small: the episode in words, its method and verdict (the record's), the
    start and goal frames, the plan against the ground truth (``small``: the plan's cards alone)."""
    rec = playlists.item_record(preds, item)
    names = {rec.method: rec.label} if rec is not None else None  # an imported method's with its file
    st.markdown(f"**{md(playlists.item_label(item, ds, names, note=False))}**  \n" + playlists.verdict_text(item, rec))
    if rec is None:
        return
    if not small:
        video = ds.video(rec.video) if rec.video in {v.id for v in ds.videos} else None
        if video is not None and video.video_file is not None and rec.start_time is not None:
            frames = st.columns(4)
            for col, label, t in ((frames[0], "start", rec.start_time), (frames[1], "goal", max(0.0, rec.goal_time - 0.01))):
                with col, backend.guarded(stop=False):
                    st.image(backend.thumbnail_png(str(video.video_file), round(t, 2), 160), caption=f"{label} {t:.1f} s")
    step_cards(ds.labels(rec.plan), [a == b for a, b in zip(rec.plan, rec.truth)], title="plan", colour=episodes.PLAN_TINT)
    if not small:
        step_cards(ds.labels(rec.truth), title="ground truth", colour=episodes.TRUTH_TINT)
        st.markdown(episodes.endpoints_line(ds, rec.endpoints, rec.endpoint_scores, rec.truth, rec.imported), unsafe_allow_html=True)


def note_html(note: str) -> str:
    """The speaker's note, large, escaped for HTML in Markdown (:func:`~components.text.html_text`; line breaks kept)."""
    text = "<br>".join(html_text(line) for line in str(note).splitlines()) or "<i>no note for this slide</i>"
    return f'<div class="kepp-note" style="font-size:1.6rem;line-height:1.35;padding:0.4rem 0">{text}</div>'
