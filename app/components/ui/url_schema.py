"""Every page's URL keys, one table per page (:data:`TABLES`): what each key holds, how its text is
read (its parser: ASCII digits only, ranges, lengths) and what leaving it out means. Plain Python (no
Streamlit): each page's entry in :data:`components.ui.pages.PAGES` names its table,
:class:`components.ui.links.PageLink` checks a page's URL against it before anything reads it, and
``docs/app.md`` lists the same tables (``tests/test_app_url_schema.py`` holds them equal).

A value a parser does not take is a :class:`Problem` (the key, the text, what was expected), said in one
line on the page and otherwise ignored; nothing a visitor types into an address reaches ``int()`` or
``float()`` unchecked (``"²".isdigit()`` is true, ``int("²")`` fails; ``int("٣")`` is 3).

>>> PLAN["item"].parse("3"), problems(PLAN, {"item": "²", "seed": "7", "ep": "1" * 20})[0].text()
(3, "item='²': expected a whole number from 1 to 9999 (ASCII digits)")
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kepp_core.catalog import AB_CELLS, DEFAULT_FAMILY, FAMILIES, GROUP_BY, MAX_HORIZON, MAX_SEED, MAX_TOP, codes_named

__all__ = ["AB_KEYS", "GALLERY", "MAX_CHARS", "PLAN", "Expected", "Key", "Parser", "Problem", "check", "choice", "clip", "columns", "decimal", "flag",
           "listed", "member", "or_empty",
           "pair", "problems", "text", "whole"]

MAX_CHARS = 200  # characters of one URL value (an id, a search, a name); a list's whole text: MAX_CHARS * 4
MAX_DIGITS = 12  # digits of a whole number read from a URL (a bound before int(), whatever the range)
MAX_SECONDS = 86_400  # a clip's ends (seconds): a day of video
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_WHOLE = re.compile(r"-?[0-9]{1,%d}" % MAX_DIGITS)
_DECIMAL = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})?")


class Expected(ValueError):
    """A URL value a parser does not take; its message says what was expected."""


@dataclass(frozen=True)
class Parser:
    """A URL value's reader: ``read(text)`` gives the typed value or raises :class:`Expected`;
    ``expected`` says in words what it takes (the message, the docs); ``write`` turns a value back
    into the URL's text."""

    read: Callable[[str], object]
    expected: str
    write: Callable[[object], str] = str

    def __call__(self, text: str) -> object:
        return self.read(text)


def _plain(raw: object, max_chars: int = MAX_CHARS) -> str:
    value = str(raw)
    if len(value) > max_chars or _CONTROL.search(value):
        raise Expected(f"at most {max_chars} characters, no control characters")
    return value


def whole(lo: int, hi: int) -> Parser:
    """A whole number from ``lo`` to ``hi``, in ASCII digits.

    >>> whole(1, 5)("3"), whole(0, 9).expected
    (3, 'a whole number from 0 to 9 (ASCII digits)')
    >>> [_rejects(whole(1, 5), t) for t in ("²", "٣", "0", "6", "3.0", " 3", "1" * 40)]
    [True, True, True, True, True, True, True]
    """
    expected = f"a whole number from {lo} to {hi} (ASCII digits)"

    def read(raw: str) -> int:
        if not _WHOLE.fullmatch(str(raw)) or (str(raw).startswith("-") and lo >= 0):
            raise Expected(expected)
        value = int(raw)
        if not lo <= value <= hi:
            raise Expected(expected)
        return value
    return Parser(read, expected)


def decimal(lo: float, hi: float) -> Parser:
    """A number from ``lo`` to ``hi`` (ASCII digits, an optional decimal point; no sign, no exponent).

    >>> decimal(0, 1)("0.05"), _rejects(decimal(0, 1), "1e-3"), _rejects(decimal(0, 1), "2")
    (0.05, True, True)
    """
    expected = f"a number from {lo:g} to {hi:g} (ASCII digits and a point)"

    def read(raw: str) -> float:
        if not _DECIMAL.fullmatch(str(raw)):
            raise Expected(expected)
        value = float(raw)
        if not (math.isfinite(value) and lo <= value <= hi):
            raise Expected(expected)
        return value
    return Parser(read, expected, lambda v: f"{v:g}")


