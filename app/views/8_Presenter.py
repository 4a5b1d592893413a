"""Presenter view: the speaker's second tab for a playlist (``?playlist=NAME&item=K``). It follows the tab
that plays the slides (the Plan page with ``playlist=NAME``, in presentation mode, in this browser) and
moves it: →, ←, PageDown and PageUp work in either tab. Shown: the current slide small, the next one,
the speaker's note (edited on the Playlists page) and the time since the talk began."""

from __future__ import annotations

import streamlit as st

from components.ui import links
from components.records import backend
from components.records.slides import slide
from components.talk import playlists, presenter
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.ui.text import md
from kepp_core.errors import KeppError

cfg = page_setup("Presenter")
st.title("Presenter view")
with backend.guarded():
    ds = backend.dataset(cfg)
    names, _ = playlists.store(cfg).listing()
preds = None
with backend.guarded(stop=False):
    preds = backend.predictions(cfg)

link = links.PageLink("presenter")
options = [playlists.DEFAULT, *[n for n in names if n != playlists.DEFAULT]]
link.seed("presenter_playlist", "playlist", options)
name = st.selectbox("Playlist", options, key="presenter_playlist",
                    format_func=lambda n: f"{n} (built-in scenes)" if n == playlists.DEFAULT else n)
try:
    items = playlists.load(cfg, ds, name)
except KeppError as e:
    st.error(md(str(e)) + " · Fix it on the Playlists page.", icon=":material/warning:")
    st.stop()
if not items:
    st.info(f"Playlist {md(name)} is empty: add episodes from Failure cases, Results or the Plan page.")
    st.stop()
link.seed("presenter_item", "item", range(1, len(items) + 1), int)
k = min(max(int(st.session_state.get("presenter_item", 1)), 1), len(items))
minutes = None if name == playlists.DEFAULT else playlists.store(cfg).read(name).minutes  # the talk's length
moved = presenter.controls(name, k, len(items), minutes=minutes)
if moved is not None and moved != k:  # a key, a button or the slides' tab moved the view: draw it there
    st.session_state["presenter_item"] = moved
    st.rerun()
link.keep(playlist=name, item=k)
link.publish()
slides = links.page_url(playlists.play_query(name, k - 1, items[k - 1]), page="plan", present=True)
st.markdown(f"[Open the slides]({slides}) (presentation mode, a new tab) · then → / ← / PageDown / PageUp in "
            "either tab move both")

now, then = st.columns([3, 2], gap="large")
with now:
    st.subheader(f"Now: {k} / {len(items)}")
    st.markdown(presenter.note_html(items[k - 1].get("note", "")), unsafe_allow_html=True)
    presenter.slide_summary(slide(items[k - 1], ds, preds))
with then:
    if k < len(items):
        st.subheader(f"Next: {k + 1}")
        presenter.slide_summary(slide(items[k], ds, preds), small=True)
    else:
        st.subheader("Next: the end")
        st.caption("This is the playlist's last slide.")
    st.page_link(PAGES["playlists"].path, label="Edit the notes", icon=PAGES["playlists"].icon,
                 query_params={"playlist": name} if name != playlists.DEFAULT else None)
