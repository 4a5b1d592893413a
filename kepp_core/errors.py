"""One exception type for every problem a user can fix (bad files, bad values).

The CLI prints a ``KeppError`` as a one-line message and exits non-zero without a
traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
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
