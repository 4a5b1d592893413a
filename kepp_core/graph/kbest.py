"""The K most probable plans: an exact list Viterbi over the planning model's scores and the P²KG.

For query ``n`` a plan ``a`` of ``T`` actions scores

    score(a) = Σ_t e[n, t, a_t] + λ · Σ_t log P(a_t+1 | a_t) + s_n(a_1) + g_n(a_T)

(the objective of :func:`kepp_core.graph.decoding.decode` with full endpoint log-weights ``s_n``,
``g_n``: the ``dist`` mode). :func:`k_best` returns the ``K`` highest-scoring plans, best first (what
CEFITO writes as its top-5). The forward pass keeps, for every position ``t`` and action ``v``, the
``K`` best partial plans ending in ``v`` and a back-pointer (previous action, its rank) for each: a
plan among the ``K`` best overall has, at every position, a prefix among the ``K`` best ending there
(replacing the prefix by a better one would give ``K`` better plans), so the list is exact,
``O(N·T·A²·K log(A·K))`` time. Equal scores are ordered by the previous action, then its rank (a stable
sort) as they are kept, and listed in plan order (the first action first), so the list is deterministic;
the brute-force reference in the tests enumerates every plan.

Fewer than ``K`` plans with a finite score (a graph with few walks): the rest score ``-inf``. No walk
at all: the query is listed with ``λ = 0`` (the graph's transitions dropped, the endpoint weights kept)
and flagged in ``fallback``, as :func:`~kepp_core.graph.decoding.decode` does.

>>> e = np.log([[[.6, .4], [.3, .7]]])                         # one query, T = 2, two actions
>>> r = k_best(e, np.zeros((2, 2)), lam=1.0, k=3)
>>> r.paths.tolist(), np.exp(r.path_scores).round(2).tolist(), r.plans.tolist()
([[[0, 1], [1, 1], [0, 0]]], [[0.42, 0.28, 0.18]], [[0, 1]])
"""

from __future__ import annotations

import numpy as np

from kepp_core.errors import KeppError

__all__ = ["KBEST_CELLS", "MAX_K", "KBestPlans", "k_best"]

MAX_K = 1000  # plans a list may keep
KBEST_CELLS = 1 << 24  # float64 cells of one step's candidate block [n, A·K, A] (128 MB)


class KBestPlans:
    """The ``K`` best plans ``paths`` ``[N, K, T]`` (int64) with their scores ``path_scores`` ``[N, K]``
    (``-inf``: fewer plans than ``K``), best first; ``plans`` ``[N, T]`` the first of each, ``scores``
    ``[N]`` its score, ``fallback`` ``[N]``: listed with ``λ = 0`` (no walk)."""

    def __init__(self, paths: np.ndarray, path_scores: np.ndarray, fallback: np.ndarray) -> None:
        self.paths, self.path_scores, self.fallback = paths, path_scores, fallback
        self.plans, self.scores = paths[:, 0], path_scores[:, 0]

    def __len__(self) -> int:
        return len(self.paths)


def _step(delta: np.ndarray, trans: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One forward step: from the ``k`` best scores ``delta`` ``[n, A, k]`` of partial plans ending in each
    action, the ``k`` best extended by one action ``[n, A(v), k]`` and their back-pointers (flat index
    ``u·k + r`` of the previous action ``u`` and its rank ``r``)."""
    n, a, _ = delta.shape
    cand = (delta[:, :, :, None] + trans[None, :, None, :]).reshape(n, a * k, a)   # [n, (u, r), v]
    idx = np.argsort(-cand, axis=1, kind="stable")[:, :k, :]                      # [n, k, v]
    best = np.take_along_axis(cand, idx, axis=1)
    return best.transpose(0, 2, 1), idx.transpose(0, 2, 1)


def _list_viterbi(unary: np.ndarray, trans: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best plans ``[n, k, T]`` and scores ``[n, k]`` for unary terms ``[n, T, A]`` and weighted
    transitions ``[A, A]``, in blocks of queries that keep a step's candidates under :data:`KBEST_CELLS`."""
    n, t_len, a = unary.shape
    paths, scores = np.empty((n, k, t_len), dtype=np.int64), np.empty((n, k))
    block = max(1, KBEST_CELLS // (a * k * a))
    for i in range(0, n, block):
        u = unary[i:i + block]
        m = len(u)
        delta = np.full((m, a, k), -np.inf)
        delta[:, :, 0] = u[:, 0]
        back = np.empty((t_len, m, a, k), dtype=np.int64)
        for t in range(1, t_len):
            delta, back[t] = _step(delta, trans, k)
            delta = delta + u[:, t, :, None]
        flat = delta.reshape(m, a * k)                                              # [m, (v, r)]
        every = np.empty((m, a * k, t_len), dtype=np.int64)
        state, rank = np.repeat(np.arange(a), k)[None].repeat(m, 0), np.tile(np.arange(k), a)[None].repeat(m, 0)
        rows = np.arange(m)[:, None]
        for t in range(t_len - 1, -1, -1):
            every[:, :, t] = state
            if t:
                prev = back[t][rows, state, rank]
                state, rank = prev // k, prev % k
        # best first; equal scores in plan order (the first action first)
        order = np.lexsort((*(every[:, :, t] for t in range(t_len - 1, -1, -1)), -flat), axis=-1)[:, :k]
        paths[i:i + m] = np.take_along_axis(every, order[:, :, None], axis=1)
        scores[i:i + m] = np.take_along_axis(flat, order, axis=1)
    return paths, scores


def k_best(emissions, transitions, lam: float, k: int, start_logp=None, goal_logp=None) -> KBestPlans:
    """The ``k`` most probable plans under emissions ``[N, T, A]`` (log-probabilities), ``λ`` × the
    transitions ``[A, A]`` (log-probabilities, ``-inf``: no edge) and the endpoint log-weights
    ``start_logp`` / ``goal_logp`` ``[N, A]`` (``-inf`` allowed; None: 0), best first (module docstring).

    >>> t = np.array([[-np.inf, 0.0], [np.log(0.5), np.log(0.5)]])   # 0 -> 1 only
    >>> r = k_best(np.zeros((1, 3, 2)), t, lam=1.0, k=4)
    >>> r.paths[0].tolist(), np.exp(r.path_scores[0]).round(2).tolist()
    ([[0, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0]], [0.5, 0.5, 0.5, 0.25])
    """
    e = np.asarray(emissions, dtype=np.float64)
    if e.ndim != 3 or 0 in e.shape[1:]:
        raise KeppError(f"emissions have shape {list(e.shape)} (expected [N, T, A] with T, A >= 1)")
    n, t_len, a = e.shape
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_K:
        raise KeppError(f"k={k!r}: expected a whole number from 1 to {MAX_K}")
    trans = np.asarray(transitions, dtype=np.float64)
    if trans.shape != (a, a):
        raise KeppError(f"transitions have shape {list(trans.shape)} (expected [{a}, {a}])")
    unary = e.copy()
    for pos, w, name in ((0, start_logp, "start_logp"), (-1, goal_logp, "goal_logp")):
        if w is not None:
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (n, a):
                raise KeppError(f"{name} has shape {list(w.shape)} (expected [{n}, {a}])")
            unary[:, pos] += w
    weighted = trans * lam if lam > 0 else np.zeros((a, a))
    paths, scores = _list_viterbi(unary, weighted, k)
    fallback = np.isneginf(scores[:, 0])
    if fallback.any():
        paths[fallback], scores[fallback] = _list_viterbi(unary[fallback], np.zeros((a, a)), k)
    return KBestPlans(paths, scores, fallback)
