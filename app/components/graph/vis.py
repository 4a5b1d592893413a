"""vis.js (vis-network), the library that draws every graph, as the app serves it.

The files are the ones the installed pyvis package ships (its template inlines them into a page): the
newest ``vis-network.min.js`` and ``vis-network.css`` under ``pyvis/templates/lib/`` (vis-network 9.1.2
with pyvis 0.3.2: 469 kB of script, 220 kB of styles; dual-licensed Apache-2.0 or MIT, the notice kept
in the script's own header). ``make install`` copies them into ``app/static/`` (:func:`install`, run by
``app/install_vis.py``; git ignores them there: they are pyvis's, not the repository's), and Streamlit
serves that folder at ``app/static/`` (``server.enableStaticServing`` in ``.streamlit/config.toml``), so that
a graph's frame carries only its graph and the browser compiles vis.js once. The app never writes them
while it runs: where they are missing, or differ from the installed pyvis's, a frame carries vis.js
inline (:func:`served` is empty), as the HTML export always does."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from components.ui.scripts import STATIC, STATIC_URL
from components.ui.text import page_text

__all__ = ["files", "install", "serve", "served"]


def files() -> list[Path]:
    """The vis-network script and style sheet that pyvis's template inlines."""
    import pyvis

    lib = Path(pyvis.__file__).parent / "templates" / "lib"
    return sorted(lib.glob("vis-*/vis-network.min.js"))[-1:] + sorted(lib.glob("vis-*/vis-network.css"))[-1:]


def install(static: Path | None = None) -> list[Path]:
    """Copy :func:`files` into ``static`` as the page inlines them (text; each written to a temporary file,
    then renamed over the old copy, never over anything but a regular file); the paths written."""
    out, static = [], STATIC if static is None else static
    static.mkdir(exist_ok=True)
    for src in files():
        text, dest = src.read_text(encoding="utf-8"), static / src.name
        if dest.is_file() and dest.read_text(encoding="utf-8") == text:
            continue
        if dest.exists() and not dest.is_file():
            raise OSError(f"{dest} is not a regular file: not replaced")
        fd, tmp = tempfile.mkstemp(dir=static, prefix=f".{src.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
        out.append(dest)
    return out


def served() -> tuple[tuple[str, str], ...]:
    """``(inlined text, served URL)`` for each vis.js file where ``app/static/`` holds the installed pyvis's
    copy of every one (read once per process); empty otherwise: the drawings then carry vis.js inline (and
    a copy installed later is found by the next drawing)."""
    if STATIC not in _SERVED:
        found = _copies(STATIC)
        if not found:
            return ()
        _SERVED[STATIC] = found
    return _SERVED[STATIC]


_SERVED: dict[Path, tuple[tuple[str, str], ...]] = {}


def _copies(static: Path) -> tuple[tuple[str, str], ...]:
    out = []
    try:
        for src in files():
            text, copy = src.read_text(encoding="utf-8"), static / src.name
            if not copy.is_file() or copy.read_text(encoding="utf-8") != text:
                return ()
            out.append((text, STATIC_URL + src.name))
    except OSError:
        return ()
    return tuple(out)


def serve(page: str) -> str:
    """``page`` with its inlined vis.js replaced by the app's served copies (unchanged where they
    are not served)."""
    for text, url in served():
        if url.endswith(".js"):
            page = page.replace(f"<script>{text}</script>", f'<script src="{page_text(url)}"></script>', 1)
        else:
            page = page.replace(f"<style>{text}</style>", f'<link rel="stylesheet" href="{page_text(url)}">', 1)
    return page
