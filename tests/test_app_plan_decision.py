"""The Plan page's decision without Streamlit (``app/components/plan/decision.py``): every exit of
``decide`` (a record and its live tab, the live plan alone, the page asking for a press), of the
missing-record and missing-video messages, of the no-plan check, the typed-step cap and the choices the
page offers. Each case names the exit it takes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.plan.decision import (LIVE, MAX_TYPED_STEPS, NO_MATCH, NO_UPLOAD, RECORDED, Models, PlanState, Records,
                                      decide, horizon_choices, missing_video, no_plan, no_planning_model, r_choices,
                                      typed_steps, untrained_horizon, upload_refused)

REC = SimpleNamespace(method="kepp-R2", seed=0, episode="tea/0287/7:3")
MODELS = Models(live_label="KEPP R=2 + graph decoding")
HELD = Records(record=REC, label="KEPP R=2")
NONE = Records(record=None, label="KEPP R=2")


# --- decide: an input the page cannot go on from (the held branch) -------------------------------------------------
@pytest.mark.parametrize("held, level, words", [
    (untrained_horizon(4, [3]), "error", "No model is trained for horizon T=4 (trained horizons: 3)"),
    (untrained_horizon(4, []), "error", "(trained horizons: none)"),
    (no_planning_model("models/T4"), "error", "`models/T4` has a step model but no planning model."),
    (missing_video("9999", {"0287"}, "talk", 2, 3), "error", "Playlist **talk**, item 2: video **9999**"),
    (NO_UPLOAD, "info", "Upload a video to plan from it."),
])
def test_a_held_input_is_said_and_the_page_stops_before_any_result(held, level, words):
    d = decide(PlanState(held=held, rec="kepp-R2", pressed=True, plan=True, news=True), MODELS, HELD)
    assert (d.record, d.live, d.plan_now, d.stop, d.keep) == (None, False, False, True, {})
    assert [m.level for m in d.messages] == [level] and words in d.messages[0].text


def test_a_search_that_matches_no_video_stops_the_page_with_the_pickers_own_words_alone():
    d = decide(PlanState(held=NO_MATCH), MODELS, NONE)
    assert (d.stop, d.plan_now, d.messages) == (True, False, ())


# --- decide: a record the records hold (the record branch) ---------------------------------------------------------
def test_a_named_record_is_shown_as_recorded_and_nothing_is_planned():
    d = decide(PlanState(rec="kepp-R2", seed=0), MODELS, HELD)
    assert (d.record, d.tab, d.live, d.plan_now, d.stop, d.messages) == (REC, RECORDED, False, False, False, ())
    assert d.keep == {"rec": "kepp-R2", "seed": 0, "live": None, "plan": None}


def test_a_link_with_live_1_opens_the_live_tab_and_plans_once():
    d = decide(PlanState(rec="kepp-R2", live=True), MODELS, HELD)
    assert (d.tab, d.plan_now, d.live, d.keep["live"]) == (LIVE, True, True, True)
    again = decide(PlanState(rec="kepp-R2", live=True, saved=True), MODELS, HELD)  # the live result is held
    assert (again.tab, again.plan_now, again.live) == (LIVE, False, True)


def test_the_visitors_tab_wins_over_the_address_and_the_button_opens_the_live_tab():
    assert decide(PlanState(rec="kepp-R2", live=True, tab=RECORDED), MODELS, HELD).tab == RECORDED
    assert decide(PlanState(rec="kepp-R2", tab=LIVE, saved=True), MODELS, HELD).plan_now is False
    pressed = decide(PlanState(rec="kepp-R2", tab=RECORDED, pressed=True, saved=True), MODELS, HELD)
    assert (pressed.tab, pressed.plan_now, pressed.scroll) == (LIVE, True, True)  # a press plans again, in view


def test_the_live_tab_with_models_that_cannot_take_the_encoder_plans_nothing_and_says_why():
    d = decide(PlanState(rec="kepp-R2", live=True), Models(live_label="x", width_error="768 values, not 512"), HELD)
    assert (d.tab, d.plan_now, d.live, d.record) == (LIVE, False, False, REC)
    assert [(m.level, m.text) for m in d.messages] == [("error", "768 values, not 512")]


def test_a_record_comes_into_view_only_when_it_arrived_or_the_page_is_presented():
    assert decide(PlanState(rec="kepp-R2", arrived=True), MODELS, HELD).scroll is True  # a link, a scene, a slide
    assert decide(PlanState(rec="kepp-R2"), MODELS, HELD).scroll is False  # the page opened plainly: at its top
    # in a talk the controls are folded away: the result is the slide
    assert decide(PlanState(rec="kepp-R2", presenting=True), MODELS, HELD).scroll is True
    assert decide(PlanState(plan=True, news=True, presenting=True), MODELS, NONE).scroll is True


def test_an_imported_methods_record_is_shown_and_said_to_have_no_model_to_re_plan_it():
    imported = Records(record=REC, label="ViterbiPlanNet (imported: T3_predictions.json)", imported="T3_predictions.json")
    d = decide(PlanState(rec="ViterbiPlanNet"), MODELS, imported)
    assert (d.record, d.tab, d.plan_now) == (REC, RECORDED, False) and [m.level for m in d.messages] == ["caption"]
    assert "the app has no model of it" in d.messages[0].text and "KEPP R=2 + graph decoding" in d.messages[0].text
    assert decide(PlanState(rec="kepp-R2"), MODELS, HELD).messages == ()  # a method of this package: nothing said


def test_an_upload_is_offered_only_with_an_encoder_the_models_accept():
    assert upload_refused("builtin-v1", None, None, None) is None  # the dataset's own encoder
    assert upload_refused(None, None, "S3D s3d.pth", None) is None  # an S3D encoder the models take
    said = [upload_refused(None, None, None, None), upload_refused("mine.pt", "not allowed here", None, None),
            upload_refused(None, None, "S3D s3d.pth", "widths 512 and 1536 differ")]
    assert [m.level for m in said] == ["caption"] * 3 and all(m.text.startswith("No upload: ") for m in said)
    assert "no features.json" in said[0].text and "not allowed here" in said[1].text and "512" in said[2].text


def test_an_upload_never_shows_a_record():
    uploads = (PlanState(rec="kepp-R2", from_dataset=False), PlanState(rec="kepp-R2", linkable=False))
    decisions = [decide(state, MODELS, HELD) for state in uploads]
    assert [(d.record, d.tab) for d in decisions] == [(None, None)] * 2


# --- decide: no record (the live branch and the asking exit) -------------------------------------------------------
def test_without_a_record_or_a_press_the_page_asks_for_one_and_stops():
    d = decide(PlanState(), MODELS, NONE)
    assert (d.record, d.live, d.plan_now, d.stop) == (None, False, False, True)
    assert [(m.level, m.text) for m in d.messages] == [("info", "Choose the clips and press **Plan**.")]
    assert d.keep == {"rec": None, "seed": None, "live": None, "plan": None}


def test_without_a_record_and_with_models_of_another_width_the_stop_names_only_the_width():
    d = decide(PlanState(pressed=True), Models(live_label="x", width_error="wrong width"), NONE)
    assert (d.stop, d.plan_now) == (True, False) and [m.level for m in d.messages] == ["error"]


def test_a_press_plans_live_and_brings_it_into_view():
    d = decide(PlanState(pressed=True), MODELS, NONE)
    assert (d.live, d.plan_now, d.stop, d.scroll, d.keep["plan"]) == (True, True, False, True, True)


def test_a_link_with_plan_1_plans_on_opening_once_and_a_held_result_is_shown_again():
    d = decide(PlanState(plan=True, news=True, arrived=True), MODELS, NONE)
    assert (d.plan_now, d.live, d.scroll) == (True, True, True)
    held = decide(PlanState(plan=True, news=True, saved=True), MODELS, NONE)
    assert (held.plan_now, held.live, held.stop) == (False, True, False)
    assert decide(PlanState(plan=True, news=False), MODELS, NONE).stop  # not news: the page's own address


def test_a_user_upload_is_planned_but_never_put_in_a_link():
    d = decide(PlanState(pressed=True, linkable=False, from_dataset=False), MODELS, NONE)
    assert d.live and d.keep["plan"] is None
    # an upload asked with a record's key (the upload scene's link): no record to miss, nothing said
    assert decide(PlanState(rec="kepp-R2", pressed=True, from_dataset=False), MODELS, NONE).messages == ()


def test_a_named_record_the_records_lack_is_said_and_planned_live():
    d = decide(PlanState(rec="kepp-R2", seed=3, news=True, arrived=True), MODELS, NONE)
    assert (d.record, d.live, d.plan_now) == (None, True, True)
    (said,) = d.messages
    assert said.level == "warning" and "hold no **KEPP R=2** record of this episode (seed 3)" in said.text
    assert "live plan by **KEPP R=2 + graph decoding**" in said.text
    playing = decide(PlanState(rec="kepp-R2", news=True, playlist="talk", item=2), MODELS, NONE)
    assert playing.messages[0].text.startswith("Playlist **talk**, item 2: the loaded prediction records hold no")


# --- decide: no models (the record the address names, else the graph alone) --------------------------------------
NO_MODELS = Models(live_label="", missing="no checkpoints folder set for this dataset")
IMPORTED = Records(record=REC, label="ViterbiPlanNet (imported: T3_predictions.json)", imported="T3_predictions.json")
# an imported method's A/B row on a features-only list without models: its record, never the first episode
AB_ROW = ("T", "video", "ep", "rec")


def test_without_models_an_imported_methods_record_the_link_names_is_shown_as_recorded():
    d = decide(PlanState(rec="ViterbiPlanNet", arrived=True, news=True, asked=AB_ROW), NO_MODELS, IMPORTED)
    assert (d.record, d.tab, d.live, d.plan_now, d.stop, d.zero_shot, d.scroll) == (REC, RECORDED, False, False, False,
                                                                                    False, True)
    assert d.ignored == () and d.keep == {"rec": "kepp-R2", "seed": 0, "live": None, "plan": None}
    (said,) = d.messages
    assert "the app has no model of it" in said.text and "No model here re-plans it (no checkpoints folder" in said.text


@pytest.mark.parametrize("records", [HELD, IMPORTED], ids=["trained-or-zero-shot-method", "imported-method"])
def test_without_models_any_methods_record_is_shown_and_the_keys_of_a_live_re_plan_are_named_not_taken(records):
    asked = (*AB_ROW, "seed", "R", "model", "live", "plan", "playlist", "item")
    d = decide(PlanState(rec="kepp-R2", live=True, plan=True, pressed=True, asked=asked), NO_MODELS, records)
    assert (d.record, d.live, d.plan_now, d.tab) == (REC, False, False, RECORDED)
    assert [k for k, _ in d.ignored] == ["R", "model", "live", "plan"]  # the episode, record and playlist are taken
    assert all("no models here (no checkpoints folder" in why and "recorded plan is shown" in why for _, why in d.ignored)
    assert {k: d.keep[k] for k in ("R", "model", "live", "plan")} == dict.fromkeys(("R", "model", "live", "plan"))


def test_without_models_a_record_the_records_lack_is_said_and_the_graph_alone_plans_with_every_key_named():
    d = decide(PlanState(rec="kepp-R2", seed=1, news=True, asked=(*AB_ROW, "seed", "playlist")), NO_MODELS, NONE)
    assert (d.record, d.zero_shot, d.live, d.plan_now) == (None, True, False, False)
    (said,) = d.messages
    assert "hold no **KEPP R=2** record of this episode (seed 1)" in said.text and "graph alone plans" in said.text
    assert [k for k, _ in d.ignored] == [*AB_ROW, "seed"] and all("graph alone" in why for _, why in d.ignored)
    plain = decide(PlanState(), NO_MODELS, NONE)  # the page opened plainly: zero-shot, nothing to name
    assert (plain.zero_shot, plain.ignored, plain.messages) == (True, (), ())


def test_without_models_a_video_the_dataset_lacks_shows_no_record():
    d = decide(PlanState(rec="kepp-R2", from_dataset=False, asked=AB_ROW), NO_MODELS, HELD)
    assert (d.record, d.zero_shot) == (None, True) and "video" in dict(d.ignored)


# --- the smaller decisions ----------------------------------------------------------------------------------------
def test_a_playlist_item_whose_video_is_missing_is_said_and_nothing_else_is_shown():
    assert missing_video(None, ["0287"], "talk", 1, 3) is None  # nothing asked
    assert missing_video("0287", ["0287"], "talk", 1, 3) is None  # there
    assert missing_video("9999", ["0287"], None, None, 3) is None  # no playlist: the link's line says it
    said = missing_video("9999", ["0287"], "talk", 3, 4)
    assert said.level == "error" and "item 3: video **9999** is not among" in said.text and "4 annotated steps" in said.text


def test_a_result_that_is_not_a_plan_is_said_instead_of_shown():
    plan = SimpleNamespace(plan=(1, 2, 3), fallback=False, no_path=False)
    assert no_plan(plan) is None
    assert no_plan(SimpleNamespace(plan=(1, 1, 1), fallback=True, no_path=False)) is None  # a model's plan
    assert "no path of this length" in no_plan(SimpleNamespace(plan=(1, 1, 1), fallback=True, no_path=True)).text
    empties = (SimpleNamespace(plan=(), no_path=False), SimpleNamespace(plan=None, no_path=True))
    for empty in empties:
        assert no_plan(empty).text.startswith("No plan: the planner returned none")
    assert len(empties) == 2


def test_typed_steps_are_capped_with_a_message():
    assert typed_steps("") == ([], None)
    steps, said = typed_steps("\n".join(f"step {k}" for k in range(20_000)))
    assert len(steps) == MAX_TYPED_STEPS and steps[-1] == f"step {MAX_TYPED_STEPS - 1}"
    assert said.level == "warning" and "first 200 of the 20,000 steps typed" in said.text
    long_steps, said = typed_steps("a" * 10_000 + "\nstir")
    assert [len(s) for s in long_steps] == [200, 4] and "cut at 200 characters" in said.text


@pytest.mark.parametrize("trained, text, expected", [([3], False, [3]), ([3, 4], False, [3, 4]),
                                                     ([], True, [3, 4, 5, 6]), ([8], True, [3, 4, 5, 6, 8])])
def test_the_page_offers_only_horizons_it_can_plan(trained, text, expected):
    assert horizon_choices(trained, text) == expected


def test_the_page_offers_only_the_r_a_model_was_trained_with():
    assert r_choices(1, graph=True) == [1]  # only an R = 1 model: no R = 2 offered
    assert r_choices(2, graph=True) == [2]
    assert r_choices(None, graph=True) == [1, 2, 3, 4, 5]  # graph + text endpoints: paths shown
    assert r_choices(None, graph=False) == []  # no graph condition: no paths
