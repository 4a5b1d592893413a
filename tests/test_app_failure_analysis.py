"""Failure patterns and statistics (kepp_core.evaluation.failures), which the app's
Failure cases page shows."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kepp_core.errors import KeppError
from kepp_core.catalog import PATTERNS
from kepp_core.evaluation.failures import (EpisodeOutcome, classify_failures, failure_patterns,
                                           failure_stats, has_repeated_subsequence, outcome_from_record)
from kepp_core.evaluation.records import read_records


def brute_force_repeat(plan: tuple[int, ...]) -> bool:
    """Reference: any two non-overlapping equal runs of length >= 1."""
    n = len(plan)
    for k in range(1, n + 1):
        for i, j in itertools.combinations(range(n - k + 1), 2):
            if j - i >= k and plan[i:i + k] == plan[j:j + k]:
                return True
    return False


@given(st.lists(st.integers(0, 3), min_size=0, max_size=8).map(tuple))
@settings(max_examples=200, deadline=None)
def test_repeated_subsequence_agrees_with_brute_force(plan):
    assert has_repeated_subsequence(plan) == brute_force_repeat(plan)


def test_overlapping_runs_are_not_a_repeat():
    # "1 1 1" contains "1 1" twice, but the two runs overlap; the single action 1 repeats though.
    assert has_repeated_subsequence((1, 1, 1))
    assert not has_repeated_subsequence((1, 2, 3), max_length=3)
    assert has_repeated_subsequence((4, 7, 4, 7, 9), max_length=2)


def test_success_has_no_pattern():
    assert failure_patterns(EpisodeOutcome("e", (1, 2, 3), (1, 2, 3), (1, 3))) == ()


def test_wrong_endpoint_uses_step_model_endpoints_not_plan():
    # The plan's own ends are right, but the step model's â_T was wrong.
    o = EpisodeOutcome("e", truth=(1, 2, 3), plan=(1, 4, 3), endpoints=(1, 5))
    assert failure_patterns(o)[0] == "wrong_endpoint"
    # Without a step model the plan's ends decide.
    o2 = EpisodeOutcome("e", truth=(1, 2, 3), plan=(1, 4, 3))
    assert failure_patterns(o2) == ("other",)


def test_same_start_end_ranks_after_wrong_endpoint():
    o = EpisodeOutcome("e", truth=(2, 5, 2), plan=(2, 2, 2), endpoints=(2, 2))
    assert failure_patterns(o) == ("same_start_end", "repeated_subsequence")
    [f] = classify_failures([o])
    assert f.primary == "same_start_end"


def test_repeated_subsequence_in_prediction_counts():
    o = EpisodeOutcome("e", truth=(1, 2, 3, 4), plan=(1, 3, 1, 4), endpoints=(1, 4))
    assert failure_patterns(o) == ("repeated_subsequence",)


def test_stats_match_hand_computed_shares():
    outcomes = [
        # success, top path equals truth
        EpisodeOutcome("s1", (1, 2, 3), (1, 2, 3), (1, 3), (1, 2, 3)),
        # success, top path differs
        EpisodeOutcome("s2", (1, 2, 3), (1, 2, 3), (1, 3), (1, 4, 3)),
        # failure with a wrong endpoint, top path differs
        EpisodeOutcome("f1", (1, 2, 3), (6, 2, 3), (6, 3), (6, 2, 3)),
        # failure with right endpoints, top path equals the truth
        EpisodeOutcome("f2", (1, 2, 3), (1, 5, 3), (1, 3), (1, 2, 3)),
        # failure without a graph path (not counted in the path shares)
        EpisodeOutcome("f3", (1, 2, 1), (1, 1, 1), (1, 1), None),
    ]
    s = failure_stats(outcomes)
    assert (s.episodes, s.failures) == (5, 3)
    assert s.success_rate == pytest.approx(40.0)
    assert s.wrong_endpoint_of_all == pytest.approx(20.0)
    assert s.wrong_endpoint_of_failures == pytest.approx(100 / 3)
    assert s.top_path_differs_in_successes == pytest.approx(50.0)
    assert s.top_path_differs_in_failures == pytest.approx(50.0)
    assert s.pattern_counts == {"wrong_endpoint": 1, "same_start_end": 1, "repeated_subsequence": 0, "other": 1}
    assert s.pattern_any_counts["repeated_subsequence"] == 1
    assert sum(s.pattern_counts.values()) == s.failures
    assert [r["statistic"] for r in s.as_rows()][:2] == ["episodes", "failures"]


def test_stats_of_no_episodes_are_undefined_not_zero():
    s = failure_stats([])
    assert s.success_rate is None and s.wrong_endpoint_of_failures is None
    assert set(s.pattern_counts) == set(PATTERNS)


RECORD = {"episode": "t/v/0:3", "video": "v", "task": "t", "T": 3, "gt": [1, 2, 3],
          "plans": {"kepp-R2": [1, 4, 3], "pdpp": [1, 2, 3], "kepp-nograph": [5, 2, 3]},
          "endpoints": [1, 3], "paths": [[1, 4, 3], [1, 2, 3]], "path_scores": [0.5, 0.2]}


def test_outcome_from_record_uses_endpoints_and_paths_only_for_kepp_methods():
    o = outcome_from_record(RECORD, "kepp-R2")
    assert (o.plan, o.top_path, o.endpoints, o.task, o.method) == ((1, 4, 3), (1, 4, 3), (1, 3), "t", "kepp-R2")
    assert outcome_from_record(RECORD, "pdpp").success
    nograph = outcome_from_record(RECORD, "kepp-nograph")
    assert nograph.endpoints is None and nograph.top_path is None
    assert failure_patterns(nograph) == ("wrong_endpoint",)  # judged by its own first step


def test_records_round_trip_through_jsonl_and_parquet(tmp_path):
    from kepp_core.evaluation.records import write_records

    for name in ("preds.jsonl", "preds.parquet"):
        path = write_records(tmp_path / name, [RECORD, {**RECORD, "episode": "t/v/1:3"}])
        recs = read_records(path)
        assert [r["episode"] for r in recs] == ["t/v/0:3", "t/v/1:3"]
        assert outcome_from_record(recs[1], "kepp-R2").top_path == (1, 4, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.jsonl", "preds.parquet"]  # both, no temporary left


def test_bad_records_raise_clear_errors(tmp_path):
    with pytest.raises(KeppError, match="no plan for method 'x'"):
        outcome_from_record(RECORD, "x")
    with pytest.raises(KeppError, match="plan has 2 steps, ground truth has 3"):
        outcome_from_record({**RECORD, "plans": {"pdpp": [1, 2]}}, "pdpp")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"episode": "a", "gt": [1], "plans": {}}\n{not json\n')
    with pytest.raises(KeppError, match=r"bad.jsonl:2: invalid JSON"):
        read_records(bad)
    bad.write_text('{"episode": "a"}\n')
    with pytest.raises(KeppError, match="lacks gt, plans"):
        read_records(bad)
    with pytest.raises(KeppError, match="not found"):
        read_records(tmp_path / "missing.jsonl")


# --- the app's records table: every row judged at once, the same as one by one ------------------------------
@given(st.integers(1, 7).flatmap(lambda n: st.lists(
    st.tuples(*(st.tuples(*[st.integers(0, 3)] * k) for k in (n, n, 2))), min_size=1, max_size=30)))
@settings(max_examples=150, deadline=None)
def test_batched_patterns_agree_with_one_by_one(rows):
    import numpy as np

    from kepp_core.evaluation.failures import failure_patterns_batch

    truths, plans, ends = (np.array([r[i] for r in rows]) for i in range(3))
    expected = [failure_patterns(EpisodeOutcome("e", t, p, e)) for t, p, e in rows]
    assert failure_patterns_batch(truths, plans, ends) == expected


def random_records(seed: int, n: int) -> list[dict]:
    """Records as ``kepp eval --records`` writes them: horizons 3 to 5, baselines and KEPP methods
    (endpoints and graph paths), plans often right, loops and repeats on purpose."""
    import random

    rng = random.Random(seed)
    recs = []
    for i in range(n):
        T = rng.choice([3, 4, 5])
        gt = [rng.randrange(5) for _ in range(T)]
        near = lambda: [a if rng.random() < 0.7 else rng.randrange(5) for a in gt]  # noqa: E731
        recs.append({"episode": f"t{i % 3}/v{i}/0:{T}", "task": f"t{i % 3}", "video": f"v{i}", "T": T, "seed": 0,
                     "setting": "conventional", "start_time": 1.0, "goal_time": 9.0, "gt": gt,
                     "endpoints": [near()[0], near()[-1]], "endpoint_scores": [rng.random(), rng.random()],
                     "paths": [near(), near()], "path_scores": [0.4, 0.3],
                     "plans": {m: near() for m in ("random", "graph-gt", "graph-pred", "kepp-R1", "kepp-R2")}})
    return recs


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_the_records_table_is_every_methods_outcome_judged_one_by_one(tmp_path, suffix):
    from kepp_core.api import read_predictions
    from kepp_core.evaluation.failures import stored_paths
    from kepp_core.evaluation.records import write_records

    recs = random_records(7, 400)
    path = write_records(tmp_path / f"preds{suffix}", recs)
    table = read_predictions([path])
    assert len(table) == 5 * len(recs)
    rows = iter(table.itertuples())
    for rec in read_records(path):
        for method in rec["plans"]:
            row, o = next(rows), outcome_from_record(rec, method)
            pats = failure_patterns(o)
            k = stored_paths(method)
            assert (row.episode, row.method, row.horizon, row.source) == (rec["episode"], method, rec["T"], path.name)
            assert (row.truth, row.plan, row.endpoints, row.success) == (o.truth, o.plan, o.endpoints, o.success)
            assert (row.patterns, row.pattern) == (", ".join(pats), pats[0] if pats else "")
            assert row.paths == [tuple(p) for p in rec["paths"][:k]] and row.path_scores == rec["path_scores"][:k]
            assert row.endpoint_scores == (rec["endpoint_scores"] if o.endpoints is not None else None)
    assert set(table["pattern"]) >= {"", "wrong_endpoint", "same_start_end", "repeated_subsequence", "other"}
    with pytest.raises(KeppError, match="plan has 2 steps, ground truth has 3"):
        read_predictions([write_records(tmp_path / "bad.jsonl", [{**RECORD, "plans": {"pdpp": [1, 2]}}])])
