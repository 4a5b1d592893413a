"""Hierarchical endpoint probabilities and temperature calibration (kepp_core.models.endpoint_probs):
task masks from training plans, p(a) = Σ_k p(k) p(a | k) against a dense reference, the flat
limit, recovery from a wrong top task, temperature recovery on synthetic data, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kepp_core.calibration import calibrated_log_probs, fit_temperature
from kepp_core.errors import KeppError
from kepp_core.models.endpoint_probs import (
    hierarchical_log_probs,
    hierarchical_probs,
    task_actions_mask,
)
from tests.helpers.data import small_dataset


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def dense_reference(task_probs: np.ndarray, q: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The definition spelled out over an [N, K, A] array (q: step probabilities [N, (K,) A])."""
    n, k = task_probs.shape
    q = np.broadcast_to(q[:, None] if q.ndim == 2 else q, (n, k, mask.shape[1]))
    m = np.where(mask.any(-1, keepdims=True), mask, True)[None]  # a task without plans: unrestricted
    restricted = q * m
    z = restricted.sum(-1, keepdims=True)
    given = np.where(z > 0, restricted / np.where(z > 0, z, 1), m / m.sum(-1, keepdims=True))
    return (task_probs[:, :, None] * given).sum(1)


def random_problem(rng: np.random.Generator, n: int, k: int, a: int):
    mask = rng.random((k, a)) < 0.3
    mask[rng.integers(0, k), :] = False  # one task without training plans
    task_probs = rng.dirichlet(np.full(k, 0.5), n)
    task_probs[0, rng.integers(0, k)] = 0.0  # a task with exactly zero probability
    task_probs[0] /= task_probs[0].sum()
    return task_probs, mask


def test_task_masks_come_from_the_training_plans_in_classifier_order():
    ds = small_dataset()  # omelette: 0 1 3 (train), 0 1 2 3 (test); pancake: 2 1 3
    assert task_actions_mask(ds).tolist() == [[True, True, False, True], [False, True, True, True]]
    assert task_actions_mask(ds, split="test").tolist() == [[True] * 4, [False] * 4]
    from_plans = task_actions_mask([(0, 1, 1, 3), (2, 1, 3)], task_ids=np.array([0, 1]), num_tasks=3, num_actions=4)
    assert from_plans.tolist() == [[True, True, False, True], [False, True, True, True], [False] * 4]


@pytest.mark.parametrize("per_task", [False, True])
@pytest.mark.parametrize("step_kind", ["logits", "probs"])
def test_hierarchical_probs_sum_to_one_and_match_the_definition(step_kind, per_task):
    rows = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        n, k, a = 7, int(rng.integers(1, 6)), int(rng.integers(2, 12))
        task_probs, mask = random_problem(rng, n, k, a)
        shape = (n, k, a) if per_task else (n, a)
        if step_kind == "logits":
            scores = rng.normal(0, 3, shape)
            q = softmax(scores)
        else:
            scores = rng.random(shape) * (rng.random(shape) < 0.7)  # zeros: some tasks get no step mass
            scores[..., 0] += 1e-3  # every row has some mass
            q = scores / scores.sum(-1, keepdims=True)
        p = hierarchical_probs(task_probs, scores, mask, step_kind)
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
        np.testing.assert_allclose(p, dense_reference(task_probs, q, mask), atol=1e-12)
        logp = hierarchical_log_probs(torch.from_numpy(task_probs), torch.from_numpy(scores), mask, step_kind)
        np.testing.assert_allclose(np.exp(logp), p, atol=1e-15)
        rows += len(p)
    assert rows == 10 * 7  # one distribution per query of every problem


def test_every_task_with_every_action_is_the_flat_model():
    rng = np.random.default_rng(1)
    n, k, a = 9, 4, 15
    logits = rng.normal(0, 2, (n, a))
    task_probs = rng.dirichlet(np.ones(k), n)
    everything = np.ones((k, a), dtype=bool)
    np.testing.assert_allclose(hierarchical_probs(task_probs, logits, everything), softmax(logits), atol=1e-12)
    np.testing.assert_allclose(hierarchical_log_probs(task_probs, logits, everything),
                               calibrated_log_probs(logits, 1.0), atol=1e-12)


def test_a_wrong_top_task_is_recoverable():
    # the classifier prefers task 0 (0.7) but the video is task 1 (0.3); the step model is sure of
    # action 3, which only task 1 has: the sum over tasks still names it, a cut to task 0 never could
    mask = np.array([[True, True, True, False, False, False, False], [False, False, False, True, True, True, True]])
    logits = np.log([[0.05, 0.05, 0.05, 0.8, 0.02, 0.02, 0.01]])
    p = hierarchical_probs([[0.7, 0.3]], logits, mask)
    assert p.argmax() == 3 and p[0, 3] == pytest.approx(0.3 * 0.8 / 0.85)
    assert p[0, :3] == pytest.approx([0.7 / 3] * 3)  # task 0's actions share its mass: the step model has no preference
    # with an even less likely task the action keeps its share of that task's mass
    assert hierarchical_probs([[0.95, 0.05]], logits, mask)[0, 3] == pytest.approx(0.05 * 0.8 / 0.85)


def test_an_impossible_action_is_minus_infinity_in_log_space():
    mask = np.array([[True, True, False]])
    logp = hierarchical_log_probs([[1.0]], np.zeros((1, 3)), mask)
    assert np.isneginf(logp[0, 2]) and np.isfinite(logp[0, :2]).all()


