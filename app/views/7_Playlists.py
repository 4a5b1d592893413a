"""Playlists: the episodes a speaker added from Plan, Failure cases and Results, in the order they
will be shown; reorder, remove, rename, delete; play one in presentation mode on the Plan page."""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from components.ui import links
from components.records import backend
from components.talk import deck, playlists
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.ui.text import md, md_code
from kepp_core.errors import KeppError

cfg = page_setup("Playlists")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Playlists")
if not cfg.presentation:
    st.caption("Add episodes with **Add to playlist** on Plan, Failure cases and Results; play a playlist on the "
               "Plan page: → / Space / PageDown for the next item, ← / PageUp for the previous one. "
               f"**{playlists.DEFAULT}** is the built-in playlist of curated scenes.")

with backend.guarded():
    ds = backend.dataset(cfg)
    store = playlists.store(cfg)
    names, skipped = store.listing()
link = links.PageLink("playlists")
options = [playlists.DEFAULT, *[n for n in names if n != playlists.DEFAULT]]
asked = link.new("playlist")
if asked is not None and asked not in options:
    try:
        store.path(asked)
        st.warning(f"There is no playlist {md_code(asked)} in {md_code(store.folder)}: showing "
                   f"**{playlists.DEFAULT}**.", icon=":material/warning:")
    except KeppError as e:
        st.warning(md(str(e)), icon=":material/warning:")
link.seed("pl_name", "playlist", options)
if st.session_state.get("pl_name") not in options:
    st.session_state["pl_name"] = playlists.DEFAULT
name = st.selectbox("Playlist", options, key="pl_name",
                    format_func=lambda n: f"{n} (built-in scenes)" if n == playlists.DEFAULT else n)
link.keep(playlist=None if name == playlists.DEFAULT else name)
link.publish()
builtin = name == playlists.DEFAULT
if not cfg.presentation:
    st.caption(f"Playlists are JSON files in {md_code(store.folder)} (one per playlist: copy one to share it)."
               + (f" {skipped} file(s) there are left out: their names are not playlist names." if skipped else ""))


def say(ok: bool, text: str) -> None:
    """Keep a message for the next run (callbacks run before the page draws)."""
    st.session_state["pl_message"] = (ok, text)


def change(action, *args, select: str | None = None, done: str = "") -> None:
    """on_click of an edit: run it, say what happened, select ``select`` afterwards."""
    try:
        action(*args)
    except KeppError as e:
        say(False, str(e))
        return
    if select is not None:
        st.session_state["pl_name"] = select
    if done:
        say(True, done)


def move(k: int, delta: int) -> None:
    """Move item ``k`` of the shown playlist up or down."""
    store.edit(name, lambda playlist: playlist.moved(k, delta))


def remove(k: int) -> None:
    """Remove item ``k`` of the shown playlist."""
    store.edit(name, lambda playlist: playlist.without(k))


def rename() -> None:
    """Rename the shown playlist to the name typed."""
    new = str(st.session_state.get("pl_new_name", "")).strip()
    if new == playlists.DEFAULT:
        raise KeppError(f"{playlists.DEFAULT!r} is the built-in playlist's name: choose another")
    store.rename(name, new)
    st.session_state["pl_name"] = new


def save_copy(items: list[dict]) -> None:
    """Save the built-in scenes as a playlist of the name typed (to edit them)."""
    playlists.add_items(cfg, str(st.session_state.get("pl_copy_name", "")).strip(), items)
    st.session_state["pl_name"] = str(st.session_state["pl_copy_name"]).strip()


if message := st.session_state.pop("pl_message", None):
    (st.success if message[0] else st.error)(md(message[1]))
try:
    items = playlists.load(cfg, ds, name)
except KeppError as e:
    items = None
    st.error(md(str(e)) + " · Fix the file, or delete this playlist below.", icon=":material/warning:")

with link_col:  # what a speaker shares is the slides, not this page
    playlists.copy_slides_link(name, items or [], "pl_link")
actions = st.columns(5, vertical_alignment="bottom")
if items:
    actions[0].page_link(PAGES["plan"].path, label="Present", icon=":material/slideshow:",
                         query_params={**playlists.play_query(name, 0, items[0]), "present": "1"},
                         help="play it in presentation mode: → / Space / PageDown next, ← / PageUp previous")
    actions[1].page_link(PAGES["plan"].path, label="Play", icon=PAGES["plan"].icon,
                         query_params=playlists.play_query(name, 0, items[0]), help="play it in the normal layout")
    actions[4].link_button("Presenter view", links.page_url({"playlist": name}, page="presenter", present=False),
                           icon=PAGES["presenter"].icon,
                           help="a second tab for the speaker: this slide, the next, the note, the clock; it follows "
                                "the slides (Present) in this browser, and the clicker moves both")
