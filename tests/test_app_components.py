"""The app's plain-Python components (app/components: the plan graph's layout, URLs, names, search,
playlists, slices, ...) keep the examples in their docstrings true: they run here, as the package's
own doctests run in the suite (app/ is not a package on pytest's path)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from kepp_core.paths import APP_DIR

MODULES = sorted(p.stem for p in (APP_DIR / "components").glob("*.py")
                 if p.stem != "__init__" and ">>>" in p.read_text(encoding="utf-8"))


def test_the_components_with_examples_are_found():
    assert {"names", "plangraph", "search", "urls"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_a_component_hold(name):
    module = importlib.import_module(f"components.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
