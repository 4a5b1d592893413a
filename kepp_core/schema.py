"""Schemas of untrusted files: every field's type, range and size checked in one pass before use.

Each format a user or a visitor hands the package (plans-JSONL lines, official lists, COIN
records, feature manifests and shape caches, training state, app configs) is described once,
as a :class:`msgspec.Struct` beside its reader, built from the types here: :data:`Id` (video
and task ids: non-empty, no control characters, no path separators, at most
:data:`MAX_ID_CHARS`; an id names files), :data:`TaskKey` (a task id, or ``""`` where a file
has no task), :data:`Int64`, :data:`Finite`, :data:`Count`, :data:`Positive`. Task names and step
labels are text, not ids: anything printable, escaped where shown. Rules that span fields
(one segment per step, segments within the duration) live in the struct's ``__post_init__``,
so a record that decodes is a record that is valid. :func:`decode_json` and :func:`convert`
turn a refusal into one :class:`~kepp_core.errors.KeppError` naming the file (and line) and the
key, and never quote more of the file than the offending value; :func:`check_nesting` refuses a
JSON or TOML text nested deeper than its format needs before it is parsed.

>>> class Row(Struct):
...     video: Id
...     steps: Annotated[list[str], Meta(min_length=1)]
>>> decode_json(b'{"video": "v1", "steps": ["a"]}', Row, "plans.jsonl:1")
Row(video='v1', steps=['a'])
>>> decode_json(b'{"video": "../v1", "steps": ["a"]}', Row, "plans.jsonl:1")
Traceback (most recent call last):
...
kepp_core.errors.KeppError: plans.jsonl:1: 'video' must be an id (non-empty, no control characters or path separators, at most 200 characters)
>>> decode_json(b'{"video": 7, "steps": ["a"]}', Row, "plans.jsonl:1")
Traceback (most recent call last):
...
kepp_core.errors.KeppError: plans.jsonl:1: 'video': expected a string, got an integer
"""

from __future__ import annotations

import math
import pickletools
import re
import types
from typing import IO, Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta, Struct

from kepp_core.errors import KeppError
from kepp_core.io import decode_utf8, parse_json, utf8_text

T = TypeVar("T")

MAX_ID_CHARS = 200
# no C0/C1 control characters (NUL, ESC, newlines) and no path separators
ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f/\\]+$"
Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
# a task id, or "" for "no task" (an official list's line without one, a graph built without tasks)
TASK_KEY_PATTERN = r"^[^\x00-\x1f\x7f-\x9f/\\]*$"
TaskKey = Annotated[str, Meta(max_length=MAX_ID_CHARS, pattern=TASK_KEY_PATTERN)]
Positive = Annotated[int, Meta(ge=1, le=2**53)]  # a size or a count of at least one
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]  # what a C long, numpy and torch hold
Count = Annotated[int, Meta(ge=0, le=2**53)]  # a count a float64 still holds exactly
Finite = Annotated[float, Meta(ge=-1e308, le=1e308)]  # refuses NaN and the infinities too
NonNegative = Annotated[float, Meta(ge=0, le=1e308)]

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_ID_RULE = (f"must be an id (non-empty, no control characters or path separators, at most "
            f"{MAX_ID_CHARS} characters)")


def _key_name(path: str) -> str:
    """msgspec's ``$``-path as the message names it: ``.video`` -> ``'video'``,
    ``.segments[0][1]`` -> ``'segments'[0][1]``, ``.train.lr`` -> ``'train.lr'``."""
    m = re.match(r"^\.([^\[]+)(.*)$", path)
    return f"'{m.group(1)}'{m.group(2)}" if m else path


_KINDS = {"`object`": "a JSON object", "`array`": "a list", "`str`": "a string", "`float`": "a number",
          "`int`": "an integer", "`bool`": "true or false", "`null`": "null"}


