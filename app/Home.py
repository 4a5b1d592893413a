"""KEPP app: the main script. Run with ``kepp app`` (or ``streamlit run app/Home.py``).

It registers the pages (``components.ui.pages.PAGES``, their scripts in ``app/views/``) with Streamlit's
navigation and runs the one the address names; Home is ``app/views/0_Home.py``."""

from __future__ import annotations

from components.ui.config import navigation

navigation()
