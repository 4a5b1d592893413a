"""Uncertainty of sampled plans: NLL, KL divergence, mode precision and mode recall.

A probabilistic planner draws ``K`` plans per episode. These measures (P3IV, PDPP and
followers) compare that sample with the *ground-truth plan distribution* of the episode:

**Ground-truth distribution.** For a test episode with horizon ``T`` and ground-truth
first and last actions ``(a_1, a_T)``: the multiset of ground-truth plans of *all*
evaluated episodes with the same ``T`` and the same ``(a_1, a_T)`` (the episode itself
included, so it is never empty). Duplicates count: a plan seen in 5 episodes weighs 5.
See :func:`reference_plans`.

**Per-position distributions.** As in the literature, a set of plans is summarised by its
per-position action frequencies ``p[t, a]`` (the fraction of plans with action ``a`` at
step ``t``; a ``T × A`` array whose rows sum to 1): ``p_gt`` from the reference plans,
``p_pred`` from the ``K`` samples (with multiplicity).

**Smoothing** (both arrays, so that no log sees a zero):

- ``"softmax"`` (default, the literature's choice): ``P = softmax(s · p)`` per row with
  sharpness ``s = 10``. Note this flattens every row toward uniform: with ``A`` actions a
  certain row becomes ``e^s / (e^s + A - 1)`` on its action, so values depend on ``A``.
- ``"additive"``: ``P_pred = (count + ε) / (K + A·ε)`` with ``ε = 1e-6``, ``P_gt = p_gt``
  unsmoothed (terms with ``P_gt = 0`` are 0).

**NLL** = ``(1/T) Σ_t −Σ_a P_gt[t,a] · log P_pred[t,a]`` (cross-entropy, nats, lower is better).

**KL** = ``(1/T) Σ_t Σ_a P_gt[t,a] · log(P_gt[t,a] / P_pred[t,a])`` = NLL − entropy of
``P_gt`` (nats, 0 when the sample matches the reference frequencies).

**Modes** are distinct plans. ``modes="distinct"`` (default):

- mode precision = |predicted modes ∩ ground-truth modes| / |predicted modes|;
- mode recall = |predicted modes ∩ ground-truth modes| / |ground-truth modes|.

``modes="samples"`` counts with multiplicity, as the P3IV/PDPP evaluation code does:
precision = fraction of the ``K`` samples that equal some reference plan; recall =
fraction of the reference plans (with duplicates) equal to some sample.

Per-episode functions return fractions; :func:`uncertainty_metrics` averages over
episodes and reports mode precision and recall in percent (as the tables do).

>>> ref = [(0, 1), (0, 1), (0, 2)]
>>> samples = [(0, 1), (0, 2), (1, 2), (0, 1)]
>>> mode_precision(samples, ref), mode_recall(samples, ref)
(0.6666666666666666, 1.0)
>>> mode_precision(samples, ref, modes="samples")
0.75
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from kepp_core.errors import KeppError

SMOOTHINGS = ("softmax", "additive")
MODE_COUNTS = ("distinct", "samples")
SHARPNESS = 10.0
EPSILON = 1e-6

Plan = Sequence[int]


def _plans(plans, what: str) -> np.ndarray:
    arr = np.asarray(plans)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise KeppError(f"{what}: expected a non-empty list of plans of equal length, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise KeppError(f"{what}: plans must be action indices (integers), got {arr.dtype}")
    return arr


def _check_pair(samples, reference) -> tuple[np.ndarray, np.ndarray]:
    s, r = _plans(samples, "sampled plans"), _plans(reference, "reference plans")
    if s.shape[1] != r.shape[1]:
        raise KeppError(f"sampled plans have T={s.shape[1]} steps but the reference plans T={r.shape[1]}")
    return s, r


def position_frequencies(plans: Sequence[Plan], num_actions: int) -> np.ndarray:
    """``T × A`` fraction of plans with action ``a`` at step ``t``.

    >>> position_frequencies([(0, 1), (0, 0)], 2).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    arr = _plans(plans, "plans")
    if arr.min() < 0 or arr.max() >= num_actions:
        raise KeppError(f"action index {int(arr.max() if arr.max() >= num_actions else arr.min())} "
                        f"is outside the vocabulary of {num_actions} actions")
    n, horizon = arr.shape
    out = np.zeros((horizon, num_actions), np.float64)
    for t in range(horizon):
        out[t] = np.bincount(arr[:, t], minlength=num_actions)
    return out / n


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def smoothed_distributions(samples: Sequence[Plan], reference: Sequence[Plan], num_actions: int,
                           smoothing: str = "softmax", sharpness: float = SHARPNESS,
                           eps: float = EPSILON) -> tuple[np.ndarray, np.ndarray]:
    """``(P_pred, P_gt)``, both ``T × A`` with rows summing to 1 (see the module docstring)."""
    s, r = _check_pair(samples, reference)
    p_pred = position_frequencies(s, num_actions)
    p_gt = position_frequencies(r, num_actions)
    if smoothing == "softmax":
        return _softmax(sharpness * p_pred), _softmax(sharpness * p_gt)
    if smoothing == "additive":
        if eps <= 0:
            raise KeppError(f"additive smoothing needs eps > 0, got {eps}")
        k = s.shape[0]
        return (p_pred * k + eps) / (k + num_actions * eps), p_gt
    raise KeppError(f"unknown smoothing {smoothing!r} (expected one of {', '.join(SMOOTHINGS)})")


