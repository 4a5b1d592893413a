"""Endpoint probabilities for large vocabularies: the task, then the step given the task.

With hundreds of actions a step model that names the first or last step directly learns
slowly, while a task classifier over the same observations is accurate. The hierarchical
endpoint distribution combines the two as probabilities:

    p(a) = Σ_k p(k) · p(a | k),    p(a | k) = m[k, a] · q_k(a) / Σ_b m[k, b] · q_k(b)

- ``p(k)`` ``[N, K]``: the task classifier's probabilities of the ``K`` tasks;
- ``q_k(a)`` ``[N, A]`` (one step model for all tasks) or ``[N, K, A]`` (a step model
  conditioned on the task): the step distribution, ``softmax`` of logits or given probabilities;
- ``m`` ``[K, A]``: the actions the training plans show for each task
  (:func:`task_actions_mask`), so ``p(a | k)`` is the step distribution renormalised over
  task ``k``'s actions.

It is a sum over the tasks, not a cut to the most probable one: an action of a task the
classifier ranks second keeps the mass ``p(k) · p(a | k)``, so a wrong top task is
recoverable. Every row sums to 1; with ``m`` all True (every task has every action) ``p = q``,
the flat model. Two edge cases keep ``p(a | k)`` defined: a task without training plans (a row
of ``m`` all False) uses the unrestricted ``q_k``, and a task whose actions all have
``q_k = 0`` (given probabilities) is uniform over its actions. The sum runs in log-space over
each task's own actions, ``O(N · Σ_k |actions of k|)``, never an ``[N, K, A]`` array.

Each head's logits are calibrated with one temperature (:mod:`kepp_core.calibration`).

>>> mask = task_actions_mask([(0, 1), (1, 2)], task_ids=[0, 1], num_tasks=2, num_actions=3)
>>> hierarchical_probs([[0.9, 0.1]], np.zeros((1, 3)), mask).round(3).tolist()
[[0.45, 0.5, 0.05]]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from kepp_core.arrays import as_numpy
from kepp_core.calibration import finite_array, log_softmax
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError, unknown_name_error

__all__ = ["STEP_KINDS", "hierarchical_log_probs", "hierarchical_probs", "task_actions_mask"]

STEP_KINDS = ("logits", "probs")
SUM_TOLERANCE = 1e-6  # task probabilities must sum to 1 within this (they are renormalised exactly)


# --- the task's actions ----------------------------------------------------------------------
def task_actions_mask(source: Dataset | Iterable[Sequence[int]], task_ids: Sequence[int] | None = None, *,
                      num_tasks: int | None = None, num_actions: int | None = None,
                      split: str = "train") -> np.ndarray:
    """``[K, A]`` booleans: ``True`` where a plan of task ``k`` contains action ``a``.

    ``source`` is a :class:`Dataset` (the plans of its ``split``, tasks in ``sorted(dataset.tasks)``
    order, the task classifier's classes) or plans (action indices) with ``task_ids`` (``0..K-1``,
    one per plan), ``num_tasks`` and ``num_actions``. A task without plans has a row of False
    (:func:`hierarchical_probs` then leaves its step distribution unrestricted).

    >>> task_actions_mask([(0, 2), (1,), (2, 2)], task_ids=[0, 1, 0], num_tasks=2, num_actions=3).tolist()
    [[True, False, True], [False, True, False]]
    """
    if isinstance(source, Dataset):
        if task_ids is not None or num_tasks is not None or num_actions is not None:
            raise KeppError("task_actions_mask of a Dataset takes no task_ids/num_tasks/num_actions "
                            "(they come from the dataset)")
        tasks = sorted(source.tasks)
        index = {t: i for i, t in enumerate(tasks)}
        videos = source.split(split)
        unknown = [v.task for v in videos if v.task not in index]
        if unknown:
            raise unknown_name_error("task", unknown[0], tasks)
        plans, task_ids = [v.plan for v in videos], [index[v.task] for v in videos]
        num_tasks, num_actions = len(tasks), source.num_actions
        where = f"the {split!r} videos of dataset {source.name!r}"
    else:
        if task_ids is None or num_tasks is None or num_actions is None:
            raise KeppError("task_actions_mask of plans needs task_ids, num_tasks and num_actions")
        plans, task_ids = [tuple(p) for p in source], list(task_ids)
        where = "the plans given"
    for name, value in (("num_tasks", num_tasks), ("num_actions", num_actions)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise KeppError(f"{name}={value!r} is invalid (expected a whole number >= 1)")
    if not plans:
        raise KeppError(f"no plans in {where} (expected at least one plan to read the tasks' actions from)")
    if len(task_ids) != len(plans):
        raise KeppError(f"{len(task_ids)} task ids for {len(plans)} plans (expected one task id per plan)")
    mask = np.zeros((num_tasks, num_actions), dtype=bool)
    for i, (plan, k) in enumerate(zip(plans, task_ids)):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < num_tasks:
            raise KeppError(f"task id {k!r} of plan {i} is outside 0..{num_tasks - 1}")
        for a in plan:
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < num_actions:
                raise KeppError(f"plan {i} has action {a!r} outside 0..{num_actions - 1}")
            mask[k, a] = True
    return mask


# --- hierarchical probabilities --------------------------------------------------------------
def _check_hierarchy(task_probs, step_scores, mask, step_kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``p(k)`` ``[N, K]``, ``log q`` ``[N, A]`` or ``[N, K, A]`` and mask ``[K, A]``."""
    if step_kind not in STEP_KINDS:
        raise unknown_name_error("step kind", step_kind, STEP_KINDS)
    m = as_numpy(mask)
    if m.ndim != 2 or 0 in m.shape:
        raise KeppError(f"task mask has shape {list(m.shape)} (expected [K, A] with K, A >= 1)")
    if m.dtype != bool:
        if not (np.issubdtype(m.dtype, np.number) and np.isin(m, (0, 1)).all()):
            raise KeppError(f"task mask must hold booleans (or 0/1), got dtype {m.dtype}")
        m = m.astype(bool)
    k, a = m.shape
    p = finite_array(task_probs, "task_probs")
    if p.ndim != 2 or p.shape[1] != k:
        raise KeppError(f"task_probs have shape {list(p.shape)} (expected [N, {k}] for a task mask of {k} tasks)")
    n = p.shape[0]
    if (p < 0).any():
        raise KeppError(f"task_probs hold a negative value {float(p[p < 0][0])!r} (expected probabilities)")
    sums = p.sum(-1)
    off = np.abs(sums - 1) > SUM_TOLERANCE
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise KeppError(f"task_probs row {i} sums to {float(sums[i]):.6g} "
                        f"(expected probabilities summing to 1 per query)")
    s = finite_array(step_scores, f"step {step_kind}")
    if s.shape not in ((n, a), (n, k, a)):
        raise KeppError(f"step {step_kind} have shape {list(s.shape)} (expected [{n}, {a}] or [{n}, {k}, {a}] "
                        f"for {n} queries, {k} tasks and {a} actions)")
    if step_kind == "logits":
        return p / sums[:, None], log_softmax(s), m
    if (s < 0).any():
        raise KeppError(f"step probs hold a negative value {float(s[s < 0][0])!r} (expected probabilities)")
    total = s.sum(-1, keepdims=True)
    if (total <= 0).any():
        raise KeppError("step probs have a row of zeros (expected some probability on some action)")
    with np.errstate(divide="ignore"):
        return p / sums[:, None], np.log(s / total), m


