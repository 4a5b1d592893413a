"""Two methods episode by episode (kepp_core.evaluation.compare, ``kepp eval compare``): the 2×2
table's counts against a brute-force count over the records, McNemar's exact p against the
binomial tail enumerated by hand, the paired bootstrap against resampling the units one by one
(identical methods give [0, 0], a seed gives the same interval twice), and the real command line
on ``kepp eval`` records and a ``kepp protocol`` folder."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kepp_core import api, catalog
from kepp_core.errors import KeppError
from kepp_core.evaluation import stats
from kepp_core.evaluation.records import write_records
from kepp_core.evaluation.stats import bootstrap_interval, mcnemar_exact
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.training import untrained_protocol


def _records(outcomes: dict[str, list[tuple[int, int, bool]]], horizon: int = 3) -> list[dict]:
    """Records of methods ``outcomes`` (method -> [(seed, episode, right)]): a right plan is the
    truth, a wrong one has its middle step changed; a method may lack some units."""
    units: dict[tuple[int, int], dict] = {}
    for method, rows in outcomes.items():
        for seed, ep, right in rows:
            truth = [ep % 5, 5 + ep % 3, 9]
            rec = units.setdefault((seed, ep), {"seed": seed, "T": horizon, "episode": f"t/v{ep}/0:{horizon}",
                                                "video": f"v{ep}", "task": "t", "gt": truth, "plans": {}})
            rec["plans"][method] = truth if right else [truth[0], 99, truth[2]]
    return list(units.values())


def _table(tmp_path, outcomes, name="records.jsonl"):
    path = tmp_path / name
    write_records(path, _records(outcomes))
    return api.read_predictions([path])


units_strategy = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.booleans(), st.booleans(),
                                    st.sampled_from(["both", "a", "b"])), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(units_strategy)
def test_the_two_by_two_counts_and_mcnemars_p_match_a_brute_force_count(tmp_path_factory, units):
    outcomes: dict[str, list] = {"A": [], "B": []}
    seen = set()
    for seed, ep, a_right, b_right, who in units:
        if (seed, ep) in seen:
            continue
        seen.add((seed, ep))
        if who in ("both", "a"):
            outcomes["A"].append((seed, ep, a_right))
        if who in ("both", "b"):
            outcomes["B"].append((seed, ep, b_right))
    preds = _table(tmp_path_factory.mktemp("ab"), outcomes)
    a = {(s, e): r for s, e, r in outcomes["A"]}
    b = {(s, e): r for s, e, r in outcomes["B"]}
    shared = sorted(set(a) & set(b))
    if not outcomes["A"] or not outcomes["B"] or not shared:
        with pytest.raises(KeppError):
            api.compare_methods(preds, "A", "B", 3, resamples=50)
        return
    brute = {"both": 0, "a-only": 0, "b-only": 0, "neither": 0}
    for u in shared:
        brute[{(True, True): "both", (True, False): "a-only", (False, True): "b-only",
               (False, False): "neither"}[(a[u], b[u])]] += 1
    c = api.compare_methods(preds, "A", "B", 3, resamples=50)
    assert c.counts == brute and len(c.units) == len(shared)
    assert c.p == mcnemar_exact(brute["a-only"], brute["b-only"])
    for cell in catalog.AB_CELLS:  # each cell's rows are exactly its units
        got = {(int(s), int(e.split("/")[1][1:])) for s, e in zip(c.select(cell)["seed"], c.select(cell)["episode"])}
        assert len(got) == brute[cell] and all(
            cell == {(True, True): "both", (True, False): "a-only", (False, True): "b-only",
                     (False, False): "neither"}[(a[u], b[u])] for u in got)
    sa = np.array([a[u] for u in shared], float)
    sb = np.array([b[u] for u in shared], float)
    assert c.sr_a == round(100 * sa.mean(), 2) and c.delta == round(100 * (sa - sb).mean(), 2)


def _p_by_enumeration(b: int, c: int) -> float:
    """Every one of the 2^n ways the n discordant units could fall: the share at least as uneven."""
    n, m = b + c, min(b, c)
    hits = sum(1 for signs in itertools.product((0, 1), repeat=n) if min(sum(signs), n - sum(signs)) <= m)
    return min(1.0, hits / 2 ** n)


def _p_by_binomial_tails(b: int, c: int) -> Fraction:
    """Both tails of Binomial(n, 1/2) summed separately in exact fractions."""
    n, m = b + c, min(b, c)
    low = sum(Fraction(math.comb(n, k), 2 ** n) for k in range(m + 1))
    high = sum(Fraction(math.comb(n, k), 2 ** n) for k in range(n - m, n + 1))
    return min(Fraction(1), low + high) if 2 * m != n else Fraction(1)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 8), st.integers(0, 8))
def test_mcnemars_p_is_the_share_of_sign_outcomes_at_least_as_uneven(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(_p_by_enumeration(b, c), abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemars_p_is_both_binomial_tails_in_exact_fractions_and_in_log_space_above_the_limit(b, c):
    want = float(_p_by_binomial_tails(b, c))
    assert mcnemar_exact(b, c) == want
    with pytest.MonkeyPatch.context() as m:  # the log-space sum used above EXACT_BINOMIAL discordant units
        m.setattr(stats, "EXACT_BINOMIAL", 0)
        assert mcnemar_exact(b, c) == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_mcnemar_refuses_counts_that_are_not_whole_numbers():
    refused = 0
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(KeppError, match="whole number"):
            mcnemar_exact(bad, 2)
        refused += 1
    assert refused == 4


def test_the_paired_bootstrap_of_identical_methods_is_zero_and_a_seed_repeats_it():
    rng = np.random.default_rng(3)
    success = (rng.random(500) < 0.4).astype(float)
    assert bootstrap_interval(success - success) == (0.0, 0.0)
    groups = np.repeat(np.arange(100), 5)
    assert bootstrap_interval(success - success, groups) == (0.0, 0.0)
    other = (rng.random(500) < 0.5).astype(float)
    once = bootstrap_interval(success - other, seed=7)
    assert bootstrap_interval(success - other, seed=7) == once
    assert bootstrap_interval(success - other, seed=8) != once
    lo, hi = once
    assert lo < (success - other).mean() < hi


@pytest.mark.parametrize("clustered", [False, True])
def test_the_bootstrap_equals_drawing_units_or_episodes_one_by_one(clustered):
    rng = np.random.default_rng(11)
    episodes, seeds = 150, 3 if clustered else 1
    # one episode's seeds mostly agree (as they do): drawing units one by one would be too narrow
    base = rng.choice([-1.0, 0.0, 1.0], p=[0.15, 0.6, 0.25], size=(episodes, 1))
    noise = rng.choice([-1.0, 0.0, 1.0], p=[0.15, 0.6, 0.25], size=(episodes, seeds))
    d = np.where(rng.random((episodes, seeds)) < 0.8, base, noise).ravel()
    groups = np.repeat(np.arange(episodes), seeds) if clustered else None
    fast = bootstrap_interval(d, groups, resamples=20_000, seed=1)
    # the brute force: draw episodes (all their seeds) with replacement, 20,000 times
    per_episode = d.reshape(episodes, seeds).sum(axis=1)
    drawn = np.random.default_rng(2).integers(0, episodes, size=(20_000, episodes))
    means = per_episode[drawn].sum(axis=1) / (episodes * seeds)
    brute = np.quantile(means, [0.05, 0.95])
    np.testing.assert_allclose(fast, brute, atol=0.006)


def test_the_bootstrap_of_many_distinct_values_draws_units_and_covers_the_mean():
    rng = np.random.default_rng(5)
    x = rng.random(400)
    lo, hi = bootstrap_interval(x, resamples=4000, seed=0)
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert lo < x.mean() < hi and (hi - lo) == pytest.approx(2 * 1.6449 * se, rel=0.1)


def test_a_ninety_percent_bootstrap_interval_covers_the_true_sr_about_nine_times_in_ten():
    rng = np.random.default_rng(21)
    hits = 0
    for k in range(300):
        sample = (rng.random(200) < 0.45).astype(float)
        lo, hi = bootstrap_interval(sample, resamples=2000, seed=k)
        hits += lo <= 0.45 <= hi
    assert 0.84 <= hits / 300 <= 0.95, hits


def test_bad_bootstrap_inputs_are_clear_errors():
    for kwargs, words in (({"values": []}, "no units"), ({"values": [1.0], "confidence": 1.0}, "confidence"),
                          ({"values": [1.0], "resamples": 0}, "resamples"),
                          ({"values": [1.0, 0.0], "groups": [1]}, "group labels")):
        with pytest.raises(KeppError, match=words):
            bootstrap_interval(**kwargs)
    assert bootstrap_interval([1.0, 0.0], resamples=10) == (0.0, 1.0)  # the same call, valid, draws


def test_units_pair_on_their_seed_and_a_unit_recorded_twice_counts_once(tmp_path):
    outcomes = {"A": [(0, 1, True), (0, 2, False), (1, 1, True)], "B": [(0, 1, False), (0, 2, False), (2, 1, True)]}
    path = tmp_path / "r.jsonl"
    write_records(path, _records(outcomes))
    twice = api.read_predictions([path, path])  # the same file given twice: every unit twice
    c = api.compare_methods(twice, "A", "B", 3, resamples=100)
    assert len(c.units) == 2 and c.counts == {"both": 0, "a-only": 1, "b-only": 0, "neither": 1}
    assert c.seeds == 1 and "one seed" in c.resampling()


def test_imported_predictions_pair_with_each_seed_of_the_other_method_on_the_same_episode(tmp_path):
    """Another method's predictions brought in with kepp records import name no seed and no setting: they
    pair with a kepp eval run (seed 0, conventional) episode by episode, and with each seed of several."""
    kepp = _records({"kepp-R2": [(s, ep, ep % 2 == 0) for s in (0, 1) for ep in range(6)]})
    for rec in kepp:
        rec["setting"] = "conventional"
    vpn = [{k: v for k, v in rec.items() if k not in ("seed", "setting")} | {"plans": {"vpn": rec["gt"]}}
           for rec in kepp if rec["seed"] == 0]
    write_records(tmp_path / "kepp-records.jsonl", [r for r in kepp if r["seed"] == 0])
    write_records(tmp_path / "both-seeds-records.jsonl", kepp)
    write_records(tmp_path / "vpn-records.jsonl", vpn)
    one = api.compare_methods(api.read_predictions([tmp_path / "kepp-records.jsonl", tmp_path / "vpn-records.jsonl"]),
                              "kepp-R2", "vpn", 3, resamples=100)
    assert len(one.units) == 6 and one.counts == {"both": 3, "a-only": 0, "b-only": 3, "neither": 0}
    assert set(one.units["seed"]) == {0} and set(one.units["setting"]) == {"conventional"}
    two = api.compare_methods(api.read_predictions([tmp_path / "both-seeds-records.jsonl", tmp_path / "vpn-records.jsonl"]),
                              "vpn", "kepp-R2", 3, resamples=100)
    assert len(two.units) == 12 and two.seeds == 2 and two.counts["a-only"] == 6  # each seed's units


def test_a_p_value_that_underflows_is_written_below_the_floor_never_as_0(tmp_path):
    """1,200 discordant episodes all one way: McNemar's p is 2 / 2^1200, below the smallest double (0.0)."""
    c = api.compare_methods(_table(tmp_path, {"A": [(0, e, True) for e in range(1200)],
                                              "B": [(0, e, False) for e in range(1200)]}), "A", "B", 3, resamples=100)
    assert c.p == 0.0 and c.verdict().startswith("p < 1e-300 < 0.05: A is significantly better than B")
    written = [catalog.p_text(p) for p in (c.p, 4e-320, 3.24e-12, 0.005412, 0.05, 1.0, float("nan"))]
    assert written == ["< 1e-300", "< 1e-300", "3.2e-12", "0.005412", "0.05", "1", "—"]


