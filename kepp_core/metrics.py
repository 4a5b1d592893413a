"""Planning metrics (paper supplement C.4), all in percent.

- **SR** (success rate): share of episodes whose whole predicted plan equals the ground truth.
- **mAcc**: mean over episodes and positions of ``pred_t == gt_t``.
- **mIoU, per episode** (CrossTask tables): IoU of the *sets* of predicted and ground-truth
  actions of each episode, averaged over episodes.
- **mIoU, per batch** (COIN and NIV tables, the PDPP/P3IV convention): the episodes, in the
  given order, are split into consecutive batches of 256 (the last one may be smaller); per
  batch, IoU of the set of all predicted actions and the set of all ground-truth actions in
  the batch; averaged over batches.

The field's two evaluation codes compute these differently (batches weighted by their size,
float32, a bitwise "IoU"): :func:`pdpp_metrics` and :func:`vpn_metrics` reproduce each exactly; each
code is one object of :mod:`kepp_core.benchmark` that owns its function here, its columns and headers.

Where plans fail (beyond the paper): **ends right**, the percent of episodes whose first *and*
last predicted steps are right, and **SR if ends right**, the success rate among those episodes,
so that ``SR = ends right × (SR if ends right) / 100``: a method that fails at the endpoints and
one that fails in the middle read apart.

>>> m = plan_metrics([(1, 2, 3), (1, 5, 3)], [(1, 2, 3), (1, 2, 3)])
>>> m["sr"], round(m["macc"], 2), round(m["miou_episode"], 2), m["miou_batch"]
(50.0, 83.33, 75.0, 75.0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kepp_core.errors import KeppError

__all__ = ["mean_accuracy", "miou_per_batch", "miou_per_episode", "plan_metrics", "success_rate"]

BATCH = 256


def _check(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> None:
    if len(pred) != len(gt):
        raise KeppError(f"{len(pred)} predicted plans for {len(gt)} ground-truth plans (expected as many)")
    if isinstance(pred, np.ndarray) and isinstance(gt, np.ndarray) and pred.ndim == gt.ndim == 2 and len(gt):
        if pred.shape[1] != gt.shape[1]:  # arrays of plans (one T each): checked as a whole
            raise KeppError(f"plan 0: predicted {pred.shape[1]} steps for a ground truth of {gt.shape[1]}")
        return
    for k, (p, g) in enumerate(zip(pred, gt)):
        if len(p) != len(g):
            raise KeppError(f"plan {k}: predicted {len(p)} steps for a ground truth of {len(g)}")


def success_rate(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of episodes whose predicted plan equals the ground truth at every step.

    >>> success_rate([(1, 2), (1, 3)], [(1, 2), (1, 2)])
    50.0
    """
    _check(pred, gt)
    if len(gt) == 0:
        return 0.0
    return 100.0 * sum(list(map(int, p)) == list(map(int, g)) for p, g in zip(pred, gt)) / len(gt)


