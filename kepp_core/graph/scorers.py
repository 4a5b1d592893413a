"""Path scorers and the exact k-best search behind every recommendation method.

How the search stays exact. A method is a :class:`PathScorer`: a walk's score is a sum of
per-step float *keys* (log-probabilities for products) over a Markov state, plus the walk's
*exact* score (a ``Fraction``, or cheaper exact integer keys). Float keys can round two
exactly equal scores apart, so the search keeps every candidate within ``EPS`` of the
``R``-th best float key (a superset of the exact best ``R``), and runs of final candidates
within ``EPS`` of each other are ordered by their exact scores, then lexicographically.

For ``p2kg`` and ``pkg`` (the state is the last node, :class:`MarkovScorer`) the search is a
best-first k-best search with an exact heuristic: a backward Viterbi pass from ``a_T``
gives, for every node and number of remaining steps, the best key sum of a completion
(``-inf``/absent: ``a_T`` cannot be reached in exactly that many steps, so the node is never
expanded). Prefixes are popped in order of (prefix + best completion), so complete walks
come out best first and only prefixes of near-best walks are ever expanded; the search
stops once ``R`` walks are out and the next prefix is more than ``EPS`` worse. Other
scorers use per-``(t, state)`` buckets of the best ``R`` prefixes: extending two prefixes
that end in the same state by the same suffix keeps their exact order.
Reported scores are floats computed in path order (``PathScorer.value``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from fractions import Fraction
from functools import cached_property
from heapq import heappop, heappush

import numpy as np

from kepp_core.errors import unknown_name_error
from kepp_core.graph.build import ProcedureGraph

__all__ = ["FrequencyScorer", "MarkovScorer", "P2KGScorer", "PathScorer"]

TIE_BREAKS = ("smaller", "larger")
WIDE_LAYER = 48  # backward layers with more nodes are relaxed with numpy (same floats)
EPS = 1e-9  # band kept around each bucket's R-th best float key (float error is ~1e-13)


def near_tie_runs(costs: Sequence[float]) -> Iterator[tuple[int, int]]:
    """Index ranges ``[k, j)`` of sorted ``costs`` whose neighbours differ by at most ``EPS``:
    the runs that may hide exact ties and must be ordered by exact scores.

    >>> list(near_tie_runs([0.0, 1.0, 1.0, 2.0]))
    [(0, 1), (1, 3), (3, 4)]
    """
    k, n = 0, len(costs)
    while k < n:
        j = k + 1
        while j < n and costs[j] - costs[j - 1] <= EPS:
            j += 1
        yield k, j
        k = j


class PathScorer:
    """A way to score walks on a graph. Subclasses define states, keys and exact scores.

    ``start(a)`` is the state after the first node; ``step(state)`` lists
    ``(next_node, next_state, key)`` for every allowed next node, where keys add up along a
    walk to a float version of its score (larger is better); ``exact(path)`` is the score
    used for the final ranking, and ``value(path)`` the reported float.
    """

    name = "base"

    def __init__(self, graph: ProcedureGraph, tie_break: str = "smaller") -> None:
        if tie_break not in TIE_BREAKS:
            raise unknown_name_error("tie-break", tie_break, TIE_BREAKS)
        self.graph = graph
        self.tie_break = tie_break

    def lex(self, path: tuple[int, ...]) -> tuple[int, ...]:
        """Sort key of the tie-break: the path itself (``smaller``) or its negation (``larger``)."""
        return path if self.tie_break == "smaller" else tuple(-a for a in path)

    def start(self, node: int) -> Hashable:
        return node

    def step(self, state: Hashable) -> list[tuple[int, Hashable, float]]:
        raise NotImplementedError

    def exact(self, path: Sequence[int]) -> Fraction:
        raise NotImplementedError

    def value(self, path: Sequence[int]) -> float:
        """The reported score: a float of the exact score (subclasses compute it directly)."""
        return float(self.exact(path))

    def exact_keys(self, paths: Sequence[tuple[int, ...]]) -> list:
        """Keys that order ``paths`` exactly like their exact scores (larger is better);
        subclasses return cheaper integers instead of ``Fraction`` objects."""
        return [self.exact(p) for p in paths]

    def rank(self, candidates: list[tuple[float, tuple[int, ...]]], R: int) -> list[tuple[tuple[int, ...], float]]:
        """The best ``R`` of ``(cost, path)`` candidates (cost = minus the float key) in
        exact order, with their values.

        Sorted by cost; runs of costs within ``EPS`` of each other (possible exact ties) that
        reach into the top are re-ordered by exact score, then lexicographically.
        """
        candidates.sort()
        out: list[tuple[int, ...]] = []
        for k, j in near_tie_runs([c[0] for c in candidates]):
            if len(out) >= R:
                break
            if j - k == 1:
                out.append(candidates[k][1])
            else:
                run = [c[1] for c in candidates[k:j]]
                keys = self.exact_keys(run)
                order = sorted(range(len(run)), key=lambda i: (-keys[i], self.lex(run[i])))
                out.extend(run[i] for i in order[: R - len(out)])
        return [(p, self.value(p)) for p in out]

    def prepare(self, goal: int, horizon: int):
        """What :meth:`k_best` needs about ``goal`` (independent of the start, so it can be
        cached per ``(goal, horizon)``): here the :func:`backward_layers`."""
        return backward_layers(self.graph, goal, horizon)

    def k_best(self, start: int, goal: int, horizon: int, R: int,
               layers=None) -> list[tuple[tuple[int, ...], float]]:
        """Dynamic programming over the horizon with per-``(t, state)`` buckets of the best
        ``R`` prefixes (see the module docstring); ``layers`` from :meth:`prepare`."""
        if layers is None:
            layers = self.prepare(goal, horizon)
        if start not in layers[horizon - 1]:
            return []
        step = self.step
        # prefixes are (cost, path) with cost = -(sum of keys), so plain tuple order ranks them
        cands: dict[Hashable, list[tuple[float, tuple[int, ...]]]] = {self.start(start): [(0.0, (start,))]}
        for t in range(1, horizon):
            allowed = layers[horizon - 1 - t]
            new: dict[Hashable, list[tuple[float, tuple[int, ...]]]] = {}
            for state, prefixes in cands.items():
                for v, nxt, key in step(state):
                    if v in allowed:
                        ext = [(c - key, p + (v,)) for c, p in prefixes]
                        bucket = new.get(nxt)
                        if bucket is None:
                            new[nxt] = ext
                        else:
                            bucket += ext
            cands = {state: (b if len(b) <= R else prune_bucket(b, R)) for state, b in new.items()}
        return self.rank([c for bucket in cands.values() for c in bucket], R)


class MarkovScorer(PathScorer):
    """A scorer whose state is the last node: a walk's key is the sum of its edge keys.

    Subclasses fill ``self._succ[u]`` with ``(v, key)`` for every out-edge; retrieval is a
    best-first search guided by exact best-completion values (see the module docstring).
    """

    product = True  # reported value: product of the edge values (True) or minus the cost

    def _index_edges(self, succ: list[list[tuple[int, float, float]]]) -> None:
        """``succ[u]``: ``(v, key, value)`` for every out-edge of ``u``."""
        self._succ = succ
        pred: list[list[tuple[int, float]]] = [[] for _ in succ]
        for u, edges in enumerate(succ):
            for v, key, _ in edges:
                pred[v].append((u, key))
        self._pred = pred
        self._steps = [[(v, v, key) for v, key, _ in edges] for edges in succ]
        # the same in-edges as arrays grouped by target, for wide backward layers
        sizes = np.fromiter((len(p) for p in pred), dtype=np.int64, count=len(pred))
        self._pred_ptr = np.concatenate(([0], np.cumsum(sizes)))
        self._pred_src = np.fromiter((u for p in pred for u, _ in p), dtype=np.int64, count=int(sizes.sum()))
        self._pred_key = np.fromiter((k for p in pred for _, k in p), dtype=np.float64, count=int(sizes.sum()))

    def step(self, state):
        return self._steps[state]

    def prepare(self, goal: int, horizon: int) -> list[dict[int, float]]:
        """``best[k][v]``: the largest key sum of a walk of exactly ``k`` edges from ``v`` to
        ``goal`` (nodes without such a walk are absent), for ``k = 0 .. horizon - 2``.

        >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (0, 2, 2)])
        >>> [dict(sorted(b.items())) for b in FrequencyScorer(g).prepare(2, 3)]
        [{2: 0.0}, {0: 1.0, 1: 1.0, 2: 1.0}]
        """
        pred = self._pred
        prev = {goal: 0.0}
        best = [prev]
        arrays = None  # (nodes, values) of prev once layers are wide
        for _ in range(horizon - 2):
            if arrays is not None or len(prev) > WIDE_LAYER:
                if arrays is None:
                    arrays = (np.fromiter(prev, dtype=np.int64, count=len(prev)),
                              np.fromiter(prev.values(), dtype=np.float64, count=len(prev)))
                arrays = self._backward_step(*arrays)
                prev = dict(zip(arrays[0].tolist(), arrays[1].tolist()))
                best.append(prev)
                continue
            cur: dict[int, float] = {}
            for v, hv in prev.items():
                for u, key in pred[v]:
                    s = key + hv
                    if u not in cur or s > cur[u]:
                        cur[u] = s
            best.append(cur)
            prev = cur
        return best

    def _backward_step(self, nodes: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One layer of :meth:`prepare` vectorised: the same sums ``key + h`` and maxima."""
        lo = self._pred_ptr[nodes]
        cnt = self._pred_ptr[nodes + 1] - lo
        total = int(cnt.sum())
        if total == 0:
            return nodes[:0], vals[:0]
        edges = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        cur = np.full(len(self._pred), -np.inf)
        np.maximum.at(cur, self._pred_src[edges], self._pred_key[edges] + np.repeat(vals, cnt))
        hit = np.flatnonzero(cur != -np.inf)
        return hit, cur[hit]

    def k_best(self, start, goal, horizon, R, layers=None):
        """Best-first k-best search; ``layers`` from :meth:`prepare` (computed when None).

        A popped prefix follows its best child at once (its priority equals the prefix's,
        up to rounding far below ``EPS``) and queues the others, so every complete walk
        costs one heap pop. The reported value is accumulated in path order (a product of
        edge values), or is minus the cost (sums), so it equals :meth:`value` bit for bit.
        """
        best = self.prepare(goal, horizon) if layers is None else layers
        succ = self._succ
        last = horizon - 1
        # heap items: (cost + best remaining cost, cost, parent path, node, value) with
        # cost = -(sum of keys); the path tuple is only built when an item is popped
        heap = [(-math.inf, 0.0, (), start, 1.0)]
        done: list[tuple[float, tuple[int, ...], float]] = []
        limit = math.inf
        while heap:
            f, cost, path, u, value = heappop(heap)
            if f > limit:
                break
            path += (u,)
            n = len(path)
            while n < horizon:  # follow the best child at once, queue the others
                h = best[last - n]
                bf = None
                for v, key, w in succ[u]:
                    if v in h:
                        c = cost - key
                        fc = c - h[v]
                        if fc <= limit:
                            if bf is None:
                                bf, bc, bv, bw = fc, c, v, w
                            elif fc < bf:
                                heappush(heap, (bf, bc, path, bv, value * bw))
                                bf, bc, bv, bw = fc, c, v, w
                            else:
                                heappush(heap, (fc, c, path, v, value * w))
                if bf is None:
                    break
                cost = bc
                path += (bv,)
                value *= bw
                u = bv
                n += 1
            else:
                done.append((cost, path, value))
                if len(done) == R:
                    limit = cost + EPS
        return self._order(done, R)

    def _order(self, done: list[tuple[float, tuple[int, ...], float]], R: int) -> list[tuple[tuple[int, ...], float]]:
        """The best ``R`` of ``(cost, path, value)`` in exact order: by cost, and runs of
        costs within ``EPS`` (possible exact ties) by exact score, then the tie-break."""
        done.sort()
        product = self.product
        out: list[tuple[tuple[int, ...], float]] = []
        for k, j in near_tie_runs([c[0] for c in done]):
            if len(out) >= R:
                break
            if j - k == 1:
                cost, path, value = done[k]
                out.append((path, value if product else -cost))
            else:
                run = done[k:j]
                keys = self.exact_keys([c[1] for c in run])
                if self.tie_break == "smaller":
                    ranked = sorted([(-x, c[1], c) for x, c in zip(keys, run)])
                else:
                    ranked = sorted([(-x, self.lex(c[1]), c) for x, c in zip(keys, run)])
                for _, _, (cost, path, value) in ranked[: R - len(out)]:
                    out.append((path, value if product else -cost))
        return out


