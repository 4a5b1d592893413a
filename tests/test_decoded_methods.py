"""Graph-aware decoding in evaluation (docs, How to use the graph): the ``+dec`` rows on the demo world and its
shipped models, λ = 0 is the argmax plan, the choice is made on training videos only, and bad
``--decode`` values are clear errors."""

from __future__ import annotations

import json

import pytest
import torch

from kepp_core.evaluation.methods.choice import clear_gain
from kepp_core.graph.decoding import GRAPH_LAMBDA, GRAPH_MODE

from tests.helpers.training import kepp

torch.set_num_threads(1)


@pytest.mark.slow
def test_decoded_rows_run_through_kepp_eval_and_store_their_choice(demo_t3, tmp_path):
    _, root, models = demo_t3
    (models / "T3" / "decoding.json").unlink(missing_ok=True)  # the shipped choices: made again here
    methods = ["kepp-nograph", "kepp-nograph+dec", "kepp-R1", "kepp-R1+dec", "kepp-gt+dec", "graph-gt"]
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods", *methods,
             "--out", tmp_path / "t.json", "--save-decoding")
    assert r.returncode == 0, r.stderr
    rows = {x["method"]: x for x in json.loads((tmp_path / "t.json").read_text())["rows"]}
    assert list(rows) == methods
    stored = json.loads((models / "T3" / "decoding.json").read_text())
    assert set(stored) == {"kepp-nograph", "kepp-R1", "kepp-gt"}
    for name, entry in stored.items():
        modes = ("free", "pinned", "topk") + ((GRAPH_MODE,) if name == "kepp-gt" else ())
        assert entry["choice"]["mode"] in modes and entry["choice"]["lam"] >= 0
        best = max((g["SR"], g["mAcc"]) for g in entry["grid"] if g["mode"] != GRAPH_MODE)
        if name == "kepp-gt":  # ground-truth endpoints: the graph unless the best gains over one standard error
            graph = next((g["SR"], g["mAcc"]) for g in entry["grid"] if (g["mode"], g["lam"]) == (GRAPH_MODE, GRAPH_LAMBDA))
            prior = entry["graph_prior"]
            assert (entry["val_SR"], entry["val_mAcc"]) == (graph if prior["kept_graph"] else best)
            assert prior["kept_graph"] == (not clear_gain(prior["gain"], prior["se"]))
            assert prior["gain"] == pytest.approx((best[0] - graph[0]) / 100) and 0 <= prior["p"] <= 1
        else:
            assert all(g["mode"] != GRAPH_MODE for g in entry["grid"])
            assert (entry["val_SR"], entry["val_mAcc"]) == best  # the best validation cell was chosen
    # the graph's knowledge is not lost: ground-truth endpoints + decoding reach the graph's own path
    assert rows["kepp-gt+dec"]["SR"] >= rows["graph-gt"]["SR"]
    # a second run reuses the stored choice (same plans, no new selection)
    mtime = (models / "T3" / "decoding.json").stat().st_mtime_ns
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods", "kepp-R1+dec",
             "--out", tmp_path / "t2.json")
    assert r.returncode == 0, r.stderr
    assert (models / "T3" / "decoding.json").stat().st_mtime_ns == mtime
    again = json.loads((tmp_path / "t2.json").read_text())["rows"][0]
    assert again["SR"] == rows["kepp-R1+dec"]["SR"]


@pytest.mark.slow
def test_zero_weight_is_the_argmax_plan(demo_t3):
    from kepp_core.evaluation.methods import DecodeOverride, EvalOptions, evaluate_horizon

    ds, _, models = demo_t3
    ev = evaluate_horizon(ds, models, 3, ["kepp-R1", "kepp-R1+dec", "kepp-nograph", "kepp-nograph+dec"],
                          EvalOptions(decode=DecodeOverride("free", 0.0)))
    assert (ev.outputs["kepp-R1+dec"].plans == ev.outputs["kepp-R1"].plans).all()
    assert (ev.outputs["kepp-nograph+dec"].plans == ev.outputs["kepp-nograph"].plans).all()
    # a large weight with pinned endpoints: every plan is a walk of the graph between the step model's endpoints
    ev = evaluate_horizon(ds, models, 3, ["kepp-R1", "kepp-R1+dec"], EvalOptions(decode=DecodeOverride("pinned", 1e3)))
    plans, ends = ev.outputs["kepp-R1+dec"].plans, ev.outputs["kepp-R1"].endpoints
    assert (plans[:, 0] == ends[:, 0]).all() and (plans[:, -1] == ends[:, 1]).all()


