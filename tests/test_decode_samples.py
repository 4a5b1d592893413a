"""Mean-of-K emissions for graph-aware decoding (docs, How to use the graph; ``kepp eval --decode-samples K``): K = 1
is today's decoding of the one sampled x₀; K > 1 decodes the mean of K sampled action blocks,
exactly as averaging them by hand and decoding with the same decoder; the choice is stored per K."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.training import kepp

torch.set_num_threads(1)


def manual_blocks(ds, models: Path, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The no-graph planning model's own x₀ action block (seed 1) and ``k`` more (seed 3, the
    test queries each repeated ``k`` times), sampled here without the evaluation code."""
    from kepp_core.diffusion.sampling import sample_actions
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.models.spec import ModelSpec
    from kepp_core.training.data import episode_tensors

    model, cfg = load_checkpoint(models / "T3" / "plan-none", "plan")
    spec = ModelSpec.from_config(cfg, models / "T3" / "plan-none")
    test = episode_tensors(ds, 3, "test", "conventional", 3)
    a0 = model.layout.action_start
    own = sample_actions(model, test.obs_start, test.obs_goal, None, spec.sampler, spec.sampler_steps, seed=1)
    rep = lambda t: t.repeat_interleave(k, 0)  # noqa: E731
    more = sample_actions(model, rep(test.obs_start), rep(test.obs_goal), None, spec.sampler, spec.sampler_steps,
                          seed=3)
    n, horizon = len(test.obs_start), model.layout.horizon
    return own[:, :, a0:].numpy(), more[:, :, a0:].numpy().reshape(n, k, horizon, -1)


@pytest.mark.slow
def test_one_sample_is_todays_decoding_and_k_samples_decode_their_mean(demo_t3):
    from kepp_core.evaluation.methods import DecodeOverride, EvalOptions, evaluate_horizon
    from kepp_core.graph.decoding import DecodeChoice, decode_block
    from kepp_core.graph.build import build_graph
    from kepp_core.graph.decoding import transition_log_probs

    ds, _, models = demo_t3
    methods = ["kepp-nograph", "kepp-nograph+dec"]
    trans = transition_log_probs(build_graph(ds, "train"))
    own, more = manual_blocks(ds, models, 3)
    assert own.shape[:2] == (585, 3) and more.shape[:3] == (585, 3, 3)  # the demo world's T=3 test episodes
    decodings = []
    for mode, lam in (("free", 0.0), ("pinned", 3.0)):
        today = evaluate_horizon(ds, models, 3, methods, EvalOptions(decode=DecodeOverride(mode, lam)))
        one = evaluate_horizon(ds, models, 3, methods, EvalOptions(decode=DecodeOverride(mode, lam, samples=1)))
        four = evaluate_horizon(ds, models, 3, methods, EvalOptions(decode=DecodeOverride(mode, lam, samples=4)))
        assert (one.outputs["kepp-nograph+dec"].plans == today.outputs["kepp-nograph+dec"].plans).all()
        assert np.array_equal(today.outputs["kepp-nograph"].action_block, own)  # the one sampled x₀
        ctx_probs = None
        if mode != "free":  # the step model's endpoint scores, as the evaluation computes them
            from kepp_core.evaluation.methods import EvalContext
            from kepp_core.training.data import episode_tensors

            ctx = EvalContext(ds, 3, episode_tensors(ds, 3, "test", "conventional", 3), build_graph(ds, "train"),
                              models / "T3")
            ctx_probs = ctx.endpoint_probs()
        mean = (own.astype(np.float64) + more.sum(axis=1)) / 4
        expected = decode_block(mean, trans, DecodeChoice(mode, lam), ctx_probs)
        got = four.outputs["kepp-nograph+dec"].plans
        assert (got == expected).all()
        decodings.append(four.outputs["kepp-nograph+dec"].decoding)
        if (mode, lam) == ("free", 0.0):  # λ = 0: the per-position argmax of the mean block
            assert (got == mean.argmax(-1)).all()
            assert (got != one.outputs["kepp-nograph+dec"].plans).any()  # the mean is not the one sample
        # the base method's own plans do not change with K
        assert (four.outputs["kepp-nograph"].plans == today.outputs["kepp-nograph"].plans).all()
    assert decodings == [{"mode": "free", "lam": 0.0, "k": 3, "samples": 4},
                         {"mode": "pinned", "lam": 3.0, "k": 3, "samples": 4}]


@pytest.mark.slow
def test_the_choice_is_made_and_stored_per_k_and_bad_k_is_an_error(demo_t3, tmp_path):
    _, root, models = demo_t3
    common = ["eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods",
              "kepp-nograph+dec", "--threads", "1", "--save-decoding"]
    r = kepp(*common, "--decode-samples", "2", "--out", tmp_path / "k2.json")
    assert r.returncode == 0, r.stderr
    stored = json.loads((models / "T3" / "decoding.json").read_text())
    entry = stored["kepp-nograph@K2"]
    assert entry["samples"] == 2 and entry["choice"]["mode"] in ("free", "pinned", "topk")
    assert (entry["val_SR"], entry["val_mAcc"]) == max((g["SR"], g["mAcc"]) for g in entry["grid"])
    r1 = kepp(*common, "--decode-samples", "1", "--out", tmp_path / "k1.json")
    r0 = kepp(*common, "--out", tmp_path / "k0.json")
    assert r1.returncode == 0 and r0.returncode == 0, r1.stderr + r0.stderr
    stored = json.loads((models / "T3" / "decoding.json").read_text())
    assert "kepp-nograph" in stored and "samples" not in stored["kepp-nograph"]  # K = 1: today's entry
    row = lambda name: json.loads((tmp_path / name).read_text())["rows"][0]  # noqa: E731
    assert row("k1.json")["SR"] == row("k0.json")["SR"]
    for bad in ("0", "-2", "two", "1.5"):
        r = kepp(*common, "--decode-samples", bad)
        assert r.returncode == 2 and "--decode-samples" in r.stderr and "K >= 1" in r.stderr
        assert "Traceback" not in r.stderr


def test_protocol_specs_take_decode_samples():
    from kepp_core.errors import KeppError
    from kepp_core.experiments.protocol import eval_file, parse_spec

    spec = parse_spec({"out": "x", "methods": ["kepp-R1+dec"], "decode_samples": 4})
    assert spec.decode_samples == 4 and parse_spec({"out": "x", "methods": ["kepp-R1"]}).decode_samples == 1
    assert eval_file(spec.methods, 4) != eval_file(spec.methods) == eval_file(spec.methods, 1)  # own cache per K
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(KeppError, match="decode_samples.*whole number"):
            parse_spec({"out": "x", "methods": ["kepp-R1"], "decode_samples": bad})
