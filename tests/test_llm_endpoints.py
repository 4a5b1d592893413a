"""Secrets and requests stay the operator's: the LLM endpoints the app server calls are the ones the
person running it named (``kepp app --llm-url``, ``KEPP_LLM_URL``); a URL a visitor types is refused
before any connection, and the operator's key (``KEPP_LLM_API_KEY``) reaches only the operator's
endpoint. Real listeners on 127.0.0.1 record what arrives: through the API the app calls and through
a real session of the Plan page (``AppTest``)."""

from __future__ import annotations

import pytest
from llm_server import ScriptedChatServer, scripted_plans

from kepp_core.errors import KeppError
from tests.helpers.app_session import dataset, open_page
from tests.helpers.listener import RecordingListener

KEY = "sk-the-operators-secret"
ACTIONS = ["crack egg", "whisk egg", "fry egg"]


def _reply(steps) -> str:
    return "\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))


def test_the_api_refuses_a_visitors_url_before_connecting_and_keeps_the_key(monkeypatch):
    from kepp_core import api

    monkeypatch.setenv("KEPP_LLM_API_KEY", KEY)
    with RecordingListener() as visitor, ScriptedChatServer(scripted_plans([_reply(ACTIONS)])) as operator:
        for url in (visitor.url, visitor.url + "/", operator.url + "@" + visitor.url[7:], operator.url + "/../x"):
            with pytest.raises(KeppError, match="not an LLM endpoint this server may call"):
                api.llm_recommender(url, "m", "lexical", ACTIONS, allowed=(operator.url,))
        assert visitor.received == [] and operator.requests == []
        rec = api.llm_recommender(operator.url.upper().replace("/V1", "/v1") + "/", "m", "lexical", ACTIONS,
                                  allowed=(operator.url,))
        result = rec(0, 2, 3)
    assert result.actions == (0, 1, 2) and result.fallback is None
    assert operator.requests and all(r["headers"].get("Authorization") == f"Bearer {KEY}" for r in operator.requests)
    assert visitor.received == []


def test_no_allowed_endpoint_means_none_is_called(monkeypatch):
    from kepp_core import api

    monkeypatch.setenv("KEPP_LLM_API_KEY", KEY)
    with RecordingListener() as visitor:
        with pytest.raises(KeppError, match="kepp app --llm-url URL"):
            api.llm_recommender(visitor.url, "m", "lexical", ACTIONS, allowed=())
    assert visitor.received == []


def test_the_app_config_takes_its_endpoints_from_the_operator_only(tmp_path):
    from kepp_core.api import AppConfig

    env = AppConfig(llm_urls=("http://127.0.0.1:9000/v1",)).environment()
    cfg = AppConfig.from_env({**env, "KEPP_LLM_URL": "http://127.0.0.1:8080/v1"})
    assert cfg.llm_urls == ("http://127.0.0.1:9000/v1", "http://127.0.0.1:8080/v1")
    config = tmp_path / "app.toml"
    config.write_text('llm_urls = ["http://evil.example/v1"]\n')  # a config a visitor opens cannot add one
    with pytest.raises(KeppError, match="unknown key 'llm_urls'"):
        AppConfig.read_file(config)


@pytest.mark.slow
@pytest.mark.xdist_group("app")
def test_the_plan_page_offers_only_the_operators_endpoints_and_the_key_goes_only_there(monkeypatch, app_env, tmp_path):
    """With two endpoints named by the operator (``KEPP_LLM_URL`` and the app's ``llm_urls``) the Plan
    page offers exactly those two, by host, and nothing to type an address into (a visitor used to type
    their own and receive the requests with the operator's key); the one picked gets the requests and
    the key, the other and a visitor's listener nothing."""
    steps = dataset(app_env).actions[:app_env.horizon]
    with RecordingListener() as visitor, ScriptedChatServer(scripted_plans([_reply(steps)])) as first, \
            ScriptedChatServer(scripted_plans([_reply(steps)])) as second:
        at = open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_LLM_URL=first.url, KEPP_APP_LLM_URLS=second.url,
                       KEPP_LLM_MODEL="scripted", KEPP_LLM_API_KEY=KEY, KEPP_HOME=tmp_path)
        assert not [w for w in at.text_input if "llm" in str(w.key)]
        endpoints = at.selectbox(key="plan_llm_url")
        assert sorted(endpoints.options) == ["127.0.0.1", "127.0.0.1"] and len(endpoints.options) == 2
        endpoints.set_value(first.url).run()
        at.selectbox(key="plan_llm_mapper").select("lexical (no model)").run()
        at.button(key="plan_go").click().run()
        assert not at.exception and not at.error
        assert len(first.requests) == 4 and second.requests == [] and visitor.received == []
        assert {r["headers"].get("Authorization") for r in first.requests} == {f"Bearer {KEY}"}
