"""Dataset text in the pages: Markdown escapes (labels are data, never markup), inline code,
plans as one line, the dataset caption every page shows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from kepp_core.api import AppConfig

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|<>~$:&])")


def md(text) -> str:
    """Dataset text (labels, task names, ids, messages) for Streamlit Markdown: every Markdown,
    HTML and Streamlit-directive character is backslash-escaped (line breaks become spaces), so
    a label like ``![x](http://host/p.png)`` shows as text and never makes the browser fetch anything.

    >>> print(md("![x](http://h/p.png)"))
    \\!\\[x\\](http\\://h/p.png)
    """
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


# In a JSON literal inside <script>: characters that could end the script or the string in a browser.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value) -> str:
    """``value`` as a JavaScript literal that is safe inside an inline ``<script>``: JSON with
    ``<``, ``>``, ``&`` and the line separators U+2028/U+2029 escaped, so dataset text such as
    ``</script><script>...`` stays a string and reads back exactly.

    >>> text = "</script><script>alert(1)</script> & \u2028"
    >>> "<" in script_json(text), json.loads(script_json(text)) == text
    (False, True)
    """
    text = json.dumps(value, ensure_ascii=False)
    return "".join(_SCRIPT_UNSAFE.get(c, c) for c in text)


def md_code(text) -> str:
    """``text`` as an inline code span whose fence is longer than any backtick run inside it."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def dataset_caption(cfg: AppConfig, ds) -> str:
    """The line under a page title: dataset name, format, path, videos, actions."""
    root = cfg.root or (str(ds.root) if ds.root else "demo world")
    return (f"Dataset **{md(ds.name)}** ({md(cfg.dataset)} format) at {md_code(root)} · {len(ds.videos)} videos · "
            f"{ds.num_actions} actions")



def plan_text(labels: Iterable[str]) -> str:
    """A plan's step labels joined by arrows."""
    return " → ".join(labels)
