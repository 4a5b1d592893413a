"""The Plan page in real Streamlit sessions (AppTest) where it used to lie or hand a visitor the server:
a playlist item whose record or video is missing says so (never another episode under its number); the
LLM endpoint is the operator's only (a visitor cannot make the server send requests, or the operator's
key, elsewhere); the clip times agree everywhere; a page opened plainly stays at its top."""

from __future__ import annotations

import html

import pytest
from llm_server import ScriptedChatServer, scripted_plans

from components.talk import playlists
from kepp_core import api
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.app_session import cards, dataset, no_problems, open_page, prediction_table, texts

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


@pytest.fixture
def env(demo_env, tmp_path, monkeypatch):
    """The demo environment with the cache home in ``tmp_path``: the shipped records' playlists go there."""
    monkeypatch.setenv("KEPP_HOME", str(tmp_path))
    return demo_env


def talk(env, *queries: dict) -> None:
    """The playlist ``talk``, where the app reads it: one item per query change applied to a kepp-R2
    record's item (T=3)."""
    preds = prediction_table(env)
    rows = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)].iloc[:len(queries)].to_dict("records")
    items = [playlists.item_of_row(r) for r in rows]
    for item, change in zip(items, queries):
        item["query"] = {**item["query"], **change}
    cfg = api.AppConfig(dataset="demo", root=str(env.world), checkpoints=str(env.models), predictions=str(env.records))
    PlaylistStore(api.Workspace(cfg).playlists_folder()).add("talk", items)


def test_a_playlist_item_whose_record_is_missing_says_so_and_its_live_plan_is_labelled(monkeypatch, env):
    talk(env, {"seed": "7"})  # the records hold seed 0 only
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "1"}))
    (said,) = [w for w in texts(at.warning) if "hold no" in w]
    assert said.startswith("Playlist **talk**, item 1: the loaded prediction records hold no **KEPP R=2** record of "
                           "this episode (seed 7): shown instead is a live plan by **KEPP R=2")
    verdicts = [m for m in texts(at.markdown) if 'class="kepp-verdict' in m]
    assert verdicts and all("kepp-live" in v and "Live · KEPP R=2" in v for v in verdicts)  # never "Recorded"
    assert not at.tabs and cards(at) >= 6


def test_a_playlist_item_whose_video_is_missing_says_so_and_shows_no_other_episode(monkeypatch, env):
    talk(env, {}, {"video": "no-such-video"})
    at = open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "talk", "item": "2"})
    assert not at.exception
    (said,) = texts(at.error)
    assert said.startswith("Playlist **talk**, item 2: video **no-such-video** is not among this dataset's videos")
    assert cards(at) == 0 and not [m for m in texts(at.markdown) if "kepp-verdict" in m]  # no other episode shown
    assert "plan_video" not in [w.key for w in at.selectbox]
    assert at.query_params["item"] == "2" and at.query_params["video"] == "no-such-video"  # the place is kept
    at.button(key="playlist_prev").click().run()  # the talk goes on
    assert no_problems(at).query_params["item"] == "1" and cards(at) >= 6


def test_the_llm_endpoint_is_the_operators_and_no_visitor_can_set_one(monkeypatch, app_env, tmp_path):
    ds = dataset(app_env)
    reply = "\n".join(f"Step {i}: {s}" for i, s in enumerate(ds.actions[:app_env.horizon], 1))
    with ScriptedChatServer(scripted_plans([reply])) as operator, ScriptedChatServer(scripted_plans([reply])) as visitor:
        at = no_problems(open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_LLM_URL=operator.url,
                                   KEPP_LLM_MODEL="scripted", KEPP_LLM_API_KEY="operator-secret", KEPP_HOME=tmp_path))
        assert not [t for t in at.text_input if "llm" in str(t.key)]  # nothing to type an address into
        assert any("Endpoint: **127.0.0.1** · model **scripted** (set by the person running the app)" in c
                   for c in texts(at.sidebar.caption))
        # what the old field's key held, set in the session as a crafted request would: ignored
        at.session_state["plan_llm_url"] = visitor.url
        at.session_state["plan_llm_model"] = "expensive"
        at.selectbox(key="plan_llm_mapper").select("lexical (no model)").run()
        at.button(key="plan_go").click().run()
        no_problems(at)
        assert "LLM recommendation" in texts(at.subheader)
        assert visitor.requests == [] and len(operator.requests) == 4  # three plan queries and the check
        assert {r["body"]["model"] for r in operator.requests} == {"scripted"}
        assert {r["headers"].get("Authorization") for r in operator.requests} == {"Bearer operator-secret"}


