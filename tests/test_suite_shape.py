"""The suite's own shape (tests/helpers/suite_shape.py): no test checks only inside loops (it
would pass on an empty list), and the checker itself flags what it should on small sources."""

from __future__ import annotations

import textwrap

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
