"""Playlists in the app: add the episode shown (with its method, T and view settings) to a named
playlist from Plan, Failure cases and Results; play a playlist on the Plan page (``?playlist=NAME
&item=K``) with a progress indicator and the keyboard (→, Space, PageDown: next; ←, PageUp:
previous), as a presenter's clicker sends them. The built-in scenes (:mod:`components.talk.scenes`)
are the default playlist, :data:`DEFAULT`. Storage and checks: :meth:`kepp_core.api.Workspace.playlists`.

A playlist item here is a dict as the file holds it: ``episode``, ``method``, ``T``, ``query``
(the Plan page's query that reopens it) and ``note``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import streamlit as st

from components.ui import plan_link, scripts
from components.records import backend, slides
from components.talk import scenes
from components.records.slides import item_label
from components.ui.colours import MD_RIGHT, MD_WRONG
from components.ui.config import AppConfig, presenting, start_config
from components.ui.pages import PAGES
from components.ui.scripts import SLIDE_KEYS
from components.ui.text import md
from components.ui.links import page_url
from components.records.urls import plan_query
from kepp_core import catalog
from kepp_core.errors import KeppError

__all__ = ["CHANNEL", "DEFAULT", "ab_control", "ab_item", "add_control", "copy_slides_link", "drawn", "item_records", "target", "add_listed_control", "add_rows", "item_label", "item_of_row", "item_record", "keys_script", "load",
           "play_query", "playing_bar", "plan_control", "plan_item", "store", "verdict_text"]

DEFAULT = "scenes"  # the built-in playlist: the curated scenes; no file can take its name
LAST = "kepp_playlist_last"  # the playlist the last episode was added to (every page offers it first)
MOVED = "kepp_playlist_moved"  # set by a bar button's callback: the move is made (the run need not make it)
DRAWN = "kepp_playlist_drawn"  # the (playlist, 1-based item) whose item the Plan page's inputs hold
MESSAGE = "kepp_playlist_message"  # control key -> (ok, text) of its last add
BAR_CSS = """<style>
.st-key-playlist_bar { position: fixed; top: 0.45rem; left: 50%; transform: translateX(-50%); z-index: 1000001;
  width: auto !important; background: var(--kepp-bar); border: 1px solid var(--kepp-bar-border); border-radius: 0.6rem;
  padding: 0.1rem 0.5rem; box-shadow: 0 1px 4px var(--kepp-shadow); }
.st-key-playlist_bar p { margin: 0; white-space: nowrap; }
.st-key-playlist_first, .st-key-playlist_last { display: none !important; }  /* Home and End click them */
/* a slide keeps to one screen: its frames without their captions (the clips' times are the page's sliders') */
.st-key-kepp_slide_start [data-testid="stImageCaption"], .st-key-kepp_slide_goal [data-testid="stImageCaption"] {
  display: none; }