@pytest.mark.slow
def test_a_decode_mode_override_reaches_only_the_rows_that_allow_that_mode(demo_t3):
    """``kepp eval --decode pinned --decode-weight 1`` is for the +dec rows: a +jdec row decodes
    jointly (mode dist) whatever --decode says, with λ fixed by --decode-weight as for every
    graph-decoded row (the mode part of the override does not apply to it)."""
    from kepp_core.evaluation.methods import DecodeOverride, EvalOptions, evaluate_horizon

    ds, _, models = demo_t3
    both = evaluate_horizon(ds, models, 3, ["kepp-R1+dec", "kepp-R1+jdec"], EvalOptions(decode=DecodeOverride("pinned", 1.0)))
    assert both.outputs["kepp-R1+dec"].decoding == {"mode": "pinned", "lam": 1.0, "k": 3, "samples": 1}
    assert both.outputs["kepp-R1+jdec"].decoding == {"mode": "dist", "lam": 1.0, "k": 3, "samples": 1}
    weight = evaluate_horizon(ds, models, 3, ["kepp-R1+jdec"], EvalOptions(decode=DecodeOverride(lam=1.0)))
    assert (both.outputs["kepp-R1+jdec"].plans == weight.outputs["kepp-R1+jdec"].plans).all()
    # a mode alone leaves the +jdec row exactly as without any override
    mode = evaluate_horizon(ds, models, 3, ["kepp-R1+jdec"], EvalOptions(decode=DecodeOverride("topk")))
    plain = evaluate_horizon(ds, models, 3, ["kepp-R1+jdec"], EvalOptions())
    assert mode.outputs["kepp-R1+jdec"].decoding == plain.outputs["kepp-R1+jdec"].decoding
    assert (mode.outputs["kepp-R1+jdec"].plans == plain.outputs["kepp-R1+jdec"].plans).all()


def test_a_ground_truth_row_that_keeps_the_graph_plans_as_graph_gt_in_every_episode(demo_t3):
    """The graph prior's reference is graph-gt's own plan (its ties and fallbacks included), so the
    kept graph can never lose an episode to graph-gt; the choice is stored and read back as mode graph."""
    from kepp_core.evaluation.methods import EvalContext, EvalOptions, evaluate_horizon, get_method
    from kepp_core.evaluation.methods.choice import stored_choice
    from kepp_core.graph.build import build_graph
    from kepp_core.io import atomic_write_json
    from kepp_core.training.data import episode_tensors

    ds, _, models = demo_t3
    ctx = EvalContext(ds, 3, episode_tensors(ds, 3, "test"), build_graph(ds, "train"), models / "T3")
    entry, _ = stored_choice(ctx, get_method("kepp-gt+dec"))
    graph = next(g for g in entry["grid"] if g["mode"] == GRAPH_MODE)
    entry = {**entry, "choice": {k: graph[k] for k in ("mode", "lam", "k")}}  # the graph kept, whatever validation said
    own = models / "T3" / "decoding.json"
    stored = json.loads(own.read_text()) if own.is_file() else {}
    atomic_write_json(own, {**stored, "kepp-gt": entry})
    ev = evaluate_horizon(ds, models, 3, ["graph-gt", "kepp-gt+dec"], EvalOptions())
    assert ev.outputs["kepp-gt+dec"].decoding["mode"] == GRAPH_MODE
    assert (ev.outputs["kepp-gt+dec"].plans == ev.outputs["graph-gt"].plans).all()


