"""Paired tests that respect runs: a one-run method (imported predictions, no seed) against a method of several
seeds is tested seed by seed (each seed's b, c and McNemar's p) and the seeds combined by the Cochran–Mantel–
Haenszel test (kepp_core.evaluation.stats.cmh_test), never by one McNemar over the pooled (seed, episode) units.
The CMH is checked against a hand count, Cochran's published example and a direct formula written here; the
A/B comparison and ``kepp eval compare`` (a real subprocess) against the seeds' own tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kepp_core import api, catalog
from kepp_core.errors import KeppError
from kepp_core.evaluation.records import write_records
from kepp_core.evaluation.stats import cmh_test, mcnemar_exact
from tests.helpers.cli import run_kepp


def _direct_cmh(tables, correction=True, shared_row=False) -> float:
    """The CMH statistic written out stratum by stratum (Mantel & Haenszel 1959), no arrays; ``shared_row``: one
    row is the same run in each of the K strata that count, so the variance is (K + 1) / 2 times their sum."""
    num, var, k = 0.0, 0.0, 0
    for (a, b), (c, d) in tables:
        n = a + b + c + d
        if n < 2:
            continue
        v = (a + b) * (c + d) * (a + c) * (b + d) / (n * n * (n - 1))
        if v == 0:
            continue
        num += a - (a + b) * (a + c) / n
        var += v
        k += 1
    if var == 0:
        return 0.0
    return max(abs(num) - (0.5 if correction else 0.0), 0.0) ** 2 / (var * ((k + 1) / 2 if shared_row else 1))


def test_cmh_of_two_strata_counted_by_hand():
    # stratum 1: A 8/10 right, B 4/10: E = 10·12/20 = 6, Var = 10·10·12·8/(400·19) = 9600/7600
    # stratum 2: A 6/10, B 5/10: E = 10·11/20 = 5.5, Var = 10·10·11·9/(400·19) = 9900/7600
    x, p = cmh_test([[[8, 2], [4, 6]], [[6, 4], [5, 5]]], correction=False)
    var = (9600 + 9900) / 7600
    assert x == pytest.approx((8 - 6 + 6 - 5.5) ** 2 / var, rel=1e-12)
    assert p == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-12)
    x_c, _ = cmh_test([[[8, 2], [4, 6]], [[6, 4], [5, 5]]])
    assert x_c == pytest.approx((2.5 - 0.5) ** 2 / var, rel=1e-12)


def test_cmh_matches_cochrans_penicillin_example_as_published():
    """R's mantelhaen.test(Rabbits): Mantel-Haenszel X-squared = 3.9286, p-value = 0.04747."""
    rabbits = [[[0, 6], [0, 5]], [[3, 3], [0, 6]], [[6, 0], [2, 4]], [[5, 1], [6, 0]], [[2, 0], [5, 0]]]
    x, p = cmh_test(rabbits)
    assert round(x, 4) == 3.9286 and round(p, 5) == 0.04747


def test_cmh_agrees_with_a_direct_formula_on_random_tables():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(200):
        tables = rng.integers(0, 40, size=(int(rng.integers(1, 7)), 2, 2))
        tables[rng.random(len(tables)) < 0.2, 0] = 0  # some strata with an empty row: they add nothing
        for correction in (True, False):
            for shared in (False, True):
                x, p = cmh_test(tables, correction, shared)
                assert x == pytest.approx(_direct_cmh(tables.tolist(), correction, shared), rel=1e-9, abs=1e-12)
                assert p == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9)
                checked += 1
    assert checked == 800


def test_one_run_shared_by_every_stratum_keeps_the_tests_level_where_the_plain_cmh_does_not():
    """Under the null (both methods right with the same chance on every episode), 5 seeds against one run: the
    plain CMH, which takes the strata as independent, rejects at 5% about a quarter of the time; with the one run
    counted once it rejects about 5% of the time, as a test at 5% should."""
    rng = np.random.default_rng(11)
    runs, seeds, n = 2000, 5, 300
    chance = rng.uniform(0.1, 0.9, size=(runs, 1, n))  # each episode's own difficulty, shared by both methods
    x = (rng.random((runs, seeds, n)) < chance).sum(axis=2)
    y = (rng.random((runs, 1, n)) < chance).sum(axis=2)
    rejected = {False: 0, True: 0}
    for r in range(runs):
        tables = [[[x[r, s], n - x[r, s]], [y[r, 0], n - y[r, 0]]] for s in range(seeds)]
        for shared in (False, True):
            rejected[shared] += cmh_test(tables, shared_row=shared)[1] < 0.05
    assert rejected[False] / runs > 0.15
    assert 0.02 <= rejected[True] / runs <= 0.08


def test_cmh_refuses_what_is_not_a_stack_of_two_by_two_counts():
    for bad in ([[1, 2], [3, 4]], [[[1, 2, 3], [4, 5, 6]]], [[[1, -2], [3, 4]]], [[[1.5, 2], [3, 4]]]):
        with pytest.raises(KeppError, match="CMH"):
            cmh_test(bad)
    assert cmh_test(np.zeros((3, 2, 2), dtype=int)) == (0.0, 1.0)


def _records(seeds: int, episodes: int, horizon: int = 3) -> tuple[list[dict], list[dict]]:
    """kepp-R2 over ``seeds`` seeds (each seed right on a different share of the episodes) and vpn's one run
    (no seed, no setting: as ``kepp records import`` writes it), right on about a third."""
    rng = np.random.default_rng(3)
    kepp, vpn = [], []
    for ep in range(episodes):
        truth = [ep % 5, 5 + ep % 3, 9]
        wrong = [truth[0], 99, truth[2]]
        base = {"T": horizon, "episode": f"t/v{ep}/0:{horizon}", "video": f"v{ep}", "task": "t", "gt": truth}
        vpn.append({**base, "plans": {"vpn": truth if rng.random() < 0.35 else wrong}})
        for s in range(seeds):
            right = rng.random() < 0.45 + 0.05 * s
            kepp.append({**base, "seed": s, "setting": "conventional", "plans": {"kepp-R2": truth if right else wrong}})
    return kepp, vpn


