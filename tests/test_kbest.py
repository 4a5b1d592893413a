"""The K-best decoder (docs/architecture.md, Walkthrough: a new decoder): the list Viterbi against a
brute-force enumeration of every plan, its first plan against the exact best plan, its fallbacks and
bad input, and its row through ``kepp eval``: K plans with their scores in the records."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.graph import kbest
from kepp_core.graph.decoding import decode
from kepp_core.graph.kbest import k_best


def brute_force(e, trans, lam, start, goal):
    """Every plan of each query with its score, best first (ties in plan order): the reference."""
    n, t_len, a = e.shape
    out = []
    for q in range(n):
        scored = []
        for plan in itertools.product(range(a), repeat=t_len):
            s = sum(e[q, t, x] for t, x in enumerate(plan)) + start[q, plan[0]] + goal[q, plan[-1]]
            if lam > 0:
                s += lam * sum(trans[u, v] for u, v in zip(plan, plan[1:]))
            scored.append((s, plan))
        scored.sort(key=lambda sp: (-sp[0], sp[1]))
        out.append(scored)
    return out


def instance(rng, n, t_len, a, sparse):
    e = np.log(rng.dirichlet(np.ones(a), size=(n, t_len)))
    trans = np.log(rng.dirichlet(np.ones(a), size=a))
    if sparse:  # a graph with few edges: some queries have fewer walks than K, some none
        trans[rng.random((a, a)) < sparse] = -np.inf
    start = np.log(rng.dirichlet(np.ones(a), size=n))
    goal = np.log(rng.dirichlet(np.ones(a), size=n))
    start[rng.random((n, a)) < 0.3] = -np.inf
    return e, trans, start, goal


@pytest.mark.parametrize("sparse", [0.0, 0.6])
@pytest.mark.parametrize("lam", [0.0, 0.7, 3.0])
def test_k_best_lists_the_k_most_probable_plans_as_brute_force_enumeration_does(lam, sparse):
    rng = np.random.default_rng(int(lam * 10) + int(sparse * 100))
    shapes = [(2, 3, 4), (3, 4, 5), (4, 3, 7), (3, 5, 1), (1, 4, 3)]
    compared = 0
    for t_len, a, k in shapes:
        e, trans, start, goal = instance(rng, 6, t_len, a, sparse)
        got = k_best(e, trans, lam, k, start, goal)
        ref = brute_force(e, trans, lam, start, goal)
        for q in range(len(e)):
            if got.fallback[q]:  # no walk: the list at λ = 0, as decode falls back
                assert np.isneginf(ref[q][0][0])
                ref_q = brute_force(e[q:q + 1], trans, 0.0, start[q:q + 1], goal[q:q + 1])[0]
            else:
                ref_q = ref[q]
            want = [s for s, _ in ref_q[:k]]
            np.testing.assert_allclose(got.path_scores[q], want, rtol=1e-12, atol=0)
            for i, (s, plan) in enumerate(ref_q[:k]):
                if np.isfinite(s):  # random scores: no ties, so the plans themselves agree
                    assert tuple(got.paths[q, i]) == plan, (t_len, a, k, q, i)
            compared += 1
    assert compared == 6 * len(shapes)  # every query of every shape was held to the enumeration


def test_the_first_of_the_k_best_is_the_exact_best_plan_under_the_same_objective():
    rng = np.random.default_rng(7)
    e, trans, start, goal = instance(rng, 40, 4, 6, 0.5)
    assert np.isfinite(start).any(-1).all() and len(e) == 40  # every query has a possible first step
    for lam in (0.0, 0.3, 1.0):
        best = decode(e, trans, lam, "dist", start_logp=start, goal_logp=goal)
        got = k_best(e, trans, lam, 5, start, goal)
        assert (got.plans == best.plans).all() and (got.fallback == best.fallback).all()
        np.testing.assert_allclose(got.scores, best.scores, rtol=1e-12)
        assert (np.diff(got.path_scores, axis=1)[np.isfinite(got.path_scores[:, 1:])] <= 0).all()


def test_fewer_walks_than_k_leave_minus_infinity_and_no_walk_falls_back_flagged():
    chain = np.full((3, 3), -np.inf)
    chain[0, 1] = chain[1, 2] = 0.0  # one walk of three steps: 0 -> 1 -> 2
    e = np.zeros((2, 3, 3))
    start, goal = np.zeros((2, 3)), np.zeros((2, 3))
    goal[1] = [0.0, -np.inf, -np.inf]  # the second query must end in 0: no walk does
    got = k_best(e, chain, 1.0, 3, start, goal)
    assert got.paths[0, 0].tolist() == [0, 1, 2] and np.isneginf(got.path_scores[0, 1:]).all()
    assert got.fallback.tolist() == [False, True] and got.paths[1, 0, -1] == 0 and np.isfinite(got.path_scores[1]).all()


def test_k_best_in_blocks_of_queries_equals_one_block(monkeypatch):
    rng = np.random.default_rng(3)
    e, trans, start, goal = instance(rng, 9, 3, 4, 0.3)
    whole = k_best(e, trans, 1.0, 4, start, goal)
    monkeypatch.setattr(kbest, "KBEST_CELLS", 4 * 4 * 4 * 2)  # two queries a block
    blocks = k_best(e, trans, 1.0, 4, start, goal)
    assert (whole.paths == blocks.paths).all() and np.array_equal(whole.path_scores, blocks.path_scores)


@pytest.mark.parametrize("k, message", [(0, "k=0"), (True, "k=True"), (1001, "k=1001"), (2.0, "k=2.0")])
def test_a_bad_k_is_a_clear_error(k, message):
    with pytest.raises(KeppError, match=message):
        k_best(np.zeros((1, 2, 2)), np.zeros((2, 2)), 1.0, k)


@pytest.mark.slow
def test_the_kbest_row_records_its_k_plans_and_scores_and_keeps_its_own_choice(demo_t3, tmp_path, monkeypatch):
    """kepp eval --methods kepp-R1+kbest: each record keeps the row's K plans, most probable first, with
    their scores (paths, path_scores); the row's plan is the first of them; its choice is made among its own
    mode and stored under its own name, beside (never over) kepp-R1+dec's."""
    from kepp_core import catalog

    from tests.helpers.training import kepp

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    _, root, models = demo_t3
    before = json.loads((models / "T3" / catalog.DECODING_FILE).read_text())
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods",
             "kepp-R1+kbest", "--records", tmp_path / "p.jsonl", "--save-decoding", "--out", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    rows = {x["method"]: x for x in json.loads((tmp_path / "t.json").read_text())["rows"]}
    assert set(rows) == {"kepp-R1+kbest"}
    records = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    k = catalog.KBEST_DECODING.k
    assert records and all(len(rec["paths"]) == k == len(rec["path_scores"]) for rec in records)
    for rec in records:
        assert rec["plans"]["kepp-R1+kbest"] == rec["paths"][0] and len(set(map(tuple, rec["paths"]))) == k
        assert rec["path_scores"] == sorted(rec["path_scores"], reverse=True)
        # its own, per method, as in every run (no KEPP-R row beside it: the record's paths are the same)
        assert rec["method_paths"] == {"kepp-R1+kbest": rec["paths"]}
        assert rec["method_path_scores"] == {"kepp-R1+kbest": rec["path_scores"]}
    stored = json.loads((models / "T3" / catalog.DECODING_FILE).read_text())
    assert {g["mode"] for g in stored["kepp-R1+kbest"]["grid"]} == {catalog.KBEST_MODE}
    assert stored["kepp-R1"] == before["kepp-R1"]