def text(max_chars: int = MAX_CHARS) -> Parser:
    """Text of at most ``max_chars`` characters without control characters (an id, a name, a search).

    >>> text()("make tea"), _rejects(text(), "a" * 201), _rejects(text(), "a\\nb")
    ('make tea', True, True)
    """
    expected = f"text of at most {max_chars} characters"

    def read(raw: str) -> str:
        try:
            return _plain(raw, max_chars)
        except Expected:
            raise Expected(expected) from None
    return Parser(read, expected)


def choice(*values: str) -> Parser:
    """One of ``values``.

    >>> choice("p2kg", "pkg")("pkg"), choice("p2kg", "pkg").expected
    ('pkg', 'one of p2kg, pkg')
    """
    expected = "one of " + ", ".join(values)

    def read(raw: str) -> str:
        if raw not in values:
            raise Expected(expected)
        return raw
    return Parser(read, expected)


def member(registry: Mapping[str, object]) -> Parser:
    """A name of ``registry`` as it stands when the URL is read (a name registered later is taken too;
    the docs' words name those of the import).

    >>> codes = {"kepp": 1}
    >>> parse = member(codes)
    >>> codes["new"] = 2
    >>> parse("new"), parse.expected
    ('new', 'one of kepp')
    """
    def read(raw: str) -> str:
        if raw not in registry:
            raise Expected("one of " + ", ".join(registry))
        return raw
    return Parser(read, "one of " + ", ".join(registry))


def _flag(raw: str) -> bool:
    if raw != "1":
        raise Expected("1")
    return True


flag = Parser(_flag, "1", lambda v: "1")


def or_empty(parser: Parser) -> Parser:
    """``parser``'s values, or the empty text (a key given empty on purpose: a list closed).

    >>> or_empty(choice("both", "neither"))(""), or_empty(choice("both")).expected
    ('', 'one of both, or nothing')
    """
    return Parser(lambda raw: "" if raw == "" else parser(raw), f"{parser.expected}, or nothing", parser.write)


def clip() -> Parser:
    """A clip ``a-b`` in seconds, ``a < b`` (each a number from 0 to a day).

    >>> clip()("2-6.5"), clip().write((2.0, 6.5)), _rejects(clip(), "9-1"), _rejects(clip(), "²-3")
    ((2.0, 6.5), '2-6.5', True, True)
    """
    expected = f"a clip a-b in seconds, 0 ≤ a < b ≤ {MAX_SECONDS}"
    number = decimal(0, MAX_SECONDS)

    def read(raw: str) -> tuple[float, float]:
        parts = str(raw).split("-")
        try:
            a, b = (number(x) for x in parts) if len(parts) == 2 else (None, None)
        except Expected:
            a = b = None
        if a is None or not a < b:
            raise Expected(expected)
        return a, b
    return Parser(read, expected, lambda v: f"{v[0]:g}-{v[1]:g}")


def pair(lo: int, hi: int) -> Parser:
    """Two whole numbers ``a-b`` from ``lo`` to ``hi`` (a transition between two action ids).

    >>> pair(0, 99)("3-7"), _rejects(pair(0, 99), "3-²")
    ((3, 7), True)
    """
    one = whole(lo, hi)
    expected = f"two whole numbers a-b from {lo} to {hi} (ASCII digits)"

    def read(raw: str) -> tuple[int, int]:
        parts = str(raw).split("-")
        try:
            if len(parts) == 2:
                return one(parts[0]), one(parts[1])
        except Expected:
            pass
        raise Expected(expected)
    return Parser(read, expected, lambda v: f"{v[0]}-{v[1]}")


def listed(max_items: int, max_chars: int = MAX_CHARS) -> Parser:
    """A comma-separated list of at most ``max_items`` entries, each text of at most ``max_chars``.

    >>> listed(4)("a,b"), _rejects(listed(2), "a,b,c")
    (['a', 'b'], True)
    """
    expected = f"at most {max_items} comma-separated entries of at most {max_chars} characters"

    def read(raw: str) -> list[str]:
        parts = str(raw).split(",")
        if len(parts) > max_items or any(len(p) > max_chars or _CONTROL.search(p) for p in parts):
            raise Expected(expected)
        return parts
    return Parser(read, expected, lambda v: ",".join(v))


