"""Beyond the paper: recommendations that remember whole step histories (``--method history``).

The P²KG only knows one-step transitions, so its best path can be a sequence no video
ever performed. This method backs off from the *longest* history to the first-order graph:
for endpoints ``(a_1, a_T)`` it treats the ``T``-step windows of the training plans with
those endpoints as observations of ``p(path | a_1, a_T)`` and uses the P²KG as the prior,

    score(path) = (c(path) + β · p(path) / Z) / (n + β)

where ``c(path)`` counts the training windows equal to the path, ``n`` all training windows
from ``a_1`` to ``a_T`` of that length, ``p(path)`` is the P²KG product of probabilities and
``Z`` the P²KG mass of all ``T``-node walks from ``a_1`` to ``a_T``, so ``p / Z`` is the P²KG's
own ``p(path | a_1, a_T)``. The score is the posterior mean of a Dirichlet with the P²KG as
base measure and strength ``β``: unseen endpoint pairs get exactly the P²KG ranking, often
seen ones follow the videos. ``β`` is chosen from the *training plans only* by 5-fold
cross-validation of top-1 success over ``T = 3..6`` (:func:`fit_prior`) and stored in the
graph JSON (``params.history_prior``) by ``kepp graph build``.

Exact top-``R``: unseen paths keep the P²KG order among themselves, so the best ``R`` are among
the seen windows and the P²KG's best ``R + #seen`` paths; those candidates are ranked by
their exact scores (``Fraction``), then lexicographically.

>>> from kepp_core.graph.build import ProcedureGraph
>>> g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 2, 3), (0, 2, 3)] +
...                               [(0, 1)] * 5 + [(1, 3)] * 5)
>>> s = HistoryScorer(g, prior=1)
>>> [p for p, _ in s.k_best(0, 3, 3, 2)]
[(0, 2, 3), (0, 1, 3)]
>>> [p for p, _ in P2KGScorer(g).k_best(0, 3, 3, 2)]
[(0, 1, 3), (0, 2, 3)]
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction

from kepp_core.catalog import TABLE_HORIZONS
from kepp_core.errors import KeppError
from kepp_core.graph.build import ProcedureGraph
from kepp_core.graph.scorers import P2KGScorer, PathScorer, backward_layers

__all__ = ["HistoryScorer", "fit_prior"]

PRIORS = (0.5, 1, 2, 5, 10, 20, 50, 100)  # candidate strengths β for cross-validation
CV_FOLDS = 5
CV_MAX_PLANS = 50_000  # cross-validate huge graphs on a sample (COIN has ~8,000 training plans)


class HistoryScorer(PathScorer):
    """Window memory of the training plans backed off to the P²KG (see the module docstring)."""

    name = "history"

    def __init__(self, graph: ProcedureGraph, prior: float | Fraction | None = None,
                 tie_break: str = "smaller") -> None:
        super().__init__(graph, tie_break)
        if prior is None:
            prior = graph.params.get("history_prior")
            if prior is None:
                prior = fit_prior(graph)["prior"]
                graph.params["history_prior"] = prior
        prior = Fraction(prior).limit_denominator(10**6)
        if prior <= 0:
            raise KeppError(f"history prior strength must be positive, got {float(prior)}")
        self.prior = prior
        self.p2kg = P2KGScorer(graph, tie_break)
        self._windows: dict[int, dict[tuple[int, int], Counter]] = {}
        self._mass: dict[tuple, Fraction | float] = {}

    # --- statistics ---------------------------------------------------------------------
    def windows(self, start: int, goal: int, horizon: int) -> Counter:
        """Training windows of ``horizon`` steps from ``start`` to ``goal`` with their counts."""
        if horizon not in self._windows:
            # from the distinct plans with their counts: memory grows with distinct windows, not plans
            table: dict[tuple[int, int], Counter] = defaultdict(Counter)
            for p, c in self.graph.weighted_plans():
                for i in range(len(p) - horizon + 1):
                    w = p[i : i + horizon]
                    table[(w[0], w[-1])][w] += c
            self._windows[horizon] = dict(table)
        return self._windows[horizon].get((start, goal), Counter())

    def mass(self, start: int, goal: int, horizon: int, exact: bool = True) -> Fraction | float:
        """P²KG probability mass ``Z`` of all ``horizon``-node walks from start to goal
        (a ``Fraction``; a float with ``exact=False``, used for cross-validation)."""
        key = (start, goal, horizon, exact)
        if key not in self._mass:
            layers = backward_layers(self.graph, goal, horizon)
            one = Fraction(1) if exact else 1.0
            edge = self.p2kg.edge if exact else self._float_edge()
            front = {start: one} if start in layers[horizon - 1] else {}
            for t in range(1, horizon):
                allowed = layers[horizon - 1 - t]
                nxt: dict = {}
                for u, m in front.items():
                    for v in self.graph.successors[u]:
                        if v in allowed:
                            nxt[v] = nxt.get(v, 0) + m * edge[(u, v)]
                front = nxt
            self._mass[key] = front.get(goal, one * 0)
        return self._mass[key]

    def _float_edge(self) -> dict[tuple[int, int], float]:
        if not hasattr(self, "_fedge"):
            self._fedge = {e: float(w) for e, w in self.p2kg.edge.items()}
        return self._fedge

    # --- PathScorer ---------------------------------------------------------------------
    def exact(self, path: Sequence[int]) -> Fraction:
        """The exact score of ``path``: its smoothed share of the training windows between its endpoints."""
        path = tuple(path)
        p = self.p2kg.exact(path)
        if p == 0:
            return Fraction(0)
        seen = self.windows(path[0], path[-1], len(path))
        z = self.mass(path[0], path[-1], len(path))
        return (seen[path] + self.prior * p / z) / (sum(seen.values()) + self.prior)

    def prepare(self, goal: int, horizon: int):
        return self.p2kg.prepare(goal, horizon)

    def k_best(self, start, goal, horizon, R, layers=None):
        seen = self.windows(start, goal, horizon)
        base = self.p2kg.k_best(start, goal, horizon, R + len(seen), layers)
        cands = {p for p, _ in base} | set(seen)
        ranked = sorted(((self.exact(p), p) for p in cands), key=lambda c: (-c[0], self.lex(c[1])))
        return [(p, float(s)) for s, p in ranked[:R]]


def _fold(index: int) -> int:
    return int(hashlib.sha1(str(index).encode()).hexdigest()[:8], 16) % CV_FOLDS


def fit_prior(graph: ProcedureGraph, priors: Sequence[float] = PRIORS,
              horizons: Sequence[int] = TABLE_HORIZONS, max_plans: int | None = CV_MAX_PLANS) -> dict:
    """Choose ``β`` by 5-fold cross-validation over the graph's training plans.

    Each fold rebuilds the graph from the other folds and plans every window of the held-out
    plans with its true endpoints; the score of a ``β`` is the mean top-1 success rate over
    ``horizons`` (ties go to the larger ``β``, the one closer to the P²KG). Returns
    ``{"prior": β, "cv_sr": {β: mean SR}}``. Graphs of more than ``max_plans`` training plans
    are cross-validated on every k-th plan (a deterministic sample of at most ``max_plans``).

    >>> g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2)] * 6 + [(0, 2, 2)])
    >>> fit_prior(g, priors=(1, 10), horizons=(3,))["prior"]
    10
    """
    plans = graph.train_plans()
    if max_plans is not None and len(plans) > max_plans:  # a deterministic stride sample of a huge graph
        plans = plans[:: -(-len(plans) // max_plans)]
    hits = {b: {t: 0 for t in horizons} for b in priors}
    totals = {t: 0 for t in horizons}
    for k in range(CV_FOLDS):
        train = [p for i, p in enumerate(plans) if _fold(i) != k]
        held = [p for i, p in enumerate(plans) if _fold(i) == k]
        if not train or not held:
            continue
        g = ProcedureGraph.from_plans(graph.actions, train)
        scorer = HistoryScorer(g, prior=priors[0])
        for t in horizons:
            layers_cache: dict[int, list] = {}
            best: dict[tuple[int, int], dict] = {}
            for p in held:
                for i in range(len(p) - t + 1):
                    w = p[i : i + t]
                    totals[t] += 1
                    key = (w[0], w[-1])
                    if key not in best:
                        best[key] = _cv_choices(scorer, key, t, priors, layers_cache)
                    for b in priors:
                        hits[b][t] += best[key][b] == w
    cv = {b: (sum(100.0 * hits[b][t] / totals[t] for t in horizons if totals[t]) /
              max(1, sum(1 for t in horizons if totals[t]))) for b in priors}
    chosen = max(priors, key=lambda b: (round(cv[b], 9), b))
    return {"prior": chosen, "cv_sr": {str(b): round(v, 4) for b, v in cv.items()}}


def _cv_choices(scorer: HistoryScorer, key: tuple[int, int], horizon: int, priors: Sequence[float],
                layers_cache: dict) -> dict:
    """Top-1 path for every candidate ``β`` (float scores: only used to choose ``β``)."""
    start, goal = key
    seen = scorer.windows(start, goal, horizon)
    if goal not in layers_cache:
        layers_cache[goal] = scorer.p2kg.prepare(goal, horizon)
    base = scorer.p2kg.k_best(start, goal, horizon, 1 + len(seen), layers_cache[goal])
    cands = {q: s for q, s in base}
    for q in seen:
        if q not in cands:
            cands[q] = float(scorer.p2kg.exact(q))
    if not cands:
        return {b: None for b in priors}
    z = scorer.mass(start, goal, horizon, exact=False)
    ordered = sorted(cands)  # lexicographic, so max() keeps the smaller sequence on ties
    return {b: max(ordered, key=lambda q, b=b: seen[q] + b * cands[q] / z) for b in priors}