def _describe(message: str, hints: dict[str, str]) -> str:
    """msgspec's message in the package's words: ``'steps' must be a list of step labels
    (expected a list, got a string)``, with the key path and the schema's hint for its key."""
    m = _AT.match(message)
    msg, path = m.group("msg"), m.group("path") or ""
    name = _key_name(path)
    inside = f" in {name}" if name else ""
    if missing := re.match(r"Object missing required field `(.+)`", msg):
        return f"missing key '{missing.group(1)}'{inside}"
    if unknown := re.match(r"Object contains unknown field `(.+)`", msg):
        known = f" (expected some of {', '.join(sorted(hints))})" if hints and not inside else ""
        return f"unknown key '{unknown.group(1)}'{inside}{known}"
    top = re.match(r"^\.([^.\[]+)", path)
    hint = hints.get(top.group(1)) if top else None
    if "matching regex" in msg:
        pattern = msg.replace(chr(92) * 2, chr(92))
        if ID_PATTERN in pattern or TASK_KEY_PATTERN in pattern:
            return f"{name or 'value'} {_ID_RULE}"
        return f"{name or 'value'} must be {hint or 'text'} without control characters"
    msg = re.sub(r"`([^`]+)`", lambda k: " or ".join(_KINDS.get(f"`{t}`", t) for t in k.group(1).split(" | ")), msg)
    msg = msg[:1].lower() + msg[1:]
    if hint is not None:
        at = f" at {name}" if name != f"'{top.group(1)}'" else ""
        if msg.startswith(f"expected {hint}, ") and not at:  # 'x' must be true or false (got a string)
            return f"'{top.group(1)}' must be {hint} ({msg[len(f'expected {hint}, '):]})"
        return f"'{top.group(1)}' must be {hint} ({msg}{at})"
    return f"{name}: {msg}" if name else msg


def validation_error(e: msgspec.ValidationError | msgspec.DecodeError, where: str,
                     schema: type | None = None) -> KeppError:
    """A KeppError naming ``where`` and the key for a refusal by ``schema`` (its ``HINTS``, a
    ``{key: what it must be}`` class attribute, phrase the message; a union's members' hints
    together)."""
    hints = getattr(schema, "HINTS", None)
    if hints is None:
        hints = {k: v for member in get_args(schema) for k, v in getattr(member, "HINTS", {}).items()}
    return KeppError(f"{where}: {_describe(str(e), hints)}")


def decode_json(data: bytes | str | msgspec.Raw, schema: type[T], where: str,
                decoder: msgspec.json.Decoder | None = None, lines: bool = False) -> T:
    """``data`` (one JSON document) decoded into ``schema``; invalid JSON, nesting the decoder
    cannot follow and every refusal of the schema are a KeppError naming ``where``. Syntax errors
    are described by :func:`kepp_core.io.parse_json` (the line, column or value at fault; with
    ``lines``, ``where`` is a whole file and the message names the line)."""
    try:
        return (decoder or msgspec.json.Decoder(schema)).decode(data)
    except msgspec.ValidationError as e:
        raise validation_error(e, where, schema) from None
    except RecursionError:
        raise KeppError(f"{where}: JSON nested too deeply to read") from None
    except (msgspec.DecodeError, UnicodeDecodeError):
        if isinstance(data, msgspec.Raw):  # one item of a document decoded lazily: its bytes (a bad byte inside)
            data = bytes(data)
        if isinstance(data, bytes):
            data = utf8_text(data, where) if lines else decode_utf8(data, where)
        parse_json(data, where, lines=lines)  # raises with the precise reason
        raise KeppError(f"{where}: not readable JSON") from None


def convert(obj: Any, schema: type[T], where: str) -> T:
    """``obj`` (parsed JSON or TOML) checked against ``schema`` (strict types: no string read as
    a number); a KeppError naming ``where`` and the key otherwise."""
    try:
        return msgspec.convert(obj, schema, strict=True)
    except msgspec.ValidationError as e:
        raise validation_error(e, where, schema) from None
    except RecursionError:
        raise KeppError(f"{where}: nested too deeply to read") from None


def check_ranges(obj: Any, what: str) -> None:
    """Every field of the dataclass or Struct ``obj`` checked against the type and range its
    annotation declares (:class:`~msgspec.Meta` bounds and lengths, ``Literal`` choices, list and
    tuple items): a KeppError ``"{what} NAME=VALUE must be ..."`` for the first value outside, in
    words a person reads (the ranges are declared once, on the type; this says them).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Opt:
    ...     warmup: Annotated[int, Meta(ge=0)] = 0
    ...     lr: Annotated[float, Meta(gt=0, le=1e308)] = 1.0
    >>> check_ranges(Opt(warmup=-5), "training option")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: training option warmup=-5 must not be negative
    >>> check_ranges(Opt(lr=float("nan")), "training option")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: training option lr=nan must be a finite number
    """
    hints = get_type_hints(type(obj), include_extras=True)
    names = getattr(obj, "__struct_fields__", None) or [n for n in getattr(obj, "__dataclass_fields__", {})]
    for name in names:
        value = getattr(obj, name)
        _check_value(hints[name], value, name, f"{what} {name}={_shown(value)}: " if isinstance(value, (list, tuple))
                     else what)