def columns(names: Mapping[str, object]) -> Parser:
    """Comma-separated different names of ``names`` (the columns a table groups by), at least one.

    >>> columns({"method": 1, "T": 2})("T,method"), _rejects(columns({"T": 1}), "T,T"), _rejects(columns({"T": 1}), "x")
    (['T', 'method'], True, True)
    """
    expected = f"at most {len(names)} comma-separated different names of " + ", ".join(names)

    def read(raw: str) -> list[str]:
        parts = str(raw).split(",")
        if len(parts) > len(names) or len(set(parts)) != len(parts) or any(p not in names for p in parts):
            raise Expected(expected)
        return parts
    return Parser(read, expected, lambda v: ",".join(v))


def _rejects(parser: Parser, raw: str) -> bool:
    try:
        parser(raw)
    except Expected:
        return True
    return False


@dataclass(frozen=True)
class Key:
    """One key of a page's URL: its ``name``, how its text is read (``parse``), what it holds (``doc``)
    and what leaving it out means (``absent``)."""

    name: str
    parse: Parser
    doc: str
    absent: str

    def text(self, value) -> str:
        """``value`` as the URL writes it."""
        return self.parse.write(value)


@dataclass(frozen=True)
class Problem:
    """A URL value the page did not take: the ``key``, its text (``raw``) and why (``why``)."""

    key: str
    raw: str
    why: str

    def text(self) -> str:
        """One line: ``key='raw': why`` (the text cut at 40 characters)."""
        raw = self.raw if len(self.raw) <= 40 else self.raw[:39] + "…"
        return f"{self.key}={raw!r}: {self.why}"


def problems(table: Mapping[str, Key], query: Mapping[str, str]) -> list[Problem]:
    """The values of ``query`` that the keys of ``table`` do not take (keys outside the table are not
    the page's: left alone)."""
    return check(table, query)[1]


def check(table: Mapping[str, Key], query: Mapping[str, str]) -> tuple[dict[str, str], list[Problem]]:
    """``query`` split into the values its page takes (the text as given, for the page's own widgets to
    map) and the :class:`Problem` of each value a key's parser refuses; keys outside ``table`` are dropped.

    >>> check(GRAPH, {"depth": "9", "step": "boil", "utm": "x"})[0], check(GRAPH, {"depth": "9"})[1][0].why
    ({'step': 'boil'}, 'expected a whole number from 1 to 3 (ASCII digits)')
    """
    kept, bad = {}, []
    for name, raw in query.items():
        key = table.get(name)
        if key is None:
            continue
        try:
            key.parse(raw)
        except Expected as e:
            bad.append(Problem(name, str(raw), f"expected {e}"))
            continue
        kept[name] = raw
    return kept, bad


def _table(*keys: Key) -> dict[str, Key]:
    return {k.name: k for k in keys}


WHOLE_ID = whole(0, 10**6)  # an index a page checks against its data (an episode's first step, a page number)
HORIZON = whole(1, MAX_HORIZON)
SEED = whole(0, MAX_SEED)

