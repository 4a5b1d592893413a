"""mkdocs hook: the app's screenshots (``assets/screenshots/*.png``) join the site as
``screenshots/NAME.png`` without a copy in ``docs/``, so pages link them and ``--strict`` checks
the links."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

SCREENSHOTS = Path(__file__).resolve().parents[2] / "assets" / "screenshots"


def on_files(files: Files, config) -> Files:
    for png in sorted(SCREENSHOTS.glob("*.png")):
        files.append(File.generated(config, f"screenshots/{png.name}", abs_src_path=str(png)))
    return files
