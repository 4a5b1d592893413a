"""The field's evaluation codes batch by batch, as their loops run (one batch at a time, its sets as Python
sets): the references :func:`kepp_core.metrics.pdpp_metrics`, :func:`~kepp_core.metrics.vpn_metrics` and
:func:`~kepp_core.metrics.miou_per_batch` (computed over all batches at once) must equal value for value."""

from __future__ import annotations

import numpy as np

from kepp_core.metrics import _PDPP_TENSOR_METERS, _batches, _iou, iou_per_episode


def batch_ious(pred: np.ndarray, gt: np.ndarray, batch_size: int) -> list[float]:
    """Per batch, the IoU of its predicted and true action sets."""
    return [_iou(set(pred[k:k + batch_size].ravel().tolist()), set(gt[k:k + batch_size].ravel().tolist()))
            for k in _batches(len(gt), batch_size)]


def miou_per_batch(pred: np.ndarray, gt: np.ndarray, batch_size: int) -> float:
    ious = batch_ious(pred, gt, batch_size)
    return 100.0 * float(np.mean(ious)) if ious else 0.0


def pdpp_metrics(p: np.ndarray, g: np.ndarray, batch_size: int) -> dict:
    """PDPP's meters, batch by batch (float32 where its torch code is)."""
    n, horizon = g.shape
    f32 = np.float32
    sums = dict.fromkeys(("sr", "macc", "miou_batch", "miou_episode"), 0.0)
    sums.update(dict.fromkeys(_PDPP_TENSOR_METERS, f32(0.0)))
    every_iou = np.array(iou_per_episode(p, g))
    for k in _batches(n, batch_size):
        pb, gb = p[k: k + batch_size], g[k: k + batch_size]
        b, right = len(gb), pb == gb
        ious = every_iou[k: k + batch_size]
        values = {
            "macc": f32(right.sum()) * f32(100.0 / (b * horizon)),
            "sr": f32(f32(right.all(axis=1).sum() * 100.0) / f32(b)),
            "miou_batch": 100.0 * _iou(set(pb.ravel().tolist()), set(gb.ravel().tolist())),
            "miou_episode": sum((100.0 * ious).tolist()) / b,
            "first_acc": f32(f32(right[:, 0].sum()) / f32(b)) * f32(100.0),
            "last_acc": f32(f32(right[:, -1].sum()) / f32(b)) * f32(100.0),
        }
        for key, v in values.items():
            if key in _PDPP_TENSOR_METERS:
                sums[key] = f32(sums[key] + f32(v * f32(b)))
            else:
                sums[key] += float(v) * b
    return {key: float(f32(v / f32(n))) if key in _PDPP_TENSOR_METERS else v / n for key, v in sums.items()}


def vpn_metrics(p: np.ndarray, g: np.ndarray, batch_size: int) -> dict:
    """ViterbiPlanNet's meters, batch by batch, and its growing-sets mIoU one episode at a time."""
    n = len(g)
    sums = dict.fromkeys(("sr", "macc", "miou"), 0.0)
    for k in _batches(n, batch_size):
        pb, gb = p[k: k + batch_size], g[k: k + batch_size]
        b = len(gb)
        sums["sr"] += float(np.mean(np.all(pb == gb, axis=1)) * 100) * b
        sums["macc"] += float((gb == pb).mean() * 100) * b
        sums["miou"] += float((((pb & gb).sum(1) + 1e-6) / ((pb | gb).sum(1) + 1e-6) * 100).mean()) * b
    out = {key: v / n for key, v in sums.items()}
    seen_pred: set[int] = set()
    seen_true: set[int] = set()
    prefixes = []
    for a, c in zip(p.tolist(), g.tolist()):
        seen_pred.update(a)
        seen_true.update(c)
        prefixes.append(100.0 * len(seen_pred & seen_true) / len(seen_pred | seen_true))
    out["miou_classic"] = sum(prefixes) / len(prefixes)
    return out