def ends_right(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> list[bool]:
    """Per episode: the predicted plan's first *and* last step are right (the one rule of *ends
    right*: :func:`endpoint_rate`, :func:`success_given_endpoints`, the ends slice).

    >>> ends_right([(1, 9, 3), (1, 2, 4)], [(1, 2, 3), (1, 2, 3)])
    [True, False]
    """
    return [int(p[0]) == int(g[0]) and int(p[-1]) == int(g[-1]) for p, g in zip(pred, gt)]


def endpoint_rate(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of episodes whose predicted first and last steps are both right.

    >>> endpoint_rate([(1, 9, 3), (1, 2, 4)], [(1, 2, 3), (1, 2, 3)])
    50.0
    """
    _check(pred, gt)
    if len(gt) == 0:
        return 0.0
    return 100.0 * sum(ends_right(pred, gt)) / len(gt)


def success_given_endpoints(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of the episodes with both endpoints right whose whole plan is right (0 when no
    episode has both endpoints right: then no plan is right either).

    >>> success_given_endpoints([(1, 9, 3), (1, 2, 3), (5, 2, 3)], [(1, 2, 3)] * 3)
    50.0
    """
    _check(pred, gt)
    ends = [(p, g) for p, g, right in zip(pred, gt, ends_right(pred, gt)) if right]
    return success_rate([p for p, _ in ends], [g for _, g in ends]) if ends else 0.0


def mean_accuracy(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of correct steps, averaged over all episodes and positions.

    >>> mean_accuracy([(1, 2), (1, 3)], [(1, 2), (1, 2)])
    75.0
    """
    _check(pred, gt)
    if len(gt) == 0:
        return 0.0
    hits = sum(int(a == b) for p, g in zip(pred, gt) for a, b in zip(p, g))
    return 100.0 * hits / sum(len(g) for g in gt)


def _iou(a: set, b: set) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def iou_per_episode(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> list[float]:
    """Per episode, the IoU of its predicted and true action sets (in [0, 1]).

    >>> [round(x, 4) for x in iou_per_episode([(1, 1, 3), (1, 2, 3)], [(1, 2, 3), (1, 2, 3)])]
    [0.6667, 1.0]
    """
    _check(pred, gt)
    return [_iou({int(a) for a in p}, {int(a) for a in g}) for p, g in zip(pred, gt)]


def miou_per_episode(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """IoU of the action sets of each episode, averaged over episodes (percent).

    >>> round(miou_per_episode([(1, 1, 3)], [(1, 2, 3)]), 2)  # {1, 3} vs {1, 2, 3}
    66.67
    """
    _check(pred, gt)
    if len(gt) == 0:
        return 0.0
    return 100.0 * float(np.mean(iou_per_episode(pred, gt)))


def miou_per_batch(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> float:
    """IoU of the action sets of consecutive batches of ``batch`` episodes, averaged over
    batches (percent; the plain mean: PDPP's code weights each batch by its episodes, see
    :func:`pdpp_metrics`). Depends on the episode order; the last batch may be smaller.

    >>> round(miou_per_batch([(1, 2), (3, 4)], [(1, 2), (3, 5)], batch_size=1), 2)  # 1 and 1/3
    66.67
    >>> miou_per_batch([(1, 2), (3, 4)], [(1, 2), (3, 5)], batch_size=2)  # {1,2,3,4} vs {1,2,3,5}
    60.0
    """
    _check(pred, gt)
    ious = _batch_ious(pred, gt, batch_size)
    return 100.0 * float(np.mean([iou for iou, _ in ious])) if ious else 0.0


def _batches(n: int, batch_size: int) -> range:
    """The first episode of each batch of ``batch_size`` consecutive episodes (of ``n``)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise KeppError(f"mIoU batch size must be at least 1, got {batch_size}")
    return range(0, n, int(batch_size))


def set_iou(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """Per row of two ``[N, T]`` arrays, the IoU of its predicted and true action *sets* (what
    :func:`iou_per_episode` gives, value for value, without a set per episode).

    >>> set_iou(np.array([[1, 1, 3], [1, 2, 3]]), np.array([[1, 2, 3], [1, 2, 3]])).round(4).tolist()
    [0.6667, 1.0]
    """
    def once(a: np.ndarray) -> np.ndarray:  # each distinct action counted at its first position only
        return ~np.tril(a[:, :, None] == a[:, None, :], k=-1).any(axis=2)

    first_p, first_g = once(pred), once(gt)
    shared = ((pred[:, :, None] == gt[:, None, :]).any(axis=2) & first_p).sum(axis=1)
    return shared / (first_p.sum(axis=1) + first_g.sum(axis=1) - shared)


def _batch_ious(pred, gt, batch_size: int) -> list[tuple[float, int]]:
    """Per batch of consecutive episodes: the IoU of the set of every predicted action and the set
    of every true action in it (a fraction), and the batch's episode count."""
    out = []
    arrays = isinstance(pred, np.ndarray) and isinstance(gt, np.ndarray)
    for k in _batches(len(gt), batch_size):
        if arrays:  # a batch's sets made in C
            ps, gs = set(pred[k : k + batch_size].ravel().tolist()), set(gt[k : k + batch_size].ravel().tolist())
        else:
            ps = {int(a) for p in pred[k : k + batch_size] for a in p}
            gs = {int(a) for g in gt[k : k + batch_size] for a in g}
        out.append((_iou(ps, gs), len(gt[k : k + batch_size])))
    return out


def plan_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """SR, mAcc, mIoU per episode and mIoU per batch of ``batch_size`` (percent), and the count."""
    return {"episodes": len(gt), "sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt),
            "miou_episode": miou_per_episode(pred, gt), "miou_batch": miou_per_batch(pred, gt, batch_size)}


# --- the field's evaluation codes (each one object of kepp_core.benchmark.FAMILIES that owns its function here) ---
def _plan_arrays(pred, gt) -> tuple[np.ndarray, np.ndarray]:
    """``pred`` and ``gt`` as ``[N, T]`` int64 arrays (checked: as many plans, equal lengths, one T)."""
    if isinstance(pred, np.ndarray) and isinstance(gt, np.ndarray) and pred.ndim == gt.ndim == 2:
        if pred.shape != gt.shape or not len(gt):  # arrays (a records store's columns): checked as a whole
            _check(pred, gt)
            raise KeppError("no episodes to score (expected at least one plan)")
        return pred.astype(np.int64, copy=False), gt.astype(np.int64, copy=False)
    _check(pred, gt)
    if len(gt) == 0:
        raise KeppError("no episodes to score (expected at least one plan)")
    if len({len(g) for g in gt}) != 1:
        raise KeppError("plans of several horizons in one call (the evaluation codes score one T at a time)")
    return np.asarray(pred, dtype=np.int64), np.asarray(gt, dtype=np.int64)


def pdpp_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """What PDPP's ``utils/accuracy.py`` reports on these plans as its ``inference.py`` aggregates
    it: per batch of ``batch_size`` consecutive episodes, ``acc1`` (``macc``), the trajectory success
    rate (``sr``) and the first and last step's accuracy (``first_acc``, ``last_acc``) in float32 as
    its torch code computes them, ``MIoU1`` (``miou_batch``: the IoU of the whole batch's action
    sets) and ``MIoU2`` (``miou_episode``); each averaged over batches weighted by their episodes
    in its ``AverageMeter`` (``sum += val * n``): a Python float for the first four, whose batch
    values arrive as numbers, and a float32 tensor for ``first_acc`` and ``last_acc``, whose batch
    values arrive as tensors (so their sums and averages round in float32, up to about 4e-6 points
    from a float64 mean).

    >>> m = pdpp_metrics([(1, 2, 3), (1, 5, 3)], [(1, 2, 3), (1, 2, 3)])
    >>> m["sr"], round(m["macc"], 4), m["miou_batch"], m["miou_episode"]
    (50.0, 83.3333, 75.0, 75.0)
    """
    p, g = _plan_arrays(pred, gt)
    n, horizon = g.shape
    f32 = np.float32
    sums = dict.fromkeys(("sr", "macc", "miou_batch", "miou_episode"), 0.0)
    sums.update(dict.fromkeys(_PDPP_TENSOR_METERS, f32(0.0)))
    every_iou = set_iou(p, g)  # per episode: the same in any batch
    for k in _batches(n, batch_size):
        pb, gb = p[k : k + batch_size], g[k : k + batch_size]
        b, right = len(gb), pb == gb
        ious = every_iou[k : k + batch_size]
        values = {
            "macc": f32(right.sum()) * f32(100.0 / (b * horizon)),
            "sr": f32(f32(right.all(axis=1).sum() * 100.0) / f32(b)),
            "miou_batch": 100.0 * _iou(set(pb.ravel().tolist()), set(gb.ravel().tolist())),
            "miou_episode": float(np.cumsum(100.0 * ious)[-1]) / b,  # summed in order, as Python's sum()
            "first_acc": f32(f32(right[:, 0].sum()) / f32(b)) * f32(100.0),
            "last_acc": f32(f32(right[:, -1].sum()) / f32(b)) * f32(100.0),
        }
        for key, v in values.items():
            if key in _PDPP_TENSOR_METERS:  # float32 tensor times an int, added to a float32 tensor
                sums[key] = f32(sums[key] + f32(v * f32(b)))
            else:
                sums[key] += float(v) * b
    return {key: float(f32(v / f32(n))) if key in _PDPP_TENSOR_METERS else v / n for key, v in sums.items()}


# The meters of PDPP's inference.py that add float32 tensors rather than Python floats.
_PDPP_TENSOR_METERS = ("first_acc", "last_acc")


def pdpp_printed_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """:func:`pdpp_metrics` as PDPP's ``inference.py`` returns and prints them: every meter's average
    passed through a float32 tensor (``torch.tensor(avg).item()``), so each is a float32 value.

    >>> pdpp_printed_metrics([(1, 2, 3)] * 3, [(1, 2, 3), (1, 2, 3), (1, 2, 4)])["sr"]
    66.66666412353516
    """
    return {key: float(np.float32(v)) for key, v in pdpp_metrics(pred, gt, batch_size).items()}


def vpn_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """What ViterbiPlanNet's ``metrics.py`` reports on these plans as its ``main.py`` aggregates its
    decoded plans: per batch, ``success_rate`` (``sr``), ``mean_category_acc`` (``macc``) and the mean
    of ``acc_iou(pred, gt, aggregate=False)`` (``miou``), each weighted by the batch's episodes, and
    ``miou()`` over all episodes (``miou_classic``: two sets that keep growing from the first
    episode on, their IoU averaged over the prefixes).

    ``acc_iou`` applies ``&`` and ``|`` to the integer action ids: a bitwise operation, so its
    "IoU" is ``(Σ (p & g) + 1e-6) / (Σ (p | g) + 1e-6)`` over the steps, not a set IoU:

    >>> round(vpn_metrics([(1, 2)], [(1, 3)])["miou"], 2)  # (1&1 + 2&3) / (1|1 + 2|3) = 3/4
    75.0
    """
    p, g = _plan_arrays(pred, gt)
    n = len(g)
    sums = dict.fromkeys(("sr", "macc", "miou"), 0.0)
    for k in _batches(n, batch_size):
        pb, gb = p[k : k + batch_size], g[k : k + batch_size]
        b = len(gb)
        sums["sr"] += float(np.mean(np.all(pb == gb, axis=1)) * 100) * b
        sums["macc"] += float((gb == pb).mean() * 100) * b
        sums["miou"] += float((((pb & gb).sum(1) + 1e-6) / ((pb | gb).sum(1) + 1e-6) * 100).mean()) * b
    out = {key: v / n for key, v in sums.items()}
    # the sets after each episode: an action is in the predicted set from the first episode that predicts it on
    size = int(max(p.max(), g.max())) + 1 if p.min() >= 0 and g.min() >= 0 else None
    if size is None:  # negative ids (no dataset's): the sets one episode at a time
        prefixes = _growing_ious(p, g)
    else:
        first_p, first_g = _first_rows(p, size), _first_rows(g, size)
        count = lambda rows: np.cumsum(np.bincount(rows[rows < n], minlength=n))  # noqa: E731
        has_p, has_g, both = count(first_p), count(first_g), count(np.maximum(first_p, first_g))
        prefixes = 100.0 * both / (has_p + has_g - both)
    out["miou_classic"] = float(np.cumsum(prefixes)[-1]) / len(prefixes)  # summed in order, as Python's sum()
    return out


def _first_rows(plans: np.ndarray, size: int) -> np.ndarray:
    """Per action id below ``size``, the first row of ``plans`` that holds it (``len(plans)``: none)."""
    first = np.full(size, len(plans), dtype=np.int64)
    rows = np.broadcast_to(np.arange(len(plans))[:, None], plans.shape)
    np.minimum.at(first, plans.ravel(), rows.ravel())
    return first


def _growing_ious(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    seen_pred: set[int] = set()
    seen_true: set[int] = set()
    prefixes = []
    for a, c in zip(p.tolist(), g.tolist()):
        seen_pred.update(a)
        seen_true.update(c)
        prefixes.append(100.0 * len(seen_pred & seen_true) / len(seen_pred | seen_true))
    return np.array(prefixes)


def kepp_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """This package's own metrics under the keys of the ``kepp`` family (:mod:`kepp_core.benchmark`)."""
    return {"sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt), "miou_episode": miou_per_episode(pred, gt),
            "miou_batch": miou_per_batch(pred, gt, batch_size), "ends": endpoint_rate(pred, gt),
            "sr_ends": success_given_endpoints(pred, gt)}


def kepp_episode_values(pred: np.ndarray, gt: np.ndarray) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The ``kepp`` code's array path for two ``[N, T]`` arrays of one T: SR, mAcc and mIoU per episode as
    :func:`success_rate`, :func:`mean_accuracy` and :func:`miou_per_episode` compute them (value for value,
    without a list per episode), and each episode's success, share of steps right and set IoU (what a
    one-seed table's interval resamples).

    >>> values, episodes = kepp_episode_values(np.array([[1, 2, 3], [1, 5, 3]]), np.array([[1, 2, 3], [1, 2, 3]]))
    >>> values["sr"], episodes["macc"].round(4).tolist()
    (50.0, [1.0, 0.6667])
    """
    n, horizon = gt.shape
    right = pred == gt
    success, steps, iou = right.all(axis=1), right.sum(axis=1), set_iou(pred, gt)
    values = {"sr": 100.0 * int(success.sum()) / n, "macc": 100.0 * int(steps.sum()) / (n * horizon),
              "miou_episode": 100.0 * float(np.mean(iou))}
    return values, {"sr": success.astype(float), "macc": steps / horizon, "miou_episode": iou}
