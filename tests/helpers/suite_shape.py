"""The test suite's own shape, read from the source with ``ast``: test functions whose every check
sits inside a ``for`` / ``while`` loop. Such a test passes when the loop runs zero times (an empty
list, a filter that keeps nothing), so it must also check the count outside the loop.

    python -m tests.helpers.suite_shape          # the loop-only tests of tests/, as file:line name

A *check* is an ``assert`` statement, a ``with pytest.raises(...)`` / ``pytest.warns(...)`` block,
or a call of ``pytest.raises`` / ``pytest.warns`` / ``pytest.fail`` / any ``assert*`` function
(``np.testing.assert_allclose``, ``assert_frame_equal``, ``self.assertEqual``). Checks inside a
nested function, lambda or class are not the test's own (they run only if something calls them).
A test with no check at all is not flagged here: it fails only by raising.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

CHECK_CALLS = frozenset({"raises", "warns", "fail"})  # pytest's, besides every assert* function
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class LoopOnlyTest:
    """A test function whose every check is inside a loop."""

    file: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.name}"


def _call_name(node: ast.AST) -> str:
    """``f`` of ``f(...)`` / ``m.f(...)``; '' for anything else."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_check(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return any(_call_name(item.context_expr) in CHECK_CALLS for item in node.items)
    name = _call_name(node)
    return name.startswith("assert") or name in CHECK_CALLS


def check_places(node: ast.AST, in_loop: bool = False):
    """``in_loop`` for every check below ``node`` (one per check, in source order), skipping
    nested functions, lambdas and classes.

    >>> tree = ast.parse("for x in xs:\\n    assert x\\nassert xs")
    >>> list(check_places(tree))
    [True, False]
    """
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _OWN_SCOPE):
            continue
        if _is_check(child):
            yield in_loop
        # a loop's iterable (and a while's test) is evaluated at least once: only its body is "in the loop"
        if isinstance(child, _LOOPS):
            head = [child.iter] if isinstance(child, (ast.For, ast.AsyncFor)) else [child.test]
            for part in head:
                yield from check_places(ast.Expression(part), in_loop)
            for stmt in child.body + child.orelse:
                yield from check_places(ast.Module([stmt], []), True)
        else:
            yield from check_places(child, in_loop)


def _is_test(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")


def loop_only_tests(source: str, file: str = "<source>") -> list[LoopOnlyTest]:
    """The test functions of ``source`` (module level or in a class) whose every check is in a loop.

    >>> loop_only_tests("def test_a(xs):\\n    for x in xs:\\n        assert x > 0\\n")
    [LoopOnlyTest(file='<source>', line=1, name='test_a')]
    >>> loop_only_tests("def test_a(xs):\\n    assert len(xs) == 3\\n    for x in xs:\\n        assert x > 0\\n")
    []
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if _is_test(node):
            places = list(check_places(node))
            if places and all(places):
                found.append(LoopOnlyTest(file, node.lineno, node.name))
    return found


def suite_loop_only_tests(tests_dir: Path) -> list[LoopOnlyTest]:
    """Every loop-only test of the ``test_*.py`` files in ``tests_dir`` and its sub-folders."""
    return [t for path in sorted(tests_dir.rglob("test_*.py"))
            for t in loop_only_tests(path.read_text(encoding="utf-8"), path.relative_to(tests_dir).as_posix())]


# --- fixed waits: a test that sleeps races what it waits for ---------------------------------------------
TIMER_CALLS = frozenset({"sleep", "wait_for_timeout"})  # time.sleep / sleep, Playwright's page.wait_for_timeout


def timer_waits(source: str, file: str = "<source>") -> list[str]:
    """Every ``time.sleep`` / ``sleep`` / ``*.wait_for_timeout`` call of ``source`` that is not inside a
    ``while`` loop, as ``file:line name``: a fixed wait. In a ``while`` loop the wait spaces the polls of
    the loop's condition, which is what the test waits on."""
    found: list[str] = []

    def walk(node: ast.AST, polling: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _call_name(child) in TIMER_CALLS and not polling:
                found.append(f"{file}:{child.lineno} {_call_name(child)}")
            walk(child, polling or isinstance(child, ast.While))

    walk(ast.parse(source), False)
    return found


def suite_file_stems(tests_dir: Path) -> list[str]:
    """The name of every ``test_*.py`` file directly in ``tests_dir``, less ``test_`` and ``.py``."""
    return [path.stem.removeprefix("test_") for path in sorted(tests_dir.glob("test_*.py"))]


def module_names(*packages: Path) -> set[str]:
    """The name of every module of the packages (a package's ``__init__.py`` by its folder's name)."""
    return {path.parent.name if path.stem == "__init__" else path.stem
            for package in packages for path in package.rglob("*.py")}


def named_after(stem: str, names) -> bool:
    """Whether a test file's name (less ``test_``) is one of ``names``, alone or with a suffix after ``_``."""
    return any(stem == name or stem.startswith(name + "_") for name in names)


if __name__ == "__main__":
    here = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    found = suite_loop_only_tests(here)
    print("\n".join(map(str, found)) + ("\n" if found else "") + f"{len(found)} loop-only")
    sys.exit(1 if found else 0)
