"""Top-``R`` recommendation paths between two endpoints: exact k-best dynamic programming.

Every path scorer scores walks of exactly ``T`` nodes from ``a_1`` to ``a_T`` on the graph
(revisits and self-loops allowed) and shares one API: :func:`retrieve` returns a
:class:`Recommendation` with ``R`` ranked paths, their scores and a ``fallback`` flag.

Ranking (docs, The graph): higher score first, then the lexicographically smaller sequence of
action indices (``tie_break="larger"`` reverses only the tie-break). Fewer than ``R``
paths: the found paths are repeated in rank order (cycled) until there are ``R``. No path:
with ``M = T // 2`` the two variations ``[a_1]*(T-M) + [a_T]*M`` and
``[a_1]*M + [a_T]*(T-M)`` cycled to ``R`` (score 0).

The scorers and the exact search live in :mod:`kepp_core.graph.scorers`; the scorers are
registered here (:func:`make_scorer`).

>>> from kepp_core.graph.build import ProcedureGraph
>>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (0, 2, 2), (0, 1, 2)])
>>> rec = retrieve(g, 0, 2, horizon=3, R=2)
>>> rec.paths, [round(s, 3) for s in rec.scores], rec.fallback
(((0, 1, 2), (0, 2, 2)), [0.667, 0.333], False)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.graph.build import ProcedureGraph
from kepp_core.graph.history import HistoryScorer
from kepp_core.graph.scorers import FrequencyScorer, P2KGScorer, PathScorer

__all__ = [
    "SCORERS", "Recommendation", "Retriever", "aggregate", "fallback_paths", "make_retriever", "make_scorer",
    "scorer_names", "path_weights", "retrieve",
]


@dataclass(frozen=True)
class Recommendation:
    """``R`` ranked paths from ``start`` to ``goal`` (each ``horizon`` actions long).

    ``found`` is the number of distinct paths the graph has (at most ``R``); ``fallback``
    is True when there is none and the paths are the two endpoint variations.
    """

    start: int
    goal: int
    horizon: int
    paths: tuple[tuple[int, ...], ...]
    scores: tuple[float, ...]
    fallback: bool
    found: int
    scorer: str = "p2kg"

    @property
    def top(self) -> tuple[int, ...]:
        return self.paths[0]

    def to_json(self, actions: Sequence[str] | None = None) -> dict:
        """The recommendation as a JSON-ready dict (with labels when ``actions`` is given)."""
        out = {"start": self.start, "goal": self.goal, "horizon": self.horizon, "scorer": self.scorer,
               "fallback": self.fallback, "found": self.found,
               "paths": [{"rank": k + 1, "actions": list(p), "score": s}
                         for k, (p, s) in enumerate(zip(self.paths, self.scores))]}
        if actions is not None:
            for row in out["paths"]:
                row["labels"] = [actions[a] for a in row["actions"]]
        return out


# The path scorers: adding one is a PathScorer subclass plus one line here.
SCORERS: dict[str, type[PathScorer]] = {"p2kg": P2KGScorer, "pkg": FrequencyScorer, HistoryScorer.name: HistoryScorer}


def scorer_names() -> list[str]:
    """The registered path scorers."""
    return list(SCORERS)


def make_scorer(graph: ProcedureGraph, name: str = "p2kg", tie_break: str = "smaller") -> PathScorer:
    """The path scorer ``name`` (``p2kg``, ``pkg`` or ``history``).

    ``tie_break``: equal scores rank the lexicographically ``smaller`` index sequence first
    (the project convention, docs, The graph) or the ``larger`` one.
    """
    if name not in SCORERS:
        raise unknown_name_error("path scorer", name, SCORERS)
    return SCORERS[name](graph, tie_break=tie_break)


def fallback_paths(start: int, goal: int, horizon: int, R: int) -> tuple[tuple[int, ...], ...]:
    """The two endpoint variations with ``M = T // 2``, cycled to ``R`` paths.

    >>> fallback_paths(4, 7, 5, 3)
    ((4, 4, 4, 7, 7), (4, 4, 7, 7, 7), (4, 4, 4, 7, 7))
    """
    m = horizon // 2
    variations = ((start,) * (horizon - m) + (goal,) * m, (start,) * m + (goal,) * (horizon - m))
    return tuple(variations[k % 2] for k in range(R))


def retrieve(graph: ProcedureGraph, start: int | str, goal: int | str, horizon: int, R: int = 1,
             scorer: str | PathScorer = "p2kg", tie_break: str = "smaller") -> Recommendation:
    """Top-``top`` paths of ``horizon`` actions from ``start`` to ``goal`` (labels or indices).

    >>> from kepp_core.graph.build import ProcedureGraph
    >>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 0)])
    >>> retrieve(g, "a", "b", horizon=3, R=3).paths   # no walk: fallback variations
    ((0, 0, 1), (0, 1, 1), (0, 0, 1))
    """
    scorer = scorer if isinstance(scorer, PathScorer) else make_scorer(graph, scorer, tie_break)
    return _retrieve(scorer, graph.action_index(start), graph.action_index(goal), horizon, R)


def _check(horizon: int, R: int) -> None:
    if horizon < 2:
        raise KeppError(f"horizon T={horizon} is too short (expected T >= 2)")
    if R < 1:
        raise KeppError(f"number of paths R={R} must be at least 1")


def _retrieve(scorer: PathScorer, start: int, goal: int, horizon: int, R: int,
              layers=None) -> Recommendation:
    _check(horizon, R)
    best = scorer.k_best(start, goal, horizon, R, layers)
    if not best:
        paths = fallback_paths(start, goal, horizon, R)
        return Recommendation(start, goal, horizon, paths, (0.0,) * R, True, 0, scorer.name)
    found = len(best)
    if found < R:
        best = [best[k % found] for k in range(R)]
    return Recommendation(start, goal, horizon, tuple([p for p, _ in best]),
                          tuple([s for _, s in best]), False, found, scorer.name)


class Retriever:
    """Cached retrieval for evaluation over many episodes (one graph, path scorer and ``R``).

    Episodes share endpoint pairs, so results are cached per ``(a_1, a_T, T)``; what the
    search needs about the goal (:meth:`PathScorer.prepare`) is cached per ``(a_T, T)``.

    >>> from kepp_core.graph.build import ProcedureGraph
    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2)])
    >>> r = Retriever(g, R=2)
    >>> r.conditions([(0, 2), (0, 2)], horizon=3).shape
    (2, 3, 3)
    """

    def __init__(self, graph: ProcedureGraph, scorer: str | PathScorer = "p2kg", R: int = 1,
                 tie_break: str = "smaller") -> None:
        _check(2, R)
        self.graph = graph
        self.scorer = scorer if isinstance(scorer, PathScorer) else make_scorer(graph, scorer, tie_break)
        self.R = R
        self._layers = lru_cache(maxsize=4096)(self.scorer.prepare)
        self._cache: dict[tuple[int, int, int], Recommendation] = {}

    @property
    def scorer_name(self) -> str:
        """The name of the path scorer (``p2kg``, ``pkg``, ``history``)."""
        return self.scorer.name

    def __call__(self, start: int | str, goal: int | str, horizon: int) -> Recommendation:
        start, goal = self.graph.action_index(start), self.graph.action_index(goal)
        key = (start, goal, horizon)
        rec = self._cache.get(key)
        if rec is None:
            _check(horizon, self.R)
            rec = _retrieve(self.scorer, start, goal, horizon, self.R, self._layers(goal, horizon))
            self._cache[key] = rec
        return rec

    def batch(self, endpoints: Iterable[tuple[int, int]], horizon: int, progress: bool = False) -> list[Recommendation]:
        """Recommendations for many ``(a_1, a_T)`` pairs (cached across calls)."""
        endpoints = list(endpoints)
        if progress:
            endpoints = tqdm(endpoints, desc=f"{self.scorer_name} paths T={horizon}", unit="ep", leave=False)
        return [self(int(s), int(g), horizon) for s, g in endpoints]

    def conditions(self, endpoints: Iterable[tuple[int, int]], horizon: int) -> np.ndarray:
        """Aggregated conditions ``[N, T, A]`` (float32) for the planning model."""
        recs = self.batch(endpoints, horizon)
        out = np.zeros((len(recs), horizon, self.graph.num_actions), dtype=np.float32)
        for i, rec in enumerate(recs):
            out[i] = aggregate(rec.paths, self.graph.num_actions)
        return out


def top_paths(graph: ProcedureGraph, ends: np.ndarray, horizon: int, R: int = 1) -> np.ndarray:
    """Zero-shot planning's plans ``[N, T]``: the top P²KG path of ``horizon`` steps between each row's
    endpoints ``ends`` ``[N, 2]`` (its tie-break, and its fallback where no walk connects them).

    >>> from kepp_core.graph.build import ProcedureGraph
    >>> top_paths(ProcedureGraph.from_plans(["a", "b"], [(0, 1)]), np.array([[0, 1], [1, 0]]), 3).tolist()
    [[0, 0, 1], [1, 1, 0]]
    """
    recs = make_retriever(graph, "p2kg", R).batch([tuple(e) for e in np.asarray(ends).tolist()], horizon)
    return np.array([r.top for r in recs], dtype=np.int64).reshape(len(recs), horizon)

def path_weights(R: int) -> np.ndarray:
    """Aggregation weights: ``R/(2R-1)`` for the best path, ``1/(2R-1)`` for each other.

    >>> path_weights(3).tolist()
    [0.6, 0.2, 0.2]
    """
    if R < 1:
        raise KeppError(f"number of paths R={R} must be at least 1")
    w = np.full(R, 1.0 / (2 * R - 1))
    w[0] = R / (2 * R - 1)
    return w


def aggregate(paths: Sequence[Sequence[int]], num_actions: int) -> np.ndarray:
    """Weighted sum of the one-hot encodings ``[T, A]`` of ranked paths (float32).

    >>> aggregate([(0, 1), (0, 0)], 2).astype(float).round(3).tolist()
    [[1.0, 0.0], [0.333, 0.667]]
    """
    if not paths:
        raise KeppError("cannot aggregate an empty list of paths")
    horizon = len(paths[0])
    if any(len(p) != horizon for p in paths):
        raise KeppError(f"paths to aggregate have different lengths: {sorted({len(p) for p in paths})}")
    out = np.zeros((horizon, num_actions), dtype=np.float64)
    cols = np.arange(horizon)
    for w, p in zip(path_weights(len(paths)), paths):
        out[cols, np.asarray(p)] += w
    return out.astype(np.float32)


def make_retriever(graph: ProcedureGraph, scorer: str = "p2kg", R: int = 1) -> Retriever:
    """A cached top-``R`` retriever for a registered path ``scorer``."""
    return Retriever(graph, make_scorer(graph, scorer), R)
