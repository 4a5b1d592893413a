"""Plans as arrays: a list column's rows as fixed-width ``[n, T]`` int64 arrays (what judging and the metrics
count on), and the object columns of the pandas predictions table made from them a length at a time."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from kepp_core.metrics import set_iou

__all__ = ["PLANS", "FramePlans", "PlanArrays", "chained", "list_values", "passes_through", "row_arrays"]


def list_values(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list column as its values (int64) and the first value's place of each row: row ``i``'s list is
    ``values[starts[i]:starts[i] + len_i]`` (no copy per row)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = arr.offsets.to_numpy()
    values = arr.values.to_numpy(zero_copy_only=False)
    return values.astype(np.int64, copy=False), offsets[:-1]


def row_arrays(column, rows: np.ndarray, width: int) -> np.ndarray:
    """The ``rows`` of a list column whose lists there all have ``width`` items, as an ``[n, width]`` int64 array
    (``column``: the column, or its :func:`list_values`).

    >>> col = pa.array([[1, 2], [3]] + [[k, k + 1] for k in range(200)])
    >>> row_arrays(col, np.arange(2, 202), 2)[[0, -1]].tolist()  # rows one after the other: a slice of the values
    [[0, 1], [199, 200]]
    >>> row_arrays(col, np.array([0, 5, 9]), 2).tolist()  # scattered rows: gathered
    [[1, 2], [3, 4], [7, 8]]
    """
    values, starts = column if isinstance(column, tuple) else list_values(column)
    at = starts[rows]
    # runs of rows stored one after the other (a file's records of one T): each run one slice of the values
    cuts = np.flatnonzero(np.diff(at) != width) + 1
    if len(rows) and len(cuts) < len(rows) // 64:
        runs = zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(rows)].tolist())
        return np.concatenate([values[at[a]:at[a] + (b - a) * width] for a, b in runs]).reshape(len(rows), width)
    return values[at[:, None] + np.arange(width)]



def _small_lists(column, rows: np.ndarray, keep: np.ndarray | None = None, as_tuple: bool = False) -> np.ndarray:
    """The ``rows`` of a list column (each cut to its ``keep`` items) as lists (or tuples) in an object array,
    None where a row has none: made a length at a time from columns (zipped in C), not value by value."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    out = np.full(len(rows), None, dtype=object)
    if arr.type == pa.null():
        return out
    valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
    offsets = arr.offsets.to_numpy()
    values = arr.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)[rows]
    if keep is not None:
        lengths = np.minimum(lengths, keep)
    make = tuple if as_tuple else list
    for length in np.unique(lengths[valid]):
        sel = np.flatnonzero(valid & (lengths == length))
        a = values[offsets[rows[sel]][:, None] + np.arange(length)]
        made = map(make, zip(*a.T.tolist())) if length else (make() for _ in sel)
        out[sel] = np.fromiter(made, dtype=object, count=len(sel))
    return out