def test_a_protocols_records_are_compared_at_their_largest_training_fraction_unless_told(tmp_path):
    recs = []
    for fraction, right in ((0.5, False), (1.0, True)):
        for r in _records({"A": [(s, e, right) for s in (0, 1) for e in range(4)],
                           "B": [(s, e, False) for s in (0, 1) for e in range(4)]}):
            recs.append({"fraction": fraction, **r})
    path = tmp_path / "records.jsonl"
    write_records(path, recs)
    preds = api.read_predictions([path])
    c = api.compare_methods(preds, "A", "B", 3, resamples=200)
    assert c.fraction == 1.0 and c.counts["a-only"] == 8 and c.seeds == 2 and c.episodes == 4
    assert "each drawn with all its 2 seeds" in c.resampling()
    half = api.compare_methods(preds, "A", "B", 3, fraction=0.5, resamples=200)
    assert half.counts["neither"] == 8 and half.delta_interval == (0.0, 0.0)
    with pytest.raises(KeppError, match="recorded: 0.5, 1"):
        api.compare_methods(preds, "A", "B", 3, fraction=0.25)


# --- the command line -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def protocol_out(tmp_path_factory):
    """A real ``kepp protocol`` output: a tiny world, 3 seeds, T = 3, methods that need no training."""
    return untrained_protocol(tmp_path_factory.mktemp("ab-protocol"), ["random", "graph-gt"], [3])[1]


