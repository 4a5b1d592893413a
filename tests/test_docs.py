"""The documentation: a short README that gets a newcomer running, and a site (mkdocs-material,
``docs/``) that builds with no broken link or reference; docstrings cite the docs or the paper."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
README_MAX_LINES = 300


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("mkdocs is missing: requirements.txt installs it")
        pytest.skip("mkdocs is not installed (make test installs requirements.txt)")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()
    assert (tmp_path / "site" / "screenshots" / "plan.png").is_file()


def test_the_readme_is_short_and_its_quick_start_has_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    quick = text.split("## Quick start", 1)[1]
    block = quick.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


def test_every_readme_link_to_the_docs_resolves():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local and all((REPO / t).exists() for t in local), [t for t in local if not (REPO / t).exists()]


def test_docstrings_cite_the_docs_or_the_paper_not_issues():
    cited = []
    for folder in ("kepp_core", "app", "benchmarks", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"[Ii]ssue \d+|KEPP\.md", line) and path.name != "test_docs.py":
                    cited.append(f"{path.relative_to(REPO)}:{n}")
    assert cited == []


# --- lists in the docs that the code holds to -------------------------------------------------------------------
def kepp_commands(parser, prefix=("kepp",)) -> list[str]:
    """Every runnable command of a ``kepp`` parser (a parser with a function to run), as typed."""
    import argparse

    found = [" ".join(prefix)] if parser.get_default("func") is not None else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += kepp_commands(sub, (*prefix, name))
    return found


def command_table(text: str) -> dict[str, str]:
    """docs/architecture.md's command table: command -> the module named beside it."""
    table = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(kepp[^`]*)` \| `((?:commands|app)/[\w-]+\.py)` \|", table, re.M))


def test_the_architecture_page_lists_every_command_with_its_module():
    from kepp_core.cli import build_parser

    rows = command_table((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    commands = kepp_commands(build_parser())
    assert sorted(set(commands) - set(rows)) == [], "a command without its line in docs/architecture.md"
    assert sorted(set(rows) - set(commands)) == [], "a line of docs/architecture.md names no command"
    from kepp_core.commands.plugins import plugin_entry_points

    plugins = {ep.name: ep.module for ep in plugin_entry_points()}  # a plug-in's command: its entry point's module
    for command, module in rows.items():  # the group's module, which registers it
        group = command.split()[1]
        if group in plugins:
            assert module == plugins[group].replace(".", "/") + ".py" and (REPO / module).is_file(), (command, module)
        else:
            assert module == f"commands/{group}.py" and (REPO / "kepp_core" / module).is_file(), (command, module)


def test_a_command_added_without_its_docs_line_fails_the_check():
    from kepp_core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    sub.add_parser("undocumented").set_defaults(func=lambda args: 0)
    rows = command_table((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert sorted(set(kepp_commands(parser)) - set(rows)) == ["kepp undocumented"]


def test_each_room_of_the_components_names_every_module_it_holds():
    import ast

    def doc(folder: Path) -> str:
        return ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))

    top = REPO / "app" / "components"
    rooms = sorted(p.parent for p in top.glob("*/__init__.py"))
    assert [p.stem for p in top.glob("*.py") if p.stem != "__init__"] == []  # every module sits in a room
    assert len(rooms) >= 5 and [r.name for r in rooms if f"``{r.name}``" not in doc(top)] == []
    assert [f"{r.name}/{p.stem}" for r in rooms for p in sorted(r.glob("*.py"))
            if p.stem != "__init__" and f"``{p.stem}``" not in doc(r)] == []


def test_the_layer_diagram_names_every_module_and_package_of_kepp_core():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = text.split("## What is where", 1)[1].split("```", 2)[1]
    core = REPO / "kepp_core"
    names = [f"{p.name}/" for p in core.iterdir() if (p / "__init__.py").is_file()]
    names += [p.stem for p in core.glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert [n for n in sorted(names) if not re.search(rf"(?<![\w/]){re.escape(n)}(?!\w)", diagram)] == []


def test_the_comparing_page_lists_every_published_row_as_the_literature_file_holds_it():
    from kepp_core.evaluation.literature import read_literature

    text = (REPO / "docs" / "comparing.md").read_text(encoding="utf-8")
    table = text.split("| method | dataset | split | T | code |", 1)[1].split("\n\n", 1)[0]
    cells = [line.split("|")[1:-1] for line in table.strip().splitlines()[2:]]
    got = [(c[0].strip(), c[1].strip(), int(c[3]), c[4].strip(), float(c[5]), c[-1].strip().startswith("unconfirmed"))
           for c in cells]
    assert got == [(r.method, r.dataset, r.T, r.code, r.metrics["sr"], not r.confirmed) for r in read_literature()]
def decision_places(text: str) -> list[tuple[str, list[str]]]:
    """docs/architecture.md's "One place per decision" table: each ``path.py`` the "the one place" column
    names, with the names it gives in parentheses after it (``Class.attribute`` for a class's)."""
    table = text.split("\n## One place per decision\n", 1)[1].split("\n**Glossary", 1)[0]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    places = []
    for row in rows[1:]:  # the header first
        for path, names in re.findall(r"`((?:kepp_core|app)/[\w/]+\.py)`(?: \(([^)]*)\))?", row[1]):
            places.append((path, re.findall(r"`([\w.]+)`", names)))
    return places


def test_the_decision_table_names_modules_and_names_that_exist():
    import ast

    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    places = decision_places(text)
    assert len(places) >= 25 and len({p for p, _ in places}) >= 15
    for needed in ("kepp_core/catalog/sources.py", "kepp_core/catalog/rows.py", "kepp_core/models/options.py",
                   "kepp_core/catalog/defaults.py", "kepp_core/calibration.py", "app/components/ui/colours.py"):
        assert needed in {p for p, _ in places}, needed
    missing = []
    for path, names in places:
        file = REPO / path
        if not file.is_file():
            missing.append(path)
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"))
        top: dict[str, ast.AST] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                top[node.name] = node
            for target in getattr(node, "targets", [getattr(node, "target", None)]):
                for t in ast.walk(target) if target is not None else ():
                    if isinstance(t, ast.Name):
                        top[t.id] = node
        for name in names:
            head, _, attr = name.partition(".")
            node = top.get(head)
            inner = {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
                t.id for n in ast.walk(node) if isinstance(n, ast.AnnAssign) for t in [n.target]
                if isinstance(t, ast.Name)} if isinstance(node, ast.ClassDef) else set()
            if node is None or (attr and attr not in inner):
                missing.append(f"{path}: {name}")
    assert missing == []
