"""Calibration: one temperature ``τ`` per score head, fitted on held-out labels, and the calibrated
``log softmax(scores / τ)`` (numpy only). A model's logits or a text tower's similarity scores are
sharper or flatter than its accuracy warrants; the graph decoder adds ``log p`` to graph scores, so the
scale matters. :func:`fit_temperature` picks the ``τ`` minimising the negative log-likelihood of
held-out labels under ``softmax(scores / τ)`` (fit it on videos the model did not train on), and
:func:`calibrated_log_probs` applies it. The endpoint model's heads
(:mod:`kepp_core.models.endpoint_probs`) and the S3D text tower's step scores
(:mod:`kepp_core.video.grounding`: scores of any scale, fitted relative to their spread) are
calibrated here, with one algorithm.

>>> round(fit_temperature([[2.0, 0.0]] * 4, [0, 0, 0, 1]), 4)   # 3 of 4 right: sigmoid(2 / τ) = 3/4
1.8205
"""

from __future__ import annotations

import math

import numpy as np

from kepp_core.arrays import as_numpy, float_array
from kepp_core.errors import KeppError

__all__ = ["TEMPERATURE_BOUNDS", "calibrated_log_probs", "check_temperature", "class_labels", "finite_array",
           "fit_temperature", "log_softmax"]

TEMPERATURE_BOUNDS = (1e-2, 1e2)


# --- inputs ----------------------------------------------------------------------------------
def finite_array(x, name: str) -> np.ndarray:
    """``x`` (numpy, torch or nested lists) as a float64 array of finite numbers."""
    arr = float_array(x, name)
    if arr.size == 0:
        raise KeppError(f"{name} is empty (shape {list(arr.shape)}; expected at least one query and one class)")
    if not np.isfinite(arr).all():
        raise KeppError(f"{name} contains NaN or infinite values (expected finite numbers)")
    return arr


def class_labels(x, n: int, num_classes: int) -> np.ndarray:
    """Class indices ``[N]``, each in ``0..num_classes-1``."""
    arr = as_numpy(x)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise KeppError(f"labels must hold integer class indices, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise KeppError(f"labels have shape {list(arr.shape)} (expected [{n}]: one label per row of logits)")
    bad = (arr < 0) | (arr >= num_classes)
    if bad.any():
        raise KeppError(f"labels hold class index {int(arr[bad][0])} outside 0..{num_classes - 1}")
    return arr.astype(np.int64)


def check_temperature(t: float) -> float:
    """A temperature: a finite number > 0."""
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)) \
            or not math.isfinite(t) or t <= 0:
        raise KeppError(f"temperature {t!r} is invalid (expected a finite number > 0)")
    return float(t)


def log_softmax(z: np.ndarray) -> np.ndarray:
    """``log softmax(z)`` over the last axis."""
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# --- calibration -----------------------------------------------------------------------------
def _nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of ``labels`` under ``softmax(logits / temperature)``."""
    logp = log_softmax(logits / temperature)
    return float(-logp[np.arange(len(labels)), labels].mean())


def fit_temperature(logits, labels, bounds: tuple[float, float] = TEMPERATURE_BOUNDS, tol: float = 1e-6) -> float:
    """The temperature ``τ`` in ``bounds`` minimising the mean negative log-likelihood of
    ``labels`` ``[N]`` under ``softmax(logits / τ)``, ``logits`` ``[N, A]`` (held-out data).

    The NLL is convex in ``1/τ``, hence unimodal in ``log τ``: a golden-section search over
    ``log τ`` finds the minimum to within a factor ``exp(tol)``. A minimum at a bound (e.g. logits
    that separate the labels perfectly want ``τ → 0``) returns that bound.

    >>> round(fit_temperature([[2.0, 0.0]] * 4, [0, 0, 0, 1]), 4)   # 3 of 4 right: sigmoid(2 / τ) = 3/4
    1.8205
    """
    z = finite_array(logits, "logits")
    if z.ndim != 2:
        raise KeppError(f"logits have shape {list(z.shape)} (expected [N, A]: one row of class scores per example)")
    y = class_labels(labels, z.shape[0], z.shape[1])
    lo, hi = (float(b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise KeppError(f"temperature bounds {tuple(bounds)!r} are invalid (expected 0 < low < high, finite)")
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise KeppError(f"tol={tol!r} is invalid (expected a number > 0)")
    golden = (math.sqrt(5) - 1) / 2
    a, b = math.log(lo), math.log(hi)
    c, d = b - golden * (b - a), a + golden * (b - a)
    fc, fd = _nll(z, y, math.exp(c)), _nll(z, y, math.exp(d))
    while b - a > tol:
        if fc <= fd:  # the minimum is in [a, d]
            b, d, fd = d, c, fc
            c = b - golden * (b - a)
            fc = _nll(z, y, math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + golden * (b - a)
            fd = _nll(z, y, math.exp(d))
    # the search never evaluates the bounds themselves: one it closed in on is the answer
    if a - math.log(lo) <= tol:
        return lo
    if math.log(hi) - b <= tol:
        return hi
    return math.exp((a + b) / 2)


def calibrated_log_probs(logits, temperature: float) -> np.ndarray:
    """``log softmax(logits / τ)`` over the last axis (any leading shape), float64.

    >>> calibrated_log_probs([[2.0, 0.0]], 2.0).round(4).tolist()
    [[-0.3133, -1.3133]]
    """
    t = check_temperature(temperature)
    z = finite_array(logits, "logits")
    if z.ndim < 1:
        raise KeppError(f"logits have shape {list(z.shape)} (expected [..., A] with A >= 1)")
    return log_softmax(z / t)
