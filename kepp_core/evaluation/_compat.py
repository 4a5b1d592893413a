"""The metrics of :mod:`kepp_core.evaluation.metrics` (SR, mAcc, mIoU in percent, KEPP.md §5)
accepting numpy arrays ``[N, T]`` as well as sequences."""

from __future__ import annotations

import numpy as np

from kepp_core.evaluation import metrics as _m


def _lists(x) -> list:
    return np.asarray(x).tolist() if isinstance(x, np.ndarray) or hasattr(x, "numpy") else list(x)


def success_rate(pred, gt) -> float:
    return _m.success_rate(_lists(pred), _lists(gt))


def mean_accuracy(pred, gt) -> float:
    return _m.mean_accuracy(_lists(pred), _lists(gt))


def miou_per_episode(pred, gt) -> float:
    return _m.miou_per_episode(_lists(pred), _lists(gt))


def miou_per_batch(pred, gt) -> float:
    return _m.miou_per_batch(_lists(pred), _lists(gt))


__all__ = ["mean_accuracy", "miou_per_batch", "miou_per_episode", "success_rate"]