# The Plan page (its state's keys: components.ui.plan_link and components.plan_view read them).
PLAN = _table(
    Key("T", HORIZON, "the horizon (the number of steps to plan)", "the first trained horizon"),
    Key("R", whole(1, MAX_TOP), "graph paths recommended to the planning model (a graph model's own R)",
        "the planning model's R (graph + text endpoints: 2 paths shown)"),
    Key("model", text(64), "the planner: a planning model's short id (`graph-R1`, `none`, ...) or `graph-text` "
                           "(graph + text endpoints, no model)", "the first planning model of the horizon"),
    Key("method", text(32), "the path scorer (`p2kg`, `pkg`, `history`)", "the first scorer"),
    Key("sampler", text(16), "`own`, or a sampler and its steps (`ddim5`)", "`own`: the models' own sampler"),
    Key("encoder", text(16), "an allowed S3D encoder (`s3d1`, ...)",
        "the dataset's features (with no model, or a link to `model=graph-text`: the first S3D encoder)"),
    Key("source", choice("upload"), "`upload`: the video is an upload", "a video of the dataset"),
    Key("video", text(), "a dataset video's id", "the first video the picker matches"),
    Key("vtask", text(), "the video picker's task filter (a task id)", "every task"),
    Key("vq", text(), "the video picker's search text", "no search"),
    Key("ep", WHOLE_ID, "the episode's first step, 0-based", "0"),
    Key("upload", text(), "a dataset video loaded as an upload (the upload scene), its id",
        "a user's own upload (which no link can carry)"),
    Key("start", clip(), "the start clip, `a-b` seconds", "the episode's start clip"),
    Key("goal", clip(), "the goal clip, `a-b` seconds", "the episode's goal clip"),
    Key("plan", flag, "`1`: plan on opening", "wait for the Plan button"),
    Key("rec", text(64), "a record's method (`kepp-R2`): that method's record of the episode is shown",
        "no record: the live plan is the one view"),
    Key("seed", SEED, "the record's seed", "the record's first seed"),
    Key("vs", text(64), "method B of an A/B slide (`random`): its record of the episode is shown beside `rec`'s",
        "one record"),
    Key("live", flag, "`1`: the live re-plan's tab is open beside the record's", "the record's tab"),
    Key("playlist", text(64), "the playlist being played", "no playlist playing"),
    Key("item", whole(1, 9999), "its item being played, 1-based", "1"),
)

GRAPH = _table(
    Key("w", choice("p2kg", "pkg"), "the edge weights: `pkg` (frequency graph)", "`p2kg`"),
    Key("tab", choice("around", "expert"), "the open tab: `expert` (a task's expert trajectories)", "`around` a step"),
    Key("q", text(), "the step search", "no search"),
    Key("step", text(), "the step drawn in the middle", "the first step the search matches"),
    Key("node", WHOLE_ID, "the step drawn in the middle, by its action id (what a step link opens: "
                          "components.ui.step_links); the page then writes `step`", "`step`"),
    Key("edge", pair(0, 10**6), "the chosen transition `a-b` (action ids) whose episodes are listed",
        "the episodes through the middle step"),
    Key("epage", whole(1, 10**6), "the page of the episodes listed", "1"),
    Key("depth", whole(1, 3), "transitions within this many steps", "1"),
    Key("min", decimal(0, 1), "the minimum weight of an arrow drawn", "0"),
    Key("task", text(), "the task filter", "every task"),
    Key("max", whole(2, 500), "at most this many steps drawn", "40"),
    Key("etask", text(), "the expert trajectories' task", "the first task"),
    Key("emin", whole(1, 10**6), "the expert trajectories' minimum count", "1"),
)

_METHOD = text(64)
_SLICES = (Key("by", text(32), "the slice table's cut (`pattern`, `horizon`, `ends`)", "`task`"),
           Key("ref", _METHOD, "the slice table's reference method", "the first comparison method the records hold"),
           Key("slice", text(), "the slice filter, `cut:value` (`ends:wrong`)", "no slice filter"))
_PAGING = (Key("episode", text(), "the episode shown", "the first episode of the page"),
           Key("page", whole(1, 10**6), "the table's page", "1"))

HEATMAPS = _table(
    Key("task", text(), "the task", "the first task"),
    Key("of", _METHOD, "the method whose predictions are drawn", "the first comparison method the records hold"),
    Key("T", HORIZON, "the predictions' horizon", "the method's first horizon"),
    Key("tables", flag, "`1`: the matrices as tables too", "figures only"),
    Key("cell", pair(0, 10**6), "the clicked transition, `a-b` (action ids)", "no transition listed"),
    Key("a", choice("train", "test", "pred"), "the difference's first panel", "`pred` (else the last panel)"),
    Key("b", choice("train", "test", "pred"), "the panel subtracted", "`test`"),
)

# Two methods episode by episode (components.records.ab), on Failure cases and Results.
AB_KEYS = (Key("a", _METHOD, "method A of the comparison episode by episode", "the page's method"),
       Key("b", _METHOD, "method B of the comparison", "the first method A is compared with"),
       Key("cell", or_empty(choice(*AB_CELLS)), "the 2×2 table's cell listed (`both`, `a-only`, `b-only`, "
                                                "`neither`)", "no cell listed"),
       Key("abep", text(), "the episode of the cell shown", "the first episode of the list's page"),
       Key("abpage", whole(1, 10**6), "the cell list's page", "1"))