def _shown(value: Any) -> str:
    """A value as a message shows it (sequences as lists)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


_TYPE_WORDS = {int: "a whole number", float: "a number", str: "text", bool: "true or false",
               list: "a list", tuple: "a list", dict: "a table"}


def _check_value(tp: Any, value: Any, path: str, what: str) -> None:
    """One value against its annotation (:func:`check_ranges`); ``what`` starts the message (ending in
    ``": "`` it already names the whole value, and the part at ``path`` follows)."""
    metas: list[Meta] = []
    while get_origin(tp) is Annotated:
        tp, *extra = get_args(tp)
        metas += [m for m in extra if isinstance(m, Meta)]
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return
        tp = next(a for a in get_args(tp) if a is not type(None))
        return _check_value(Annotated[(tp, *metas)] if metas else tp, value, path, what)
    if origin is Literal:
        if value not in get_args(tp):
            raise KeppError(f"{_head(what, path, value)} is not one of {', '.join(map(str, get_args(tp)))}")
        return
    base = origin or tp
    ok = (isinstance(value, base) and not (isinstance(value, bool) and base is not bool)) or (
        base is float and isinstance(value, int) and not isinstance(value, bool)) or (
        base in (list, tuple) and isinstance(value, (list, tuple)))  # a list from JSON or TOML holds a tuple
    if base in _TYPE_WORDS and not ok:
        raise KeppError(f"{_head(what, path, value)} must be {_TYPE_WORDS[base]}")
    for m in metas:
        if isinstance(value, (int, float)):
            problem = _out_of_range(m, value)
        else:
            n = len(value)
            low, high = m.min_length, m.max_length
            problem = None if (low is None or n >= low) and (high is None or n <= high) else (
                f"must hold {low if low is not None else 0} to {high if high is not None else 'any number of'} values")
        if problem:
            raise KeppError(f"{_head(what, path, value)} {problem}")
    if base in (list, tuple):
        args = get_args(tp)
        for i, item in enumerate(value):
            item_tp = args[0] if base is list or (len(args) == 2 and args[1] is Ellipsis) else args[i]
            _check_value(item_tp, item, f"{path}[{i}]", what)


def _head(what: str, path: str, value: Any) -> str:
    """The start of a message about ``value`` at ``path`` (``what`` ending in ``": "`` names the whole
    value already: the part follows, or nothing for the whole)."""
    if not what.endswith(": "):
        return f"{what} {path}={_shown(value)}"
    return what[:-2] if "[" not in path else f"{what}{path}={_shown(value)}"


def _out_of_range(m: Meta, value: float) -> str | None:
    """What is wrong with a number against the bounds of ``m`` (None: nothing)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number" + (" >= 0" if m.ge == 0 else "")
    if m.gt is not None and not value > m.gt:
        return "must be positive" if m.gt == 0 else f"must be greater than {m.gt}"
    if m.ge is not None and value < m.ge:
        if m.ge == 0:
            return "must be a finite number >= 0" if isinstance(value, float) else "must not be negative"
        return f"must be at least {m.ge}"
    if m.lt is not None and not value < m.lt:
        return f"must be in [{m.ge if m.ge is not None else '-inf'}, {m.lt})"
    if m.le is not None and value > m.le:
        return f"is too large (at most {m.le:g})" if isinstance(m.le, float) else f"is too large (at most {m.le})"
    return None


def check_nesting(data: bytes | str, where: str, max_depth: int, syntax: str = "json") -> None:
    """Refuse, before it is parsed, a JSON (or, with ``syntax="toml"``, TOML) text whose arrays and
    objects (tables) nest more than ``max_depth`` deep: a KeppError naming ``where``. Strings (and
    TOML's comments) are skipped, so a bracket inside a label does not count.

    >>> check_nesting(b'{"a": [1, "]]]"]}', "c.json", 2)
    >>> check_nesting(b'{"a": [[[1]]]}', "c.json", 3)
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: c.json: nested too deeply (more than 3 levels; refused before reading it)
    """
    text = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    brackets = (_TOML_SKIP if syntax == "toml" else _JSON_SKIP).sub(b"", text).translate(None, _NOT_BRACKETS)
    if len(brackets) <= 2 * max_depth:
        return
    depth = 0
    for b in brackets:
        depth += 1 if b in b"[{" else -1
        if depth > max_depth:
            raise KeppError(f"{where}: nested too deeply (more than {max_depth} levels; refused before reading it)")


