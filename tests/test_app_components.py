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


def test_the_page_list_is_declared_once_and_is_the_folder_streamlit_navigates():
    """``config.PAGES`` is the one list of pages (paths, labels, icons, what each is for); Streamlit's own
    navigation reads ``app/pages/`` (a ``pages/`` folder beside ``Home.py`` puts Streamlit 1.67 in its
    file-based navigation, whatever ``st.navigation`` the main script calls), naming a page by its file:
    each file is one entry of the list, under the label its file name gives, in the list's order."""
    from streamlit.source_util import page_icon_and_name

    from components.ui.config import PAGES

    files = sorted((APP_DIR / "pages").glob("*.py"))
    assert [p.path for p in PAGES.values()] == ["Home.py", *(f"pages/{f.name}" for f in files)]
    assert [label for label in PAGES if label != "Home"] == [page_icon_and_name(f)[1].replace("_", " ") for f in files]
    assert all((APP_DIR / p.path).is_file() and p.icon.startswith(":material/") for p in PAGES.values())