FAILURES = _table(
    Key("method", _METHOD, "the method", "the first comparison method the records hold"),
    Key("T", HORIZON, "the horizon", "the method's first horizon"),
    *_SLICES,
    Key("pattern", text(32), "the failure pattern browsed", "the first pattern"),
    *_PAGING,
    *AB_KEYS,
)

RESULTS = _table(
    Key("metric", choice("SR", "mAcc", "mIoU", "all"), "the method × T table's metric", "`SR`"),
    Key("code", member(FAMILIES), "the evaluation code whose metrics the tables show ("
        + codes_named("`{name}`: {label}", skip=(DEFAULT_FAMILY,)) + "), each header naming it",
        f"`{DEFAULT_FAMILY}`: this package's"),
    Key("task", text(), "the task filter", "every task"),
    Key("T", HORIZON, "the horizon", "the first horizon"),
    Key("method", _METHOD, "the method", "the first comparison method the records hold"),
    Key("outcome", choice("all", "correct", "incorrect"), "the outcome filter", "all"),
    Key("pattern", text(32), "the failure-pattern filter", "any"),
    *_SLICES,
    *_PAGING,
    Key("compare", listed(8, 64), "the methods compared on the episode (up to four are shown)",
        "the method and its comparison methods"),
    Key("map", flag, "`1`: the episode map shown", "no map"),
    Key("colour", choice("success", "task"), "the map's colouring", "`success`"),
    *AB_KEYS,
)

TRAINING = _table(
    Key("runs", listed(100), "the runs drawn (their names)", "the first four runs"),
    Key("x", choice("epoch", "step", "time"), "the x axis", "`epoch`"),
    Key("y", listed(50, 64), "the curves drawn", "`loss` and `val_score`"),
    Key("smooth", decimal(0, 0.95), "the moving average's weight", "0 (none)"),
    Key("log", choice("0", "1"), "`1`: a log scale", "a linear scale"),
)

PLAYLISTS = _table(
    Key("playlist", text(64), "the playlist shown", "the built-in playlist of scenes"),
)

PRESENTER = _table(
    Key("playlist", text(64), "the playlist followed", "the built-in playlist of scenes"),
    Key("item", whole(1, 9999), "the slide shown, 1-based", "1"),
)

# The grouping of the records table (the Groups page): its columns, the column it is sorted by and the direction.
GROUP_SORTS = ("count", "SR", "mAcc", "mIoU")  # besides the grouped columns themselves
GROUPS = _table(
    Key("by", columns(GROUP_BY), "the columns grouped by, in order (`method,T,seed`)", "`method,T`"),
    Key("sort", choice(*GROUP_BY, *GROUP_SORTS), "the column the table is sorted by", "the grouped columns, in order"),
    Key("desc", flag, "`1`: sorted high to low", "low to high"),
)

# The Gallery (components.records.gallery): a filter per column of the records table (several values each: a
# tile shows when its row holds one of them), the sort, the page: a saved view of the grid.
_ANY = "every value"
GALLERY = _table(
    Key("method", listed(64, 64), "the methods shown (comma-separated)", _ANY),
    Key("T", listed(MAX_HORIZON, 4), "the horizons shown", _ANY),
    Key("seed", listed(64, 12), "the seeds shown", _ANY),
    Key("task", listed(100), "the tasks shown (task ids)", _ANY),
    Key("pattern", listed(8, 32), "the failure patterns shown (`success`: the plans right)", _ANY),
    Key("outcome", listed(2, 8), "`success` or `failure`", _ANY),
    Key("first", listed(2, 8), "the plan's first step `right` or `wrong`", _ANY),
    Key("last", listed(2, 8), "the plan's last step `right` or `wrong`", _ANY),
    Key("ends", listed(2, 8), "both ends `right`, or `wrong`", _ANY),
    Key("file", listed(200), "the records files shown", _ANY),
    Key("sort", text(32), "the column the tiles are sorted by", "the records' own order"),
    Key("desc", flag, "`1`: largest first", "smallest first"),
    Key("per", choice("12", "24", "48"), "tiles per page", "12"),
    Key("page", whole(1, 10**6), "the grid's page", "1"),
)