def _path_lists(column, rows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The first ``keep`` graph paths of each of ``rows`` (a list column of paths) as lists of tuples."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.type == pa.null():
        return np.fromiter(([] for _ in rows), dtype=object, count=len(rows))
    valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
    offsets = arr.offsets.to_numpy()
    count = np.where(valid, np.minimum(np.diff(offsets)[rows], keep), 0)
    begin = np.concatenate(([0], np.cumsum(count)[:-1]))
    owner = np.repeat(np.arange(len(rows)), count)
    which = offsets[rows][owner] + np.arange(int(count.sum())) - begin[owner]  # every path kept, in order
    each = _small_lists(arr.values, which, as_tuple=True)
    out = np.empty(len(rows), dtype=object)
    for m in np.unique(count):
        sel = np.flatnonzero(count == m)
        made = map(list, zip(*(each[begin[sel] + q] for q in range(m)))) if m else ([] for _ in sel)
        out[sel] = np.fromiter(made, dtype=object, count=len(sel))
    return out


def _objects(values: Iterable) -> np.ndarray:
    """``values`` as a 1-D object array (lists stay lists: never read as a second axis)."""
    return np.fromiter(values, dtype=object)


def _tuples(a: np.ndarray) -> np.ndarray:
    """The rows of an ``[n, T]`` array as tuples of ints (an object array): zipped from its columns, in C."""
    return np.fromiter(zip(*a.T.tolist()), dtype=object, count=len(a))


class FramePlans:
    """The plans and ground truths of a predictions table as ``[n, T]`` int64 arrays per horizon, made from the
    store's columns when the table is (never from its tuples), and carried by the table itself (its
    ``attrs[PLANS]``: pandas hands it to every table filtered or copied from it). They count for a table while its
    plans and truths are the very tuples they were made beside (:meth:`positions`): a plan changed in place is a new
    tuple, and the metrics then count on the table's tuples."""

    def __init__(self, horizon: np.ndarray, plan: np.ndarray | None, truth: np.ndarray | None, made: dict):
        # the table's rows as made (copies of the references: the table may share its columns' arrays with these);
        # no plan and truth: a table of no tuples (store.plans_frame), whose plans are these arrays only
        self.horizon, self.plan, self.truth = (None if a is None else np.array(a, copy=True)
                                               for a in (horizon, plan, truth))
        self.made = made  # T -> (rows of T, their plans, their truths)
        self.iou: dict[int, np.ndarray] = {}  # T -> the set IoU of each row of T, counted once for every table

    def __deepcopy__(self, memo) -> FramePlans:
        return self  # read-only arrays, shared: pandas copies a table's attrs into every table made from it

    def release(self) -> None:
        """Let go of the arrays, for a table superseded by a newer version of its files (an app's sessions may keep
        tables filtered from it for minutes): those tables then count on their own tuples (:meth:`positions`
        finds no row of them here)."""
        self.plan = np.empty(0, dtype=object)  # first: positions() tells every row out by this length
        self.truth, self.horizon = np.empty(0, dtype=object), np.empty(0, dtype=np.int64)
        self.made, self.iou = {}, {}

    def positions(self, preds) -> np.ndarray | None:
        """The rows of ``preds`` (this table or one filtered from it, by its index) as positions in the table these
        arrays were made for, when every one still holds the plan and truth it was made with; else None."""
        index = preds.index.to_numpy()
        if index.dtype.kind not in "iu" or (len(index) and (index.min() < 0 or index.max() >= len(self.horizon))):
            return None
        at = index.astype(np.int64, copy=False)
        if self.plan is None:  # a table without plan tuples: nothing in it can change a plan
            return at if "plan" not in preds and np.array_equal(preds["horizon"].to_numpy(), self.horizon[at]) else None
        same = (np.array_equal(preds["horizon"].to_numpy(), self.horizon[at])
                and all(map(operator.is_, preds["plan"].to_numpy(), self.plan[at]))
                and all(map(operator.is_, preds["truth"].to_numpy(), self.truth[at])))
        return at if same else None

    def rows(self, at: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Where the positions ``at`` (all of horizon ``T``) lie in that horizon's arrays, and those arrays."""
        if T not in self.made:
            return None
        rows, plan, truth = self.made[T]
        return np.searchsorted(rows, at), plan, truth


PLANS = "plans"  # the predictions table's attrs key of its FramePlans


class PlanArrays:
    """The plans and ground truths of a predictions table (:func:`predictions_frame`'s tuples) as ``[n, T]`` int64
    arrays cut for any rows of one T (:meth:`of`): the arrays the store made (:class:`FramePlans`) while the table
    holds the plans they were made with, else its tuples' values chained in C once per horizon. What the metric
    tables, slices and comparisons count on, never a plan at a time.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"horizon": [3, 3], "plan": [(1, 2, 3), (1, 5, 3)], "truth": [(1, 2, 3), (1, 2, 3)]})
    >>> PlanArrays(rows).of(np.array([1]))[0].tolist()
    [[1, 5, 3]]
    """

    def __init__(self, preds):
        self.preds = preds
        self.horizon = preds["horizon"].to_numpy()
        carried = preds.attrs.get(PLANS)
        self.at = carried.positions(preds) if isinstance(carried, FramePlans) else None
        self.carried = carried if self.at is not None else None
        self.made: dict = {}

    def _horizon(self, T: int):
        if T not in self.made:
            rows = np.flatnonzero(self.horizon == T)
            found = self.carried.rows(self.at[rows], T) if self.carried is not None else None
            if found is not None:
                k, plan, truth = found
                whole = len(k) == len(plan) and np.array_equal(k, np.arange(len(k)))
                self.made[T] = (rows, plan, truth, k) if whole else (rows, plan[k], truth[k], k)
            else:
                arrays = [chained(self.preds[c].to_numpy()[rows]) for c in ("plan", "truth")]
                self.made[T] = (rows, *arrays, None) if all(a.ndim == 2 for a in arrays) else None
        return self.made[T]

    def of(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plans and ground truths of rows ``idx`` (positions, in that order): ``[n, T]`` arrays where the
        rows are of one T and their plans as long, else object arrays of them (the metrics name the first odd one)."""
        idx = np.asarray(idx, dtype=np.int64)
        made = self._horizon(int(self.horizon[idx[0]])) if len(idx) else None
        if made is None or not (self.horizon[idx] == self.horizon[idx[0]]).all():
            return tuple(chained(self.preds[c].to_numpy()[idx]) for c in ("plan", "truth"))
        rows, pred, gt, _ = made
        if len(idx) == len(rows) and np.array_equal(idx, rows):  # the whole horizon: its arrays, read-only
            return _read_only(pred), _read_only(gt)
        at = np.searchsorted(rows, idx)
        return pred[at], gt[at]

    def through(self, node: int | None = None, edge: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Which rows of the table (positions) have a plan, and which a ground truth, that passes through the step
        ``node`` or the transition ``edge`` (:func:`passes_through`): two boolean arrays, counted per horizon on the
        ``[n, T]`` arrays (a horizon whose plans are not of one length: their tuples, checked one by one).

        >>> import pandas as pd
        >>> rows = pd.DataFrame({"horizon": [3, 3, 4], "plan": [(1, 2, 3), (1, 5, 3), (5, 1, 2, 9)],
        ...                      "truth": [(1, 2, 3), (1, 2, 3), (5, 6, 7, 8)]})
        >>> [m.tolist() for m in PlanArrays(rows).through(edge=(1, 2))]
        [[True, False, True], [True, True, False]]
        """
        n = len(self.horizon)
        in_plan, in_truth = np.zeros(n, bool), np.zeros(n, bool)
        for T in np.unique(self.horizon):
            made = self._horizon(int(T))
            if made is None:  # plans of several lengths in one horizon: each row by itself
                rows = np.flatnonzero(self.horizon == T)
                for c, out in (("plan", in_plan), ("truth", in_truth)):
                    out[rows] = [bool(passes_through(np.asarray([p], dtype=np.int64).reshape(1, -1), node, edge)[0])
                                 for p in self.preds[c].to_numpy()[rows]]
                continue
            rows, plan, truth, _ = made
            in_plan[rows], in_truth[rows] = passes_through(plan, node, edge), passes_through(truth, node, edge)
        return in_plan, in_truth

    def set_iou(self, idx: np.ndarray) -> np.ndarray:
        """The set IoU of each of rows ``idx`` (:func:`kepp_core.metrics.set_iou`), counted once per
        horizon (for every table of the store's arrays) where the rows are of one T."""
        idx = np.asarray(idx, dtype=np.int64)
        T = int(self.horizon[idx[0]]) if len(idx) else None
        made = self._horizon(T) if T is not None else None
        if made is None or not (self.horizon[idx] == T).all():
            return set_iou(*self.of(idx))
        rows, pred, gt, k = made
        if k is not None:  # the store's arrays: their IoUs counted once, shared by every table of them
            if T not in self.carried.iou:
                self.carried.iou[T] = set_iou(*self.carried.made[T][1:])
            whole = len(idx) == len(rows) and np.array_equal(idx, rows)
            return self.carried.iou[T][k if whole else k[np.searchsorted(rows, idx)]]
        if ("iou", T) not in self.made:
            self.made[("iou", T)] = set_iou(pred, gt)
        return self.made[("iou", T)][np.searchsorted(rows, idx)]


def _read_only(a: np.ndarray) -> np.ndarray:
    """A view of ``a`` that cannot be written (arrays shared by every table made from the store's)."""
    view = a.view()
    view.flags.writeable = False
    return view


def passes_through(plans: np.ndarray, node: int | None = None, edge: tuple[int, int] | None = None) -> np.ndarray:
    """Which rows of the ``[n, T]`` plans pass through the step ``node`` (it appears) or the transition ``edge``
    ``(a, b)`` (``a`` right before ``b``): a boolean ``[n]`` array, compared column by column (no row loop).

    >>> plans = np.array([[1, 2, 3], [3, 2, 1], [2, 3, 2]])
    >>> passes_through(plans, node=1).tolist(), passes_through(plans, edge=(2, 3)).tolist()
    ([True, True, False], [True, False, True])
    """
    plans = np.asarray(plans)
    if edge is not None:
        a, b = int(edge[0]), int(edge[1])
        return ((plans[:, :-1] == a) & (plans[:, 1:] == b)).any(axis=1) if plans.shape[1] > 1 else np.zeros(len(plans), bool)
    if node is None:
        raise ValueError("passes_through needs a node or an edge")
    return (plans == int(node)).any(axis=1)


def chained(col: np.ndarray) -> np.ndarray:
    """An object array of plans (tuples) of one length as an ``[n, T]`` int64 array (their values chained in C), or
    an object array of them when their lengths differ."""
    width = len(col[0]) if len(col) else 0
    if len(col) and (np.fromiter(map(len, col), dtype=np.int64, count=len(col)) != width).any():
        return np.array(list(col), dtype=object)  # plans of several lengths
    try:
        return np.fromiter(itertools.chain.from_iterable(col), dtype=np.int64,
                           count=len(col) * width).reshape(len(col), width)
    except (ValueError, TypeError):  # not whole numbers
        return np.array(list(col), dtype=object)


