"""The Plan page's state: one table of its URL keys (:data:`KEYS`), read from and written to
``st.query_params`` through :class:`PlanLink`. The page, the playlists, the scenes, the video picker
and every link that opens the page (Open in Plan, scenes, playlist items, the episode map) name its
keys through this table: a key it does not hold is a ``KeyError`` wherever it is read, seeded, kept or
put in a link (:func:`query`).

==========  ======================================  ==========================================================
key         value (as the URL writes it)            left out of the URL
==========  ======================================  ==========================================================
T           the horizon, a whole number             the first trained horizon
R           graph paths recommended, 1–5            2
model       the planner's id (catalogue's           the first planning model of the horizon
            ``live_planner``: a planning model's
            short id, ``graph-R1``, ``none``; or
            ``graph-text``: graph + text
            endpoints, no model)
method      the path scorer (``p2kg``, ``pkg``)     the first scorer
sampler     ``own``, or a sampler and its steps     ``own``: the models' own sampler
            (``ddim5``)
encoder     an allowed S3D encoder (``s3d1``, ...:  the dataset's features (with no model, or
            ``AppConfig.grounding_encoders``)       a link to ``model=graph-text``: the first
                                                    S3D encoder)
source      ``upload``                              ``dataset``: a video of the dataset
video       a dataset video's id                    the first video the picker matches
vtask       the picker's task filter (a task id)    every task
vq          the picker's search text                no search
ep          the episode's first step, 0-based       0
upload      a dataset video loaded as an upload     a user's own upload (which no link can carry)
            (the upload scene), its id
start       the start clip, ``a-b`` seconds         the episode's start clip
goal        the goal clip, ``a-b`` seconds          the episode's goal clip
plan        ``1``: plan on opening                  wait for the Plan button
rec         a record's method (``kepp-R2``): show   no record: the live planner's result is the one view
            that method's record of the episode
            (:mod:`components.recorded`)
seed        the record's seed                       the record's first seed
live        ``1``: the live re-plan shown beside    the record alone
            the record
playlist    the playlist being played               no playlist playing
item        its item, 1-based                       1
==========  ======================================  ==========================================================

``present=1`` (presentation mode) belongs to :mod:`components.config` and travels with every page.
Every exit of the page publishes its state first (:meth:`PlanLink.stop`), so that a reload or a
copied link shows what the page showed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from components.links import PageLink

__all__ = ["KEYS", "PLAYLIST_KEYS", "Key", "PlanLink", "clip_text", "parse_clip", "query", "without"]


def parse_clip(text: str) -> tuple[float, float]:
    """A clip ``a-b`` (seconds) as the URL writes it (ValueError for anything else).

    >>> parse_clip("2-6.5"), clip_text((2.0, 6.5))
    ((2.0, 6.5), '2-6.5')
    """
    a, b = (float(x) for x in str(text).split("-"))
    return a, b


def clip_text(clip: Sequence[float]) -> str:
    """A clip (seconds) as the URL writes it: ``a-b``."""
    return f"{clip[0]:g}-{clip[1]:g}"


def _flag(text: str) -> bool:
    if text != "1":
        raise ValueError(text)
    return True


@dataclass(frozen=True)
class Key:
    """One key of the Plan page's URL: its ``name``, how its text reads (``parse``: ValueError,
    KeyError or TypeError for text it does not take) and what it holds (``doc``; what leaving it
    out means is in the module's table)."""

    name: str
    parse: Callable[[str], object]
    doc: str

    def text(self, value) -> str:
        """``value`` as the URL writes it."""
        if self.parse is parse_clip:
            return clip_text(value)
        if self.parse is _flag:
            return "1"
        return str(value)


KEYS: dict[str, Key] = {k.name: k for k in (
    Key("T", int, "the horizon"),
    Key("R", int, "graph paths recommended to the planning model"),
    Key("model", str, "the planner's id: a planning model's short id, or graph-text"),
    Key("method", str, "the path scorer"),
    Key("sampler", str, "the sampler: own, or a sampler and its steps"),
    Key("encoder", str, "the video encoder: an allowed S3D encoder's id (left out: the dataset's features)"),
    Key("source", str, "where the video comes from: upload (left out: the dataset)"),
    Key("video", str, "a dataset video's id"),
    Key("vtask", str, "the video picker's task filter"),
    Key("vq", str, "the video picker's search text"),
    Key("ep", int, "the episode's first step (0-based)"),
    Key("upload", str, "a dataset video loaded as an upload (the upload scene)"),
    Key("start", parse_clip, "the start clip (seconds)"),
    Key("goal", parse_clip, "the goal clip (seconds)"),
    Key("plan", _flag, "plan on opening"),
    Key("rec", str, "the method whose record of the episode is shown"),
    Key("seed", int, "the record's seed"),
    Key("live", _flag, "the live re-plan shown beside the record"),
    Key("playlist", str, "the playlist being played"),
    Key("item", int, "the playlist's item being played (1-based)"),
)}
PLAYLIST_KEYS = ("playlist", "item")  # the place in a playlist being played (not part of an item's own query)


def _key(name: str) -> Key:
    if name not in KEYS:
        raise KeyError(f"{name!r} is not a key of the Plan page's URL (components.plan_state.KEYS)")
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
    """The Plan page's :class:`~components.links.PageLink`, held to :data:`KEYS`: every key it seeds,
    keeps or reads is one of the table's (a KeyError otherwise), read with the table's parser unless
    the page maps the text to a widget's value itself. :meth:`stop` publishes the state before the
    page stops, with the keys the page did not reach this run carried over, so that an exit (an
    error, a message) never loses the place the URL held."""

    PAGE = "plan"

    def __init__(self) -> None:
        super().__init__(self.PAGE)
        self.reached: set[str] = set()

    def start_at(self, defaults: Mapping[str, str] | None) -> None:
        """The page's first state, where neither the URL nor the session holds one (the clean success scene)."""
        if defaults and not self.url and not self.mem:
            self.url = {_key(k).name: str(v) for k, v in defaults.items()}
            self.foreign = self.url not in self.history

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
