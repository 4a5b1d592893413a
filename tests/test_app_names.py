"""One display name per method everywhere (app/components/ui/names.method_name, the catalogue's labels), the
paper's figures only beside a run of the paper's setting, and baselines described as what they are; through
real Streamlit sessions (AppTest) on the demo world with the shipped models and records."""

from __future__ import annotations

import ast
import json

import pytest

from components.ui import names
from components.ui.text import md
from kepp_core import catalog
from kepp_core.evaluation.failures import PAPER_COLUMN, FailureStats
from tests.helpers.app_env import REPO
from tests.helpers.app_session import no_problems, open_page, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


def test_every_method_has_one_display_name_from_the_catalogue():
    for entry in catalog.methods():
        assert names.method_name(entry.name) == entry.label
    assert names.method_names(["kepp-R2", "random"]) == {"kepp-R2": "KEPP R=2", "random": "Random"}
    assert names.method_name("not-in-the-catalogue") == "not-in-the-catalogue"


def test_no_page_or_component_names_a_method_but_through_the_names_table():
    """Every module of the app asks components.ui.names for a method's name: none calls the catalogue's
    method_label itself (the one place a page could drift from the others)."""
    offenders = []
    for path in sorted((REPO / "app").rglob("*.py")):
        if path.name == "names.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named = (node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name)
                     else node.name if isinstance(node, ast.alias) else None)
            if named == "method_label":
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, offenders


def _all_text(at) -> str:
    """Every text the session shows: Markdown, captions, select boxes' shown options, figures' JSON."""
    shown = texts(at.markdown) + texts(at.caption) + texts(at.subheader)
    shown += [o for box in at.selectbox for o in box.options]
    shown += [json.dumps(json.loads(c.proto.spec)) for c in [*at.get("plotly_chart"), *at.get("echarts_chart")]]
    return "\n".join(shown)


def test_heatmaps_names_the_method_as_every_other_page_does(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, "views/3_Heatmaps.py", {"of": "kepp-R2", "T": "3"}))
    assert at.selectbox(key="heat_method").value == "kepp-R2"
    shown = _all_text(at)
    assert "KEPP R=2 predictions (T=3, test)" in shown and "kepp-R2" not in shown
    assert "KEPP R=2" in at.selectbox(key="heat_method").options
    failures = no_problems(open_page(monkeypatch, demo_env, "views/4_Failure_cases.py", {"method": "kepp-R2", "T": "3"}))
    assert "KEPP R=2" in failures.selectbox(key="fail_method").options


def test_the_papers_column_only_beside_a_run_of_the_papers_dataset_and_horizon(monkeypatch, demo_env):
    stats = FailureStats(10, 4, 60.0, 30.0, 50.0, 10.0, 80.0)
    assert PAPER_COLUMN in stats.as_rows(("crosstask", 4))[0]
    assert all(PAPER_COLUMN not in row for setting in (("crosstask", 3), ("demo", 4), ("coin", 4))
               for row in stats.as_rows(setting))
    for T in ("3", "4"):  # the demo world (12 actions of its own): never the paper's column, nor its caption
        at = no_problems(open_page(monkeypatch, demo_env, "views/4_Failure_cases.py", {"method": "kepp-R2", "T": T}))
        table = next(d.value for d in at.dataframe if "statistic" in d.value.columns)
        assert list(table.columns) == ["statistic", "value"], (T, list(table.columns))
        assert not any("Paper column" in c for c in texts(at.caption))


def test_an_episode_compared_with_baselines_says_what_they_are(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, "views/5_Results.py",
                               {"method": "kepp-R2", "T": "3", "compare": "kepp-R2,retrieval,random"}))
    assert at.multiselect(key="res_compare").value == ["kepp-R2", "retrieval", "random"]
    captions = texts(at.caption)
    assert md("Retrieval (nearest training episode): plans without graph paths") in captions
    assert md("Random: plans without graph paths") in captions
    assert "(no other graph path)" not in captions  # KEPP R=2's two paths are one distinct path here or two
