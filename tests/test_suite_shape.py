"""The suite's own shape (tests/helpers/suite_shape.py): no test checks only inside loops (it
would pass on an empty list), and the checker itself flags what it should on small sources; the
tiers: `make test` runs every test, `make test-fast` leaves out only tests marked slow or e2e; test
files named after the module they test (or a declared cross-cutting behaviour); no test waits on a
timer where it can wait on a condition."""

from __future__ import annotations

import re
import textwrap
import tomllib

from kepp_core.paths import REPO_ROOT
from tests.helpers.suite_shape import (loop_only_tests, module_names, named_after, suite_file_stems,
                                      suite_loop_only_tests, timer_waits)


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


# --- test files named after what they test ----------------------------------------------------------------
# A test file is named after the module it tests (kepp_core/**/X.py or app/**/X.py: test_X.py or test_X_<what>.py),
# or after one of these behaviours that cross many modules (test_<name>.py or test_<name>_<what>.py), each with why.
CROSS_CUTTING = (
    ("app", "the Streamlit app's pages and components in real sessions (AppTest), across its rooms"),
    ("wheel", "the core's wheel built and installed alone into a clean venv, without the app"),
    ("e2e", "the real app server in a real browser, a page or a talk at a time"),
    ("security", "dataset text never runs as script on any page of a real browser"),
    ("escaping", "every renderer of app/components shows a hostile label as text"),
    ("docs", "the README and the docs site agree with the code and build"),
    ("structure", "layers, cycles, function lengths and docstrings of the whole package"),
    ("suite_shape", "the suite's own shape: loop-only checks, tiers, file names, waits"),
    ("config_agreement", "an endpoint checkpoint's architecture, folder name and training options agree"),
    ("device_agnostic", "every network and training loss on the device of its weights"),
    ("faults", "a real training killed at every write point of its save path, then resumed"),
    ("format_errors", "every untrusted format through one schema, every failure one line"),
    ("light_imports", "what must load without torch (the CLI's help, the app's first page) stays light"),
    ("order_independence", "libraries' global state never changes what later code does"),
    ("outputs_and_limits", "outputs that are not regular files, thread counts, full disks, terminal output"),
    ("sizes_before_allocation", "sizes checked before allocation wherever a file or an option gives one"),
)


def test_every_test_file_is_named_after_a_module_or_a_declared_cross_cutting_behaviour():
    modules = module_names(REPO_ROOT / "kepp_core", REPO_ROOT / "app")
    stems = suite_file_stems(REPO_ROOT / "tests")
    cross = [name for name, _ in CROSS_CUTTING]
    assert len(stems) > 90 and {"graph", "planner", "catalog"} <= modules
    misnamed = [f"test_{s}.py" for s in stems if not named_after(s, modules | set(cross))]
    assert misnamed == [], f"name each after the module it tests, or declare it in CROSS_CUTTING: {misnamed}"
    unused = [name for name in cross if not any(named_after(s, [name]) for s in stems)]
    assert unused == [] and len(set(cross)) == len(cross), unused
    assert all(len(why) > 20 for _, why in CROSS_CUTTING)


def test_a_file_named_after_no_module_and_no_behaviour_is_flagged():
    stems = ["graph", "graph_build", "graphs", "bad_input_round2", "e2e_talk", "e2e", "reliability_round3"]
    assert [s for s in stems if not named_after(s, {"graph", "e2e"})] == ["graphs", "bad_input_round2",
                                                                          "reliability_round3"]
    assert module_names(REPO_ROOT / "kepp_core" / "graph") >= {"graph", "build", "compact", "decoding"}


# --- waits on conditions, not timers ----------------------------------------------------------------------
# Where a test file may still wait on a timer outside a polling loop: file name -> why (a fixed wait anywhere
# else races the app under load; wait on what the test asserts: tests/helpers/browser.py's idle, rerun,
# all_loaded, stopped_moving, settled_drawing, a locator's wait_for, page.wait_for_function).
TIMER_WAITS = {
    "test_app_cli.py": "proves an absence: the server builds no demo world by itself, and no event marks the "
                       "opening thread deciding not to",
    "test_e2e_plan_page.py": "proves an absence: the page does not scroll itself away from its top",
    "test_e2e_path_labels.py": "a slider moved by keys sends its value after Streamlit's debounce, so a run may begin "
                               "after idle() returns and replace the drawing being read (rerun() was tried: the "
                               "frame was detached); no event marks the last value sent",
}


def test_no_test_waits_on_a_timer_outside_the_allow_list():
    tests = REPO_ROOT / "tests"
    found = {path.name: timer_waits(path.read_text(encoding="utf-8"), path.name)
             for path in sorted(tests.glob("test_*.py"))}
    assert len(found) > 90
    outside = [w for name, waits in found.items() if name not in TIMER_WAITS for w in waits]
    assert outside == [], f"wait on a condition (or add the file to TIMER_WAITS, saying why): {outside}"
    stale = [name for name in TIMER_WAITS if not found.get(name)]
    assert stale == [], f"these files no longer wait on a timer: drop them from TIMER_WAITS: {stale}"


def test_a_fixed_wait_is_flagged_and_a_wait_between_polls_is_not():
    source = """
        import time
        from time import sleep

        def test_a(page):
            page.click()
            page.wait_for_timeout(300)
            time.sleep(1)
            for _ in range(3):
                sleep(0.5)

        def test_polls(proc, page):
            while proc.poll() is None:
                time.sleep(0.1)
            while True:
                if page.ready():
                    break
                page.wait_for_timeout(100)
    """
    assert timer_waits(textwrap.dedent(source), "t.py") == ["t.py:7 wait_for_timeout", "t.py:8 sleep",
                                                            "t.py:10 sleep"]
