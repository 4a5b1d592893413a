"""Graph-aware decoding (kepp_core.graph.decoding) against a brute-force enumeration oracle:
every endpoint mode (joint decoding with endpoint distributions and per-query action priors
included), deliberate ties, the λ = 0 and large-λ limits, fallbacks, history, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from kepp_core.errors import KeppError
from kepp_core.graph import HistoryScorer, ProcedureGraph, make_scorer, retrieve
from kepp_core.graph.decoding import (
    decode,
    decode_history,
    emission_log_probs,
    plan_score,
    transition_log_probs,
)

TIE = 1e-9  # oracle's tie band (relative): exact ties round apart by ~1e-15, real gaps are >> 1e-9


def random_graph(rng: np.random.Generator, a: int, n_plans: int = 6, max_len: int = 5) -> ProcedureGraph:
    plans = [tuple(rng.integers(0, a, size=rng.integers(2, max_len + 1)).tolist()) for _ in range(n_plans)]
    return ProcedureGraph.from_plans([f"s{i}" for i in range(a)], plans)


def tied_emissions(rng: np.random.Generator, n: int, t: int, a: int) -> np.ndarray:
    """Emissions from a few quarter values: many exact ties, all exact in floats."""
    return rng.choice([0.0, -0.25, -0.5, -1.0], size=(n, t, a))


def lex_best(scored):
    """The lexicographically smallest of ``(seq, score)`` pairs (in lexicographic order) within
    the tie band of the best finite score; None if no score is finite."""
    finite = [(p, s) for p, s in scored if s > -math.inf]
    if not finite:
        return None
    top = max(s for _, s in finite)
    return next((p, s) for p, s in finite if s >= top - TIE * max(1.0, abs(top)))


def brute_force(e, logp, lam, first, last):
    """Best plan of one query by enumerating all A^T sequences (with the λ = 0 fallback)."""
    t_len, a = e.shape

    def scored(weight):
        for seq in itertools.product(range(a), repeat=t_len):
            s = sum(e[t, x] for t, x in enumerate(seq)) + first[seq[0]] + last[seq[-1]]
            if weight > 0:
                s += weight * sum(logp[u, v] for u, v in itertools.pairwise(seq))
            yield seq, s

    best = lex_best(scored(lam))
    if best is not None:
        return best[0], best[1], False
    plan, score = lex_best(scored(0.0))
    return plan, score, True


def random_endpoints(rng, mode, n, a):
    """Endpoint arguments for ``decode`` and the matching [N, A] log-terms for the oracle."""
    first, last = np.zeros((n, a)), np.zeros((n, a))
    if mode == "free":
        return {}, first, last
    if mode == "pinned":
        s, g = rng.integers(0, a, n), rng.integers(0, a, n)
        first[:], last[:] = -np.inf, -np.inf
        first[np.arange(n), s] = 0.0
        last[np.arange(n), g] = 0.0
        return {"start": s, "goal": g}, first, last
    k = int(rng.integers(1, min(3, a) + 1))
    cands = [np.stack([rng.permutation(a)[:k] for _ in range(n)]) for _ in range(2)]
    confs = [rng.choice([0.0, -0.5, -1.0], size=(n, k)) for _ in range(2)]
    for term, c, w in ((first, cands[0], confs[0]), (last, cands[1], confs[1])):
        term[:] = -np.inf
        term[np.arange(n)[:, None], c] = w
    kwargs = {"start": cands[0], "goal": cands[1], "start_logp": confs[0], "goal_logp": confs[1]}
    return kwargs, first, last


@pytest.mark.parametrize("mode", ["free", "pinned", "topk"])
def test_decoder_matches_brute_force_on_random_instances_with_ties(mode):
    checked = fallbacks = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        a, t_len, n = int(rng.integers(2, 6)), int(rng.integers(1 if mode == "free" else 2, 5)), 4
        g = random_graph(rng, a, n_plans=int(rng.integers(1, 8)))
        logp = transition_log_probs(g)
        e = tied_emissions(rng, n, t_len, a) if seed % 2 == 0 else np.log(rng.dirichlet(np.ones(a), (n, t_len)))
        kwargs, first, last = random_endpoints(rng, mode, n, a)
        for lam in (0.0, 0.5, 1.0, 3.0):
            d = decode(e, g, lam, mode, **kwargs)
            for q in range(n):
                plan, score, fb = brute_force(e[q], logp, lam, first[q], last[q])
                assert tuple(d.plans[q]) == plan, (seed, lam, q)
                assert d.scores[q] == pytest.approx(score, abs=1e-9)
                assert bool(d.fallback[q]) == fb
                checked += 1
                fallbacks += fb
    assert checked == 60 * 4 * 4 and (fallbacks > 0 or mode == "free")


def log_vectors(rng: np.random.Generator, n: int, a: int, tied: bool) -> np.ndarray:
    """Per-query log-weights ``[N, A]`` with some ``-inf`` entries, at least one finite per row."""
    w = rng.choice([0.0, -0.5, -1.0], size=(n, a)) if tied else np.log(rng.dirichlet(np.ones(a), n))
    w[rng.random((n, a)) < 0.35] = -np.inf
    w[np.arange(n), rng.integers(0, a, n)] = 0.0 if tied else -0.25
    return w


def action_prior(rng: np.random.Generator, kind: str, n: int, a: int, first: np.ndarray, last: np.ndarray):
    """An ``action_logprior`` argument (None, a boolean task mask or finite/-inf log-weights) and
    its ``[N, A]`` log-terms for the oracle, allowing an action of each endpoint term."""
    if kind == "none":
        return None, np.zeros((n, a))
    allowed = rng.random((n, a)) < 0.5
    for term in (first, last):  # keep λ = 0 feasible: one allowed action the endpoint term allows
        for q in range(n):
            allowed[q, rng.choice(np.flatnonzero(np.isfinite(term[q])))] = True
    logp = np.where(allowed, 0.0, -np.inf)
    if kind == "mask":
        return allowed, logp
    logp = np.where(allowed, rng.choice([0.0, -0.5, -2.0], size=(n, a)), -np.inf)
    return logp, logp


@pytest.mark.parametrize("prior", ["none", "mask", "weights"])
@pytest.mark.parametrize("mode", ["free", "pinned", "topk", "dist"])
def test_joint_decoding_matches_brute_force(mode, prior):
    """Every plan of A^T (A <= 5, T = 2..4) scored by the oracle, on graphs with missing edges,
    endpoint distributions with -inf entries and per-query task restrictions or weights."""
    checked = fallbacks = missing_edges = 0
    for seed in range(24):
        rng = np.random.default_rng(1000 + seed)
        a, t_len, n = int(rng.integers(2, 6)), int(rng.integers(2, 5)), 3
        g = random_graph(rng, a, n_plans=int(rng.integers(1, 8)))
        logp = transition_log_probs(g)
        tied = seed % 2 == 0
        e = tied_emissions(rng, n, t_len, a) if tied else np.log(rng.dirichlet(np.ones(a), (n, t_len)))
        if mode == "dist":
            first, last = log_vectors(rng, n, a, tied), log_vectors(rng, n, a, tied)
            kwargs = {"start_logp": first, "goal_logp": last}
        else:
            kwargs, first, last = random_endpoints(rng, mode, n, a)
        arg, r = action_prior(rng, prior, n, a, first, last)
        missing_edges += bool(np.isneginf(logp).any())
        for lam in (0.0, 0.5, 1.0, 3.0):
            d = decode(e, g, lam, mode, **kwargs, action_logprior=arg)
            for q in range(n):
                plan, score, fb = brute_force(e[q] + r[q], logp, lam, first[q], last[q])
                assert tuple(d.plans[q]) == plan, (seed, lam, q)
                assert d.scores[q] == pytest.approx(score, abs=1e-9)
                assert bool(d.fallback[q]) == fb
                checked += 1
                fallbacks += fb
    assert checked == 24 * 3 * 4 and missing_edges >= 20 and (fallbacks > 0 or (mode, prior) == ("free", "none"))


def test_dist_with_one_hot_endpoint_vectors_is_pinned():
    checked = fallbacks = 0
    for seed in range(20):
        rng = np.random.default_rng(2000 + seed)
        a, t_len, n = int(rng.integers(2, 7)), int(rng.integers(2, 6)), 16
        g = random_graph(rng, a, n_plans=6)
        e = tied_emissions(rng, n, t_len, a) if seed % 2 else np.log(rng.dirichlet(np.ones(a), (n, t_len)))
        s, goal = rng.integers(0, a, n), rng.integers(0, a, n)
        one_hot = [np.where(np.arange(a)[None] == x[:, None], 0.0, -np.inf) for x in (s, goal)]
        for lam in (0.0, 1.0, 2.5):
            pinned = decode(e, g, lam, "pinned", s, goal)
            dist = decode(e, g, lam, "dist", start_logp=one_hot[0], goal_logp=one_hot[1])
            assert np.array_equal(dist.plans, pinned.plans) and np.array_equal(dist.fallback, pinned.fallback)
            np.testing.assert_allclose(dist.scores, pinned.scores)
            checked, fallbacks = checked + len(pinned.plans), fallbacks + int(pinned.fallback.sum())
    assert checked == 20 * 3 * 16 and fallbacks > 0  # endpoints with no path between them compared too


def test_dist_chooses_endpoints_jointly_with_the_middle():
    # the likeliest start (0) and goal (1) have no walk of 3 between them: the best whole plan wins
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2), (1, 2, 2)])
    s, goal = np.log([[.5, .3, .2]]), np.log([[.01, .6, .39]])
    d = decode(np.zeros((1, 3, 3)), g, 1.0, "dist", start_logp=s, goal_logp=goal)
    assert d.plans.tolist() == [[0, 1, 2]] and not d.fallback.any()
    assert d.scores[0] == pytest.approx(math.log(.5 * .39))


def test_an_all_true_task_mask_changes_nothing_and_a_mask_restricts_every_position():
    rng = np.random.default_rng(5)
    g = random_graph(rng, 6, n_plans=10)
    e = np.log(rng.dirichlet(np.ones(6), (20, 4)))
    outside_the_mask = []
    for mode, kw in (("free", {}), ("pinned", {"start": rng.integers(0, 3, 20), "goal": rng.integers(0, 3, 20)})):
        plain = decode(e, g, 1.0, mode, **kw)
        outside_the_mask.append(int((plain.plans >= 3).sum()))
        ones = decode(e, g, 1.0, mode, **kw, action_logprior=np.ones((20, 6), dtype=bool))
        assert np.array_equal(plain.plans, ones.plans) and np.array_equal(plain.scores, ones.scores)
        mask = np.zeros((20, 6), dtype=bool)
        mask[:, :3] = True
        assert (decode(e, g, 1.0, mode, **kw, action_logprior=mask).plans < 3).all()
        as_tensor = decode(e, g, 1.0, mode, **kw, action_logprior=torch.from_numpy(mask))
        assert np.array_equal(as_tensor.plans, decode(e, g, 1.0, mode, **kw, action_logprior=mask).plans)
    assert len(outside_the_mask) == 2 and min(outside_the_mask) > 0  # in both modes the mask changes some plan


def test_constraints_that_leave_a_position_without_actions_are_an_error():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2)])
    with pytest.raises(KeppError, match="query 1 has no possible action at position 1 of 3"):
        decode(np.zeros((2, 3, 3)), g, 1.0, "pinned", [0, 2], [2, 2], action_logprior=[[True] * 3, [True, True, False]])
    with pytest.raises(KeppError, match="query 0 has no possible action at position 3 of 3"):  # goal c, task a, b
        decode(np.zeros((2, 3, 3)), g, 1.0, "dist", start_logp=np.zeros((2, 3)),
               goal_logp=[[-np.inf, -np.inf, 0.0]] * 2, action_logprior=[[0.0, 0.0, -np.inf]] * 2)


def test_viterbi_in_blocks_equals_one_block(monkeypatch):
    """The memory bound (blocks of queries, not an [N, A, A] array: COIN's 768 actions × 5,571
    test episodes would need 24.5 GiB) changes no plan and no score."""
    import kepp_core.graph.decoding as decoding

    rng = np.random.default_rng(7)
    g = random_graph(rng, 6, n_plans=9)
    e = np.log(rng.dirichlet(np.ones(6), (23, 4)))
    whole = decode(e, g, 1.0)
    monkeypatch.setattr(decoding, "VITERBI_CELLS", 2 * 36)  # two queries per block, the last block short
    blocks = decode(e, g, 1.0)
    assert np.array_equal(blocks.plans, whole.plans) and np.array_equal(blocks.scores, whole.scores)


def test_ties_that_round_apart_in_floats_go_to_the_smaller_plan():
    # (0, 1) scores 0.3 + 0.0 and (1, 0) scores 0.1 + 0.2: equal, but the float sum of (1, 0) is larger
    e = np.array([[[0.3, 0.1], [0.2, 0.0]]])
    trans = np.array([[-np.inf, 0.0], [0.0, -np.inf]])
    assert 0.1 + 0.2 > 0.3 + 0.0
    assert decode(e, trans, 1.0).plans.tolist() == [[0, 1]]
    assert decode(e, trans, 1.0, tol=0.0).plans.tolist() == [[1, 0]]  # no band: float order


def test_ties_on_the_graph_follow_retrieval_order():
    # 0 -> 1 -> 3 and 0 -> 2 -> 3 are equally probable: the smaller sequence wins, as in retrieve()
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 2, 3)])
    d = decode(np.zeros((1, 3, 4)), g, 1.0, "pinned", [0], [3])
    assert d.plans.tolist() == [list(retrieve(g, 0, 3, 3, 1).top)] == [[0, 1, 3]]


def test_lambda_zero_is_the_per_position_argmax():
    rng = np.random.default_rng(0)
    g = random_graph(rng, 7)
    e = np.log(rng.dirichlet(np.ones(7), (32, 5)))
    assert (decode(e, g, 0.0).plans == e.argmax(-1)).all()
    s, goal = rng.integers(0, 7, 32), rng.integers(0, 7, 32)
    d = decode(e, g, 0.0, "pinned", s, goal)
    assert (d.plans[:, 0] == s).all() and (d.plans[:, -1] == goal).all()
    assert (d.plans[:, 1:-1] == e[:, 1:-1].argmax(-1)).all() and not d.fallback.any()


def test_large_lambda_with_pinned_endpoints_gives_the_graphs_top_path():
    checked = 0
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        a, t_len = int(rng.integers(3, 8)), int(rng.integers(2, 6))
        g = random_graph(rng, a, n_plans=10)
        scorer = make_scorer(g, "p2kg")
        e = np.log(rng.dirichlet(np.ones(a), (a * a, t_len)))
        pairs = [(s, goal) for s in range(a) for goal in range(a)]
        starts, goals = [p[0] for p in pairs], [p[1] for p in pairs]
        graph_only = decode(np.zeros_like(e), g, 1.0, "pinned", starts, goals)
        big = decode(e, g, 1e6, "pinned", starts, goals)
        for q, (s, goal) in enumerate(pairs):
            rec = retrieve(g, s, goal, t_len, 2)
            assert bool(big.fallback[q]) == rec.fallback == bool(graph_only.fallback[q])
            if rec.fallback:
                continue
            checked += 1
            assert tuple(graph_only.plans[q]) == rec.top  # same tie-break as retrieval
            top = scorer.exact(rec.top)
            assert scorer.exact(tuple(big.plans[q])) == top  # a top path of the graph ...
            if rec.found == 1 or scorer.exact(rec.paths[1]) < top:
                assert tuple(big.plans[q]) == rec.top  # ... the top path when it is unique
    assert checked > 200


def test_no_walk_falls_back_to_pinned_argmax_and_is_flagged():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1)])
    e = np.log(np.array([[[.2, .3, .5]] * 4]))
    d = decode(e, g, 1.0, "pinned", [2], [1])
    assert d.plans.tolist() == [[2, 2, 2, 1]] and d.fallback.tolist() == [True]
    d = decode(np.concatenate([e, e]), g, 1.0, "free")  # no walk of 4 nodes at all
    assert d.fallback.tolist() == [True, True] and d.plans.tolist() == [[2, 2, 2, 2]] * 2


def test_topk_adds_endpoint_confidences():
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2), (1, 1, 2)])
    e = np.zeros((1, 3, 3))
    d = decode(e, g, 1.0, "topk", [[0, 1]], [[2]], start_logp=[[-0.1, -2.0]])
    assert d.plans.tolist() == [[0, 1, 2]]
    d = decode(e, g, 1.0, "topk", [[0, 1]], [[2]], start_logp=[[-2.0, -0.1]])
    assert d.plans.tolist() == [[1, 1, 2]]


def test_plan_score_matches_decoded_scores_and_torch_inputs_work():
    rng = np.random.default_rng(3)
    g = random_graph(rng, 5, n_plans=12)
    e = np.log(rng.dirichlet(np.ones(5), (16, 3)))
    d = decode(torch.from_numpy(e), g, 0.7)
    ok = ~d.fallback
    np.testing.assert_allclose(plan_score(e, g, d.plans, 0.7)[ok], d.scores[ok])


def test_emission_log_probs_from_logits_probs_and_samples():
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    np.testing.assert_allclose(emission_log_probs(x), torch.log_softmax(x * 10, -1).numpy(), atol=1e-12)
    k = torch.randn(3, 5, 4, 6, dtype=torch.float64)
    mean = torch.softmax(k * 10, -1).mean(1)
    np.testing.assert_allclose(np.exp(emission_log_probs(k)), mean.numpy(), atol=1e-12)
    p = emission_log_probs(np.array([[[0.0, -1.0, 3.0]]]), kind="probs")
    assert np.isfinite(p).all() and np.exp(p).sum() == pytest.approx(1.0) and p.argmax() == 2


def history_oracle(scorer, e, lam, pairs):
    """Best plan over all walks between any candidate pair under Σe + bonus + λ log h (enumerated)."""
    t_len, a = e.shape
    scored = []
    for mid in itertools.product(range(a), repeat=t_len):
        bonus = pairs.get((mid[0], mid[-1]))
        h = scorer.exact(mid) if bonus is not None else 0
        if h > 0:
            scored.append((mid, sum(e[t, x] for t, x in enumerate(mid)) + bonus + lam * math.log(h)))
    best = lex_best(scored)
    return None if best is None else best[0]


def test_history_decoding_is_exact_over_all_walks():
    checked = 0
    for seed in range(30):
        rng = np.random.default_rng(500 + seed)
        a, t_len = int(rng.integers(3, 6)), int(rng.integers(2, 5))
        base = [tuple(rng.integers(0, a, size=rng.integers(2, 6)).tolist()) for _ in range(5)]
        g = ProcedureGraph.from_plans([f"s{i}" for i in range(a)], base * 2 + base[:2])  # repeated windows
        scorer = HistoryScorer(g, prior=[0.5, 1, 5][seed % 3])
        e = tied_emissions(rng, 3, t_len, a) if seed % 2 else np.log(rng.dirichlet(np.ones(a), (3, t_len)))
        s, goal = rng.integers(0, a, (3, 2)), rng.integers(0, a, (3, 2))
        conf = rng.choice([0.0, -0.5], size=(3, 2))
        for lam in (0.5, 1.0, 4.0):
            pinned = decode_history(e, scorer, lam, "pinned", s[:, 0], goal[:, 0])
            topk = decode_history(e, scorer, lam, "topk", s, goal, start_logp=conf, goal_logp=conf)
            for q in range(3):
                want = history_oracle(scorer, e[q], lam, {(int(s[q, 0]), int(goal[q, 0])): 0.0})
                assert bool(pinned.fallback[q]) == (want is None)
                if want is not None:
                    assert tuple(pinned.plans[q]) == want
                    checked += 1
                pairs = {}
                for i, j in itertools.product(range(2), range(2)):
                    key = (int(s[q, i]), int(goal[q, j]))
                    pairs[key] = max(pairs.get(key, -math.inf), conf[q, i] + conf[q, j])
                want = history_oracle(scorer, e[q], lam, pairs)
                assert bool(topk.fallback[q]) == (want is None)
                if want is not None:
                    assert tuple(topk.plans[q]) == want
    assert checked > 50


def test_history_decoding_follows_the_videos_over_the_graph():
    g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 2, 3), (0, 2, 3)] + [(0, 1)] * 5 + [(1, 3)] * 5)
    e = np.zeros((1, 3, 4))
    assert decode(e, g, 1.0, "pinned", [0], [3]).plans.tolist() == [[0, 1, 3]]
    assert decode_history(e, HistoryScorer(g, prior=1), 1.0, "pinned", [0], [3]).plans.tolist() == [[0, 2, 3]]
    d = decode_history(e, HistoryScorer(g, prior=1), 1.0, "pinned", [3], [0])  # no walk 3 -> 0
    assert d.fallback.tolist() == [True] and d.plans[0, 0] == 3 and d.plans[0, -1] == 0


@pytest.mark.parametrize("call, message", [
    (lambda g: decode(np.zeros((2, 3)), g), "expected [N, T, A]"),
    (lambda g: decode(np.full((1, 2, 3), np.nan), g), "NaN"),
    (lambda g: decode(np.full((1, 2, 3), -np.inf), g), "-inf"),
    (lambda g: decode(np.zeros((1, 2, 4)), g), "expected [4, 4]"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, lam=-1), "lam=-1"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="fixed"), "unknown endpoint mode 'fixed'"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="pinned", start=[0]), "needs both start and goal"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="pinned", start=[0], goal=[5]), "index 5 outside 0..2"),
    (lambda g: decode(np.zeros((2, 2, 3)), g, endpoints="pinned", start=[0], goal=[1]), "expected [2]"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="pinned", start=[0.5], goal=[1]), "integer action"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="free", start=[0]), "takes no start/goal"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="topk", start=[[0, 1]], goal=[[1]],
                      start_logp=[[0.0]]), "start_logp must be 2 finite"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, tol=-1.0), "tol=-1.0"),
    (lambda g: emission_log_probs(np.zeros((1, 2, 3)), kind="softmax"), "unknown emission kind"),
    (lambda g: emission_log_probs(np.zeros((1, 2, 3)), temperature=0), "temperature 0"),
    (lambda g: emission_log_probs(np.zeros((2, 3))), "expected [N, T, A] or [N, K, T, A]"),
    (lambda g: transition_log_probs(g, floor=2.0), "floor 2.0"),
    (lambda g: decode_history(np.zeros((1, 2, 3)), HistoryScorer(g, prior=1), endpoints="free"), "'pinned' or 'topk'"),
    (lambda g: decode(np.zeros((1, 1, 3)), g, endpoints="pinned", start=[0], goal=[1]), "T >= 2 actions, got T=1"),
    (lambda g: decode_history(np.zeros((1, 2, 4)), HistoryScorer(g, prior=1), endpoints="pinned",
                              start=[0], goal=[1]), "T >= 2, 3"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="dist", start_logp=np.zeros((1, 3))),
     "needs both start_logp and goal_logp"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="dist", start=[0], goal=[1]),
     "takes start_logp/goal_logp ([N, A] log-probabilities), not start/goal"),
    (lambda g: decode(np.zeros((2, 2, 3)), g, endpoints="dist", start_logp=np.zeros((2, 2)),
                      goal_logp=np.zeros((2, 3))), "start_logp has shape [2, 2] (expected [N, A] = [2, 3]"),
    (lambda g: decode(np.zeros((2, 2, 3)), g, endpoints="dist", start_logp=np.zeros((2, 3)),
                      goal_logp=np.zeros(3)), "goal_logp has shape [3] (expected [N, A] = [2, 3]"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="dist", start_logp=[[0.0, np.nan, 0.0]],
                      goal_logp=np.zeros((1, 3))), "start_logp contains NaN"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, endpoints="dist", start_logp=np.zeros((1, 3)),
                      goal_logp=[[-np.inf] * 3]), "goal_logp is -inf for every action in row 0"),
    (lambda g: decode(np.zeros((1, 1, 3)), g, endpoints="dist", start_logp=np.zeros((1, 3)),
                      goal_logp=np.zeros((1, 3))), "T >= 2 actions, got T=1"),
    (lambda g: decode(np.zeros((2, 2, 3)), g, action_logprior=np.ones((3, 2), dtype=bool)),
     "action_logprior has shape [3, 2] (expected [N, A] = [2, 3]"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, action_logprior=[[0.0, np.inf, 0.0]]), "action_logprior contains NaN or +inf"),
    (lambda g: decode(np.zeros((1, 2, 3)), g, action_logprior=[[False] * 3]), "action_logprior is -inf for every action"),
    (lambda g: decode_history(np.zeros((1, 2, 3)), HistoryScorer(g, prior=1), endpoints="dist",
                              start_logp=np.zeros((1, 3)), goal_logp=np.zeros((1, 3))), "'pinned' or 'topk'"),
])
def test_bad_input_is_a_clear_error(call, message):
    g = ProcedureGraph.from_plans(list("abc"), [(0, 1, 2)])
    with pytest.raises(KeppError) as err:
        call(g)
    assert message in str(err.value)


def test_the_graph_mode_plans_as_zero_shot_planning_ties_and_missing_walks_included():
    """Mode ``graph`` gives the retriever's top path (graph-gt's plan) for every endpoint pair of a
    small graph, whatever the emissions: pairs with several equally likely walks (its tie-break) and
    pairs without a walk (its fallback) included; it needs the graph."""
    from kepp_core.graph.decoding import GRAPH_LAMBDA, GRAPH_MODE, DecodeChoice, decode_block, transition_log_probs
    from kepp_core.graph.retrieval import make_retriever

    g = ProcedureGraph.from_plans(list("abcdef"), [(0, 1, 2, 3), (0, 2, 3), (1, 3, 4), (4, 4, 5), (0, 1, 3, 4),
                                                   (5, 1, 4), (5, 2, 4)])
    a, horizon = g.num_actions, 3
    pairs = [(s, t) for s in range(a) for t in range(a)]
    probs = np.zeros((len(pairs), 2, a))
    for i, (s, t) in enumerate(pairs):
        probs[i, 0, s] = probs[i, 1, t] = 1.0
    block = np.log(np.random.default_rng(0).dirichlet(np.ones(a), size=(len(pairs), horizon)))
    trans = transition_log_probs(g)
    plans = decode_block(block, trans, DecodeChoice(GRAPH_MODE, GRAPH_LAMBDA), probs, g)
    recs = make_retriever(g, "p2kg", 2).batch(pairs, horizon)
    assert any(r.fallback for r in recs) and not all(r.fallback for r in recs)
    assert any(len(r.scores) > 1 and r.scores[0] == r.scores[1] for r in recs if not r.fallback)  # a tie
    assert plans.tolist() == [list(r.paths[0]) for r in recs]
    # the emissions choose among the graph's equally likely walks only with a finite λ ("pinned")
    pinned = decode_block(block, trans, DecodeChoice("pinned", GRAPH_LAMBDA), probs)
    assert pinned.tolist() != plans.tolist()
    with pytest.raises(KeppError, match="needs the graph"):
        decode_block(block, trans, DecodeChoice(GRAPH_MODE, GRAPH_LAMBDA), probs)
