"""Playlists in the app, through real Streamlit sessions (AppTest) on the demo world with the shipped
models and a copy of their records (so the playlists are written beside the copy): adding episodes
from Failure cases, Results and Plan, the Playlists page (the scenes by default, reorder, remove,
rename, delete, a bad file as one message) and playing a playlist on the Plan page."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from components.records import urls
from components.talk import playlists
from kepp_core import api, catalog
from kepp_core.errors import KeppError
from components.ui.text import md
from kepp_core.evaluation.playlists import PlaylistStore
from tests.helpers.app_session import cards, no_problems, open_page, page_scenes, prediction_table

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("app")]


@pytest.fixture
def env(demo_env, tmp_path):
    """The demo environment with its records copied into ``tmp_path`` (playlists go to tmp_path/playlists)."""
    records = tmp_path / "predictions.jsonl"
    shutil.copyfile(demo_env.records, records)
    return dataclasses.replace(demo_env, records=records)


def store(env) -> PlaylistStore:
    return PlaylistStore(env.records.parent / "playlists")


def rows(env, n: int, method: str = "kepp-R2"):
    preds = prediction_table(env)
    return preds[(preds["method"] == method) & (preds["horizon"] == 3)].iloc[:n]


def shown_items(at) -> list[str]:
    """The Playlists page's items (their markdown: the item's line, its verdict, its note), in order."""
    return [str(m.value) for m in at.markdown if " · T=" in str(m.value)]


def note_of(shown: str) -> str:
    """The note an item's markdown shows (its last line, in italics), or ''."""
    last = shown.split("\n")[-1]
    return last.split("*")[1] if last.startswith(":material/speaker_notes:") else ""


def test_the_page_shows_the_scenes_by_default_and_edits_a_playlist(monkeypatch, env):
    at = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py"))
    assert at.selectbox(key="pl_name").value == playlists.DEFAULT
    scenes = list(page_scenes(env).values())  # the built-in scenes (and the upload example), not editable
    assert [note_of(line) for line in shown_items(at)][:len(scenes)] == [md(s["name"]) for s in scenes]
    assert at.button(key="pl_up_1").disabled and at.button(key="pl_remove_0").disabled
    picked = rows(env, 3)
    playlists_added = store(env).add("talk", [playlists.item_of_row(r) for r in picked.to_dict("records")])
    episodes = [i.episode for i in playlists_added.items]
    at = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": "talk"}))
    assert at.selectbox(key="pl_name").value == "talk" and len(shown_items(at)) == 3
    at.button(key="pl_down_0").click().run()  # reorder
    no_problems(at)
    assert [i.episode for i in store(env).read("talk").items] == [episodes[1], episodes[0], episodes[2]]
    at.button(key="pl_up_2").click().run()
    assert [i.episode for i in store(env).read("talk").items] == [episodes[1], episodes[2], episodes[0]]
    at.button(key="pl_remove_1").click().run()  # remove
    no_problems(at)
    assert [i.episode for i in store(env).read("talk").items] == [episodes[1], episodes[0]]
    assert len(shown_items(at)) == 2
    at.text_input(key="pl_new_name").input("../escape")  # rename: a path is refused, nothing moves
    at.button(key="pl_rename").click().run()
    assert any("path separator" in str(e.value) for e in at.error) and store(env).names() == ["talk"]
    at.text_input(key="pl_new_name").input("keynote 2026")
    at.button(key="pl_rename").click().run()
    no_problems(at)
    assert store(env).names() == ["keynote 2026"] and at.query_params["playlist"] == "keynote 2026"
    assert at.selectbox(key="pl_name").value == "keynote 2026"
    # a reload (a new session on the same address) shows the same playlist
    again = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", dict(at.query_params)))
    assert len(shown_items(again)) == 2 and again.selectbox(key="pl_name").value == "keynote 2026"
    again.button(key="pl_delete").click().run()  # delete
    no_problems(again)
    assert store(env).names() == [] and again.selectbox(key="pl_name").value == playlists.DEFAULT


