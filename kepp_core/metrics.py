"""Planning metrics (paper supplement C.4), all in percent.

- **SR** (success rate): share of episodes whose whole predicted plan equals the ground truth.
- **mAcc**: mean over episodes and positions of ``pred_t == gt_t``.
- **mIoU, per episode** (CrossTask tables): IoU of the *sets* of predicted and ground-truth
  actions of each episode, averaged over episodes.
- **mIoU, per batch** (COIN and NIV tables, the PDPP/P3IV convention): the episodes, in the
  given order, are split into consecutive batches of 256 (the last one may be smaller); per
  batch, IoU of the set of all predicted actions and the set of all ground-truth actions in
  the batch; averaged over batches.

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

BATCH = 256


def _check(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> None:
    if len(pred) != len(gt):
        raise KeppError(f"{len(pred)} predicted plans for {len(gt)} ground-truth plans (expected as many)")
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
    batches (percent). Depends on the episode order; the last batch may be smaller.

    >>> round(miou_per_batch([(1, 2), (3, 4)], [(1, 2), (3, 5)], batch_size=1), 2)  # 1 and 1/3
    66.67
    >>> miou_per_batch([(1, 2), (3, 4)], [(1, 2), (3, 5)], batch_size=2)  # {1,2,3,4} vs {1,2,3,5}
    60.0
    """
    _check(pred, gt)
    if batch_size < 1:
        raise KeppError(f"mIoU batch size must be at least 1, got {batch_size}")
    if len(gt) == 0:
        return 0.0
    ious = []
    for k in range(0, len(gt), batch_size):
        ps = {int(a) for p in pred[k : k + batch_size] for a in p}
        gs = {int(a) for g in gt[k : k + batch_size] for a in g}
        ious.append(_iou(ps, gs))
    return 100.0 * float(np.mean(ious))


def plan_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """SR, mAcc, mIoU per episode and mIoU per batch of ``batch_size`` (percent), and the count."""
    return {"episodes": len(gt), "sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt),
            "miou_episode": miou_per_episode(pred, gt), "miou_batch": miou_per_batch(pred, gt, batch_size)}
