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
code is one object of :mod:`kepp_core.catalog.benchmark` that owns its function here, its columns and headers.

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

BATCH = 256  # episodes per batch, as the field's codes batch them (PDPP's and ViterbiPlanNet's loaders)

__all__ = ["mean_accuracy", "miou_per_batch", "miou_per_episode", "plan_metrics", "success_rate"]



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
    if _int_arrays(pred, gt):
        return 100.0 * int((pred == gt).all(axis=1).sum()) / len(gt)
    return 100.0 * sum(list(map(int, p)) == list(map(int, g)) for p, g in zip(pred, gt)) / len(gt)


def _int_arrays(pred, gt) -> bool:
    """Whether ``pred`` and ``gt`` are ``[N, T]`` integer arrays of one shape (the columns' form: counted as arrays)."""
    return (isinstance(pred, np.ndarray) and isinstance(gt, np.ndarray) and pred.ndim == 2 and pred.shape == gt.shape
            and pred.dtype.kind in "iu" and gt.dtype.kind in "iu")


def ends_right(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> list[bool]:
    """Per episode: the predicted plan's first *and* last step are right (the one rule of *ends
    right*: :func:`endpoint_rate`, :func:`success_given_endpoints`, the ends slice).

    >>> ends_right([(1, 9, 3), (1, 2, 4)], [(1, 2, 3), (1, 2, 3)])
    [True, False]
    """
    if _int_arrays(pred, gt) and len(gt):
        return _ends_flags(pred, gt).tolist()
    return [int(p[0]) == int(g[0]) and int(p[-1]) == int(g[-1]) for p, g in zip(pred, gt)]


def _ends_flags(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """:func:`ends_right` of two ``[N, T]`` arrays (N >= 1) as a boolean array."""
    return (pred[:, 0] == gt[:, 0]) & (pred[:, -1] == gt[:, -1])


def endpoint_rate(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of episodes whose predicted first and last steps are both right.

    >>> endpoint_rate([(1, 9, 3), (1, 2, 4)], [(1, 2, 3), (1, 2, 3)])
    50.0
    """
    _check(pred, gt)
    if len(gt) == 0:
        return 0.0
    if _int_arrays(pred, gt):
        return 100.0 * int(_ends_flags(pred, gt).sum()) / len(gt)
    return 100.0 * sum(ends_right(pred, gt)) / len(gt)


def success_given_endpoints(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]]) -> float:
    """Percent of the episodes with both endpoints right whose whole plan is right (0 when no
    episode has both endpoints right: then no plan is right either).

    >>> success_given_endpoints([(1, 9, 3), (1, 2, 3), (5, 2, 3)], [(1, 2, 3)] * 3)
    50.0
    """
    _check(pred, gt)
    if _int_arrays(pred, gt):  # the columns' form: the rows with both ends right, cut at once
        right = _ends_flags(pred, gt) if len(gt) else np.zeros(0, dtype=bool)
        return success_rate(pred[right], gt[right]) if right.any() else 0.0
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
    if _int_arrays(pred, gt):
        return 100.0 * int((pred == gt).sum()) / gt.size
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
    return 100.0 * float(np.mean(set_iou(pred, gt) if _int_arrays(pred, gt) else iou_per_episode(pred, gt)))


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
    _batches(len(gt), batch_size)
    if not len(gt):
        return 0.0
    if _int_arrays(pred, gt):
        ious = _batch_ious(pred, gt, batch_size)  # every batch's sets at once
    else:
        ious = [_iou({int(a) for p in pred[k:k + batch_size] for a in p}, {int(a) for g in gt[k:k + batch_size] for a in g})
                for k in _batches(len(gt), batch_size)]
    return 100.0 * float(np.mean(ious))


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
    first_p, first_g = _first_places(pred), _first_places(gt)
    shared = np.zeros(len(pred), dtype=np.int64)
    for j in range(pred.shape[1]):  # a distinct predicted action (at its first place) that the truth holds
        shared += first_p[:, j] & (pred[:, j:j + 1] == gt).any(axis=1)
    return shared / (first_p.sum(axis=1) + first_g.sum(axis=1) - shared)


def _first_places(a: np.ndarray) -> np.ndarray:
    """Per row of an ``[N, T]`` array, whether each place holds its action's first occurrence in the row."""
    first = np.ones(a.shape, dtype=bool)
    for j in range(1, a.shape[1]):
        first[:, j] = ~(a[:, :j] == a[:, j:j + 1]).any(axis=1)
    return first


def _batch_ious(pred: np.ndarray, gt: np.ndarray, batch_size: int) -> np.ndarray:
    """Per batch of ``batch_size`` consecutive rows of two ``[N, T]`` arrays: the IoU (a fraction) of the set of every
    predicted action and the set of every true action in it, every batch at once (the values of its sets' sizes, as
    Python's sets give them)."""
    n = len(gt)
    return _set_ious_of(pred, gt, np.arange(n) // batch_size, -(-n // batch_size))


def _set_ious_of(pred: np.ndarray, gt: np.ndarray, batch_of_row: np.ndarray, count: int) -> np.ndarray:
    """Per batch (``batch_of_row``: each row's batch, of ``count``), the IoU of the set of every predicted action and
    the set of every true action of its rows, every batch at once."""
    low = min(int(pred.min()), int(gt.min()))
    width = max(int(pred.max()), int(gt.max())) - low + 1
    if count * width <= 1 << 26:  # each batch's sets as a row of flags, each (batch, action) one place of them
        base = (batch_of_row * width - low)[:, None]
        has_p, has_g = np.zeros(count * width, dtype=bool), np.zeros(count * width, dtype=bool)
        has_p[(pred + base).ravel()] = True
        has_g[(gt + base).ravel()] = True
        has_p, has_g = has_p.reshape(count, width), has_g.reshape(count, width)
        return (has_p & has_g).sum(axis=1) / (has_p | has_g).sum(axis=1)
    # ids spread too wide for a row of flags per batch: numbered densely, each batch's (batch, action) pairs sorted
    ids = np.unique(np.concatenate([pred.ravel(), gt.ravel()]), return_inverse=True)[1].ravel()
    width = int(ids.max()) + 1
    batch = np.repeat(batch_of_row, gt.shape[1])
    key_p, key_g = np.unique(batch * width + ids[:pred.size]), np.unique(batch * width + ids[pred.size:])
    both = np.bincount(np.intersect1d(key_p, key_g, assume_unique=True) // width, minlength=count)
    union = np.bincount(key_p // width, minlength=count) + np.bincount(key_g // width, minlength=count) - both
    return both / union


def _batch_sums(values: np.ndarray, batch_size: int) -> np.ndarray:
    """Per batch of ``batch_size`` consecutive values, their sum added up in order (as Python's ``sum()`` and
    ``np.cumsum`` add): the values padded with zeros to whole batches, each batch's running sum's last."""
    count = -(-len(values) // batch_size)
    padded = np.zeros(count * batch_size, dtype=values.dtype)
    padded[:len(values)] = values
    return np.cumsum(padded.reshape(count, batch_size), axis=1)[:, -1]


def _batch_means(values: np.ndarray, batch_size: int) -> np.ndarray:
    """Per batch of ``batch_size`` consecutive values, ``np.mean`` of the batch's values (the whole batches as rows
    of one array: numpy sums each row as it sums a batch alone; the last, shorter batch alone)."""
    whole = len(values) // batch_size
    out = values[:whole * batch_size].reshape(whole, batch_size).mean(axis=1) if whole else np.zeros(0)
    if len(values) > whole * batch_size:
        out = np.append(out, values[whole * batch_size:].mean())
    return out


def plan_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """SR, mAcc, mIoU per episode and mIoU per batch of ``batch_size`` (percent), and the count."""
    return {"episodes": len(gt), "sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt),
            "miou_episode": miou_per_episode(pred, gt), "miou_batch": miou_per_batch(pred, gt, batch_size)}


# --- the field's evaluation codes (each one object of kepp_core.catalog.benchmark.FAMILIES that owns its function here) ---
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
    starts = np.asarray(_batches(n, batch_size), dtype=np.int64)
    b = np.minimum(batch_size, n - starts)  # each batch's episodes
    right = p == g
    count = lambda flags: np.add.reduceat(flags.astype(np.int64), starts)  # noqa: E731 -- per batch
    values = {  # every batch's value at once, in the code's types (float32 where its torch code is)
        "macc": count(right.sum(axis=1)).astype(f32) * (100.0 / (b * horizon)).astype(f32),
        "sr": (count(right.all(axis=1)) * 100.0).astype(f32) / b.astype(f32),
        "miou_batch": 100.0 * _batch_ious(p, g, batch_size),
        "miou_episode": _batch_sums(100.0 * set_iou(p, g), batch_size) / b,  # each batch summed in order
        "first_acc": (count(right[:, 0]).astype(f32) / b.astype(f32)) * f32(100.0),
        "last_acc": (count(right[:, -1]).astype(f32) / b.astype(f32)) * f32(100.0),
    }
    out = {}
    for key, v in values.items():  # the meters add the batches in order
        if key in _PDPP_TENSOR_METERS:  # float32 tensor times an int, added to a float32 tensor
            out[key] = float(f32(np.cumsum(v * b.astype(f32), dtype=f32)[-1] / f32(n)))
        else:
            out[key] = float(np.cumsum(v.astype(np.float64) * b)[-1]) / n
    return {key: out[key] for key in ("sr", "macc", "miou_batch", "miou_episode", *_PDPP_TENSOR_METERS)}


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
    n, horizon = g.shape
    starts = np.asarray(_batches(n, batch_size), dtype=np.int64)
    b = np.minimum(batch_size, n - starts)
    right = p == g
    count = lambda flags: np.add.reduceat(flags.astype(np.int64), starts)  # noqa: E731 -- per batch
    ious = ((p & g).sum(1) + 1e-6) / ((p | g).sum(1) + 1e-6) * 100
    values = {"sr": count(right.all(axis=1)) / b * 100, "macc": count(right.sum(axis=1)) / (b * horizon) * 100,
              "miou": _batch_means(ious, batch_size)}  # np.mean of each batch, as its code takes it
    out = {key: float(np.cumsum(v * b)[-1]) / n for key, v in values.items()}  # weighted, added in order
    # the sets after each episode: an action is in the predicted set from the first episode that predicts it on
    ids = np.concatenate([p.ravel(), g.ravel()])
    if ids.min() < 0 or ids.max() >= 1 << 26:  # ids no table can be indexed by: numbered densely (the sets' sizes stay)
        ids = np.unique(ids, return_inverse=True)[1].ravel()
    size = int(ids.max()) + 1
    first_p, first_g = _first_rows(ids[:p.size].reshape(p.shape), size), _first_rows(ids[p.size:].reshape(g.shape), size)
    grown = lambda rows: np.cumsum(np.bincount(rows[rows < n], minlength=n))  # noqa: E731
    has_p, has_g, both = grown(first_p), grown(first_g), grown(np.maximum(first_p, first_g))
    prefixes = 100.0 * both / (has_p + has_g - both)
    out["miou_classic"] = float(np.cumsum(prefixes)[-1]) / len(prefixes)  # summed in order, as Python's sum()
    return out


def _first_rows(plans: np.ndarray, size: int) -> np.ndarray:
    """Per action id below ``size``, the first row of ``plans`` that holds it (``len(plans)``: none)."""
    first = np.full(size, len(plans), dtype=np.int64)
    rows = np.broadcast_to(np.arange(len(plans))[:, None], plans.shape)
    np.minimum.at(first, plans.ravel(), rows.ravel())
    return first


def kepp_metrics(pred: Sequence[Sequence[int]], gt: Sequence[Sequence[int]], batch_size: int = BATCH) -> dict:
    """This package's own metrics under the keys of the ``kepp`` family (:mod:`kepp_core.catalog.benchmark`)."""
    return {"sr": success_rate(pred, gt), "macc": mean_accuracy(pred, gt), "miou_episode": miou_per_episode(pred, gt),
            "miou_batch": miou_per_batch(pred, gt, batch_size), "ends": endpoint_rate(pred, gt),
            "sr_ends": success_given_endpoints(pred, gt)}


def kepp_episode_values(pred: np.ndarray, gt: np.ndarray,
                        iou: np.ndarray | None = None) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The ``kepp`` code's array path for two ``[N, T]`` arrays of one T: SR, mAcc and mIoU per episode as
    :func:`success_rate`, :func:`mean_accuracy` and :func:`miou_per_episode` compute them (value for value,
    without a list per episode), and each episode's success, share of steps right and set IoU (what a
    one-seed table's interval resamples). ``iou``: the episodes' set IoUs where the caller has them (a table
    counts each horizon's once).

    >>> values, episodes = kepp_episode_values(np.array([[1, 2, 3], [1, 5, 3]]), np.array([[1, 2, 3], [1, 2, 3]]))
    >>> values["sr"], episodes["macc"].round(4).tolist()
    (50.0, [1.0, 0.6667])
    """
    n, horizon = gt.shape
    right = pred == gt
    success, steps = right.all(axis=1), right.sum(axis=1)
    iou = set_iou(pred, gt) if iou is None else iou
    values = {"sr": 100.0 * int(success.sum()) / n, "macc": 100.0 * int(steps.sum()) / (n * horizon),
              "miou_episode": 100.0 * float(np.mean(iou))}
    return values, {"sr": success.astype(float), "macc": steps / horizon, "miou_episode": iou}


# --- every run's numbers at once: the rows of several runs of one T, each run's rows consecutive, in its order ---
# A run's number is what its code's function gives on the run's rows alone, value for value: sums the function adds
# in order are added in order per run (a running sum per row of one array), means numpy takes by its pairwise sum
# are taken on rows of one length (numpy sums each row of a 2-D array as it sums that row alone).
def _run_sizes(n: int, starts: np.ndarray) -> np.ndarray:
    """The rows of each run (``starts``: each run's first row, ascending, the first 0; ``n`` rows in all)."""
    if not len(starts) or starts[0] != 0 or (np.diff(np.append(starts, n)) < 1).any():
        raise KeppError(f"runs starting at rows {starts.tolist()[:5]}…: expected ascending starts from 0, "
                        f"each run at least one of the {n} rows")
    return np.diff(np.append(starts, n))


def _running_sums(values: np.ndarray, starts: np.ndarray, dtype=None) -> np.ndarray:
    """Per run of ``values`` (from each of ``starts`` to the next), its values added up in order, the last of
    ``np.cumsum(run, dtype=dtype)``: runs of about one length side by side as rows of one array, padded after their
    ends (a row's running sum at its run's last value is the run's own)."""
    sizes = _run_sizes(len(values), starts)
    out = np.empty(len(starts), dtype=np.cumsum(values[:1], dtype=dtype).dtype)
    reach = np.ceil(np.log2(sizes)).astype(np.int64)  # runs up to twice as long as the shortest beside them
    for r in np.unique(reach):
        k = np.flatnonzero(reach == r)
        width = int(sizes[k].max())
        at = np.minimum(starts[k, None] + np.arange(width), len(values) - 1)
        out[k] = np.cumsum(values[at], axis=1, dtype=dtype)[np.arange(len(k)), sizes[k] - 1]
    return out


def _run_means(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per run of ``values``, ``np.mean`` of its values: the runs of each length as the rows of one array."""
    sizes = _run_sizes(len(values), starts)
    out = np.empty(len(starts))
    for size in np.unique(sizes):
        k = np.flatnonzero(sizes == size)
        out[k] = values[starts[k, None] + np.arange(size)].mean(axis=1)
    return out


def _run_batches(n: int, starts: np.ndarray, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each run cut in batches of ``batch_size`` consecutive rows (its last may be smaller), as a code batches a run
    scored alone: each batch's first row and episodes, and each run's first batch."""
    _batches(n, batch_size)  # the batch size checked
    sizes = _run_sizes(n, starts)
    counts = -(-sizes // batch_size)
    first_batch = np.concatenate(([0], np.cumsum(counts)[:-1]))
    run = np.repeat(np.arange(len(starts)), counts)
    firsts = starts[run] + (np.arange(int(counts.sum())) - first_batch[run]) * batch_size
    return firsts, np.minimum(batch_size, (starts + sizes)[run] - firsts), first_batch


def _run_rows(pred: np.ndarray, gt: np.ndarray,
              starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``pred`` and ``gt`` as ``[N, T]`` int64 arrays (checked as :func:`_plan_arrays` checks them), ``starts`` as
    int64, and each run's rows."""
    p, g = _plan_arrays(pred, gt)
    starts = np.asarray(starts, dtype=np.int64)
    return p, g, starts, _run_sizes(len(g), starts)


def kepp_run_metrics(pred: np.ndarray, gt: np.ndarray, starts: np.ndarray, batch_size: int = BATCH,
                     iou: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`kepp_metrics` of every run at once: ``pred`` and ``gt`` are ``[N, T]`` arrays of one T holding several
    runs, each run's rows consecutive from each of ``starts`` (ascending, the first 0) to the next; per metric key,
    one value per run, each what :func:`kepp_metrics` gives on that run's rows alone. ``iou``: the rows' set IoUs
    where the caller has them.

    >>> m = kepp_run_metrics(np.array([[1, 2, 3], [1, 5, 3], [4, 4, 4]]), np.array([[1, 2, 3]] * 3), [0, 2])
    >>> m["sr"].tolist(), m["ends"].tolist()
    ([50.0, 0.0], [100.0, 0.0])
    """
    p, g, starts, sizes = _run_rows(pred, gt, starts)
    right = p == g
    per_run = lambda flags: np.add.reduceat(flags.astype(np.int64), starts)  # noqa: E731 -- counted per run
    success, ends = right.all(axis=1), _ends_flags(p, g)
    firsts, b, first_batch = _run_batches(len(g), starts, batch_size)
    batch_ious = _set_ious_of(p, g, np.repeat(np.arange(len(b)), b), len(b))
    held, won = per_run(ends), per_run(success & ends)
    return {"sr": 100.0 * per_run(success) / sizes, "macc": 100.0 * per_run(right.sum(axis=1)) / (sizes * g.shape[1]),
            "miou_episode": 100.0 * _run_means(set_iou(p, g) if iou is None else iou, starts),
            "miou_batch": 100.0 * _run_means(batch_ious, first_batch), "ends": 100.0 * held / sizes,
            "sr_ends": np.where(held > 0, 100.0 * won / np.maximum(held, 1), 0.0)}


def pdpp_run_metrics(pred: np.ndarray, gt: np.ndarray, starts: np.ndarray, batch_size: int = BATCH,
                     iou: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`pdpp_metrics` of every run at once (the runs as :func:`kepp_run_metrics` takes them): each run's
    batches its own, its meters added in its batches' order, in the code's types.

    >>> m = pdpp_run_metrics(np.array([[1, 2, 3], [1, 5, 3], [4, 4, 4]]), np.array([[1, 2, 3]] * 3), [0, 2])
    >>> m["sr"].tolist(), m["macc"].round(4).tolist()
    ([50.0, 0.0], [83.3333, 0.0])
    """
    p, g, starts, sizes = _run_rows(pred, gt, starts)
    f32 = np.float32
    firsts, b, first_batch = _run_batches(len(g), starts, batch_size)
    right = p == g
    count = lambda flags: np.add.reduceat(flags.astype(np.int64), firsts)  # noqa: E731 -- per batch
    iou = set_iou(p, g) if iou is None else iou
    values = {  # every batch's value at once, as pdpp_metrics has them
        "macc": count(right.sum(axis=1)).astype(f32) * (100.0 / (b * g.shape[1])).astype(f32),
        "sr": (count(right.all(axis=1)) * 100.0).astype(f32) / b.astype(f32),
        "miou_batch": 100.0 * _set_ious_of(p, g, np.repeat(np.arange(len(b)), b), len(b)),
        "miou_episode": _running_sums(100.0 * iou, firsts) / b,  # each batch summed in order
        "first_acc": (count(right[:, 0]).astype(f32) / b.astype(f32)) * f32(100.0),
        "last_acc": (count(right[:, -1]).astype(f32) / b.astype(f32)) * f32(100.0),
    }
    out = {}
    for key, v in values.items():  # each run's meters add its batches in order
        if key in _PDPP_TENSOR_METERS:
            out[key] = (_running_sums(v * b.astype(f32), first_batch, f32) / sizes.astype(f32)).astype(np.float64)
        else:
            out[key] = _running_sums(v.astype(np.float64) * b, first_batch) / sizes
    return {key: out[key] for key in ("sr", "macc", "miou_batch", "miou_episode", *_PDPP_TENSOR_METERS)}


def pdpp_printed_run_metrics(pred: np.ndarray, gt: np.ndarray, starts: np.ndarray, batch_size: int = BATCH,
                             iou: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`pdpp_printed_metrics` of every run at once: :func:`pdpp_run_metrics` through float32."""
    return {key: v.astype(np.float32).astype(np.float64)
            for key, v in pdpp_run_metrics(pred, gt, starts, batch_size, iou).items()}


def vpn_run_metrics(pred: np.ndarray, gt: np.ndarray, starts: np.ndarray, batch_size: int = BATCH,
                    iou: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`vpn_metrics` of every run at once (the runs as :func:`kepp_run_metrics` takes them; ``iou`` unused:
    this code counts no set IoU per episode): each run's batches and growing sets its own.

    >>> m = vpn_run_metrics(np.array([[1, 2], [1, 3], [1, 3]]), np.array([[1, 3]] * 3), [0, 1])
    >>> m["miou"].round(2).tolist(), m["sr"].tolist()
    ([75.0, 100.0], [0.0, 100.0])
    """
    p, g, starts, sizes = _run_rows(pred, gt, starts)
    firsts, b, first_batch = _run_batches(len(g), starts, batch_size)
    right = p == g
    count = lambda flags: np.add.reduceat(flags.astype(np.int64), firsts)  # noqa: E731 -- per batch
    ious = ((p & g).sum(1) + 1e-6) / ((p | g).sum(1) + 1e-6) * 100
    values = {"sr": count(right.all(axis=1)) / b * 100, "macc": count(right.sum(axis=1)) / (b * g.shape[1]) * 100,
              "miou": _run_means(ious, firsts)}  # np.mean of each batch
    out = {key: _running_sums(v * b, first_batch) / sizes for key, v in values.items()}
    out["miou_classic"] = _running_sums(_growing_set_ious(p, g, starts, sizes), starts) / sizes
    return out


def _growing_set_ious(p: np.ndarray, g: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per row, ``100 ×`` the IoU of its run's predicted and true action sets grown from the run's first row to it
    (what :func:`vpn_metrics` averages as ``miou_classic``), every run at once."""
    n, horizon = g.shape
    ids = np.concatenate([p.ravel(), g.ravel()])
    if ids.min() < 0 or ids.max() >= 1 << 26:  # ids no table can be indexed by: numbered densely (the sets' sizes stay)
        ids = np.unique(ids, return_inverse=True)[1].ravel()
    size = int(ids.max()) + 1
    run = np.repeat(np.arange(len(starts)), sizes)
    local = np.repeat(np.arange(n) - starts[run], horizon)
    keys = [np.repeat(run, horizon) * size + ids[k * p.size:(k + 1) * p.size] for k in range(2)]
    none = np.iinfo(np.int64).max
    if len(starts) * size <= 1 << 26:  # each (run, action)'s first row, in a table
        pairs = np.arange(len(starts) * size)
        firsts = [np.full(len(pairs), none, dtype=np.int64) for _ in keys]
        for first, key in zip(firsts, keys):
            np.minimum.at(first, key, local)
    else:  # too many: each (run, action)'s first place in the rows' order, the pairs sorted
        found = [np.unique(key, return_index=True) for key in keys]
        pairs = np.union1d(found[0][0], found[1][0])
        firsts = [np.full(len(pairs), none, dtype=np.int64) for _ in keys]
        for first, (key, at) in zip(firsts, found):
            first[np.searchsorted(pairs, key)] = local[at]
    owner = pairs // size  # each pair's run
    both = np.where((firsts[0] != none) & (firsts[1] != none), np.maximum(*firsts), none)

    def grown(first: np.ndarray) -> np.ndarray:  # per row, the actions its run's set holds by then
        held = first != none
        counts = np.cumsum(np.bincount(starts[owner[held]] + first[held], minlength=n))
        return counts - np.repeat(np.concatenate(([0], counts))[starts], sizes)

    has_p, has_g, has_both = grown(firsts[0]), grown(firsts[1]), grown(both)
    return 100.0 * has_both / (has_p + has_g - has_both)