_JSON_SKIP = re.compile(rb'"(?:[^"\\]|\\.)*"')
_TOML_SKIP = re.compile(rb'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def check_id(value: Any, what: str, where: str, allow_empty: bool = False) -> str:
    """``value`` when it is an :data:`Id` (with ``allow_empty``, a :data:`TaskKey`: ``""`` too),
    else a KeppError naming ``where`` and ``what``.

    >>> check_id("101", "task id", "tasks_primary.txt:1")
    '101'
    >>> check_id("a\\x1b[2J", "task id", "tasks_primary.txt:1")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: tasks_primary.txt:1: task id must be an id (non-empty, no control characters or path separators, at most 200 characters)
    """
    if value == "" and allow_empty:
        return value
    if type(value) is not str or not value or len(value) > MAX_ID_CHARS or not _ID.match(value):
        raise KeppError(f"{where}: {what} {_ID_RULE}")
    return value


_ID = re.compile(ID_PATTERN)

# Opcodes that change the object below their arguments in place (its depth grows by theirs).
_IN_PLACE = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
_MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


def check_pickle(data: bytes | IO[bytes], where: str, max_depth: int = 64, max_ops: int = 50_000_000) -> int:
    """Refuse, before anything is built, a pickle that nests objects deeper than ``max_depth`` or
    has more than ``max_ops`` opcodes (a KeppError naming ``where``). The opcodes are walked with
    :mod:`pickletools` and each stack entry's nesting depth is followed, so a tuple nested a million
    times deep (hashing it as a dict key overflows the C stack: the interpreter crashes) is refused
    without building it. Pickles a program writes for graphs or features nest a handful of levels.
    ``data``: the pickle's bytes, or a binary file positioned at its start (a file that holds
    several pickles one after another: ``torch.save``'s plain format). Returns the offset just
    after the pickle's ``STOP`` (in the file, for a file).

    >>> import pickle
    >>> data = pickle.dumps({"a": [1, (2, 3)]})
    >>> check_pickle(data, "x.pkl") == len(data)  # the offset just after its STOP
    True
    >>> check_pickle(b"\\x80\\x02}" + b")" + b"\\x85" * 100 + b"K\\x01s.", "x.pkl")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: x.pkl: the pickle nests objects more than 64 levels deep (refused before loading)
    """
    stack: list[int | None] = []  # each entry's nesting depth; None marks a MARK
    memo: dict[int, int] = {}
    end = None
    try:
        for count, (op, arg, pos) in enumerate(pickletools.genops(data), 1):
            if count > max_ops:
                raise KeppError(f"{where}: the pickle has more than {max_ops:,} opcodes (refused before loading)")
            name = op.name
            if name in _MEMO_PUT or name == "MEMOIZE":
                memo[arg if name != "MEMOIZE" else len(memo)] = stack[-1] or 0
                continue
            if name in _MEMO_GET:
                stack.append(memo.get(arg, 0))
                continue
            if name == "MARK":
                stack.append(None)
                continue
            if name == "STOP":
                end = pos + 1
                break
            before = [s.name for s in op.stack_before]
            popped: list[int] = []
            if "mark" in before:
                k = len(stack) - 1 - stack[::-1].index(None)
                popped, fixed = stack[k + 1:], before.index("mark")
                del stack[k:]
                popped = stack[len(stack) - fixed:] + popped if fixed else popped
                del stack[len(stack) - fixed:]
            elif before:
                popped = stack[-len(before):]
                if len(popped) < len(before) or None in popped:
                    raise ValueError("stack underflow")
                del stack[-len(before):]
            if name in _IN_PLACE:
                depth = max([popped[0]] + [1 + d for d in popped[1:]])
            else:
                depth = 1 + max(popped) if popped else 0
            if depth > max_depth:
                raise KeppError(f"{where}: the pickle nests objects more than {max_depth} levels deep "
                                f"(refused before loading)")
            stack.extend([depth] * len(op.stack_after))
    except (ValueError, IndexError, TypeError) as e:  # truncated, unknown opcode, stack underflow
        raise KeppError(f"{where}: not a readable pickle ({type(e).__name__} while reading its opcodes)") from None
    if end is None:  # genops stops quietly at the end of a file without STOP
        raise KeppError(f"{where}: not a readable pickle (it ends before its STOP opcode)")
    return end

__all__ = ["Count", "Finite", "Id", "Int64", "MAX_ID_CHARS", "Meta", "NonNegative", "Positive", "Struct", "TaskKey",
           "check_id", "check_nesting", "check_pickle", "convert", "decode_json", "validation_error"]