@pytest.mark.slow
def test_kepp_eval_compare_prints_the_apis_numbers_and_writes_a_cells_episodes_with_both_plans(tmp_path):
    from kepp_core.paths import DEMO_ASSETS

    records, out = DEMO_ASSETS / "predictions.jsonl", tmp_path / "r2-not-nograph.csv"
    r = run_kepp("eval", "compare", records, "--a", "kepp-R2", "--b", "kepp-nograph", "-T", "3", "4",
                 "--cell", "a-only", "--episodes", out, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout)["rows"]
    preds = api.read_predictions([records])
    want = [api.compare_methods(preds, "kepp-R2", "kepp-nograph", h) for h in (3, 4)]
    assert [row["T"] for row in rows] == [3, 4]
    for row, c in zip(rows, want):
        assert {k: row[k] for k in catalog.AB_CELLS} == c.counts and row["p"] == c.p
        assert (row["delta_low"], row["delta_high"]) == c.delta_interval and row["resamples"] == 10_000
    table = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert len(table) == sum(c.counts["a-only"] for c in want)
    a_col, b_col = "A: " + catalog.method_label("kepp-R2"), "B: " + catalog.method_label("kepp-nograph")
    plans = {(m, e): " ".join(map(str, p)) for m, e, p, h in zip(preds["method"], preds["episode"], preds["plan"],
                                                                  preds["horizon"])}
    for line in table:  # both plans side by side, as recorded; A right and B wrong in every row
        assert line["A right"] == "True" and line["B right"] == "False" and line["cell"] == "A right, B wrong"
        assert line[a_col] == plans[("kepp-R2", line["episode"])] == line["ground truth"]
        assert line[b_col] == plans[("kepp-nograph", line["episode"])] != line["ground truth"]
    text = run_kepp("eval", "compare", records, "--a", "kepp-R2", "--b", "kepp-nograph", "-T", "3")
    assert text.returncode == 0 and "McNemar" in text.stdout and "one seed" in text.stdout
    assert f"{want[0].counts['a-only']}" in text.stdout and "p = 0.0054" in text.stdout


