"""Sparse storage for the graph's transition counts: compressed sparse rows (CSR).

A dense ``[A, A]`` int64 matrix needs 800 MB at 10,000 actions while procedure graphs have a
few dozen out-edges per action, so the counts are kept as CSR arrays (``indptr``,
``indices``, ``data``) with the column index order of ``numpy.nonzero`` (row-major,
ascending columns). :class:`EdgeCounts` answers the questions the rest of the package asks
of the old dense array (``counts[u, v]``, ``counts[:, a]``, ``.sum()``, ``.tolist()``,
``numpy.asarray(counts)``) so existing callers keep working.
"""

from __future__ import annotations

import numpy as np


class EdgeCounts:
    """Transition counts ``counts[u, v]`` of an ``[A, A]`` matrix stored as CSR arrays.

    >>> c = EdgeCounts.from_coo(3, [0, 1, 0], [1, 1, 1], [1, 1, 2])
    >>> int(c[0, 1]), int(c[2, 2]), c.nnz, c.tolist()
    (3, 0, 2, [[0, 3, 0], [0, 1, 0], [0, 0, 0]])
    """

    def __init__(self, num_nodes: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
        self.num_nodes = int(num_nodes)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.data = np.asarray(data, dtype=np.int64)

    # --- construction -------------------------------------------------------------------
    @classmethod
    def from_coo(cls, num_nodes: int, rows, cols, counts) -> EdgeCounts:
        """Counts from ``(row, col, count)`` triples; repeated pairs add up, zeros are dropped."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        keys = rows * max(num_nodes, 1) + cols
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        if keys.size:
            first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            uniq, summed = keys[first], np.add.reduceat(counts, first)
        else:
            uniq, summed = keys, counts
        keep = summed != 0
        uniq, summed = uniq[keep], summed[keep]
        r, c = np.divmod(uniq, max(num_nodes, 1))
        indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=num_nodes), out=indptr[1:])
        return cls(num_nodes, indptr, c, summed)

    @classmethod
    def from_dense(cls, dense) -> EdgeCounts:
        """Counts from a dense square matrix."""
        dense = np.asarray(dense, dtype=np.int64)
        if dense.ndim != 2 or dense.shape[0] != dense.shape[1]:
            raise ValueError(f"expected a square count matrix, got shape {dense.shape}")
        r, c = np.nonzero(dense)
        return cls.from_coo(dense.shape[0], r, c, dense[r, c])

    # --- the array-like surface ---------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.num_nodes, self.num_nodes)

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def rows(self) -> np.ndarray:
        """The row (source) index of every stored edge, aligned with ``indices``/``data``."""
        return np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))

    def row(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        """``(targets, counts)`` of the out-edges of ``u`` (targets ascending)."""
        a, b = self.indptr[u], self.indptr[u + 1]
        return self.indices[a:b], self.data[a:b]

    def get(self, u: int, v: int) -> int:
        """The count of edge ``(u, v)`` (0 without an edge)."""
        a, b = int(self.indptr[u]), int(self.indptr[u + 1])
        k = a + int(np.searchsorted(self.indices[a:b], v))
        return int(self.data[k]) if k < b and self.indices[k] == v else 0

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2:
            u, v = key
            if isinstance(u, slice) and u == slice(None):
                return self.column(int(v))
            if isinstance(v, slice) and v == slice(None):
                return self.toarray_row(int(u))
            return np.int64(self.get(_index(u, self.num_nodes), _index(v, self.num_nodes)))
        if isinstance(key, (int, np.integer)):
            return self.toarray_row(int(key))
        raise TypeError(f"EdgeCounts supports [u, v], [u], [u, :] and [:, v], not {key!r}")

    def toarray_row(self, u: int) -> np.ndarray:
        """Row ``u`` as a dense int64 vector."""
        out = np.zeros(self.num_nodes, dtype=np.int64)
        cols, counts = self.row(_index(u, self.num_nodes))
        out[cols] = counts
        return out

    def column(self, v: int) -> np.ndarray:
        """Column ``v`` (the in-edges of ``v``) as a dense int64 vector."""
        v = _index(v, self.num_nodes)
        out = np.zeros(self.num_nodes, dtype=np.int64)
        hit = np.flatnonzero(self.indices == v)
        out[self.rows()[hit]] = self.data[hit]
        return out

    def sum(self, axis: int | None = None):
        """Total count (``axis=None``), out-counts per row (``axis=1``) or in-counts per column (``axis=0``)."""
        if axis is None:
            return np.int64(self.data.sum())
        if axis in (1, -1):
            return np.add.reduceat(np.append(self.data, 0), self.indptr[:-1]) * (np.diff(self.indptr) > 0)
        if axis == 0:
            return np.bincount(self.indices, weights=self.data, minlength=self.num_nodes).astype(np.int64)
        raise ValueError(f"axis {axis} is out of range for a 2-D count matrix")

    def toarray(self) -> np.ndarray:
        """The dense ``[A, A]`` int64 matrix (small graphs only: A² entries)."""
        out = np.zeros(self.shape, dtype=np.int64)
        out[self.rows(), self.indices] = self.data
        return out

    def __array__(self, dtype=None, copy=None):
        arr = self.toarray()
        return arr if dtype is None else arr.astype(dtype)

    def tolist(self) -> list[list[int]]:
        """The dense matrix as nested lists (small graphs only)."""
        return self.toarray().tolist()

    def __eq__(self, other) -> bool:
        if not isinstance(other, EdgeCounts):
            return NotImplemented
        return (self.num_nodes == other.num_nodes and np.array_equal(self.indptr, other.indptr)
                and np.array_equal(self.indices, other.indices) and np.array_equal(self.data, other.data))

    __hash__ = None  # mutable arrays

    def transpose_order(self) -> np.ndarray:
        """Edge order grouped by target (stable, so sources stay ascending within a target)."""
        return np.argsort(self.indices, kind="stable")

    def __repr__(self) -> str:
        return f"EdgeCounts({self.num_nodes} nodes, {self.nnz} edges, total {int(self.data.sum())})"


def _index(i, n: int) -> int:
    i = int(i)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"index {i} is out of bounds for {n} actions")
    return i
