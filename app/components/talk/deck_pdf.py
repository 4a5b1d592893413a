"""``kepp talk export --pdf``: the deck printed by Chromium, one slide a page (the deck's ``@media print`` styles:
1280x720 pages, no controls), written atomically. Chromium is the system's (``chromium`` on the PATH,
``/usr/bin/chromium``, or the file ``KEPP_CHROMIUM`` names), driven by Playwright for Python, headless and with
no network: the page is the deck's file and nothing else loads. Where either is missing the export says so in
one line and writes nothing; the HTML deck needs neither."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kepp_core.errors import KeppError

__all__ = ["CHROMIUM_ARGS", "chromium", "print_pdf"]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
LOAD_MS = 120_000  # a 40-slide deck of frames opens in seconds; a slow machine gets time


def chromium() -> str:
    """The Chromium the PDF is printed with, or a KeppError saying none was found."""
    named = os.environ.get("KEPP_CHROMIUM")
    found = named or shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    if not Path(found).is_file():
        where = f"KEPP_CHROMIUM names {named}, which is not a file" if named else \
            "no chromium on the PATH nor /usr/bin/chromium (or name one with KEPP_CHROMIUM)"
        raise KeppError(f"--pdf needs Chromium: {where}; nothing was written (the HTML deck needs no browser)")
    return found


def print_pdf(html: str) -> bytes:
    """The deck ``html`` printed to PDF bytes by headless Chromium (one page per slide)."""
    exe = chromium()
    try:
        from playwright.sync_api import Error as PlaywrightError, sync_playwright
    except ImportError:
        raise KeppError("--pdf needs Playwright for Python (pip install playwright); nothing was written") from None
    with tempfile.TemporaryDirectory(prefix="kepp-deck-") as tmp:
        page_file = Path(tmp) / "deck.html"
        page_file.write_text(html, encoding="utf-8")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
                try:
                    context = browser.new_context(viewport={"width": 1280, "height": 720})
                    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
                    page = context.new_page()
                    page.goto(page_file.as_uri(), wait_until="load", timeout=LOAD_MS)
                    page.emulate_media(media="print")
                    return page.pdf(prefer_css_page_size=True, print_background=True)
                finally:
                    browser.close()
        except PlaywrightError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise KeppError(f"--pdf: Chromium ({exe}) could not print the deck: {first}") from None
