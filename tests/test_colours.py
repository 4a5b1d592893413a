"""Colours are written once (``app/components/ui/colours.py``): no other module of ``app/`` or ``kepp_core/``
(Python, the app's scripts and stylesheets) holds a colour literal (a hex or rgb()/hsl() colour; a CSS colour
name as a style's or a figure's colour, a Streamlit Markdown colour, or a quoted string in the app), and the
scripts receive the table's colours (the page's CSS variables, the graph frame's JSON block)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from PIL import ImageColor

REPO = Path(__file__).resolve().parent.parent
TABLE = "app/components/ui/colours.py"  # the one module allowed to write a colour
# A colour literal: #rgb, #rgba, #rrggbb or #rrggbbaa (not inside a longer word), or rgb( / rgba( / hsl( with a number.
LITERAL = re.compile(r"(?<![\w&])#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})(?![\w-])"
                     r"|\b(?:rgba?|hsla?)\(\s*[0-9]")
# A colour by its CSS name (Pillow's table of the 148 names): as the value of a style property or a figure's colour
# (color, background, fill, stroke, outline, border), as a Streamlit Markdown colour (``:red[...]``), or, in the app,
# as a quoted string of its own ("white").
_NAMES = "|".join(sorted(ImageColor.colormap, key=len, reverse=True))
_NAME = rf"(?<![\w.{{$-])(?:{_NAMES})(?![\w-])"
NAMED = re.compile(rf"\b(?:color|background(?:-color)?|fill|stroke|outline(?:-color)?|border(?:-[a-z]+)*)\s*[:=]\s*"
                   rf"[\"']?[^;\"'\n]*?{_NAME}|(?<![\w:]):(?:{_NAMES})\[")
QUOTED = re.compile(rf"([\"'])(?:{_NAMES})\1")


def _scanned() -> list[str]:
    """The repository's files under app/ and kepp_core/ that are code or styles (vendored files, ignored
    by git, are not the repository's)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "app", "kepp_core"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return sorted(p for p in out if p.endswith((".py", ".js", ".css", ".html")) and (REPO / p).is_file())


def test_the_literal_pattern_finds_colours_and_skips_what_is_not_one():
    found = [m.group(0) for m in LITERAL.finditer(
        'color:#555; fill = "#1a1a1a"; rgba(0, 0, 0, 0.1) #ffffff80 issue #12 see #deadline &#123; x#abc')]
    assert found == ["#555", "#1a1a1a", "rgba(0", "#ffffff80"]


def test_the_name_patterns_find_named_colours_in_code_and_skip_words():
    line = ('line=dict(color="white"); border: 1px solid silver; f":red[{x}]"; color: var(--kepp-white); '
            'color:{colours.WHITE}; colour:red (a slice); green for right; :material/warning:')
    assert [m.group(0) for m in NAMED.finditer(line)] == ['color="white', "border: 1px solid silver", ":red["]
    assert [m.group(0) for m in QUOTED.finditer('c = "white"; k = "whiteboard"; f"{\'green\' if ok else x}"')] == [
        '"white"', "'green'"]


def _offenders(files: list[str]) -> list[str]:
    found = []
    for p in files:
        patterns = (LITERAL, NAMED, QUOTED) if p.startswith("app/") else (LITERAL, NAMED)
        for n, line in enumerate((REPO / p).read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{p}:{n}: {m.group(0)}" for pattern in patterns for m in pattern.finditer(line)]
    return found


def test_no_module_outside_the_colour_table_holds_a_colour_literal():
    files = _scanned()
    assert TABLE in files and any(p.endswith(".js") for p in files)  # the scan sees the table and the scripts
    offenders = _offenders([p for p in files if p != TABLE])
    assert offenders == [], "colour literals outside " + TABLE + ":\n" + "\n".join(offenders)
    assert _offenders([TABLE])  # the patterns find the table's own colours
    assert LITERAL.search((REPO / TABLE).read_text(encoding="utf-8"))  # the table itself holds them


def test_the_scripts_read_the_tables_colours():
    from components.ui import colours
    from components.graph import page as graph_page

    page = graph_page.graph_html([(0, "a", "", colours.NODE, 18, 0, 0, colours.INK)], [], height=200, inline=True)
    assert '"colours"' in page and all(v in page for v in colours.GRAPH_SCRIPT.values())
    css = colours.css_variables()
    # every CSS variable a script, a stylesheet or a module of the app reads is one of the table's
    used = {(p, m) for p in _scanned() if p.startswith("app/")
            for m in re.findall(r"var\((--kepp-[\w-]+)\)", (REPO / p).read_text(encoding="utf-8"))}
    assert {p for p, _ in used} >= {"app/static/kepp-presenter.js", "app/static/kepp-deck.css",
                                    "app/components/talk/playlists.py"}
    assert [f"{p}: {m}" for p, m in sorted(used) if m not in colours.CSS_VARIABLES or m not in css] == []