def test_a_bad_playlist_file_is_one_message_naming_the_file_and_key(monkeypatch, env):
    folder = env.records.parent / "playlists"
    folder.mkdir()
    (folder / "broken.json").write_text(json.dumps({"format": "kepp-playlist", "version": 1,
                                                    "items": [{"episode": "e", "method": "m", "T": "three"}]}))
    at = open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": "broken"})
    assert not at.exception
    errors = [str(e.value) for e in at.error]
    assert len(errors) == 1 and "broken.json" in errors[0] and "items\\[0\\].T" in errors[0], errors
    assert "delete this playlist" in errors[0]
    at.button(key="pl_delete").click().run()  # a damaged file can still be deleted
    assert not (folder / "broken.json").exists()
    # the Plan page playing it says the same and still works
    (folder / "broken.json").write_text("{")
    plan = open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "broken", "item": "1"})
    assert not plan.exception and any("broken.json" in str(e.value) for e in plan.error)
    assert plan.button(key="plan_go")
    # a name that is not a playlist name, in the address
    odd = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": "../../etc/passwd"}))
    assert any("path separator" in str(w.value) for w in odd.warning)
    assert odd.selectbox(key="pl_name").value == playlists.DEFAULT


def add(at, key: str, name: str, ok: bool = True) -> None:
    at.text_input(key=f"{key}_name").input(name)
    at.button(key=f"{key}_go").click().run()
    assert not at.exception
    if ok:
        no_problems(at)


def test_episodes_are_added_from_failure_cases_results_and_plan(monkeypatch, env):
    fail = no_problems(open_page(monkeypatch, env, "views/4_Failure_cases.py", {"method": "kepp-R2", "T": "3"}))
    add(fail, "fail_add", "talk")
    episode = fail.selectbox(key="fail_episode").value
    res = no_problems(open_page(monkeypatch, env, "views/5_Results.py", {"method": "kepp-R1", "T": "4"}))
    add(res, "res_add", "talk")
    shown = res.selectbox(key="res_episode").value
    add(res, "res_add", "talk")  # the same again: not added twice
    items = store(env).read("talk").items
    assert [(i.episode, i.method, i.T) for i in items] == [(episode, "kepp-R2", 3), (shown, "kepp-R1", 4)]
    row = prediction_table(env).query("episode == @shown and method == 'kepp-R1'").iloc[0]
    assert items[1].query == urls.plan_query(dict(row))
    assert any("Added the episode to playlist 'talk' (2 items)" in str(s.value) for s in res.success)
    add(res, "res_add", "scenes", ok=False)  # the built-in playlist's name is refused
    assert any("built-in playlist" in str(e.value) for e in res.error)
    # the Plan page adds its episode with its settings (planning model, R, sampler, clips); showing a
    # record, the item names that record (its method): its slide shows the record
    plan = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {**items[0].query, "sampler": "ddim5"}))
    add(plan, "plan_add", "talk")
    last = store(env).read("talk").items[-1]
    assert last.episode == episode and last.method == "kepp-R2" and last.query["sampler"] == "ddim5"
    assert last.query["rec"] == "kepp-R2" and "plan" not in last.query
    assert last.query["start"] and last.query["video"] == items[0].query["video"]
    # without a record, the item is the page's live plan (no method; planned at once)
    live = no_problems(open_page(monkeypatch, env, "views/1_Plan.py",
                                 {k: v for k, v in items[0].query.items() if k not in ("rec", "seed")}))
    add(live, "plan_add", "talk")
    last = store(env).read("talk").items[-1]
    assert last.method == "" and last.query["plan"] == "1" and "rec" not in last.query


