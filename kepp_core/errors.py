"""One exception type for every problem a user can fix (bad files, bad values).

The CLI prints a ``KeppError`` as a one-line message and exits non-zero without a
traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class KeppError(Exception):
    """A user-facing error: the message names the file, line or value and what was expected."""


def closest_names(name: str, known: Iterable[str], n: int = 5) -> list[str]:
    """Known names closest to ``name`` (for "did you mean" hints).

    >>> closest_names("pour watr", ["pour water", "stir", "add sugar"])
    ['pour water']
    """
    known = list(known)
    hits = difflib.get_close_matches(name, known, n=n, cutoff=0.4)
    if not hits:
        low = name.lower()
        hits = [k for k in known if low in k.lower() or k.lower() in low][:n]
    return hits


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> KeppError:
    """A KeppError for an unknown name that lists the closest known names."""
    hints = closest_names(name, known)
    hint = f"; closest known: {', '.join(repr(h) for h in hints)}" if hints else ""
    return KeppError(f"unknown {kind} {name!r}{hint}")


# the line a TorchScript interpreter's error ends with: the exception raised inside the module
_SCRIPTED = re.compile(r"^(?:builtins\.)?(\w+(?:Error|Exception)): ?(.*)$")


def first_line(e: BaseException, most: int = 160) -> str:
    r"""The first line of an exception's message (at most ``most`` characters), or its type's name
    where it has none. A TorchScript interpreter's error, whose message begins with its own
    traceback, gives the error raised inside the module, as its last line names it.

    >>> first_line(ValueError("bad frames\nmore"))
    'bad frames'
    >>> first_line(RuntimeError("The following operation failed...\n  File x\nbuiltins.ValueError: no fps\n"))
    'ValueError: no fps'
    >>> first_line(KeyError())
    'KeyError'
    """
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if len(lines) > 1 and ("TorchScript" in lines[0] or "operation failed" in lines[0]):
        raised = next((m for m in map(_SCRIPTED.match, reversed(lines)) if m), None)
        if raised is not None:
            return f"{raised.group(1)}: {raised.group(2)}".rstrip(": ")[:most]
    return (lines[0] if lines else type(e).__name__)[:most]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str, keep_newlines: bool = False) -> str:  # noqa: D417
    """``text`` safe to write to a terminal: every control character (ESC and CSI sequences, NUL,
    carriage returns, bells) written as its escape, so a dataset string can neither move the cursor,
    recolour or clear the screen nor fake another line. The one function every printer uses.

    >>> printable("pour\\x1b[2Jwater\\r")
    'pour\\\\x1b[2Jwater\\\\r'
    >>> printable("a\\nb"), printable("a\\nb", keep_newlines=True)
    ('a\\\\nb', 'a\\nb')
    """
    def escape(m: re.Match) -> str:
        c = m.group()
        if keep_newlines and c in "\n\t":
            return c
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, f"\\x{ord(c):02x}")
    return _CONTROL.sub(escape, text)