def hierarchical_log_probs(task_probs, step_scores, mask, step_kind: str = "logits") -> np.ndarray:
    """``log p(a) = log Σ_k p(k) · p(a | k)`` ``[N, A]`` (module docstring): task probabilities
    ``[N, K]``, step ``logits`` or ``probs`` ``[N, A]`` or ``[N, K, A]`` (per task) and the task
    mask ``[K, A]``. ``-inf`` where no task with ``p(k) > 0`` has the action.

    >>> mask = np.array([[True, True, False], [False, True, True]])
    >>> np.exp(hierarchical_log_probs([[0.5, 0.5]], [[0.0, 0.0, math.log(2)]], mask)).round(4).tolist()
    [[0.25, 0.4167, 0.3333]]
    """
    p, log_q, m = _check_hierarchy(task_probs, step_scores, mask, step_kind)
    n, k = p.shape
    with np.errstate(divide="ignore"):
        log_pk = np.log(p)
    out = np.full((n, m.shape[1]), -np.inf)
    for task in range(k):
        cols = np.flatnonzero(m[task]) if m[task].any() else np.arange(m.shape[1])
        z = (log_q if log_q.ndim == 2 else log_q[:, task])[:, cols]
        top = z.max(-1, keepdims=True)
        dead = np.isneginf(top[:, 0])  # no step mass on the task's actions: uniform over them
        z, top = np.where(dead[:, None], 0.0, z), np.where(dead[:, None], 0.0, top)
        log_given = z - top - np.log(np.exp(z - top).sum(-1, keepdims=True))
        out[:, cols] = np.logaddexp(out[:, cols], log_pk[:, task, None] + log_given)
    return out


def hierarchical_probs(task_probs, step_scores, mask, step_kind: str = "logits") -> np.ndarray:
    """``p(a) = Σ_k p(k) · p(a | k)`` ``[N, A]``, rows summing to 1 (:func:`hierarchical_log_probs`).

    >>> mask = np.array([[True, True, False], [False, True, True]])
    >>> hierarchical_probs([[0.9, 0.1]], [[0.2, 0.2, 0.6]], mask, step_kind="probs").round(3).tolist()
    [[0.45, 0.475, 0.075]]
    """
    return np.exp(hierarchical_log_probs(task_probs, step_scores, mask, step_kind))