@pytest.mark.slow
def test_beside_a_kepp_r_row_the_kbest_row_records_its_own_k_plans_and_its_store_row_has_them(demo_t3, tmp_path,
                                                                                             monkeypatch):
    """kepp eval --methods kepp-R2 kepp-R1+kbest: the record's ``paths``/``path_scores`` stay KEPP R=2's graph
    paths, and the K-best row's K plans with their scores are its own (``method_paths``, ``method_path_scores``);
    the store's row of each method has its own: R=2's two graph paths, the K-best row's K plans, best first."""
    from kepp_core import api, catalog

    from tests.helpers.training import kepp

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    _, root, models = demo_t3
    r = kepp("eval", "--dataset", "demo", "--root", root, "--models", models, "-T", "3", "--methods", "kepp-R2",
             "kepp-R1+kbest", "--records", tmp_path / "p.jsonl", "--out", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    k = catalog.KBEST_DECODING.k
    assert records
    for rec in records:
        assert len(rec["paths"]) == 2 == len(rec["path_scores"])  # R=2's graph paths, as before
        assert 0 <= min(rec["path_scores"]) and max(rec["path_scores"]) <= 1  # probabilities
        (own,), (scores,) = rec["method_paths"].values(), rec["method_path_scores"].values()
        assert set(rec["method_paths"]) == set(rec["method_path_scores"]) == {"kepp-R1+kbest"}
        assert len(own) == k == len(scores) == len(set(map(tuple, own))) and own[0] == rec["plans"]["kepp-R1+kbest"]
        assert scores == sorted(scores, reverse=True) and max(scores) <= 0  # log scores, best first
    table = api.read_predictions([tmp_path / "p.jsonl"])
    assert len(table) == 2 * len(records)
    for rec in records:
        mine = table[table["episode"] == rec["episode"]].set_index("method")
        kb, r2 = mine.loc["kepp-R1+kbest"], mine.loc["kepp-R2"]
        assert list(kb["paths"]) == [tuple(p) for p in rec["method_paths"]["kepp-R1+kbest"]]
        assert list(kb["path_scores"]) == rec["method_path_scores"]["kepp-R1+kbest"]
        assert list(r2["paths"]) == [tuple(p) for p in rec["paths"]] and list(r2["path_scores"]) == rec["path_scores"]


RECORD = {"episode": "t/v/0:3", "T": 3, "gt": [1, 2, 3], "endpoints": [1, 3], "paths": [[1, 5, 3], [1, 2, 3]],
          "path_scores": [0.6, 0.4], "plans": {"kepp-R2": [1, 5, 3], "kepp-R1+kbest": [1, 2, 3], "random": [3, 2, 1]},
          "method_paths": {"kepp-R1+kbest": [[1, 2, 3], [1, 4, 3], [2, 2, 3]]},
          "method_path_scores": {"kepp-R1+kbest": [-1.5, -2.25, -4.0]}}


def test_each_row_reads_its_own_plans_where_recorded_else_the_records_paths_the_fast_way_and_the_exact_way(tmp_path):
    """A record with the K-best row's own plans: its row has them (and their scores), KEPP R=2's row the record's
    graph paths, a baseline none; the columnar reader proves the file and reads what the record-by-record one reads."""
    from kepp_core.evaluation import store
    from kepp_core.evaluation.store import reading

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(RECORD) + "\n" + json.dumps({**RECORD, "episode": "t/v/1:3"}) + "\n")
    fast = reading._fast_rows(path.read_bytes())
    assert fast is not None
    exact = reading._exact_rows(path)
    assert store.judge(fast).equals(store.judge(exact.select(fast.column_names)))
    rows = {(r["record"], r["method"]): r for r in fast.to_pylist()}
    assert rows[0, "kepp-R1+kbest"]["paths"] == RECORD["method_paths"]["kepp-R1+kbest"]
    assert rows[1, "kepp-R1+kbest"]["path_scores"] == RECORD["method_path_scores"]["kepp-R1+kbest"]
    assert rows[0, "kepp-R2"]["paths"] == RECORD["paths"] and rows[0, "kepp-R2"]["path_scores"] == RECORD["path_scores"]
    assert rows[0, "random"]["paths"] is None


@pytest.mark.parametrize(("change", "message"), [
    ({"method_paths": {"kepp-R1+kbest": "1 2 3"}}, r"'method_paths' must be methods mapped to their plans"),
    ({"method_path_scores": {"kepp-R1+kbest": ["high"]}}, r"'method_path_scores' must be methods mapped to their plans' scores"),
    ({"method_paths": {"kepp-R1+kbest": [[1, 2], [1, 4, 3]]}}, r"kepp-R1\+kbest's first recorded plan has 2 steps, expected 3"),
])
def test_a_recorded_kbest_plan_of_the_wrong_type_or_length_is_a_clear_error(tmp_path, change, message):
    from kepp_core import api
    from kepp_core.evaluation.store import reading

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({**RECORD, **change}) + "\n")
    assert reading._fast_rows(path.read_bytes()) is None  # the columnar reader leaves it to the exact one
    with pytest.raises(KeppError, match=message):
        api.read_predictions([path])
