"""A package's public names are written once: each module lists its own in its ``__all__``, beside
their code, and the package's ``__all__`` is the sum of its parts' (networkx's algorithms package does
the same); the app's door (``kepp_core.api``) stays small."""

from __future__ import annotations

import importlib
import shutil

import pytest

from structure import names_written_twice, unlisted_public_names
from kepp_core.paths import REPO_ROOT

PACKAGES = ("kepp_core.api", "kepp_core.catalog", "kepp_core.data", "kepp_core.data.synth", "kepp_core.diffusion",
            "kepp_core.evaluation", "kepp_core.evaluation.methods", "kepp_core.graph", "kepp_core.llm",
            "kepp_core.training", "kepp_core.video")


def test_no_package_writes_a_name_on_its_import_line_and_again_in_its_all():
    assert names_written_twice(REPO_ROOT) == []


def test_a_package_that_lists_its_names_again_is_found(tmp_path):
    shutil.copytree(REPO_ROOT / "kepp_core" / "catalog", tmp_path / "kepp_core" / "catalog")
    init = tmp_path / "kepp_core" / "catalog" / "__init__.py"
    init.write_text(init.read_text() + '\nfrom kepp_core.catalog.episodes import episode_id\n__all__ += ["episode_id"]\n'
                    '__all__ = ["episode_id"]\n')
    assert names_written_twice(tmp_path) == ["kepp_core/catalog/__init__.py: episode_id"]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_name_a_package_lists_is_there_once(package):
    module = importlib.import_module(package)
    assert len(module.__all__) == len(set(module.__all__))
    assert [name for name in module.__all__ if not hasattr(module, name)] == []


def test_every_public_name_a_catalog_module_defines_is_read_from_the_catalog():
    # the catalogue is the facts every layer shares: a name added to one of its modules and left out of that
    # module's __all__ would not be read from kepp_core.catalog
    modules = sorted(p for p in (REPO_ROOT / "kepp_core" / "catalog").glob("*.py") if p.name != "__init__.py")
    assert modules
    assert {p.name: unlisted_public_names(p) for p in modules} == {p.name: [] for p in modules}


def test_a_public_name_left_out_of_its_modules_all_is_found(tmp_path):
    module = tmp_path / "facts.py"
    module.write_text('__all__ = ["KEPT"]\nKEPT = 1\nNEW_FACT = 2\n_PRIVATE = 3\n\n\ndef helper():\n    pass\n')
    assert unlisted_public_names(module) == ["NEW_FACT", "helper"]


def test_the_app_door_opens_at_most_47_names():
    from kepp_core import api

    assert len(api.__all__) <= 47  # 45 until the Graph page's through-lists, the Groups page and the Gallery each needed one