def plan_nll(samples: Sequence[Plan], reference: Sequence[Plan], num_actions: int, smoothing: str = "softmax",
             sharpness: float = SHARPNESS, eps: float = EPSILON) -> float:
    """Cross-entropy of the reference under the sampled per-position distribution, mean over steps.

    >>> round(plan_nll([(0,), (1,)], [(0,)], 2, smoothing="additive"), 6)   # log 2
    0.693147
    """
    pred, gt = smoothed_distributions(samples, reference, num_actions, smoothing, sharpness, eps)
    terms = np.where(gt > 0, -gt * np.log(pred), 0.0)
    return float(terms.sum(axis=1).mean())


def plan_kl(samples: Sequence[Plan], reference: Sequence[Plan], num_actions: int, smoothing: str = "softmax",
            sharpness: float = SHARPNESS, eps: float = EPSILON) -> float:
    """KL(ground truth ‖ samples) of the per-position distributions, mean over steps.

    >>> plan_kl([(0, 1), (0, 2)], [(0, 2), (0, 1)], 3)   # same frequencies
    0.0
    """
    pred, gt = smoothed_distributions(samples, reference, num_actions, smoothing, sharpness, eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(gt > 0, gt * (np.log(gt) - np.log(pred)), 0.0)
    return float(max(terms.sum(axis=1).mean(), 0.0))


def _as_set(plans: np.ndarray) -> set[tuple[int, ...]]:
    return {tuple(int(a) for a in p) for p in plans}


def mode_precision(samples: Sequence[Plan], reference: Sequence[Plan], modes: str = "distinct") -> float:
    """Fraction of predicted modes (distinct sampled plans) that are ground-truth modes;
    ``modes="samples"``: fraction of the samples equal to some reference plan."""
    s, r = _check_pair(samples, reference)
    truth = _as_set(r)
    if modes == "distinct":
        predicted = _as_set(s)
        return len(predicted & truth) / len(predicted)
    if modes == "samples":
        return sum(tuple(int(a) for a in p) in truth for p in s) / len(s)
    raise KeppError(f"unknown mode count {modes!r} (expected one of {', '.join(MODE_COUNTS)})")


def mode_recall(samples: Sequence[Plan], reference: Sequence[Plan], modes: str = "distinct") -> float:
    """Fraction of ground-truth modes (distinct reference plans) that some sample hits;
    ``modes="samples"``: fraction of the reference plans (with duplicates) hit."""
    s, r = _check_pair(samples, reference)
    predicted = _as_set(s)
    if modes == "distinct":
        truth = _as_set(r)
        return len(predicted & truth) / len(truth)
    if modes == "samples":
        return sum(tuple(int(a) for a in p) in predicted for p in r) / len(r)
    raise KeppError(f"unknown mode count {modes!r} (expected one of {', '.join(MODE_COUNTS)})")


def reference_plans(plans: Sequence[Plan]) -> list[list[tuple[int, ...]]]:
    """For each plan, the plans (all of ``plans``, duplicates kept) with the same horizon
    and the same first and last action: the ground-truth distribution of that episode.

    >>> reference_plans([(0, 1, 2), (0, 3, 2), (1, 1, 2)])
    [[(0, 1, 2), (0, 3, 2)], [(0, 1, 2), (0, 3, 2)], [(1, 1, 2)]]
    """
    groups: dict[tuple[int, int, int], list[tuple[int, ...]]] = {}
    keys = []
    for p in plans:
        p = tuple(int(a) for a in p)
        if not p:
            raise KeppError("an empty plan has no first and last action")
        key = (len(p), p[0], p[-1])
        groups.setdefault(key, []).append(p)
        keys.append(key)
    return [groups[k] for k in keys]


@dataclass
class UncertaintyResult:
    """Means over episodes (``mode_precision``/``mode_recall`` in percent) and per-episode values."""

    nll: float
    kl: float
    mode_precision: float
    mode_recall: float
    predicted_modes: float  # mean number of distinct sampled plans
    truth_modes: float  # mean number of distinct reference plans
    episodes: int
    samples: int
    smoothing: str
    modes: str
    per_episode: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def row(self) -> dict:
        """The summary as one table row (no per-episode values)."""
        out = asdict(self)
        out.pop("per_episode")
        return out


def uncertainty_metrics(samples: Sequence[Sequence[Plan]] | np.ndarray, references: Sequence[Sequence[Plan]],
                        num_actions: int, smoothing: str = "softmax", sharpness: float = SHARPNESS,
                        eps: float = EPSILON, modes: str = "distinct") -> UncertaintyResult:
    """NLL, KL, mode precision and recall averaged over episodes.

    ``samples``: per episode ``K`` sampled plans (``[N, K, T]``); ``references``: per
    episode its ground-truth plans (see :func:`reference_plans`).

    >>> r = uncertainty_metrics([[(0, 1), (0, 1)]], [[(0, 1)]], num_actions=2)
    >>> r.mode_precision, r.mode_recall, r.kl
    (100.0, 100.0, 0.0)
    """
    if len(samples) != len(references):
        raise KeppError(f"{len(samples)} episodes of samples but {len(references)} reference sets")
    if len(samples) == 0:
        raise KeppError("no episodes to evaluate")
    if modes not in MODE_COUNTS:
        raise KeppError(f"unknown mode count {modes!r} (expected one of {', '.join(MODE_COUNTS)})")
    per: dict[str, list[float]] = {"nll": [], "kl": [], "mode_precision": [], "mode_recall": [],
                                   "predicted_modes": [], "truth_modes": []}
    counts = set()
    for s, r in zip(samples, references):
        s, r = _check_pair(s, r)
        counts.add(s.shape[0])
        per["nll"].append(plan_nll(s, r, num_actions, smoothing, sharpness, eps))
        per["kl"].append(plan_kl(s, r, num_actions, smoothing, sharpness, eps))
        per["mode_precision"].append(mode_precision(s, r, modes))
        per["mode_recall"].append(mode_recall(s, r, modes))
        per["predicted_modes"].append(float(len(_as_set(s))))
        per["truth_modes"].append(float(len(_as_set(r))))
    mean = {k: float(np.mean(v)) for k, v in per.items()}
    return UncertaintyResult(
        nll=mean["nll"], kl=mean["kl"], mode_precision=100 * mean["mode_precision"],
        mode_recall=100 * mean["mode_recall"], predicted_modes=mean["predicted_modes"],
        truth_modes=mean["truth_modes"], episodes=len(samples),
        samples=counts.pop() if len(counts) == 1 else -1, smoothing=smoothing, modes=modes, per_episode=per)


def episode_uncertainty(samples: Sequence[Sequence[Plan]] | np.ndarray, episodes: Sequence, num_actions: int,
                        **options) -> UncertaintyResult:
    """:func:`uncertainty_metrics` with the reference sets built from ``episodes``' ground
    truth (``episode.actions``): the form ``kepp eval --samples K`` uses."""
    return uncertainty_metrics(samples, reference_plans([ep.actions for ep in episodes]), num_actions, **options)
