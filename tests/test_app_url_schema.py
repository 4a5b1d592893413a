"""Every page's URL keys as one schema (``app/components/ui/url_schema.py``): ASCII digits only, ranges and
lengths, checked without Streamlit; the tables in docs/app.md are the code's; and in real app sessions
(AppTest) a link with Unicode digits or out-of-range values on any page is one line saying what was not
taken, never a traceback."""

from __future__ import annotations

import re
import os
import subprocess
import sys

import pytest

from components.ui import url_schema
from components.ui.pages import FOLDER, PAGES, TABLES
from kepp_core.paths import REPO_ROOT
from tests.helpers.app_env import APP_DIR
from tests.helpers.app_pages import disagreements, doc_tables
from tests.helpers.app_session import open_page, texts

UNICODE_DIGITS = ["²", "٣", "৪", "１", "3²"]  # superscript, Arabic-Indic, Bengali, full-width, mixed


def numeric_keys(table) -> list[str]:
    """The keys of ``table`` that read numbers (whole, decimal, clip or pair)."""
    return [name for name, key in table.items() if re.search(r"number|clip", key.parse.expected)]


def test_no_page_key_takes_unicode_digits_and_every_number_has_a_range():
    checked = 0
    for page, table in TABLES.items():
        for name in numeric_keys(table):
            for raw in UNICODE_DIGITS:
                with pytest.raises(ValueError, match="ASCII digits|a-b"):
                    table[name].parse(raw)
                checked += 1
            assert re.search(r"from -?[\d.]+ to [\d.]+|≤", table[name].parse.expected), (page, name)
    assert checked >= 5 * 15  # the Plan page's T, R, ep, seed, item, start, goal and the other pages' numbers


@pytest.mark.parametrize("page, key, raw", [
    ("plan", "T", "65"), ("plan", "T", "0"), ("plan", "R", "101"), ("plan", "item", "0"), ("plan", "seed", "-1"),
    ("plan", "ep", "9" * 13), ("plan", "start", "5-2"), ("plan", "goal", "1e3-2e3"), ("plan", "plan", "yes"),
    ("graph", "depth", "4"), ("graph", "min", "1.5"), ("graph", "max", "1"), ("graph", "w", "other"),
    ("heatmaps", "cell", "1-2-3"), ("results", "page", "0"), ("results", "metric", "F1"),
    ("training", "smooth", "0.99"), ("training", "log", "true"),
])
def test_out_of_range_and_malformed_values_are_refused_with_what_was_expected(page, key, raw):
    table = TABLES[page]
    kept, problems = url_schema.check(table, {key: raw})
    assert kept == {} and len(problems) == 1 and problems[0].key == key
    assert problems[0].why.startswith("expected ") and key in problems[0].text()


@pytest.mark.parametrize("page", list(TABLES))
def test_overlong_and_control_character_values_are_refused_on_every_page(page):
    table = TABLES[page]
    texts_ = [name for name, key in table.items() if key.parse.expected.startswith(("text", "at most"))]
    assert texts_, page
    for name in texts_:
        for raw in ("x" * 5000, "a\x00b", "tea\nmake"):
            kept, problems = url_schema.check(table, {name: raw})
            assert kept == {} and [p.key for p in problems] == [name], (page, name, raw)
    # a long value is cut in the message: the line stays one line
    assert len(url_schema.check(table, {texts_[0]: "x" * 5000})[1][0].text()) < 200


def test_values_in_range_are_taken_as_given_and_unknown_keys_are_dropped():
    query = {"T": "4", "R": "2", "ep": "7", "seed": "0", "item": "3", "start": "2-6.5", "plan": "1", "video": "0287",
             "utm_source": "mail"}
    kept, problems = url_schema.check(url_schema.PLAN, query)
    assert problems == [] and kept == {k: v for k, v in query.items() if k != "utm_source"}


def test_the_url_schema_and_the_plan_decision_load_without_streamlit():
    code = ("import sys; import components.ui.url_schema, components.ui.pages, components.plan.decision; "
            "assert 'streamlit' not in sys.modules, sorted(m for m in sys.modules if m.startswith('streamlit'))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "app"), str(REPO_ROOT)])}  # as Streamlit's path
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]


def test_docs_list_every_page_and_its_url_keys_as_the_registry_holds_them():
    docs = (REPO_ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    assert disagreements(PAGES, APP_DIR, FOLDER, docs) == []
    assert sorted(doc_tables(docs)) == sorted(TABLES) and len(TABLES) == 10


# --- real sessions: a bad value is one line, the page goes on ----------------------------------------------------
BAD = {"plan": {"T": "²", "R": "٣", "ep": "²", "seed": "²", "item": "²", "start": "²-3"},
       "graph": {"depth": "²", "max": "٣", "min": "0.²", "emin": "²", "node": "²", "edge": "²-1", "epage": "٣"},
       "heatmaps": {"T": "²", "cell": "²-1"},
       "failures": {"T": "²", "page": "²"},
       "results": {"T": "²", "page": "²", "map": "²"},
       "training": {"smooth": "²"},
       "playlists": {"playlist": "x" * 300},
       "gallery": {"T": "²", "page": "²", "desc": "2"}}


@pytest.mark.slow
@pytest.mark.xdist_group("app")
@pytest.mark.parametrize("page", list(BAD))
def test_unicode_digits_in_any_pages_link_are_one_line_and_no_traceback(monkeypatch, demo_env, page):
    extra = {"video": "0287", "playlist": "scenes"} if page == "plan" else {}
    at = open_page(monkeypatch, demo_env, PAGES[page].path, {**extra, **BAD[page]})
    assert not at.exception, texts(at.exception)
    said = [t for t in texts(at.warning) if t.startswith("Not taken from this link")]
    assert len(said) == 1 and "\n" not in said[0], texts(at.warning)
    for key in BAD[page]:
        assert f"{key}=" in said[0], (key, said[0])
        assert key not in at.query_params or at.query_params[key] != BAD[page][key]  # never written back


def test_the_code_picker_and_the_code_keys_text_name_every_code_of_the_registry():
    """The codes are named from the one registry (kepp_core.catalog.benchmark.FAMILIES), never in hand-written prose."""
    from components.records import metric_codes
    from kepp_core.catalog.benchmark import DEFAULT_FAMILY, FAMILIES

    doc = url_schema.RESULTS["code"].doc
    assert [n for n, f in FAMILIES.items() if f"{f.label}: {f.source}" not in metric_codes.code_help()] == []
    named = [n for n, f in FAMILIES.items() if f"`{n}`: {f.label}" in doc]
    assert named == [n for n in FAMILIES if n != DEFAULT_FAMILY]
