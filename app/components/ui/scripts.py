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

__all__ = ["SLIDE_KEYS", "SPEAKER_KEYS", "speaker_help", "speaker_script", "STATIC", "STATIC_URL", "call", "data_block", "served", "source"]

STATIC = Path(__file__).resolve().parents[2] / "static"
STATIC_URL = "app/static/"  # relative: a frame written with srcdoc resolves it against the page's address
# The keys a presenter's clicker sends (and the arrows): the next slide, the previous one; Home and End: the
# first and the last. Read by the page's
# listener (kepp-keys.js), by the graph frame (kepp-graph.js hands them to the page) and the presenter view.
SLIDE_KEYS = {"next": ["ArrowRight", "PageDown", " ", "Spacebar"], "prev": ["ArrowLeft", "PageUp"], "first": ["Home"],
              "last": ["End"]}

# The keys speakers expect beside them (reveal.js's), in the deck and the live slides (kepp-speaker.js): blank
# the screen, fullscreen, the overview of the slides, this list; a number then Enter jumps to that slide.
SPEAKER_KEYS = {"blank": ["b", "B", "."], "fullscreen": ["f", "F"], "overview": ["o", "O", "Escape"], "help": ["?"]}


def speaker_help(deck: bool) -> list[list[str]]:
    """The ``?`` list: each key and what it does (``deck``: the offline deck's, with its presenter view).

    >>> [what for keys, what in speaker_help(False) if keys == "B or ."]
    ['blank the screen (again: back)']
    """
    rows = [["→ PageDown Space", "next slide"], ["← PageUp", "previous slide"], ["Home / End", "first / last slide"],
            ["B or .", "blank the screen (again: back)"], ["F", "fullscreen (again: back)"],
            ["O or Esc", "overview of the slides: click one to go there"], ["a number, Enter", "go to that slide"]]
    if deck:
        rows.append(["P", "the presenter view (note, next slide, clock, countdown) in a new window"])
    return rows + [["?", "this list (again or Esc: close)"]]


def speaker_script(titles, own: str = "", deck: bool = False) -> str:
    """The speaker's keys (app/static/kepp-speaker.js) for slides with these ``titles``; ``own``: a selector of
    widgets that keep their keys; the page sets ``__keppDriver`` (see the script)."""
    return call("kepp-speaker.js", {"keys": SPEAKER_KEYS, "help": speaker_help(deck), "titles": list(titles),
                                    "own": own})


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