def test_selection_reads_only_training_videos(demo_t3):
    from kepp_core.evaluation.methods import EvalContext, get_method
    from kepp_core.evaluation.methods.choice import select_on_validation, validation_context
    from kepp_core.graph.build import build_graph
    from kepp_core.training.data import episode_tensors

    ds, _, models = demo_t3
    test = episode_tensors(ds, 3, "test")
    ctx = EvalContext(ds, 3, test, build_graph(ds, "train"), models / "T3")
    method = get_method("kepp-R1+dec")
    vctx = validation_context(ctx, method)
    train_videos = {f"{v.task}_{v.id}" for v in ds.split("train")}
    test_videos = {f"{v.task}_{v.id}" for v in ds.split("test")}
    val_videos = {f"{e.video.task}_{e.video.id}" for e in vctx.test.episodes}
    assert val_videos and val_videos <= train_videos and not val_videos & test_videos
    # the validation graph holds no transition of a validation video's plan that no other training video has
    fit_plans = [v.plan for v in ds.split("train") if f"{v.task}_{v.id}" not in val_videos]
    assert vctx.graph.counts.data.sum() == sum(len(p) - 1 for p in fit_plans if len(p) > 1)
    entry = select_on_validation(ctx, method)
    assert set(entry["val_videos"]) == val_videos and entry["val_episodes"] == len(vctx.test)


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--decode", "sideways"], "expected one of free, pinned, topk or topk:K"),
    (["--decode", "topk:0"], "K must be a whole number >= 1"),
    (["--decode", "pinned:2"], "expected one of free, pinned, topk or topk:K"),
    (["--decode-weight", "-1"], "expected a finite number >= 0"),
    (["--decode-weight", "nan"], "expected a finite number >= 0"),
    (["--decode-weight", "lots"], "expected a number >= 0"),
])
def test_bad_decode_options_are_clear_errors(demo_t3, args, message):
    _, root, models = demo_t3
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods", "kepp-R1+dec",
             *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("wins, losses, n, taken", [(0, 0, 30, False), (1, 0, 30, False), (2, 1, 97, False),
                                                    (6, 1, 115, True), (5, 0, 138, True)])
def test_the_graph_prior_takes_a_choice_only_for_a_gain_over_one_standard_error(wins, losses, n, taken):
    """A tie or an episode's edge on a few videos keeps the graph's decoding; a clear gain is taken."""
    import numpy as np

    from kepp_core.evaluation.methods.choice import clear_gain, one_se_gain

    diff = np.zeros(n)
    diff[:wins], diff[wins:wins + losses] = 1.0, -1.0
    gain, se = one_se_gain(diff)
    assert gain == pytest.approx((wins - losses) / n) and clear_gain(gain, se) == taken


def test_a_decodings_words_name_the_source_it_decodes_with():
    """Every graph-decoded row's choice, in words, names its own endpoint source (the ground truth for
    kepp-gt+dec, the text tower for +jdec-text, the pair endpoint model for +jdec-pair) and no other:
    the mode texts once always said the step model's or the endpoint model's."""
    from kepp_core import catalog
    from kepp_core.evaluation.methods.choice import row_modes
    from kepp_core.graph.decoding import DecodeChoice
    from kepp_core.planner import describe_decoding

    words = {s.words for s in catalog.ENDPOINT_SOURCES.values()}
    rows = [m for m in catalog.METHODS if m.decoded]
    described = 0
    for m in rows:
        modes = row_modes(m) + ((GRAPH_MODE,) if m.ends.exact else ())
        for mode in modes:
            text = describe_decoding({"mode": mode, "lam": 1.0, "k": 3, "endpoints": m.ends.words})
            others = {w for w in words if w != m.ends.words and w not in m.ends.words}
            assert (m.ends.words in text) == (mode != "free") and not any(w in text for w in others), (m.name, text)
            described += 1
    assert len(rows) == 16 and described == 6 * 3 + 1 + 9 + 1  # +dec rows: 3 modes (kepp-gt+dec: 4), joint, kbest: 1
    text = DecodeChoice("dist", 0.3).describe(catalog.endpoint_source(catalog.TEXT).words)
    assert "text tower's probabilities" in text and "endpoint model" not in text