@pytest.mark.parametrize("tau", [0.4, 2.5])
def test_fit_temperature_recovers_the_temperature_the_labels_were_drawn_at(tau):
    rng = np.random.default_rng(42)
    logits = rng.normal(0, 3, (20_000, 8))
    p = softmax(logits / tau)
    labels = (rng.random((len(p), 1)) > p.cumsum(-1)).sum(-1)  # one draw per row from softmax(logits / tau)
    fitted = fit_temperature(logits, labels)
    assert fitted == pytest.approx(tau, rel=0.05)
    nll = [-calibrated_log_probs(logits, t)[np.arange(len(labels)), labels].mean() for t in (fitted, tau, 1.0)]
    assert nll[0] <= nll[1] + 1e-12 and nll[0] < nll[2]


def test_fit_temperature_stops_at_a_bound_when_the_labels_want_more():
    logits = np.array([[5.0, 0.0], [0.0, 5.0]])
    assert fit_temperature(logits, [0, 1], bounds=(0.1, 10.0)) == 0.1  # separable: as sharp as allowed
    assert fit_temperature(logits, [1, 0], bounds=(0.1, 10.0)) == 10.0  # always wrong: as flat as allowed


ONE_TASK = np.ones((1, 3), dtype=bool)  # one task with all of three actions
TWO_TASKS = np.ones((2, 3), dtype=bool)


@pytest.mark.parametrize("call, message", [
    (lambda: task_actions_mask([(0, 1)], task_ids=[0]), "needs task_ids, num_tasks and num_actions"),
    (lambda: task_actions_mask([], task_ids=[], num_tasks=1, num_actions=2), "no plans in the plans given"),
    (lambda: task_actions_mask([(0, 1)], task_ids=[0, 1], num_tasks=2, num_actions=2), "2 task ids for 1 plans"),
    (lambda: task_actions_mask([(0, 1)], task_ids=[2], num_tasks=2, num_actions=2),
     "task id 2 of plan 0 is outside 0..1"),
    (lambda: task_actions_mask([(0, 5)], task_ids=[0], num_tasks=1, num_actions=2), "plan 0 has action 5 outside 0..1"),
    (lambda: task_actions_mask([(0,)], task_ids=[0], num_tasks=0, num_actions=2), "num_tasks=0 is invalid"),
    (lambda: task_actions_mask(small_dataset(), task_ids=[0]), "takes no task_ids"),
    (lambda: task_actions_mask(small_dataset(), split="val"), "unknown split 'val'"),
    (lambda: hierarchical_probs([[0.5, 0.5]], np.zeros((1, 3)), np.ones((3, 3), bool)),
     "task_probs have shape [1, 2] (expected [N, 3]"),
    (lambda: hierarchical_probs([[1.0]], np.zeros((1, 4)), ONE_TASK),
     "step logits have shape [1, 4] (expected [1, 3] or [1, 1, 3]"),
    (lambda: hierarchical_probs([[1.0]], np.zeros((2, 3)), ONE_TASK), "step logits have shape [2, 3]"),
    (lambda: hierarchical_probs([[np.nan]], np.zeros((1, 3)), ONE_TASK), "task_probs contains NaN"),
    (lambda: hierarchical_probs([[1.0]], [[0.0, np.inf, 0.0]], ONE_TASK), "step logits contains NaN or +inf"),
    (lambda: hierarchical_probs([[0.6, 0.6]], np.zeros((1, 3)), TWO_TASKS), "task_probs row 0 sums to 1.2"),
    (lambda: hierarchical_probs([[1.5, -0.5]], np.zeros((1, 3)), TWO_TASKS), "negative value -0.5"),
    (lambda: hierarchical_probs(np.zeros((0, 1)), np.zeros((0, 3)), ONE_TASK), "task_probs is empty"),
    (lambda: hierarchical_probs([[1.0]], [[0.0, 0.0, 0.0]], ONE_TASK, "probs"),
     "step probs have a row of zeros"),
    (lambda: hierarchical_probs([[1.0]], [[0.5, -0.1, 0.6]], ONE_TASK, "probs"), "negative value -0.1"),
    (lambda: hierarchical_probs([[1.0]], np.zeros((1, 3)), ONE_TASK, "softmax"),
     "unknown step kind 'softmax'"),
    (lambda: hierarchical_probs([[1.0]], np.zeros((1, 3)), np.ones(3, bool)), "task mask has shape [3] (expected [K, A]"),
    (lambda: hierarchical_probs([[1.0]], np.zeros((1, 3)), [[0.5, 1, 1]]), "task mask must hold booleans"),
    (lambda: fit_temperature(np.zeros((0, 3)), np.zeros(0, int)), "logits is empty"),
    (lambda: fit_temperature([[0.0, np.nan]], [0]), "logits contains NaN"),
    (lambda: fit_temperature(np.zeros((2, 3)), [0]), "labels have shape [1] (expected [2]"),
    (lambda: fit_temperature(np.zeros((2, 3)), [0, 3]), "class index 3 outside 0..2"),
    (lambda: fit_temperature(np.zeros((2, 3)), [0.0, 1.0]), "integer class indices"),
    (lambda: fit_temperature(np.zeros(3), [0]), "expected [N, A]"),
    (lambda: fit_temperature(np.zeros((1, 3)), [0], bounds=(1.0, 0.5)),
     "temperature bounds (1.0, 0.5) are invalid"),
    (lambda: calibrated_log_probs([[1.0, 2.0]], 0.0), "temperature 0.0 is invalid"),
    (lambda: calibrated_log_probs([[1.0, -np.inf]], 1.0), "logits contains NaN or infinite"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(KeppError) as err:
        call()
    assert message in str(err.value)