def test_without_an_llm_configured_it_is_not_offered_and_one_line_says_why(monkeypatch, app_env, tmp_path):
    at = no_problems(open_page(monkeypatch, app_env, "views/1_Plan.py", KEPP_LLM_URL=None, KEPP_LLM_MODEL=None,
                               KEPP_HOME=tmp_path))
    said = [c for c in texts(at.sidebar.caption) if c.startswith("LLM recommendation is off")]
    assert len(said) == 1 and "\n" not in said[0] and "KEPP_LLM_URL" in said[0]
    assert "plan_llm_mapper" not in [w.key for w in at.selectbox]
    at.button(key="plan_go").click().run()
    assert "LLM recommendation" not in texts(no_problems(at).subheader)


def image_captions(at) -> list[str]:
    """The captions of every image the page draws (the video's frames)."""
    return [img.caption for el in at.get("image") for img in el.proto.imgs]


def test_the_clip_times_agree_in_the_sliders_the_frames_and_the_record(monkeypatch, env):
    row = prediction_table(env).query("method == 'kepp-R2' and horizon == 3").iloc[2]
    from components.records.urls import plan_query

    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", plan_query(dict(row))))
    start = next(s for s in at.slider if s.label == "Start clip (s)").value
    goal = next(s for s in at.slider if s.label == "Goal clip (s)").value
    words = {"start": f"start clip {start[0]:.1f}–{start[1]:.1f} s", "goal": f"goal clip {goal[0]:.1f}–{goal[1]:.1f} s"}
    captions = image_captions(at)
    assert captions.count(words["start"]) == 1 and captions.count(words["goal"]) == 1  # the record's frames
    assert sum(c.startswith(words["start"] + ": ") for c in captions) == 2  # the sliders' first and last frames
    assert sum(c.startswith(words["goal"] + ": ") for c in captions) == 2
    assert not [c for c in captions if not c.startswith(tuple(words.values()))], captions  # no other times


def scrolls(at) -> bool:
    """Whether this run asked the browser to bring the result into view."""
    return any("scrollIntoView" in str(getattr(e.proto, "body", "")) for e in at.get("html"))


def test_a_plain_visit_stays_at_the_top_and_an_asked_result_comes_into_view(monkeypatch, env):
    plain = no_problems(open_page(monkeypatch, env, "views/1_Plan.py"))
    assert plain.tabs and cards(plain) > 0 and not scrolls(plain)  # the clean success, below the controls
    row = prediction_table(env).query("method == 'kepp-R2' and horizon == 3").iloc[4]
    from components.records.urls import plan_query

    linked = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", plan_query(dict(row))))
    assert scrolls(linked)  # a link asked for this result
    plain.button(key="plan_go").click().run()  # a press: the live tab, in view
    assert scrolls(no_problems(plain)) and plain.query_params["live"] == "1"


def test_a_kbest_record_shows_its_own_k_plans_and_their_scores_where_graph_paths_show(monkeypatch, env):
    """A K-best row's record (the shipped demo records: beside KEPP-R rows, whose graph paths the record's
    ``paths`` keep) shows the row's own K plans, best first, with their log scores, where a KEPP row's record
    shows its graph paths; a KEPP-R record on the same page still shows its graph paths."""
    from components.records.urls import plan_query

    from kepp_core import catalog

    preds = prediction_table(env)
    row = preds.query("method == 'kepp-R1+kbest' and horizon == 3").iloc[1]
    k = catalog.KBEST_DECODING.k
    assert len(row["paths"]) == k and row["plan"] == row["paths"][0]
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", plan_query(dict(row))))
    shown = texts(at.markdown)
    heads = [t for t in shown if "K-best plan" in t]
    labels = dataset(env).labels
    for rank, (path, score) in enumerate(zip(row["paths"], row["path_scores"]), 1):
        (head,) = [t for t in heads if f"K-best plan {rank} · log score={score:.3f}" in t]
        assert all(html.escape(w, quote=False) in head for label in labels(path) for w in label.split())  # its steps
    assert len(heads) == k and not [t for t in shown if "graph path" in t]
    assert any(c.startswith("K-best plans: this row's K most probable plans") for c in texts(at.caption))
    assert cards(at) == (2 + k) * 3  # the plan, the ground truth and each of the K plans, T cards each
    episode = row["episode"]
    kepp = preds.query("method == 'kepp-R2' and horizon == 3 and episode == @episode").iloc[0]
    other = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", plan_query(dict(kepp))))
    assert [t for t in texts(other.markdown) if "graph path" in t] and not [t for t in texts(other.markdown)
                                                                           if "K-best plan" in t]