def test_a_playlist_plays_on_the_plan_page_item_by_item(monkeypatch, env):
    picked = rows(env, 3)
    store(env).add("talk", [playlists.item_of_row(r) for r in picked.to_dict("records")])
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py",
                               {**urls.plan_query(dict(picked.iloc[0])), "playlist": "talk", "item": "1"}))
    progress = lambda: [str(m.value) for m in at.markdown if " / 3" in str(m.value)]  # noqa: E731
    assert progress() == ["**1 / 3** · talk"] and at.button(key="playlist_prev").disabled
    assert cards(at) >= 6  # planned at once: the plan and its ground truth
    for k in (1, 2):
        at.button(key="playlist_next").click().run()
        no_problems(at)
        row = picked.iloc[k]
        assert progress() == [f"**{k + 1} / 3** · talk"]
        assert at.query_params["video"] == str(row["video"]) and at.query_params["ep"] == urls.plan_query(dict(row))["ep"]
        # each slide shows the item's record (its method's plan and verdict): nothing planned live
        assert at.query_params["item"] == str(k + 1) and at.query_params["rec"] == row["method"] and cards(at) >= 6
        assert "plan" not in at.query_params and "live" not in at.query_params
    assert at.button(key="playlist_next").disabled
    at.button(key="playlist_prev").click().run()
    assert progress() == ["**2 / 3** · talk"] and at.query_params["video"] == str(picked.iloc[1]["video"])
    # the built-in scenes play the same way
    scenes = list(page_scenes(env).values())
    first = no_problems(open_page(monkeypatch, env, "views/1_Plan.py",
                                  playlists.play_query(playlists.DEFAULT, 0, {"query": scenes[0]["query"]})))
    shown = [str(m.value) for m in first.markdown if str(m.value).startswith("**1 / ")]
    assert len(shown) == 1 and shown[0].endswith("** · scenes") and int(shown[0][6:].split("*")[0]) >= len(scenes)
    assert first.query_params["video"] == scenes[0]["video"] and cards(first) >= 6
    assert api.read_predictions([env.records]) is not None


def test_the_listed_episodes_go_to_a_playlist_in_one_click(monkeypatch, env):
    """Results and Failure cases add every episode their filters list (all pages), the first a
    playlist holds when there are more."""
    preds = prediction_table(env)
    res = no_problems(open_page(monkeypatch, env, "views/5_Results.py",
                                {"method": "kepp-R1", "T": "4", "outcome": "incorrect"}))
    add(res, "res_add_listed", "wrong-r1")
    wrong = preds[(preds["method"] == "kepp-R1") & (preds["horizon"] == 4) & ~preds["success"]]
    items = store(env).read("wrong-r1").items
    assert 1 < len(items) == min(len(wrong), store(env).capacity)
    assert {i.episode for i in items} <= set(wrong["episode"]) and {(i.method, i.T) for i in items} == {("kepp-R1", 4)}
    fail = no_problems(open_page(monkeypatch, env, "views/4_Failure_cases.py",
                                 {"method": "kepp-R2", "T": "3", "pattern": "wrong_endpoint"}))
    add(fail, "fail_add_listed", "ends")
    chosen = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3) & (preds["pattern"] == "wrong_endpoint")]
    assert [i.episode for i in store(env).read("ends").items] == list(chosen["episode"])[:store(env).capacity]


