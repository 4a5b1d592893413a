"""griffe extension for the API reference: docstring examples (``>>>`` lines and their output)
are shown as Python console code, not read as Markdown (where ``[('b', 'x')]`` would be a link)."""

from __future__ import annotations

import griffe


def fence_examples(text: str) -> str:
    """``text`` with every run of doctest lines (a ``>>>`` line, its ``...`` lines and its output)
    inside a ``pycon`` code fence.

    >>> print(fence_examples("Sum.\\n\\n>>> 1 + 1\\n2\\n"))
    Sum.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    """
    out, inside, indent = [], False, ""
    for line in text.split("\n"):
        stripped = line.strip()
        if not inside and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            inside = True
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the examples of every documented object."""

    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_examples(obj.docstring.value)
