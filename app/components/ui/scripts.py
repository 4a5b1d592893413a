"""The app's own JavaScript: files in ``app/static/`` (served by the app at ``app/static/``,
``server.enableStaticServing`` in .streamlit/config.toml), never code in Python strings. A script gets
the values it needs from Python as escaped JSON (:func:`components.ui.text.script_json`), never by
formatting text into its code:

- a served file reads them from a JSON block of its page (:func:`data_block`, :func:`served`);
- an inline script is the file's function called with them (:func:`call`: the file holds one
  function expression, ``(function (cfg) { ... })``);
- a ``st.components.v2`` component takes the file's module text (:func:`source`) and its data from
  the component's ``data``.

>>> "(function (cfg)" in source("kepp-keys.js")
True
>>> call("kepp-scroll.js", {"selector": "</script>"}).count("</script>")
1
"""

from __future__ import annotations

import functools
import hashlib
import html
from pathlib import Path

from components.ui.text import script_json

__all__ = ["SLIDE_KEYS", "STATIC", "STATIC_URL", "call", "data_block", "served", "source"]

STATIC = Path(__file__).resolve().parents[2] / "static"
STATIC_URL = "app/static/"  # relative: a frame written with srcdoc resolves it against the page's address
# The keys a presenter's clicker sends (and the arrows): the next slide, the previous one; Home and End: the
# first and the last. Read by the page's
# listener (kepp-keys.js), by the graph frame (kepp-graph.js hands them to the page) and the presenter view.
SLIDE_KEYS = {"next": ["ArrowRight", "PageDown", " ", "Spacebar"], "prev": ["ArrowLeft", "PageUp"], "first": ["Home"],
              "last": ["End"]}


@functools.cache
def source(name: str) -> str:
    """The text of the app's script ``name`` (a file of ``app/static/``)."""
    return (STATIC / name).read_text(encoding="utf-8")


def served(name: str) -> str:
    """A ``<script src>`` of the app's script ``name``, its address carrying the file's digest (a changed
    file is fetched again, an unchanged one comes from the browser's cache)."""
    digest = hashlib.sha1(source(name).encode()).hexdigest()[:12]
    return f'<script src="{html.escape(STATIC_URL + name)}?v={digest}"></script>'


def inline(name: str) -> str:
    """The app's script ``name`` inline (a page that must work alone, offline)."""
    return f"<script>{source(name)}</script>"


def data_block(element_id: str, value) -> str:
    """``value`` as a JSON block a script reads (``JSON.parse(document.getElementById(id).textContent)``):
    escaped for a ``<script>`` element, so dataset text never ends it."""
    return f'<script type="application/json" id="{html.escape(element_id)}">{script_json(value)}</script>'


def call(name: str, value) -> str:
    """An inline ``<script>`` that calls the function the file ``name`` holds with ``value`` (escaped JSON)."""
    return f"<script>{source(name).strip().rstrip(';')}({script_json(value)});</script>"