class P2KGScorer(MarkovScorer):
    """First-order P²KG: score = product of out-normalised edge probabilities."""

    name = "p2kg"

    def __init__(self, graph: ProcedureGraph, tie_break: str = "smaller") -> None:
        super().__init__(graph, tie_break)
        c = graph.counts
        rows = c.rows()
        out = graph.out_counts[rows]
        # the same float operations as before, vectorised: log(count) - log(out), count / out
        log = math.log
        keys = [log(n) - log(d) for n, d in zip(c.data.tolist(), out.tolist())]
        values = (c.data / out).tolist()  # int64 -> float64 is exact, so each is float(Fraction(n, d))
        targets, ptr = c.indices.tolist(), c.indptr.tolist()
        self._index_edges([list(zip(targets[ptr[u]:ptr[u + 1]], keys[ptr[u]:ptr[u + 1]], values[ptr[u]:ptr[u + 1]]))
                           for u in range(graph.num_actions)])

    @cached_property
    def edge(self) -> dict[tuple[int, int], Fraction]:
        """Exact edge probabilities ``{(u, v): Fraction}`` (built on first use)."""
        g = self.graph
        return {(u, v): Fraction(n, int(g.out_counts[u])) for u, edges in enumerate(self._succ)
                for (v, _, _), n in zip(edges, g.counts.row(u)[1].tolist())}

    @cached_property
    def _float(self) -> dict[tuple[int, int], float]:
        return {(u, v): w for u, edges in enumerate(self._succ) for v, _, w in edges}

    @cached_property
    def _cnt(self) -> list[dict[int, int]]:
        g = self.graph
        return [dict(zip(g.successors[u], g.counts.row(u)[1].tolist())) for u in range(g.num_actions)]

    @cached_property
    def _den(self) -> list[int]:
        return [int(c) for c in self.graph.out_counts]

    def exact_keys(self, paths):
        # product of counts over product of out-counts, compared on a common denominator
        cnt, den = self._cnt, self._den
        nums, dens = [], []
        for p in paths:
            n = d = 1
            u = p[0]
            for v in p[1:]:
                n *= cnt[u].get(v, 0)
                d *= den[u]
                u = v
            nums.append(n)
            dens.append(d)
        common = math.lcm(*dens)
        return [n * (common // d) for n, d in zip(nums, dens)]

    def value(self, path):
        p = 1.0
        for e in zip(path, path[1:]):
            p *= self._float.get(e, 0.0)
        return p

    def exact(self, path):
        p = Fraction(1)
        for e in zip(path, path[1:]):
            w = self.edge.get(e)
            if w is None:
                return Fraction(0)
            p *= w
        return p


class FrequencyScorer(MarkovScorer):
    """Frequency graph (PKG ablation): score = sum of min-max normalised edge counts."""

    name = "pkg"
    product = False

    def __init__(self, graph: ProcedureGraph, tie_break: str = "smaller") -> None:
        super().__init__(graph, tie_break)
        c = graph.counts
        span = graph.max_count - graph.min_count
        # float(Fraction(n - min, span)) is the correctly rounded quotient numpy computes
        keys = ((c.data - graph.min_count) / span).tolist() if span else [1.0] * c.nnz
        targets, ptr = c.indices.tolist(), c.indptr.tolist()
        self._index_edges([[(v, k, 1.0) for v, k in zip(targets[ptr[u]:ptr[u + 1]], keys[ptr[u]:ptr[u + 1]])]
                           for u in range(graph.num_actions)])
        self._float = {(u, v): key for u, edges in enumerate(self._succ) for v, key, _ in edges}

    def exact_keys(self, paths):
        # sum of (count - min): the min-max denominator is common to every path
        lo = self.graph.min_count
        keys = []
        for p in paths:
            edges = list(zip(p, p[1:]))
            if any(e not in self._float for e in edges):
                keys.append(-1)  # not a walk: below every walk (score 0 in exact())
            else:
                keys.append(sum(self.graph.counts.get(*e) - lo for e in edges))
        return keys

    def value(self, path):
        if any(e not in self._float for e in zip(path, path[1:])):
            return 0.0
        return sum(self._float[e] for e in zip(path, path[1:]))

    def exact(self, path):
        total = Fraction(0)
        for u, v in zip(path, path[1:]):
            if self.graph.counts.get(u, v) == 0:
                return Fraction(0)
            total += self.graph.frequency(u, v)
        return total


def backward_layers(graph: ProcedureGraph, goal: int, horizon: int) -> list[frozenset[int]]:
    """``layers[k]``: nodes with a walk of exactly ``k`` edges to ``goal``."""
    layers = [frozenset([goal])]
    for _ in range(horizon - 1):
        prev = layers[-1]
        layers.append(frozenset(u for v in prev for u in graph.predecessors[v]))
    return layers


def prune_bucket(bucket: list[tuple[float, tuple[int, ...]]], R: int) -> list[tuple[float, tuple[int, ...]]]:
    """Keep the ``R`` lowest-cost prefixes and every prefix within ``EPS`` of the last."""
    bucket.sort()
    cutoff = bucket[R - 1][0] + EPS
    k = R
    n = len(bucket)
    while k < n and bucket[k][0] <= cutoff:
        k += 1
    return bucket[:k]
