"""Deep links: a page's state in the URL query, restored on load and on reload, and links that
open a page at a given state.

A page builds a :class:`PageLink` before its widgets, seeds each widget from it
(:meth:`PageLink.seed`: the URL's value when the URL brings a new one, from a link, a reload or a
scene; the page's last value when a page switch dropped the widget's state), records the values
it shows (:meth:`PageLink.keep`) and writes them to the URL at the end (:meth:`PageLink.publish`).
``?present=1`` belongs to :mod:`components.ui.config` and travels with every page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from components.ui import url_schema
from components.ui.config import presenting
from components.ui.pages import PAGES
from components.ui.text import md

_REFUSED = object()  # a value a seed's parser does not take
MEMORY = "kepp_links"  # page -> {param: value} last written to the URL
HISTORY = "kepp_links_written"  # page -> the last queries written to the URL
RESERVED = ("present",)


class PageLink:
    """One page's URL state for one run (see the module docstring). The URL's values are checked
    against the page's table of keys (its entry's ``keys`` in :data:`components.ui.pages.PAGES`) before anything reads
    them: a value the table's parser refuses is dropped and said in one line where the link is made
    (:meth:`ignore`), as is a linked value the page cannot show (not among a widget's choices)."""

    def __init__(self, page: str, defaults: dict[str, str] | None = None) -> None:
        self.page = page
        self.keys = PAGES[page].keys
        self.mem: dict[str, str] = st.session_state.setdefault(MEMORY, {}).setdefault(page, {})
        url, self.ignored = url_schema.check(self.keys, {k: v for k, v in st.query_params.to_dict().items()
                                                         if k not in RESERVED})
        self._notice = st.empty()  # where the ignored values are said (filled by ignore())
        if self.ignored:
            self._say()
        if not url and not self.mem and defaults:
            url = {k: str(v) for k, v in defaults.items()}  # first opening: the page's default state
        self.url = url
        self.out: dict[str, str] = {}
        # A URL this page wrote itself is no news: a rerun can carry the address of a run or two
        # ago (the browser had not yet taken the newer one), and applying it would undo a change.
        self.history: list[dict] = st.session_state.setdefault(HISTORY, {}).setdefault(page, [])
        self.foreign = bool(url) and url not in self.history

    def new(self, param: str) -> str | None:
        """The URL's value of ``param`` when the URL is news to this page (a link, a reload, a scene)
        and the value differs from the page's last one, else None."""
        raw = self.url.get(param)
        return raw if self.foreign and raw is not None and raw != self.mem.get(param) else None

    def seed(self, key: str, param: str, options: Sequence | None = None, parse: Callable | None = None,
             absent: str | None = None) -> bool:
        """Give the widget ``key`` the URL's new value of ``param`` (or, when the widget lost its state
        in a page switch, the page's last value), read by the page's table (``parse``: a mapping of the
        text to the widget's value where the page has its own); a value that does not parse or is not
        among ``options`` is ignored and said. ``absent``: what a new URL means by leaving ``param`` out
        (a parameter the page drops at its default value). True when the widget got a value."""
        parse = parse or self.keys[param].parse
        raw = self.new(param)
        if raw is None and absent is not None and self.foreign and param not in self.url and param in self.mem:
            raw = absent
        if raw is None and key not in st.session_state:
            raw = self.mem.get(param)
        if raw is None:
            return False
        try:
            value = parse(raw)
        except (TypeError, ValueError, KeyError):
            value = _REFUSED
        if value is _REFUSED or options is not None and value not in list(options):
            if raw == self.new(param):
                self.ignore(param, raw, "not among this page's choices here")
            return False
        st.session_state[key] = value
        return True

    def ignore(self, param: str, raw: str, why: str) -> None:
        """Say (in the page's one line of ignored values) that the link's ``param=raw`` was not taken (once:
        the first reason given is the one said)."""
        problem = url_schema.Problem(param, str(raw), why)
        if not any((p.key, p.raw) == (problem.key, problem.raw) for p in self.ignored):
            self.ignored.append(problem)
            self._say()

    def _say(self) -> None:
        self._notice.warning("Not taken from this link: " + md("; ".join(p.text() for p in self.ignored)) + ".",
                             icon=":material/link_off:")

    def keep(self, **values) -> None:
        """Values the page shows, for the URL (None drops a parameter)."""
        for k, v in values.items():
            if v is None:
                self.out.pop(k, None)
            else:
                self.out[k] = str(v)

    def publish(self) -> None:
        """Write the kept values to the URL (with ``present=1`` in presentation mode) and remember them."""
        query = dict(self.out)
        if presenting():
            query["present"] = "1"
        if st.query_params.to_dict() != query:
            st.query_params.from_dict(query)
        self.mem.clear()
        self.mem.update(self.out)
        if self.out not in self.history:
            self.history.append(dict(self.out))
            del self.history[:-8]


    def publish_fragment(self) -> None:
        """At the end of a fragment (a control group and what it drives, ``st.fragment``): when only the fragment
        ran (one of its controls changed), write the URL now, as the page's end does on a full run."""
        if fragment_run():
            self.publish()


def fragment_run() -> bool:
    """Whether this run of the script is a fragment's alone (``st.fragment``: the rest of the page not run)."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def default_kwargs(key: str, **kwargs) -> dict:
    """``kwargs`` (a widget's default value or index) unless the widget's state is already set, so a
    seeded widget is not created with a default as well."""
    return {} if key in st.session_state else kwargs


def page_url(query: dict[str, str] | None = None, page: str | None = None, present: bool | None = None) -> str:
    """This page's full address with ``query`` (a shareable link); ``page``: another page's (its name in
    :data:`components.ui.pages.PAGES`); ``present``: in presentation mode or not (None: as this page is)."""
    base = str(st.context.url or "").split("?")[0]
    if page is not None:
        base = base.rsplit("/", 1)[0] + "/" + PAGES[page].url_path
    query = dict(query or {})
    if presenting() if present is None else present:
        query["present"] = "1"
    return base + ("?" + urlencode(query) if query else "")


def copy_link(link: PageLink, key: str) -> None:
    """A "Copy link" control: the page's address with its state (the code box has a copy button)."""
    with st.popover("Copy link", icon=":material/link:", help="a link to this page with these settings", key=key):
        st.code(page_url(link.out), language=None, wrap_lines=True)
        st.caption("Opening it (or reloading) brings back this page as it is now.")


def step_episode(key: str, options: Sequence, delta: int) -> None:
    """on_click of next/previous buttons: move the select box ``key`` by ``delta`` (wrapping)."""
    options = list(options)
    if not options:
        return
    now = st.session_state.get(key, options[0])
    i = options.index(now) if now in options else 0
    st.session_state[key] = options[(i + delta) % len(options)]


def episode_buttons(key: str, options: Sequence, where=None, prefix: str = "") -> None:
    """Previous / next buttons for the select box ``key`` (placed in ``where``: two columns)."""
    left, right = where if where is not None else st.columns(2)
    left.button("◀ Previous", key=f"{prefix or key}_prev", on_click=step_episode, args=(key, options, -1),
                help="the previous episode", width="stretch")
    right.button("Next ▶", key=f"{prefix or key}_next", on_click=step_episode, args=(key, options, 1),
                 help="the next episode", width="stretch")