</style>"""
# The playing bar's buttons, which the keys a presenter's clicker sends click (app/static/kepp-keys.js); the
# arrows and Space are left to a widget that has the focus and uses them (a text field, a select box), to a
# slider only while it is dragged (a slider that merely has the focus must not move a clip); PageDown / PageUp,
# Home / End to a text field.
BUTTONS = {move: f".st-key-playlist_{move} button" for move in ("next", "prev", "first", "last")}
TEXT_FIELDS = 'input:not([type="range"]), textarea, [contenteditable="true"], [contenteditable=""]'
SLIDERS = '[role="slider"], input[type="range"]'
OWN_KEYS = f'{TEXT_FIELDS}, select, [role="combobox"], [role="listbox"], [role="option"]'

CHANNEL = "kepp-talk"  # the BroadcastChannel between a playing tab and its presenter view


def keys_script(playing: Mapping | None) -> str:
    """The page's keyboard listener and its link to the presenter view (app/static/kepp-keys.js), told where
    the playlist is (``playing``: ``playlist``, ``item`` (1-based), ``count``; None: none playing)."""
    return scripts.call("kepp-keys.js", {"keys": SLIDE_KEYS, "buttons": BUTTONS, "own": OWN_KEYS, "text": TEXT_FIELDS,
                                         "sliders": SLIDERS,
                                         "channel": CHANNEL, "playing": dict(playing) if playing else None})


def store(cfg: AppConfig):
    """The workspace's playlists (:meth:`kepp_core.api.Workspace.playlists`), where the person running
    the server allowed (:meth:`kepp_core.api.AppConfig.check_allowed`)."""
    return backend.workspace(cfg).playlists(start_config())


def item_of_row(row: Mapping) -> dict:
    """A predictions-table row as a playlist item (its method and T; the Plan page's query).

    >>> item_of_row({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2"})["query"]["model"]
    'graph-R2'
    """
    row = dict(row)
    return {"episode": str(row["episode"]), "method": str(row["method"]), "T": int(row["horizon"]),
            "query": plan_query(row), "note": ""}


def ab_item(row: Mapping, versus: str) -> dict:
    """An A/B pair as a playlist item: method A's predictions-table row (its episode, T and the Plan page's
    query) and method B (``versus``), whose record of the same episode its slide shows beside A's.

    >>> item = ab_item({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2"}, "random")
    >>> item["method"], item["versus"], "vs" in item["query"]
    ('kepp-R2', 'random', False)
    """
    return {**item_of_row(row), "versus": str(versus)}


def plan_item(query: Mapping[str, str], episode: str) -> dict:
    """The Plan page's episode as a playlist item: its query without the playing playlist's place; the
    record it shows (``rec``) as the item's method, else no method and planned live at once.

    >>> plan_item({"video": "v", "ep": "2", "T": "4", "model": "none", "playlist": "p", "item": "2"}, "t/v/2:4")
    {'episode': 't/v/2:4', 'method': '', 'T': 4, 'query': {'video': 'v', 'ep': '2', 'T': '4', 'model': 'none', 'plan': '1'}, 'note': ''}
    >>> plan_item({"video": "v", "ep": "2", "T": "4", "rec": "kepp-R2", "seed": "0"}, "t/v/2:4")["method"]
    'kepp-R2'
    """
    q = {k: str(v) for k, v in plan_link.without(query, *plan_link.PLAYLIST_KEYS, "vs", "present").items()}
    if not q.get("rec"):
        q.update(plan_link.query(plan=True))
    versus = str(query.get("vs") or "") if q.get("rec") else ""  # an A/B slide's B: the item is the pair
    return {"episode": episode, "method": q.get("rec", ""), "T": int(q.get("T", 0) or 0), "query": q, "note": "",
            **({"versus": versus} if versus else {})}


def copy_slides_link(name: str, items: list[dict], key: str) -> None:
    """The Playlists page's "Copy link": the address of the playlist's slides in presentation mode (its first
    item) and of its presenter view, the one a speaker shares or opens on the projector's machine."""
    with st.popover("Copy link", icon=":material/link:", help="a link to this playlist's slides", key=key,
                    disabled=not items):
        if items:
            st.code(page_url(play_query(name, 0, items[0]), page="plan", present=True), language=None, wrap_lines=True)
            st.caption("The slides in presentation mode, from the first; the presenter view (notes, next slide, clock):")
            st.code(page_url({"playlist": name}, page="presenter", present=False), language=None, wrap_lines=True)


def _check_target(name: str) -> str:
    name = name.strip()
    if name == DEFAULT:
        raise KeppError(f"{DEFAULT!r} is the built-in playlist of scenes: choose another name")
    return name


def add_rows(cfg: AppConfig, name: str, rows) -> int:
    """Add episode rows (a predictions table's rows: a DataFrame or mappings with ``episode``,
    ``video``, ``horizon``, ``method``) to the playlist ``name`` in one call, creating it; returns
    how many items it holds now. An episode already there with the same settings is not added
    twice; a KeppError says what is wrong (a bad name, a full playlist, a folder not allowed)."""
    records = rows.to_dict("records") if hasattr(rows, "to_dict") else [dict(r) for r in rows]
    return add_items(cfg, name, [item_of_row(r) for r in records])


def add_items(cfg: AppConfig, name: str, items: Iterable[Mapping]) -> int:
    """Add playlist items (dicts) to the playlist ``name``; how many items it holds now."""
    return len(store(cfg).add(_check_target(name), list(items)).items)


def _add(cfg: AppConfig, items: list[dict], key: str) -> None:
    """on_click of a control's Add button."""
    name = str(st.session_state.get(f"{key}_name", "")).strip()
    try:
        n = add_items(cfg, name, items)
    except KeppError as e:
        st.session_state.setdefault(MESSAGE, {})[key] = (False, str(e))
        return
    st.session_state[LAST] = name
    what = ("A/B slide" if items[0].get("versus") else "episode") if len(items) == 1 else f"{len(items)} episodes"
    st.session_state.setdefault(MESSAGE, {})[key] = (True, f"Added the {what} to playlist '{name}' ({n} items).")
    st.toast(md(f"Added the {what} to playlist '{name}' ({n} items)."), icon=":material/playlist_add_check:")


def add_control(cfg: AppConfig, items: list[dict], key: str, label: str = "Add to playlist") -> None:
    """An "Add to playlist" control: the playlist's name (the last one used is offered) and Add,
    which appends ``items`` (:func:`item_of_row`, :func:`plan_item`) to it."""
    if f"{key}_name" not in st.session_state:
        st.session_state[f"{key}_name"] = st.session_state.get(LAST, "talk")
    with st.popover(label, icon=":material/playlist_add:", key=key, width="stretch",
                    help="add this episode, with its method, T and settings, to a playlist for a talk"):
        # what the last Add did, first: the popover may open near the bottom of a 720-px screen
        ok, text = st.session_state.get(MESSAGE, {}).get(key, (None, ""))
        if ok is not None:
            (st.success if ok else st.error)(md(text))
        field, go = st.columns([3, 1], vertical_alignment="bottom")
        field.text_input("Playlist", key=f"{key}_name", max_chars=64,
                         help="an existing playlist's name, or a new one (letters, digits, spaces, '-', '_', '.')")
        go.button("Add", key=f"{key}_go", type="primary", on_click=_add, args=(cfg, items, key), disabled=not items)
        try:
            names = store(cfg).names()
        except KeppError as e:
            names = []
            st.caption(md(str(e)))
        if names:
            st.caption("Playlists: " + ", ".join(md(n) for n in names))
        st.page_link(PAGES["playlists"].path, label="Playlists", icon=PAGES["playlists"].icon,
                     query_params={"playlist": st.session_state[LAST]} if LAST in st.session_state else None)


def ab_control(cfg: AppConfig, rows, a: str, b: str, key: str) -> None:
    """"Add A/B slide to playlist": one episode (``rows``: its predictions rows, one seed first) as an A/B
    pair of methods ``a`` and ``b`` (:func:`ab_item`); nothing where they are one method or either lacks a record."""
    first = rows[rows["method"] == a]
    if a == b or not len(first) or not (rows["method"] == b).any():
        return
    add_control(cfg, [ab_item(first.iloc[0], b)], key, label="Add A/B slide to playlist")


def add_listed_control(cfg: AppConfig, rows, key: str) -> None:
    """One click adds the episodes a page lists (``rows``: its filtered predictions table, every
    page of it) to a playlist: all of them, or the first a playlist can hold."""
    try:
        cap = store(cfg).capacity
    except KeppError:  # a folder the server does not allow: the control says so when opened
        cap = 0
    n = len(rows)
    items = [item_of_row(r) for r in rows.head(cap).to_dict("records")]
    what = f"the {n} episodes listed" if n <= cap else f"the first {cap} of the {n} episodes listed"
    add_control(cfg, items, key, label=f"Add {what} to a playlist")


def plan_control(cfg: AppConfig, link, video, key: str = "plan_add") -> None:
    """The Plan page's "Add to playlist": the episode shown (``video``: the dataset's video, or the
    upload scene's; None for a user's own upload, which no link can carry) with the page's settings."""
    if video is None or link.shown("ep") is None:
        return
    episode = catalog.episode_id(video.task, video.id, int(link.shown("ep")), int(link.shown("T")))
    add_control(cfg, [plan_item(link.out, episode)], key, label="Playlist")  # fits the title row's column


def load(cfg: AppConfig, ds, name: str) -> list[dict]:
    """The items of the playlist ``name``: the scenes for :data:`DEFAULT`, else its file, checked
    (a KeppError names the file and key of a bad one)."""
    if name == DEFAULT:
        try:
            horizons = backend.horizons(cfg)
        except KeppError:
            horizons = None
        return [{"episode": s["episode"], "method": s["method"], "T": s["T"], "query": dict(s["query"]),
                 "note": s["name"]} for s in scenes.available(cfg, ds, horizons)]
    return [i.to_json() for i in store(cfg).read(name).items]


def item_record(preds, item: Mapping):
    """The record an item shows (:func:`components.records.slides.item_record`): :class:`components.records.recorded.Record` or None."""
    return slides.item_record(preds, item)


def item_records(preds, item: Mapping) -> list:
    """The records an item's slide shows, A first (:func:`components.records.slides.item_records`)."""
    return slides.item_records(preds, item)


def verdict_text(item: Mapping, rec) -> str:
    """An item's verdict and failure pattern in words (Markdown, coloured), as its slide says it: the record's,
    or that it is planned live.

    >>> verdict_text({"method": ""}, None)
    'planned live on its slide (no record)'
    """
    if rec is None:
        return slides.LIVE if not item.get("method") else slides.NOT_RECORDED
    return verdict_markdown(rec.verdict, rec.success)


def verdict_markdown(verdict: str, success: bool | None) -> str:
    """A slide's verdict (:attr:`components.records.slides.Slide.verdict`) in Markdown: green for a success, red for a
    failure, plain without a record."""
    return verdict if success is None else f":{MD_RIGHT if success else MD_WRONG}[{md(verdict)}]"


def play_query(name: str, k: int, item: Mapping) -> dict[str, str]:
    """The Plan page's query that plays item ``k`` (0-based) of the playlist ``name``.

    An item added from a records page names its record by its method (a file written before queries
    carried ``rec`` too): its slide shows that record.

    >>> play_query("talk", 1, {"query": {"video": "v", "plan": "1"}})
    {'video': 'v', 'plan': '1', 'playlist': 'talk', 'item': '2'}
    >>> play_query("talk", 0, {"method": "kepp-R2", "query": {"video": "v", "plan": "1"}})
    {'video': 'v', 'rec': 'kepp-R2', 'playlist': 'talk', 'item': '1'}
    >>> play_query("talk", 0, {"method": "kepp-R2", "versus": "random", "query": {"video": "v", "rec": "kepp-R2"}})["vs"]
    'random'

    """
    q = plan_link.without(item["query"], *plan_link.PLAYLIST_KEYS, "vs")
    if item.get("method") and not q.get("rec") and not q.get("source"):
        q = {**plan_link.without(q, "plan"), **plan_link.query(rec=item["method"])}
    q = {**q, **plan_link.query(vs=item.get("versus") or None, playlist=name, item=k + 1)}
    if presenting():
        q["present"] = "1"
    return q


def _go(name: str, k: int, item: dict) -> None:
    """on_click of the playing bar's buttons: the item's address (the Plan page seeds from it and plans)."""
    st.session_state[MOVED] = True
    st.query_params.from_dict(play_query(name, k, item))


def target(move: str, k: int, count: int) -> int:
    """The item (0-based) a move of the playing bar goes to from item ``k`` of ``count``, kept inside the list.

    >>> [target(m, 2, 8) for m in ("prev", "next", "first", "last")], target("next", 7, 8)
    ([1, 3, 0, 7], 7)
    """
    to = {"prev": k - 1, "next": k + 1, "first": 0, "last": count - 1}[move]
    return min(max(to, 0), count - 1)


def _playing(link) -> tuple[str, int] | None:
    """The playlist and 1-based item the Plan page's address names: a new address says (leaving them
    out ends the playlist); a page switch back keeps the last ones."""
    def asked(key: str) -> str | None:
        return link.from_url(key) if link.foreign or link.from_url(key) is not None else link.last(key)

    name, item = asked("playlist"), asked("item") or "1"
    if not name:
        return None
    try:
        return name, plan_link.KEYS["item"].parse(item)
    except ValueError:
        return name, 1


def drawn(playing: tuple[str, int] | None) -> None:
    """Mark the place played (:func:`playing_bar`'s) as drawn: the page's inputs hold its item now (called
    once they are seeded; a run stopped before that draws the place again on the next)."""
    st.session_state[DRAWN] = playing


def playing_bar(cfg: AppConfig, ds, link) -> tuple[str, int] | None:
    """On the Plan page: when its address plays a playlist (``playlist=NAME&item=K``), a bar with the
    progress ("3 / 8"), previous and next buttons and the keyboard listener; the place stays in the
    page's address (``link``: its :class:`components.ui.links.PageLink`). Returns the place played (the
    playlist's name and the 1-based item), None when none is."""
    where = _playing(link)
    link.keep(playlist=None, item=None)  # no playlist playing, unless one is found below
    if where is None:
        return None
    name, k = where
    try:
        items = load(cfg, ds, name)
    except KeppError as e:
        st.error(md(str(e)) + " · Fix or delete it on the Playlists page.", icon=":material/warning:")
        return None
    if not items:
        st.info(f"Playlist {md(name)} is empty: add episodes from Failure cases, Results or this page.")
        return None
    if k > len(items):
        link.ignore("item", str(k), f"playlist {name} has {len(items)} items: showing its last")
    k = min(max(k, 1), len(items)) - 1
    link.keep(playlist=name, item=k + 1)
    # The slide is a function of its number: a place this session has not drawn yet (a key, a button, a
    # reload, a link) draws its item's query, whatever the page wrote to its address before: an address
    # this page wrote earlier (going back to a slide) is no stale echo when it names another place.
    arrived = st.session_state.get(DRAWN) != (name, k + 1)
    if link.foreign or arrived:  # a link naming only the place (?playlist=NAME&item=K) gets the item's own query
        wanted = plan_link.without(play_query(name, k, items[k]), "present")
        if any(link.from_url(key) != value for key, value in wanted.items() if key not in plan_link.PLAYLIST_KEYS):
            link.url = {**plan_link.without(link.url, *plan_link.KEYS), **wanted}
        link.foreign = True
    st.markdown(BAR_CSS, unsafe_allow_html=True)
    n = len(items)

    def button(move: str, label: str, help: str) -> bool:
        to = target(move, k, n)
        return st.button(label, key=f"playlist_{move}", help=help, disabled=to == k, type="tertiary", on_click=_go,
                         args=(name, to, items[to]))

    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="playlist_bar"):
        pressed = {"first": button("first", "⏮", "the first item (Home)"),
                   "prev": button("prev", "◀", "previous item (← or PageUp)")}
        st.markdown(f"**{k + 1} / {n}** · {md(name)}", help=md(item_label(items[k], ds, backend.method_names(cfg))))
        pressed |= {"next": button("next", "▶", "next item (→, Space or PageDown)"),
                    "last": button("last", "⏭", "the last item (End)")}
        st.link_button("Notes", page_url({"playlist": name, "item": k + 1}, page="presenter", present=False), type="tertiary",
                       icon=PAGES["presenter"].icon, help="the presenter view, in a new tab: this slide, the next, the "
                                                         "speaker's note and the clock; the clicker moves both tabs")
    move = next((m for m, p in pressed.items() if p), None)
    if move is not None and not st.session_state.pop(MOVED, False):
        # pressed in a session that never ran this bar (the server restarted under the page): no callback was
        # registered, so the move is made here, from the place this run's address names
        to = target(move, k, n)
        st.query_params.from_dict(play_query(name, to, items[to]))
        st.rerun()
    titles = [item_label(item, ds, backend.method_names(cfg), note=False) for item in items]
    st.html(keys_script({"playlist": name, "item": k + 1, "count": len(items)})
            + f"<style>{scripts.source('kepp-speaker.css')}</style>" + scripts.speaker_script(titles, OWN_KEYS),
            unsafe_allow_javascript=True)
    return name, k + 1
