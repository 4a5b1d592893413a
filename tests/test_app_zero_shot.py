"""The Plan page without models (COIN's annotations alone: zero-shot planning with the graph) and
with the no-graph model (no graph paths claimed), through ``streamlit.testing.v1.AppTest``."""

from __future__ import annotations

import pytest

from components.ui.pages import PAGES
from tests.helpers.app_session import no_problems, open_page, texts


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]

# the pages besides Plan that work on annotations alone (the Presenter follows a talk's slides; Home is tested apart)
ANNOTATION_PAGES = [PAGES[name].path for name in ("graph", "heatmaps", "failures", "results", "training", "playlists")]


def coin_env(coin_json) -> dict:
    return {"KEPP_APP_DATASET": "coin", "KEPP_APP_ROOT": str(coin_json), "KEPP_APP_CHECKPOINTS": None,
            "KEPP_APP_PREDICTIONS": None, "KEPP_APP_GRAPH": None, "KEPP_APP_RUNS": None}


class NoEnv:
    """An app environment that sets nothing (``open_page`` takes its overrides)."""

    @staticmethod
    def environ() -> dict:
        return {}


def card_rows(at) -> list[str]:
    return [m.value for m in at.markdown if 'class="kepp-plan"' in m.value]


def test_coin_annotations_without_models_plan_zero_shot(monkeypatch, coin_json, coin_dataset):
    at = open_page(monkeypatch, NoEnv, "views/1_Plan.py", **coin_env(coin_json))
    no_problems(at)
    assert any("graph alone" in t for t in texts(at.info))
    assert "The graph's top-3 plans" in texts(at.subheader)
    rows = card_rows(at)
    assert 2 <= len(rows) <= 4  # up to three distinct graph plans, and the test episode's ground truth
    assert all(r.count('class="kepp-card"') == 3 for r in rows)
    task = at.selectbox(key="zs_task").value
    assert task in coin_dataset.tasks
    # steps chosen by hand, a longer horizon and fewer plans
    at.radio(key="zs_source").set_value("steps I choose").run()
    steps = coin_dataset.task_actions(task)
    at.selectbox(key=f"zs_start_{task}").set_value(steps[0])
    at.selectbox(key=f"zs_goal_{task}").set_value(steps[-1])
    at.selectbox(key="zs_T").set_value(4)
    at.slider(key="zs_R").set_value(2).run()
    no_problems(at)
    assert "The graph's top-2 plans" in texts(at.subheader)
    assert all(r.count('class="kepp-card"') == 4 for r in card_rows(at))
    caption = next(t for t in texts(at.caption) if t.startswith("From "))
    assert coin_dataset.actions[steps[0]] in caption and coin_dataset.actions[steps[-1]] in caption
    # re-centring the plan graph on a step keeps the page whole
    centre = at.selectbox(key="zs_centre")
    at.selectbox(key="zs_centre").set_value(centre.options[1]).run()
    no_problems(at)
    for page in ANNOTATION_PAGES:  # the other pages work on annotations alone
        at.switch_page(page).run()
        no_problems(at)


def test_no_graph_model_claims_no_graph_paths(monkeypatch, app_env):
    at = open_page(monkeypatch, app_env, "views/1_Plan.py")
    no_problems(at)
    variant = at.selectbox(key="plan_variant")
    no_graph = next(o for o in variant.options if "without the graph" in o)
    at.selectbox(key="plan_variant").set_value(no_graph).run()
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert not [s for s in texts(at.markdown) if "graph path" in s or "fallback path" in s]  # no row of paths
    assert not [c for c in texts(at.caption) if "recommendation:" in c]
    assert any("no graph condition" in c for c in texts(at.caption))
    # with the graph condition, the paths are there
    graph_variant = next(o for o in variant.options if "P²KG condition" in o)
    at.selectbox(key="plan_variant").set_value(graph_variant).run()
    at.button(key="plan_go").click().run()
    no_problems(at)
    assert [s for s in texts(at.markdown) if 'class="kepp-card"' in s and ("graph path" in s or "fallback path" in s)]
