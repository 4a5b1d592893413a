"""The package's structure (tests/structure.py): layers only look down, no import cycles, the app
stands on kepp_core.api alone, no function over 80 lines, public code documented, and lazy
imports say why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from structure import LAYERS, MAX_FUNCTION_LINES, core_names_app, layer_of, read_structure, report
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT


@pytest.fixture(scope="module")
def structure():
    return read_structure(REPO)


@pytest.mark.slow
def test_every_module_has_a_layer(structure):
    assert [m for m in structure.modules if layer_of(m) < 0] == []


@pytest.mark.slow
def test_no_upward_imports(structure):
    up = [f"{i.source}:{i.line} imports {i.target} (layer {layer_of(i.target)} > {layer_of(i.source)})"
          for i in structure.upward]
    assert up == []


def test_no_import_cycles(structure):
    assert structure.cycles() == []


def test_no_import_cycle_between_packages(structure):
    assert structure.package_cycles() == []


def test_kepp_core_never_names_the_app():
    # the app plugs its commands in (the kepp.commands entry points); the core knows no path of it
    assert core_names_app(REPO) == []


@pytest.mark.slow
def test_a_planted_package_cycle_fails_though_no_module_cycle_does(tmp_path):
    root = _copy(tmp_path)
    assert read_structure(root).package_cycles() == []
    # training's module imports an evaluation module that imports nothing of training: no module cycle, but
    # evaluation already imports training (its methods read training's episode tensors)
    (root / "kepp_core" / "training" / "planted.py").write_text("from kepp_core.evaluation.slices import RULES  # noqa\n")
    st = read_structure(root)
    assert st.cycles() == [] and st.package_cycles() == [["kepp_core.evaluation", "kepp_core.training"]]
    # the same edge hidden in import_module is an edge all the same
    (root / "kepp_core" / "training" / "planted.py").write_text(
        "from importlib import import_module\n\n\ndef late():\n    return import_module('kepp_core.evaluation.slices')\n")
    assert read_structure(root).package_cycles() == [["kepp_core.evaluation", "kepp_core.training"]]


@pytest.mark.slow
def test_a_core_module_naming_the_app_fails(tmp_path):
    root = _copy(tmp_path)
    planted = {
        "paths.py": 'APP_DIR = REPO_ROOT / "app"\n',
        "commands/demo.py": 'HOME = "app/Home.py"\n',
        "commands/eval.py": 'WORKER = Path(REPO_ROOT, "app", "worker.py")\n',
        "commands/plan.py": "import components.talk.deck  # noqa\n",
        "api/media.py": 'SCRIPT = "serve.py"\n',
    }
    for name, line in planted.items():
        module = root / "kepp_core" / name
        module.write_text(module.read_text() + "\n" + line)
    found = core_names_app(root)
    assert sorted({f.split(":")[0] for f in found}) == sorted(f"kepp_core/{n}" for n in planted), found
    # a docstring or comment may point a reader at the app
    (root / "kepp_core" / "notes.py").write_text('"""See app/Home.py and app/commands.py."""\n# app/serve.py\n')
    assert not [f for f in core_names_app(root) if "notes.py" in f]


def test_app_imports_only_the_api(structure):
    assert [f"{i.source}:{i.line} → {i.target}" for i in structure.app_reaches] == []


@pytest.mark.slow
def test_no_function_over_the_limit():
    assert report(REPO)["functions_over_limit"] == []


def test_public_code_has_docstrings(structure):
    assert structure.undocumented == []


def test_imports_inside_functions_keep_a_light_module_light_or_are_listed_with_a_reason(structure):
    # light modules: tests/test_light_imports.py checks that they load without torch
    assert structure.unlisted_local_imports() == []


@pytest.mark.slow
def test_an_unlisted_import_inside_a_function_fails(tmp_path):
    root = _copy(tmp_path)
    build = root / "kepp_core" / "graph" / "build.py"
    build.write_text(build.read_text() + "\n\ndef _late():\n    import statistics\n    return statistics\n")
    assert read_structure(root).unlisted_local_imports() == [f"kepp_core.graph.build:{len(build.read_text().splitlines()) - 1}"
                                                            " → statistics"]


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for pkg in ("kepp_core", "app"):
        shutil.copytree(REPO / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.slow
def test_an_added_upward_import_fails(tmp_path):
    root = _copy(tmp_path)
    build = root / "kepp_core" / "graph" / "build.py"
    build.write_text(build.read_text() + "\nfrom kepp_core.planner import KEPPPlanner  # noqa: E402\n")
    st = read_structure(root)
    assert [(i.source, i.target) for i in st.upward] == [("kepp_core.graph.build", "kepp_core.planner")]
    assert layer_of("kepp_core.planner") > layer_of("kepp_core.graph.build")


@pytest.mark.slow
def test_an_added_cycle_and_an_app_reach_fail(tmp_path):
    root = _copy(tmp_path)
    # same layer, so not upward: only the cycle check can catch it
    (root / "kepp_core" / "graph" / "build.py").write_text(
        (root / "kepp_core" / "graph" / "build.py").read_text() + "\nimport kepp_core.graph.explore  # noqa\n")
    home = root / "app" / "Home.py"
    home.write_text(home.read_text() + "\nfrom kepp_core.planner import KEPPPlanner  # noqa: E402\n")
    st = read_structure(root)
    assert any({"kepp_core.graph.build", "kepp_core.graph.explore"} <= set(c) for c in st.cycles())
    assert ("app.Home", "kepp_core.planner") in [(i.source, i.target) for i in st.app_reaches]


@pytest.mark.slow
def test_a_long_function_fails_unless_it_says_why(tmp_path):
    root = _copy(tmp_path)
    body = "".join(f"    x{k} = {k}\n" for k in range(MAX_FUNCTION_LINES))
    (root / "kepp_core" / "long.py").write_text(f'def long():\n    """Long."""\n{body}')
    assert any("long.py" in f for f in report(root)["functions_over_limit"])
    (root / "kepp_core" / "long.py").write_text(f'def long():  # one piece: a test\n    """Long."""\n{body}')
    assert not any("long.py" in f for f in report(root)["functions_over_limit"])


def test_layers_are_listed_bottom_to_top():
    names = [n for layer in LAYERS for n in layer]
    assert names.index("kepp_core.errors") < names.index("kepp_core.data") < names.index("kepp_core.planner") \
        < names.index("kepp_core.api") < names.index("app")
