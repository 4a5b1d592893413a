"""The suite's own shape (tests/helpers/suite_shape.py): no test checks only inside loops (it
would pass on an empty list), and the checker itself flags what it should on small sources; the
tiers: `make test` runs every test, `make test-fast` leaves out only tests marked slow or e2e."""

from __future__ import annotations

import re
import textwrap
import tomllib

from kepp_core.paths import REPO_ROOT
from tests.helpers.suite_shape import loop_only_tests, suite_loop_only_tests


def flagged(source: str) -> list[str]:
    return [t.name for t in loop_only_tests(textwrap.dedent(source))]


def test_no_test_checks_only_inside_a_loop():
    """Every test whose checks sit in a loop also checks the count (or something else) outside it."""
    assert [str(t) for t in suite_loop_only_tests(REPO_ROOT / "tests")] == []


def test_a_test_asserting_only_in_a_for_or_while_loop_is_flagged_with_its_line():
    source = """
        import pytest

        def test_for(rows):
            for r in rows:
                assert r > 0

        def test_nested(rows):
            for r in rows:
                if r:
                    for x in r:
                        assert x

        def test_while(queue):
            while queue:
                assert queue.pop()

        class TestGroup:
            async def test_async_for(self, stream):
                async for item in stream:
                    assert item
    """
    found = loop_only_tests(textwrap.dedent(source), "test_x.py")
    assert [str(t) for t in found] == ["test_x.py:4 test_for", "test_x.py:8 test_nested", "test_x.py:14 test_while",
                                       "test_x.py:19 test_async_for"]


def test_every_kind_of_check_counts():
    """An ``assert``, a ``pytest.raises`` / ``pytest.warns`` block or call, ``pytest.fail`` and any
    ``assert*`` call: in a loop only, each is flagged; once outside the loop, none is."""
    checks = ["assert x", "np.testing.assert_allclose(x, 1)", "self.assertEqual(x, 1)", "assert_frame_equal(x, x)",
              "pytest.fail(str(x))", "pytest.raises(ValueError, int, x)",
              "with pytest.raises(ValueError):\n        int(x)", "with pytest.warns(UserWarning):\n        f(x)"]
    for check in checks:
        in_loop = f"def test_a(xs):\n    for x in xs:\n        {check.replace(chr(10), chr(10) + '    ')}\n"
        assert flagged(in_loop) == ["test_a"], check
        outside = f"def test_a(xs):\n    x = len(xs)\n    {check}\n    for x in xs:\n        assert x\n"
        assert flagged(outside) == [], check
    assert len(checks) == 8


def test_a_count_outside_the_loop_clears_a_test_and_the_loops_head_is_outside():
    assert flagged("""
        def test_counted(rows):
            assert len(rows) == 3
            for r in rows:
                assert r > 0

        def test_counted_after(rows):
            seen = []
            for r in rows:
                assert r > 0
                seen.append(r)
            assert seen == [1, 2, 3]

        def test_checked_iterable(rows):
            for r in pytest.raises(TypeError, iter, 3) or rows:
                assert r
    """) == []


def test_checks_in_a_nested_function_are_not_the_tests_and_a_test_without_checks_is_not_flagged():
    assert flagged("""
        def test_helper_only_asserts_outside(rows):
            def check():
                assert rows
            for r in rows:
                assert r

        def test_lambda(rows):
            ok = lambda: pytest.fail("never called")
            for r in rows:
                assert r

        def test_no_checks(rows):
            for r in rows:
                print(r)

        def helper(rows):
            for r in rows:
                assert r
    """) == ["test_helper_only_asserts_outside", "test_lambda"]


def _recipe(makefile: str, target: str) -> str:
    """The command lines of one Makefile target."""
    found = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert found, f"no `{target}` target in the Makefile"
    return found.group(1)


def test_make_test_runs_every_test_and_the_fast_tier_leaves_out_only_registered_markers():
    makefile = (REPO_ROOT / "Makefile").read_text()
    full, fast = _recipe(makefile, "test"), _recipe(makefile, "test-fast")
    options = full.partition("-m pytest")[2]  # CI runs this target (.ci/run): nothing may be left out
    assert options and not re.search(r"(^|\s)(-m|-k|--deselect|--ignore\S*)(\s|=|$)", options), full
    assert '-m "$(FAST_TIER)"' in fast
    tier = re.search(r"^FAST_TIER\s*:?=\s*(.+)$", makefile, re.M).group(1).strip()
    left_out = re.findall(r"not (\w+)", tier)
    registered = {m.split(":")[0] for m in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["markers"]}
    assert "slow" in left_out and set(left_out) <= registered, (left_out, registered)
    assert re.sub(r"not \w+", "", tier).replace("and", "").strip() == ""  # only "not <marker>" terms: a subset