@pytest.mark.slow
def test_kepp_eval_compare_on_a_protocol_folder_counts_seed_and_episode_units(protocol_out):
    r = run_kepp("eval", "compare", protocol_out, "--a", "graph-gt", "--b", "random", "--json", "--resamples", "2000")
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = json.loads(r.stdout)["rows"]
    recs = [json.loads(x) for x in (protocol_out / catalog.RECORDS_FILE).read_text().splitlines()]
    recs = [x for x in recs if x["T"] == 3 and x["fraction"] == 1.0]
    assert row["seeds"] == 3 and row["units"] == len(recs) and row["fraction"] == 1.0
    a_only = sum(1 for x in recs if x["success"]["graph-gt"] and not x["success"]["random"])
    b_only = sum(1 for x in recs if not x["success"]["graph-gt"] and x["success"]["random"])
    assert (row["a-only"], row["b-only"]) == (a_only, b_only) and row["p"] == mcnemar_exact(a_only, b_only)
    assert row["delta_low"] <= row["delta"] <= row["delta_high"]


@pytest.mark.parametrize("args,words", [
    (["--a", "kepp-R2", "--b", "nope"], ["no records of method 'nope'", "recorded: "]),
    (["--a", "kepp-R2", "--b", "pdpp", "-T", "9"], ["-T 9", "T=3, 4, 5, 6"]),
    (["--a", "kepp-R2", "--b", "pdpp", "--resamples", "0"], ["--resamples 0"]),
    (["--a", "kepp-R2", "--b", "pdpp", "--confidence", "1.5"], ["--confidence 1.5"]),
    (["--a", "kepp-R2", "--b", "pdpp", "--fraction", "0.5"], ["no training fractions"]),
])
@pytest.mark.slow
def test_kepp_eval_compare_refuses_bad_input_in_one_line(args, words):
    from kepp_core.paths import DEMO_ASSETS

    assert_one_line_error(run_kepp("eval", "compare", DEMO_ASSETS / "predictions.jsonl", *args), *words)


