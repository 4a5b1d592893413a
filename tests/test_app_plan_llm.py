"""The Plan page's LLM recommendation (a scripted chat server on 127.0.0.1) and its K
sampled plans, through ``streamlit.testing.v1.AppTest``."""

from __future__ import annotations

import pytest
from llm_server import ScriptedChatServer, scripted_plans

from tests.helpers.app_session import cards, dataset, no_problems, open_page, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


def planned(monkeypatch, env, **overrides):
    at = open_page(monkeypatch, env, "views/1_Plan.py", **overrides)
    no_problems(at)
    at.button(key="plan_go").click().run()
    no_problems(at)
    return at


def test_k_sampled_plans_are_listed_with_frequencies(monkeypatch, app_env, tmp_path):
    at = planned(monkeypatch, app_env, KEPP_LLM_URL=None, KEPP_HOME=tmp_path)
    assert "LLM recommendation" not in texts(at.subheader)  # no endpoint: no LLM plan
    at.number_input(key="plan_K").set_value(12).run()
    at.button(key="plan_sample").click().run()
    no_problems(at)
    table = next(d.value for d in at.dataframe if "count" in d.value.columns)  # the samples table
    assert table["count"].sum() == 12 and table["frequency"].sum() == pytest.approx(1.0)
    assert list(table["count"]) == sorted(table["count"], reverse=True)
    T = app_env.horizon
    ds = dataset(app_env)
    assert all(len(s.split(" → ")) == T and set(s.split(" → ")) <= set(ds.actions) for s in table["steps"])
    assert any("in 12 samples" in t for t in texts(at.caption))


def test_llm_plan_is_shown_beside_the_graph_paths_and_failures_name_the_fallback(monkeypatch, app_env, tmp_path):
    ds = dataset(app_env)
    T = app_env.horizon
    steps = ds.actions[:T]
    reply = "\n".join(f"Step {i}: {s.upper()}" for i, s in enumerate(steps, 1))
    with ScriptedChatServer(scripted_plans([reply])) as server:
        at = open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_LLM_URL=server.url, KEPP_LLM_MODEL="scripted",
                       KEPP_HOME=tmp_path)
        at.selectbox(key="plan_llm_mapper").select("lexical (no model)").run()
        at.button(key="plan_go").click().run()
        no_problems(at)
        assert "LLM recommendation" in texts(at.subheader)
        assert any("LLM plan · llm" in t and "plausibility check: yes" in t for t in texts(at.markdown))
        assert any(t.startswith("Voted steps: " + " → ".join(s.upper() for s in steps)) for t in texts(at.caption))
        assert len(server.requests) == 4  # three plan queries and the check
        base = cards(at)
    with ScriptedChatServer(scripted_plans(["I'm sorry, I can't help with that."])) as server:
        at = open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_LLM_URL=server.url, KEPP_LLM_MODEL="other",
                       KEPP_HOME=tmp_path)
        at.selectbox(key="plan_llm_mapper").select("lexical (no model)").run()
        at.button(key="plan_go").click().run()
        assert not at.exception
        assert any("fallback" in str(w.value) and "refused" in str(w.value) for w in at.warning)
        assert cards(at) == base  # the fallback plan is still shown, T cards
