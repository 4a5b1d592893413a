"""NLL, KL, mode precision and mode recall of sampled plans, checked against hand-computed values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kepp_core.errors import KeppError
from kepp_core.evaluation.uncertainty import (episode_uncertainty, mode_precision, mode_recall, plan_kl, plan_nll,
                                              position_frequencies, reference_plans, smoothed_distributions,
                                              uncertainty_metrics)

REF = [(0, 1), (0, 1), (0, 2)]
SAMPLES = [(0, 1), (0, 2), (1, 2), (0, 1)]


def test_modes_are_distinct_plans_for_precision_and_recall():
    # predicted modes {01, 02, 12}, ground-truth modes {01, 02}
    assert mode_precision(SAMPLES, REF) == pytest.approx(2 / 3)
    assert mode_recall(SAMPLES, REF) == 1.0
    assert mode_recall([(0, 1)] * 5, REF) == 0.5


def test_sample_counted_modes_follow_the_literature_code():
    # 3 of 4 samples are reference plans; each of the 3 reference plans is hit
    assert mode_precision(SAMPLES, REF, modes="samples") == 0.75
    assert mode_recall(SAMPLES, REF, modes="samples") == 1.0
    # only (0, 1) sampled: it covers 2 of the 3 reference plans (duplicates count)
    assert mode_recall([(0, 1)] * 5, REF, modes="samples") == pytest.approx(2 / 3)


def test_softmax_smoothed_nll_and_kl_match_the_hand_computation():
    # T=1, A=2: the reference always says 0, the samples say 0 and 1 equally.
    # P_gt = softmax(10·[1, 0]) = [σ, 1-σ] with σ = 1/(1+e^-10); P_pred = softmax([5, 5]) = [.5, .5]
    sigma = 1 / (1 + math.exp(-10))
    entropy = -(sigma * math.log(sigma) + (1 - sigma) * math.log(1 - sigma))
    assert plan_nll([(0,), (1,)], [(0,)], 2) == pytest.approx(math.log(2), abs=1e-12)
    assert plan_kl([(0,), (1,)], [(0,)], 2) == pytest.approx(math.log(2) - entropy, abs=1e-12)
    assert plan_kl([(0,), (1,)], [(0,)], 2) == pytest.approx(0.692648, abs=1e-6)


def test_additive_smoothing_gives_the_unsmoothed_values_in_the_limit():
    # T=2, A=3. Step 1: both say 0 -> 0. Step 2: reference [2/3 on 1, 1/3 on 2], samples [1/2, 1/2].
    nll = plan_nll([(0, 1), (0, 2)], REF, 3, smoothing="additive", eps=1e-12)
    kl = plan_kl([(0, 1), (0, 2)], REF, 3, smoothing="additive", eps=1e-12)
    step2_ce = -(2 / 3 * math.log(1 / 2) + 1 / 3 * math.log(1 / 2))
    step2_kl = 2 / 3 * math.log((2 / 3) / (1 / 2)) + 1 / 3 * math.log((1 / 3) / (1 / 2))
    assert nll == pytest.approx((0 + step2_ce) / 2, abs=1e-9)
    assert kl == pytest.approx((0 + step2_kl) / 2, abs=1e-9)
    # a sample that never produces the reference's action costs about -log(eps)
    assert plan_nll([(1,)], [(0,)], 2, smoothing="additive", eps=1e-6) == pytest.approx(-math.log(1e-6), rel=1e-5)


def test_kl_is_zero_when_the_sample_frequencies_equal_the_reference():
    assert plan_kl([(0, 1), (0, 1), (0, 2)], REF, 3) == 0.0
    assert plan_kl([(0, 1), (0, 1), (0, 2)], REF, 3, smoothing="additive") == pytest.approx(0.0, abs=1e-5)
    assert plan_kl([(0, 2), (0, 2), (0, 2)], REF, 3) > 0.1


def test_position_frequencies_and_smoothed_rows_sum_to_one():
    p = position_frequencies(SAMPLES, 3)
    assert p.tolist() == [[0.75, 0.25, 0.0], [0.0, 0.5, 0.5]]
    for smoothing in ("softmax", "additive"):
        pred, gt = smoothed_distributions(SAMPLES, REF, 3, smoothing=smoothing)
        assert np.allclose(pred.sum(1), 1) and np.allclose(gt.sum(1), 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=8))
def test_kl_equals_nll_minus_reference_entropy_and_is_never_negative(samples, reference):
    _, gt = smoothed_distributions(samples, reference, 4)
    entropy = float((-(gt * np.log(gt)).sum(1)).mean())
    kl, nll = plan_kl(samples, reference, 4), plan_nll(samples, reference, 4)
    assert kl >= 0 and kl == pytest.approx(nll - entropy, abs=1e-9)
    assert 0 <= mode_precision(samples, reference) <= 1 and 0 <= mode_recall(samples, reference) <= 1


def test_reference_plans_group_by_horizon_and_endpoints_keeping_duplicates():
    plans = [(0, 1, 2), (0, 3, 2), (0, 1, 2), (1, 1, 2), (0, 2)]
    refs = reference_plans(plans)
    assert refs[0] == refs[1] == refs[2] == [(0, 1, 2), (0, 3, 2), (0, 1, 2)]
    assert refs[3] == [(1, 1, 2)]
    assert refs[4] == [(0, 2)]  # T=2 is another group even with the same endpoints


def test_averages_over_episodes_with_percent_modes():
    ref = [(0, 1, 2), (0, 1, 2), (0, 3, 2)]
    episodes = [SimpleNamespace(actions=a) for a in [*ref, (1, 1, 2)]]
    mixed = [(0, 1, 2), (0, 3, 2), (1, 3, 2), (0, 1, 2)]  # modes {012, 032, 132}
    samples = np.array([mixed, mixed, [(0, 3, 2)] * 4, [(1, 1, 2)] * 4])
    r = episode_uncertainty(samples, episodes, num_actions=4)
    # episodes 0-2 share the reference `ref` (modes {012, 032}); episode 3's is [(1, 1, 2)]
    assert r.mode_precision == pytest.approx(100 * (2 / 3 + 2 / 3 + 1 + 1) / 4)
    assert r.mode_recall == pytest.approx(100 * (1 + 1 + 0.5 + 1) / 4)
    assert r.per_episode["kl"][3] == 0.0
    refs = [ref] * 3 + [[(1, 1, 2)]]
    assert r.kl == pytest.approx(np.mean([plan_kl(s, g, 4) for s, g in zip(samples, refs)]))
    assert r.nll == pytest.approx(np.mean([plan_nll(s, g, 4) for s, g in zip(samples, refs)]))
    assert (r.episodes, r.samples, r.truth_modes) == (4, 4, pytest.approx((2 + 2 + 2 + 1) / 4))
    assert r.predicted_modes == pytest.approx((3 + 3 + 1 + 1) / 4)
    assert set(r.row()) >= {"nll", "kl", "mode_precision", "mode_recall"} and "per_episode" not in r.row()


def test_bad_inputs_are_clear_errors():
    with pytest.raises(KeppError, match="T=3 steps but the reference plans T=2"):
        plan_kl([(0, 1, 2)], [(0, 1)], 3)
    with pytest.raises(KeppError, match="outside the vocabulary of 3"):
        plan_nll([(0, 5)], [(0, 1)], 3)
    with pytest.raises(KeppError, match="non-empty"):
        mode_recall([], [(0, 1)])
    with pytest.raises(KeppError, match="unknown smoothing"):
        plan_kl([(0,)], [(0,)], 2, smoothing="laplace")
    with pytest.raises(KeppError, match="2 episodes of samples but 1"):
        uncertainty_metrics([[(0,)], [(0,)]], [[(0,)]], 2)
