"""The app's plain-Python components (app/components: the plan graph's layout, URLs, names, search,
playlists, slices, ...) keep the examples in their docstrings true: they run here, as the package's
own doctests run in the suite (app/ is not a package on pytest's path)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from kepp_core.paths import REPO_ROOT

APP_DIR = REPO_ROOT / "app"

MODULES = sorted(f"{p.parent.name}.{p.stem}" for p in (APP_DIR / "components").glob("*/*.py")
                 if p.stem != "__init__" and ">>>" in p.read_text(encoding="utf-8"))


def test_the_components_with_examples_are_found():
    assert {"ui.names", "graph.plangraph", "ui.search", "records.urls"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_a_component_hold(name):
    module = importlib.import_module(f"components.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_every_page_is_registered_once_and_its_script_is_the_folder_it_navigates():
    """``pages.PAGES`` is the one registry of pages (name, script, label, icon, URL keys): each script of
    ``app/views/`` is one entry, in the list's order; no ``app/pages/`` folder (it would put Streamlit in its
    file-based navigation, whatever ``st.navigation`` the main script calls); the page bar's, Home's and the
    URL schema's pages are the registry's."""
    from components.ui import url_schema
    from components.ui.pages import FOLDER, PAGES, TABLES

    files = sorted((APP_DIR / FOLDER).glob("*.py"))
    assert [p.path for p in PAGES.values()] == [f"{FOLDER}/{f.name}" for f in files]
    assert not (APP_DIR / "pages").exists()
    assert all(p.icon.startswith(":material/") for p in PAGES.values())
    assert [p.name for p in PAGES.values() if p.home] == ["home"]
    assert not hasattr(url_schema, "TABLES") and all(TABLES[p.name] is p.keys for p in PAGES.values() if p.keys)


def test_every_link_written_before_the_registry_still_names_its_page():
    """Streamlit's file-based navigation named a page by its file (``4_Failure_cases.py``: ``/Failure_cases``);
    the registry's addresses are the same, so old deep links (``/Failure_cases?method=...&T=4``) still open."""
    from streamlit.source_util import page_icon_and_name

    from components.ui.pages import PAGES

    assert {p.url_path: p.name for p in PAGES.values()} == {
        "": "home", "Plan": "plan", "Graph": "graph", "Heatmaps": "heatmaps", "Failure_cases": "failures",
        "Results": "results", "Training": "training", "Playlists": "playlists", "Presenter": "presenter",
        "Gallery": "gallery", "Groups": "groups"}
    before = {"Plan", "Graph", "Heatmaps", "Failure_cases", "Results", "Training", "Playlists", "Presenter"}
    old = [p for p in PAGES.values() if p.url_path in before]  # pages added since had no file-named links
    assert len(old) == len(before) and all(p.url_path == page_icon_and_name(APP_DIR / p.path)[1] for p in old)
