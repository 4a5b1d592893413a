"""The Plan page's state: its URL keys (:data:`KEYS`, the page's table in
:mod:`components.ui.url_schema`: what each holds, how its text is read, what leaving it out means),
read from and written to ``st.query_params`` through :class:`PlanLink`. The page, the playlists, the
scenes, the video picker and every link that opens the page (Open in Plan, scenes, playlist items,
the episode map) name its keys through this table: a key it does not hold is a ``KeyError``
wherever it is read, seeded, kept or put in a link (:func:`query`).

``present=1`` (presentation mode) belongs to :mod:`components.ui.config` and travels with every page.
Every exit of the page publishes its state first (:meth:`PlanLink.stop`), so that a reload or a
copied link shows what the page showed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import streamlit as st

from components.ui.links import PageLink
from components.ui.url_schema import PLAN as KEYS
from components.ui.url_schema import Key

__all__ = ["KEYS", "PLAYLIST_KEYS", "Key", "PlanLink", "clip_text", "parse_clip", "query", "without"]

PLAYLIST_KEYS = ("playlist", "item")  # the place in a playlist being played (not part of an item's own query)


def parse_clip(text: str) -> tuple[float, float]:
    """A clip ``a-b`` (seconds) as the URL writes it (ValueError for anything else).

    >>> parse_clip("2-6.5"), clip_text((2.0, 6.5))
    ((2.0, 6.5), '2-6.5')
    """
    return KEYS["start"].parse(text)


def clip_text(clip: Sequence[float]) -> str:
    """A clip (seconds) as the URL writes it: ``a-b``."""
    return KEYS["start"].text(clip)


def _key(name: str) -> Key:
    if name not in KEYS:
        raise KeyError(f"{name!r} is not a key of the Plan page's URL (components.ui.plan_link.KEYS)")
    return KEYS[name]


def query(**values) -> dict[str, str]:
    """A Plan-page query from typed values (None: left out), in the table's order; a key the table
    does not hold is a KeyError.

    >>> query(ep=7, video="0287", T=3, plan=True, start=(2.0, 6.5), R=None)
    {'T': '3', 'video': '0287', 'ep': '7', 'start': '2-6.5', 'plan': '1'}
    """
    for name in values:
        _key(name)
    return {k.name: k.text(values[k.name]) for k in KEYS.values() if values.get(k.name) is not None}


def without(q: Mapping[str, str], *names: str) -> dict[str, str]:
    """A query without the keys ``names`` (each a key of the table, or ``present``).

    >>> without({"T": "3", "playlist": "talk", "item": "2"}, *PLAYLIST_KEYS)
    {'T': '3'}
    """
    for name in names:
        if name != "present":
            _key(name)
    return {k: v for k, v in q.items() if k not in names}


class PlanLink(PageLink):
    """The Plan page's :class:`~components.ui.links.PageLink`, held to :data:`KEYS`: every key it seeds,
    keeps or reads is one of the table's (a KeyError otherwise), read with the table's parser unless
    the page maps the text to a widget's value itself. :meth:`stop` publishes the state before the
    page stops, with the keys the page did not reach this run carried over, so that an exit (an
    error, a message) never loses the place the URL held."""

    PAGE = "plan"

    def __init__(self) -> None:
        super().__init__(self.PAGE)
        self.reached: set[str] = set()
        self.defaulted = False  # the state is the page's own first one (start_at), not a link's

    def start_at(self, defaults: Mapping[str, str] | None) -> None:
        """The page's first state, where neither the URL nor the session holds one (the clean success scene):
        a state the page chose itself, not one a link asked for (:attr:`defaulted`)."""
        if defaults and not self.url and not self.mem:
            self.url = {_key(k).name: str(v) for k, v in defaults.items()}
            self.foreign = self.url not in self.history
            self.defaulted = True

    @property
    def arrived(self) -> bool:
        """Whether this run's state came with an address that asked for it (a link, a reload, a scene, a
        playlist's next item), not from the page's own first state or its last one."""
        return self.foreign and not self.defaulted

    def seed(self, key: str, param: str, options: Sequence | None = None, parse: Callable | None = None,
             absent: str | None = None) -> bool:
        return super().seed(key, param, options, parse or _key(param).parse, absent)

    def keep(self, **values) -> None:
        """Values the page shows, for the URL (None drops a key), written as the table writes them."""
        self.reached |= set(values)
        super().keep(**{name: None if v is None else _key(name).text(v) for name, v in values.items()})

    def new(self, param: str) -> str | None:
        return super().new(_key(param).name)

    def from_url(self, param: str) -> str | None:
        """The URL's text of ``param`` (None: left out)."""
        return self.url.get(_key(param).name)

    def last(self, param: str) -> str | None:
        """The text of ``param`` the page published last (None: none)."""
        return self.mem.get(_key(param).name)

    def shown(self, param: str) -> str | None:
        """The text of ``param`` this run keeps for the URL (None: not kept)."""
        return self.out.get(_key(param).name)

    def stop(self) -> None:
        """Publish the state (the keys this run kept, and the URL's — or, after a page switch, the last
        published — values of the keys it did not reach), then stop the page."""
        held = self.url if self.foreign else {**self.url, **self.mem}  # a link's, else the last published
        for name, text in held.items():
            if name in KEYS and name not in self.reached:
                self.out[name] = text
        self.publish()
        st.stop()
