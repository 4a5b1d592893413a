"""Exact k-best retrieval against a brute-force enumeration oracle, fallbacks, aggregation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kepp_core.errors import KeppError
from kepp_core.graph import (
    HistoryScorer,
    ProcedureGraph,
    Retriever,
    aggregate,
    fallback_paths,
    make_scorer,
    path_weights,
    retrieve,
)


def enumerate_paths(scorer, start: int, goal: int, horizon: int, top: int):
    """The oracle: every sequence of ``horizon`` nodes, kept if it is a walk, exactly ranked
    (higher exact score, then the smaller or larger index sequence)."""
    g = scorer.graph
    walks = []
    for middle in itertools.product(range(g.num_actions), repeat=horizon - 2):
        path = (start, *middle, goal)
        if all(g.counts[u, v] > 0 for u, v in zip(path, path[1:])):
            walks.append((scorer.exact(path), path))
    sign = 1 if scorer.tie_break == "smaller" else -1
    walks.sort(key=lambda c: (-c[0], [sign * a for a in c[1]]))
    return [(p, s) for s, p in walks[:top]]


plans_strategy = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans=plans_strategy, start=st.integers(0, 3), goal=st.integers(0, 3),
       horizon=st.integers(2, 5), top=st.integers(1, 6), method=st.sampled_from(["p2kg", "pkg", "history"]),
       prior=st.sampled_from([Fraction(1, 2), 1, 5]), tie_break=st.sampled_from(["smaller", "larger"]))
def test_dynamic_programming_matches_enumeration_oracle(plans, start, goal, horizon, top, method, prior, tie_break):
    g = ProcedureGraph.from_plans(list("abcd"), [tuple(p) for p in plans])
    scorer = (HistoryScorer(g, prior=prior, tie_break=tie_break) if method == "history"
              else make_scorer(g, method, tie_break))
    expected = enumerate_paths(scorer, start, goal, horizon, top)
    rec = retrieve(g, start, goal, horizon, top, scorer)
    assert rec.found == len(expected)
    assert rec.fallback == (not expected)
    if expected:
        assert rec.paths[: len(expected)] == tuple(p for p, _ in expected)
        assert rec.scores[: len(expected)] == tuple(scorer.value(p) for p, _ in expected)
        assert rec.scores[: len(expected)] == pytest.approx([float(s) for _, s in expected], rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_many_exact_ties_are_ranked_like_the_oracle(seed):
    # Every node has equal counts to every node: all walks tie, so only the tie-break orders them.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    plans = [(u, v) for u in range(n) for v in range(n)] * int(rng.integers(1, 3))
    g = ProcedureGraph.from_plans([str(i) for i in range(n)], plans)
    ranked = []
    for method, tie_break in (("p2kg", "smaller"), ("pkg", "smaller"), ("p2kg", "larger")):
        scorer = make_scorer(g, method, tie_break)
        expected = enumerate_paths(scorer, 0, n - 1, 4, 7)
        rec = retrieve(g, 0, n - 1, 4, 7, scorer)
        assert list(rec.paths[: len(expected)]) == [p for p, _ in expected]
        ranked.append(len(expected))
    assert ranked == [min(7, n * n)] * 3  # the graph is complete: all n² walks tie, the top 7 compared


def test_top_path_is_most_probable_walk_with_self_loops():
    # out(a) = 5: a→a 2, a→c 2, a→b 1; b→c 1, so a→b→c = 1/5 beats a→a→c = 4/25.
    g = ProcedureGraph.from_plans(list("abc"), [(0, 0, 2), (0, 0, 2), (0, 1, 2)])
    rec = retrieve(g, "a", "c", horizon=3, R=3)
    assert rec.paths == ((0, 1, 2), (0, 0, 2), (0, 1, 2))
    assert rec.scores[:2] == (pytest.approx(1 / 5), pytest.approx(4 / 25))
    assert retrieve(g, "a", "a", horizon=4, R=1).top == (0, 0, 0, 0)


def test_equal_scores_break_ties_by_smaller_index_sequence():
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 2, 3), (0, 1, 3)])
    assert retrieve(g, 0, 3, 3, 2).paths == ((0, 1, 3), (0, 2, 3))
    assert retrieve(g, 0, 3, 3, 2, tie_break="larger").paths == ((0, 2, 3), (0, 1, 3))
    with pytest.raises(KeppError, match="unknown tie-break"):
        retrieve(g, 0, 3, 3, 2, tie_break="random")


def test_fewer_paths_than_R_repeat_in_rank_order():
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 1, 3), (0, 2, 3)])
    rec = retrieve(g, 0, 3, 3, 5)
    assert rec.found == 2 and not rec.fallback
    assert rec.paths == ((0, 1, 3), (0, 2, 3), (0, 1, 3), (0, 2, 3), (0, 1, 3))


def test_fallback_paths_cycle_to_R():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1)])
    rec = retrieve(g, "a", "c", horizon=5, R=3)
    assert rec.fallback and rec.found == 0
    assert rec.paths == ((0, 0, 0, 2, 2), (0, 0, 2, 2, 2), (0, 0, 0, 2, 2))
    assert rec.scores == (0.0, 0.0, 0.0)
    assert fallback_paths(1, 2, 4, 2) == ((1, 1, 2, 2), (1, 1, 2, 2))


def test_aggregation_weights_follow_the_paper():
    assert path_weights(1).tolist() == [1.0]
    assert path_weights(2) == pytest.approx([2 / 3, 1 / 3])
    assert path_weights(3) == pytest.approx([3 / 5, 1 / 5, 1 / 5])
    cond = aggregate([(0, 1, 2), (0, 2, 2)], 3)
    assert cond.dtype == np.float32 and cond.shape == (3, 3)
    assert cond[1].tolist() == pytest.approx([0, 2 / 3, 1 / 3])
    assert cond.sum(axis=1) == pytest.approx([1, 1, 1])
    with pytest.raises(KeppError, match="different lengths"):
        aggregate([(0, 1), (0, 1, 2)], 3)


def test_retriever_caches_and_builds_condition_batches():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2), (0, 2, 2)])
    r = Retriever(g, "p2kg", R=2)
    first = r(0, 2, 3)
    assert r("a", "c", 3) is first
    cond = r.conditions([(0, 2), (1, 2)], horizon=3)
    assert cond.shape == (2, 3, 3)
    assert np.allclose(cond[0], aggregate(first.paths, 3))
    assert r.batch([(0, 2)], 3)[0] is first


def test_unknown_action_lists_closest_names():
    g = ProcedureGraph.from_plans(["pour water", "stir", "add sugar"], [(0, 1, 2)])
    with pytest.raises(KeppError, match="closest known: 'pour water'"):
        retrieve(g, "pour watr", "stir", 3)
    with pytest.raises(KeppError, match="out of range"):
        retrieve(g, 7, 1, 3)
    with pytest.raises(KeppError, match="unknown path scorer"):
        retrieve(g, 0, 1, 3, scorer="p2gk")
    with pytest.raises(KeppError, match="T=1"):
        retrieve(g, 0, 1, 1)


def test_history_method_prefers_paths_that_videos_performed():
    # P²KG prefers a→b→d (0.75 · 1) but only one video did it; two did a→c→d.
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 2, 3), (0, 2, 3)] + [(0, 1)] * 5 + [(1, 3)] * 5)
    assert retrieve(g, 0, 3, 3, 1, "p2kg").top == (0, 1, 3)
    rec = retrieve(g, 0, 3, 3, 2, HistoryScorer(g, prior=1))
    assert rec.paths == ((0, 2, 3), (0, 1, 3))
    assert sum(rec.scores) == pytest.approx(1.0)  # posterior over the only two walks


def test_history_without_windows_ranks_like_p2kg():
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 1), (1, 3), (0, 2), (2, 3), (0, 1)])
    hist = retrieve(g, 0, 3, 3, 2, HistoryScorer(g, prior=2))
    assert hist.paths == retrieve(g, 0, 3, 3, 2, "p2kg").paths


def test_history_prior_is_fitted_and_cached_on_the_graph():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2)] * 6 + [(0, 2, 2)])
    scorer = HistoryScorer(g)
    assert g.params["history_prior"] == scorer.prior
    with pytest.raises(KeppError, match="positive"):
        HistoryScorer(g, prior=0)