def _brute_seed_tables(c) -> dict[int, tuple[int, int, list]]:
    """Per seed, counted row by row from the paired units: b, c and the method × right/wrong table."""
    out = {}
    for seed in sorted(set(c.units["seed"])):
        rows = c.units[c.units["seed"] == seed]
        b = sum(1 for x, y in zip(rows["success_a"], rows["success_b"]) if x and not y)
        cc = sum(1 for x, y in zip(rows["success_a"], rows["success_b"]) if y and not x)
        ra, rb, n = int(sum(rows["success_a"])), int(sum(rows["success_b"])), len(rows)
        out[int(seed)] = (b, cc, [[ra, n - ra], [rb, n - rb]])
    return out


def test_a_one_run_method_against_five_seeds_is_tested_seed_by_seed_and_combined_by_cmh(tmp_path):
    kepp, vpn = _records(5, 300)
    write_records(tmp_path / "kepp.jsonl", kepp)
    write_records(tmp_path / "vpn.jsonl", vpn)
    preds = api.read_predictions([tmp_path / "kepp.jsonl", tmp_path / "vpn.jsonl"])
    c = api.compare_methods(preds, "kepp-R2", "vpn", 3, resamples=100)
    assert c.stratified and c.one_run == "vpn" and c.seeds == 5 and len(c.units) == 1500
    brute = _brute_seed_tables(c)
    assert [t.seed for t in c.per_seed] == [0, 1, 2, 3, 4]
    for t in c.per_seed:
        b, cc, table = brute[t.seed]
        assert (t.b, t.c, t.units) == (b, cc, 300) and t.p == mcnemar_exact(b, cc) and t.table() == table
    x = _direct_cmh([brute[s][2] for s in sorted(brute)], shared_row=True)
    assert c.p == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9)
    # the old optimistic pairing is gone: the headline is not one McNemar over the 1,500 pooled units
    pooled = mcnemar_exact(c.counts["a-only"], c.counts["b-only"])
    plain = cmh_test([brute[s][2] for s in sorted(brute)])[1]  # the seeds taken as independent experiments
    assert pooled < 1e-30 and plain < 1e-30 and c.p > 1e6 * max(pooled, plain)
    assert min(t.p for t in c.per_seed) < c.p
    assert "Cochran–Mantel–Haenszel" in c.test and c.test_name == "CMH over seeds"
    assert "one run, tested against each of 5 seeds" in c.verdict()
    row = c.row()
    assert row["test"] == catalog.AB_STRATIFIED_TEST and [r["seed"] for r in row["per_seed"]] == [0, 1, 2, 3, 4]
    # B the several-seed side: the same seeds' tables, A and B swapped
    swapped = api.compare_methods(preds, "vpn", "kepp-R2", 3, resamples=100)
    assert swapped.stratified and swapped.p == pytest.approx(c.p, rel=1e-12)
    assert [(t.b, t.c) for t in swapped.per_seed] == [(t.c, t.b) for t in c.per_seed]


def test_two_methods_of_the_same_seeds_keep_mcnemar_over_their_paired_units(tmp_path):
    kepp, _ = _records(3, 40)
    for rec in kepp:  # a second seeded method on the same units
        rec["plans"]["random"] = [rec["gt"][0], 98, rec["gt"][2]] if rec["seed"] != 1 else rec["gt"]
    write_records(tmp_path / "r.jsonl", kepp)
    c = api.compare_methods(api.read_predictions([tmp_path / "r.jsonl"]), "kepp-R2", "random", 3, resamples=100)
    assert not c.stratified and c.one_run is None and c.test == catalog.AB_TEST
    assert c.p == mcnemar_exact(c.counts["a-only"], c.counts["b-only"]) and c.row()["per_seed"] == []


@pytest.mark.slow
def test_kepp_eval_compare_prints_each_seeds_numbers_beside_the_cmh_p(tmp_path):
    kepp, vpn = _records(5, 120)
    write_records(tmp_path / "kepp.jsonl", kepp)
    write_records(tmp_path / "vpn.jsonl", vpn)
    want = api.compare_methods(api.read_predictions([tmp_path / "kepp.jsonl", tmp_path / "vpn.jsonl"]),
                               "kepp-R2", "vpn", 3, resamples=200)
    r = run_kepp("eval", "compare", tmp_path, "--a", "kepp-R2", "--b", "vpn", "--json", "--resamples", "200")
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = json.loads(r.stdout)["rows"]
    assert row["p"] == want.p and row["test"] == catalog.AB_STRATIFIED_TEST
    assert row["per_seed"] == [t.row() for t in want.per_seed]
    text = run_kepp("eval", "compare", tmp_path, "--a", "kepp-R2", "--b", "vpn", "--resamples", "200",
                    env={"COLUMNS": "80"})  # narrower than the table: it wraps between words, cuts none
    assert text.returncode == 0, text.stderr[-2000:]
    assert "(CMH" in text.stdout and "Cochran–Mantel–Haenszel" in text.stdout  # the header wraps where it must
    assert f"│ {catalog.p_text(want.p)} " in text.stdout  # the p itself whole in its cell, never cut ("1.4e…")
    for t in want.per_seed:
        assert f"seed {t.seed}: b={t.b:,} c={t.c:,} p={catalog.p_text(t.p)}" in text.stdout