if builtin and items:
    with actions[2].popover("Save a copy", icon=":material/content_copy:", help="to reorder or edit the scenes"):
        st.text_input("Name", key="pl_copy_name", max_chars=64)
        st.button("Save", key="pl_copy", on_click=change, args=(save_copy, items), kwargs={"done": "Saved a copy."})
elif not builtin:
    with actions[2].popover("Rename", icon=":material/edit:"):
        st.text_input("New name", key="pl_new_name", max_chars=64)
        st.button("Rename", key="pl_rename", on_click=change, args=(rename,), kwargs={"done": "Renamed."})
    with actions[3].popover("Delete", icon=":material/delete:"):
        st.caption(f"Delete the file of playlist {md_code(name)}?")
        st.button("Delete", key="pl_delete", type="primary", on_click=change, args=(store.delete, name),
                  kwargs={"select": playlists.DEFAULT, "done": f"Deleted playlist '{name}'."})

names = backend.method_names(cfg) if items else {}  # an imported method's name says so, with its file
if items is not None and not items:
    st.info("This playlist is empty: add episodes with **Add to playlist** on Plan, Failure cases or Results.")
preds = None
with backend.guarded(stop=False):
    preds = backend.predictions(cfg)
if items:
    st.download_button("Export deck", lambda: deck.page_deck(cfg, name, items, ds, preds, names, store.deck_mark), icon=":material/download:",
                       file_name=f"{name}.html", mime="text/html", key="pl_deck", on_click="ignore",
                       help="these slides as one HTML file that needs no server (kepp talk export): open it from "
                            "disk; → / ← / PageDown / PageUp / Home / End move, P opens the presenter view")


def note_key(k: int, item: dict) -> str:
    """The note field's key of item ``k``: a new field when the item there or its note changes."""
    digest = hashlib.sha1(f"{name}|{item['episode']}|{item.get('note', '')}".encode()).hexdigest()[:10]
    return f"pl_note_{k}_{digest}"


def save_note(k: int, episode: str, key: str) -> None:
    """Write item ``k``'s note (the text typed in ``key``) to the playlist's file."""
    store.set_note(name, k, str(st.session_state.get(key, "")), episode)


for k, item in enumerate(items or []):
    num, label, tools = st.columns([0.4, 6.4, 4.4], vertical_alignment="center")
    # the item's buttons each as wide as its label (a row that wraps at 1280 px, never a clipped sliver)
    with tools.container(horizontal=True, gap="small", vertical_alignment="center", key=f"pl_tools_{k}"):
        up, down, out, note, go = (st.container(width="content") for _ in range(5))
    num.markdown(f"**{k + 1}**")
    # the item, its slide's verdict and failure pattern (the record's), the speaker's note
    seed = str(item.get("query", {}).get("seed", ""))  # the record's seed, as every list names it
    label.markdown(md(playlists.item_label(item, ds, names, note=False) + (f" · seed {seed}" if seed else "")) + "  \n"
                   + playlists.verdict_text(item, playlists.item_record(preds, item))
                   + (f"  \n:material/speaker_notes: *{md(item['note'])}*" if item.get("note") else ""))
    up.button("↑", key=f"pl_up_{k}", help="move up", disabled=builtin or k == 0, on_click=change, args=(move, k, -1))
    down.button("↓", key=f"pl_down_{k}", help="move down", disabled=builtin or k + 1 == len(items), on_click=change,
                args=(move, k, 1))
    out.button("✕", key=f"pl_remove_{k}", help="remove from the playlist", disabled=builtin, on_click=change,
               args=(remove, k))
    if not builtin:  # the speaker's note: shown in the presenter view beside the slide
        with note.popover("Note", icon=":material/edit_note:", help="the speaker's note for this slide", width="content"):
            field = note_key(k, item)
            st.text_area("Speaker's note", item.get("note", ""), key=field, max_chars=store.note_limit, height=120)
            st.button("Save note", key=f"pl_note_save_{k}", type="primary", on_click=change,
                      args=(save_note, k, item["episode"], field), kwargs={"done": f"Saved the note of item {k + 1}."})
    go.page_link(PAGES["plan"].path, label="Open", icon=PAGES["plan"].icon, query_params=playlists.play_query(name, k, item))
if items and not builtin:
    st.download_button("Download playlist (JSON)", json.dumps(store.read(name).to_json(), indent=1).encode(),
                       file_name=f"{name}.json", mime="application/json", key="pl_download", on_click="ignore")
