"""Dataset text in the pages: Markdown escapes (labels are data, never markup), inline code,
plans as one line, the dataset caption every page shows."""

from __future__ import annotations

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