@pytest.mark.slow
def test_kepp_eval_compare_refuses_a_folder_without_records_and_kepp_eval_still_needs_models(tmp_path):
    assert_one_line_error(run_kepp("eval", "compare", tmp_path, "--a", "x", "--b", "y"), str(tmp_path),
                          "a folder without records", ".jsonl or .parquet records files")
    assert_one_line_error(run_kepp("eval", "--dataset", "demo", "--root", tmp_path), "--models is required")


def test_a_one_seed_method_table_gives_each_cell_its_episode_level_bootstrap_interval():
    from kepp_core.api.analysis import TABLE_RESAMPLES
    from kepp_core.metrics import iou_per_episode
    from kepp_core.paths import DEMO_ASSETS

    preds = api.read_predictions([DEMO_ASSETS / "predictions.jsonl"])
    grid, _ = api.method_horizon_table(preds)
    rows = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 4)]
    plans, truths = list(rows["plan"]), list(rows["truth"])
    values = {"SR": [float(p == t) for p, t in zip(plans, truths)],
              "mAcc": [np.mean(np.array(p) == np.array(t)) for p, t in zip(plans, truths)],
              "mIoU": iou_per_episode(plans, truths)}
    assert len(plans) == 493  # the demo's T=4 test episodes
    for metric, v in values.items():
        lo, hi = bootstrap_interval(v, resamples=TABLE_RESAMPLES)
        assert grid.loc[catalog.method_label("kepp-R2"), f"T=4 {metric}"] == \
            f"{100 * np.mean(v):.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"


def test_a_method_compared_with_itself_is_refused(tmp_path):
    preds = _table(tmp_path, {"A": [(0, 1, True)], "B": [(0, 1, False)]})
    with pytest.raises(KeppError, match="A and B are both 'A': a method compared with itself"):
        api.compare_methods(preds, "A", "A", 3)


@pytest.mark.parametrize("files", ["one-file", "two-files"])
def test_one_episode_recorded_twice_with_different_plans_is_refused_naming_both(tmp_path, files):
    outcomes = {"A": [(0, 1, True), (0, 2, False)], "B": [(0, 1, False), (0, 2, False)]}
    again = _records({"A": [(0, 1, False)]})  # episode 1 of seed 0 once more, A's plan now wrong
    paths = [tmp_path / "r.jsonl", tmp_path / "again.jsonl"]
    if files == "one-file":
        write_records(paths[0], _records(outcomes) + again)
        paths = paths[:1]
    else:
        write_records(paths[0], _records(outcomes))
        write_records(paths[1], again)
    with pytest.raises(KeppError, match=r"episode 't/v1/0:3' \(T=3, seed 0\) is recorded twice with different "
                                        r"plans of 'A': 1 6 9 and 1 99 9"):
        api.compare_methods(api.read_predictions(paths), "A", "B", 3)


@pytest.mark.slow
def test_kepp_eval_compare_of_a_method_with_itself_is_one_line(tmp_path):
    from kepp_core.paths import DEMO_ASSETS

    assert_one_line_error(run_kepp("eval", "compare", DEMO_ASSETS / "predictions.jsonl", "--a", "pdpp", "--b",
                                   "pdpp"), "A and B are both 'pdpp'")