def test_notes_are_edited_and_each_item_shows_its_slides_verdict(monkeypatch, env):
    """The Playlists page shows each item's verdict and failure pattern (its record's, as the slide says it)
    and its note; the note is edited there and written to the playlist's file (checked, atomically)."""
    picked = rows(env, 3)
    store(env).add("talk", [playlists.item_of_row(r) for r in picked.to_dict("records")])
    at = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py", {"playlist": "talk"}))
    for shown, (_, row) in zip(shown_items(at), picked.iterrows()):
        verdict = "success" if row["success"] else f"failure: {catalog.pattern_label(row['pattern'])}"
        assert f":{'green' if row['success'] else 'red'}[{md(verdict)}]" in shown and note_of(shown) == ""
    field = next(t for t in at.text_area if str(t.key).startswith("pl_note_1_"))
    field.input("Point at the loop in the graph: <b>here</b>")
    at.button(key="pl_note_save_1").click().run()
    no_problems(at)
    items = store(env).read("talk").items
    assert [i.note for i in items] == ["", "Point at the loop in the graph: <b>here</b>", ""]
    assert note_of(shown_items(at)[1]) == md("Point at the loop in the graph: <b>here</b>")  # escaped, not markup
    assert any("Saved the note of item 2" in str(x.value) for x in at.success)
    # too long a note is refused in one message, the file unchanged (the field allows no more either)
    with pytest.raises(KeppError, match="note: longer than"):
        store(env).set_note("talk", 0, "x" * (store(env).note_limit + 1))
    # the item moved in between: the note is not written to another item
    stale = next(t for t in at.text_area if str(t.key).startswith("pl_note_0_"))
    store(env).write(store(env).read("talk").moved(0, 1))
    stale.input("meant for the first item")
    at.button(key="pl_note_save_0").click().run()
    assert any("the playlist changed" in str(e.value) for e in at.error)
    assert "meant for the first item" not in {i.note for i in store(env).read("talk").items}
    # the built-in scenes' notes (their names) are not edited here: "Save a copy" first
    scenes = no_problems(open_page(monkeypatch, env, "views/7_Playlists.py"))
    assert not [t for t in scenes.text_area if str(t.key).startswith("pl_note_")]


def test_an_ab_pair_is_added_from_results_and_the_ab_view_and_plays_as_one_slide(monkeypatch, env):
    """"Add A/B slide to playlist" from Results' episode comparison and from the A/B view adds one item holding
    the episode and both methods; its slide on the Plan page draws both plans, the truth and each method's
    verdict, a method with no recorded endpoints the verdict its records are filed under (its plan's own ends: the
    store's one judge, as Failure cases lists it)."""
    res = no_problems(open_page(monkeypatch, env, "views/5_Results.py",
                                {"method": "kepp-R2", "T": "3", "compare": "kepp-R2,random"}))
    add(res, "res_add_ab", "ab")
    compared = res.selectbox(key="res_episode").value
    view = no_problems(open_page(monkeypatch, env, "views/5_Results.py", {"method": "kepp-R2", "T": "3", "a": "kepp-R2",
                                                                           "b": "random", "cell": "a-only"}))
    add(view, "res_ab_add", "ab")
    paired = view.selectbox(key="res_ab_episode").value.split(" · ")[0]
    items = store(env).read("ab").items
    assert [(i.kind, i.episode, i.methods) for i in items] == [("ab", compared, ("kepp-R2", "random")),
                                                                ("ab", paired, ("kepp-R2", "random"))]
    assert any("Added the A/B slide to playlist 'ab' (2 items)" in str(s.value) for s in view.success)
    at = no_problems(open_page(monkeypatch, env, "views/1_Plan.py", {"playlist": "ab", "item": "2"}))
    assert at.query_params["rec"] == "kepp-R2" and at.query_params["vs"] == "random"
    preds = prediction_table(env).set_index(["episode", "method"])
    a, b = (preds.loc[(paired, m)] for m in ("kepp-R2", "random"))
    shown = " ".join(str(m.value) for m in at.markdown)
    assert f'data-episode="{paired}" data-methods="kepp-R2,random"' in shown
    assert "<b>A · KEPP R=2</b> · " in shown and f"<b>B · {catalog.method_label('random')}</b>" in shown
    assert a["success"] and not b["success"] and b["endpoints"] is None and b["pattern"] == "wrong_endpoint"
    assert "failure: wrong predicted endpoint" in shown and "this method does not predict them" not in shown
    assert cards(at) == 3 * 3  # plan A, plan B, the truth
