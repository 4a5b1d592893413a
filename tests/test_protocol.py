"""``kepp protocol`` (docs, How to use the graph): a tiny spec that really trains two seeds, resumes after a kill,
skips what is finished; nested train fractions; the CI, t quantile and p-value computations
against hand-computed values; bad specs are clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.training import TINY, kepp, spec_file, tiny_world

torch.set_num_threads(1)
METHODS = ["random", "graph-gt", "kepp-nograph", "kepp-nograph+dec", "kepp-R1", "kepp-R1+dec", "kepp-R1-struct+dec"]


def write_spec(path: Path, world: Path, out: Path, **extra) -> Path:
    spec = {"dataset": "demo", "root": str(world), "horizons": [3], "methods": METHODS, "seeds": 2,
            "pairs": [["kepp-R1+dec", "kepp-nograph"]], "out": str(out), **extra}
    return spec_file(path, spec, {**TINY, "val_every": 20, "log_every": 10})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tiny_world(tmp_path_factory.mktemp("proto-world") / "world", seed=4)


@pytest.mark.slow
@pytest.mark.cpu
def test_protocol_trains_resumes_after_a_kill_and_reports(world, tmp_path):
    out = tmp_path / "run"
    spec = write_spec(tmp_path / "spec.toml", world, out)
    killed = kepp("protocol", spec, "--threads", "1", env={"KEPP_FAULT_AT": "state-json@3"})
    assert killed.returncode == 137  # killed at the third saved training state (the planning model's)
    r = kepp("protocol", spec, "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "(resumed)" in r.stdout
    result = json.loads((out / "results.json").read_text())
    assert {x["method"] for x in result["summary"]} == set(METHODS)
    assert sorted({x["seed"] for x in result["rows"]}) == [0, 1]
    # every seed is evaluated on the same test episodes
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    by_seed = {s: [r["episode"] for r in recs if r["seed"] == s] for s in (0, 1)}
    assert by_seed[0] == by_seed[1] and len(by_seed[0]) == result["episodes"]["3"]
    # the summary is the mean over seeds of the per-seed rows, and SR is the share of successes
    for row in result["summary"]:
        per_seed = [x["SR"] for x in result["rows"] if x["method"] == row["method"]]
        assert row["SR"] == pytest.approx(np.mean(per_seed))
        assert row["SR_ci"] == pytest.approx(6.313752 * np.std(per_seed, ddof=1) / math.sqrt(2), abs=1e-4)
        for s in (0, 1):
            succ = [r["success"][row["method"]] for r in recs if r["seed"] == s]
            seed_row = next(x for x in result["rows"] if x["method"] == row["method"] and x["seed"] == s)
            assert 100 * np.mean(succ) == pytest.approx(seed_row["SR"])
    pair = result["pairs"][0]
    d = [r["success"]["kepp-R1+dec"] - r["success"]["kepp-nograph"] for r in recs]
    assert pair["delta_SR"] == pytest.approx(100 * np.mean(d)) and pair["units"] == len(d)
    md = (out / "results.md").read_text()
    assert "| KEPP R=1 + graph decoding (`kepp-R1+dec`) |" in md and "Paired tests" in md
    # a third run trains nothing and reuses the evaluations
    again = kepp("protocol", spec, "--threads", "1")
    assert again.returncode == 0 and "trained 0 model(s)" in again.stdout and "(resumed)" not in again.stdout
    assert json.loads((out / "results.json").read_text())["summary"] == result["summary"]


def test_train_fractions_are_nested_and_keep_the_test_split(world):
    from kepp_core.data import load_dataset
    from kepp_core.experiments.protocol import fraction_subset

    ds = load_dataset("demo", world)
    sets = {f: {v.id for v in fraction_subset(ds, f).split("train")} for f in (0.25, 0.5, 1.0)}
    assert sets[0.25] < sets[0.5] < sets[1.0] and sets[0.25]
    assert len(sets[0.5]) == round(0.5 * len(sets[1.0])) and len(sets[0.25]) == round(0.25 * len(sets[1.0]))
    assert [v.id for v in fraction_subset(ds, 0.25).split("test")] == [v.id for v in ds.split("test")]
    assert fraction_subset(ds, 0.25).vocabulary_hash() == ds.vocabulary_hash()


def test_t_quantiles_intervals_and_p_values_match_hand_computed_values():
    from kepp_core.evaluation.stats import mean_ci, paired_permutation_test, t_quantile

    for df, table in ((1, 6.313752), (2, 2.919986), (4, 2.131847), (9, 1.833113), (30, 1.697261)):
        assert t_quantile(0.95, df) == pytest.approx(table, abs=1e-6)
    assert t_quantile(0.975, 4) == pytest.approx(2.776445, abs=1e-6)
    # 5 seeds: mean 50, sample sd sqrt(2.5); half-width t(0.95, 4) * sd / sqrt(5)
    m, h = mean_ci([48, 49, 50, 51, 52])
    assert m == 50 and h == pytest.approx(2.131847 * math.sqrt(2.5) / math.sqrt(5), abs=1e-6)
    assert math.isnan(mean_ci([3.0])[1])
    # exact sign flips: 3 wins, 1 loss -> |sum| = 2; patterns with |sum| >= 2: 10 of 16
    assert paired_permutation_test([1, 1, 1, -1, 0, 0]) == pytest.approx(10 / 16)
    assert paired_permutation_test([1, 1, 1, 1]) == pytest.approx(2 / 16)
    assert paired_permutation_test([0, 0]) == 1.0
    # Monte Carlo (> 16 non-zero): 30 wins of 30 -> p = 1 / (1 + permutations)
    assert paired_permutation_test([1] * 30, permutations=999) == pytest.approx(1 / 1000)
    p = paired_permutation_test([1] * 12 + [-1] * 8, permutations=20000)
    assert p == pytest.approx(0.5034, abs=0.02)  # exact two-sided binomial: P(|W - 10| >= 2), W ~ Bin(20, 1/2)


def test_summary_and_table_from_given_rows():
    from kepp_core.catalog import METRIC_KEYS as METRICS
    from kepp_core.evaluation.stats import summarise
    from kepp_core.experiments.protocol import markdown, paired_tests

    rows = [{"fraction": 1.0, "T": 3, "method": "kepp-R1", "seed": s, "SR": v, "mAcc": 70.0, "mIoU": 60.0,
             "mIoU_b256": 80.0} for s, v in enumerate([40.0, 44.0])]
    (row,) = summarise(rows, METRICS, ("fraction", "T", "method"))
    assert row["SR"] == 42.0 and row["SR_ci"] == pytest.approx(6.313752 * math.sqrt(8) / math.sqrt(2), abs=1e-5)
    recs = [{"fraction": 1.0, "T": 3, "success": {"a": a, "b": b}} for a, b in [(1, 0), (1, 0), (0, 0), (1, 1)]]
    (pair,) = paired_tests(recs, [("a", "b")])
    assert pair["delta_SR"] == 50.0 and pair["wins"] == 2 and pair["p"] == pytest.approx(0.5)
    md = markdown({"dataset": "demo", "spec": {"confidence": 0.9, "setting": "conventional", "preset": "demo",
                                               "seeds": [0, 1], "train_fractions": [1.0], "horizons": [3],
                                               "methods": ["kepp-R1"]},
                   "episodes": {"3": 4}, "summary": [row], "pairs": [pair]})
    assert "| KEPP R=1 (`kepp-R1`) | 42.0 ± 12.6 | 70.0 ± 0.0 | 60.0 ± 0.0 | 80.0 ± 0.0 |" in md
    assert "| `a` | `b` | 100% | 3 | +50.0 | 2 / 0 | 0.5000 |" in md


@pytest.mark.slow
@pytest.mark.parametrize("body, message", [
    ('out = "x"\nmethods = ["kepp-R9"]', "unknown method 'kepp-R9'"),
    ('out = "x"\nmethods = ["kepp-R1"]\npairs = [["kepp-R1", "pdpp"]]', "'pdpp' is not among the spec's methods"),
    ('out = "x"\ncolour = "red"', "unknown key(s) ['colour']"),
    ('methods = ["kepp-R1"]', "'out' (the output folder) is required"),
    ('out = "x"\ntrain_fractions = [0.0]', "train_fractions must lie in (0, 1]"),
    ('out = "x"\nseeds = 0', "expected at least one seed"),
    ('out = "x"\n[train]\nlearning = 3', "unknown training option(s) ['learning']"),
    ('out = "x"\ndecode = "sideways"', "expected one of free, pinned, topk or topk:K"),
    ('out = = 3', "not valid TOML"),
])
def test_bad_specs_are_clear_errors(tmp_path, body, message):
    spec = tmp_path / "bad.toml"
    spec.write_text(body + "\n", encoding="utf-8")
    r = kepp("protocol", spec)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_demo_table_is_a_protocol_spec_run_by_the_protocol_runner(world, tmp_path):
    from kepp_core.evaluation.records import read_records
    from kepp_core.catalog import METRIC_KEYS as METRICS
    from kepp_core.evaluation.report import STEP_METRICS, horizon_table
    from kepp_core.evaluation.stats import summarise

    out = tmp_path / "table"
    spec = spec_file(tmp_path / "table.toml", {"dataset": "demo", "root": str(world), "horizons": [3, 4],
                                               "methods": ["random", "graph-pred", "kepp-nograph"], "seeds": 3,
                                               "out": str(tmp_path / "elsewhere")}, {**TINY, "val_every": 20})
    # the command's options override the spec's keys
    r = kepp("demo", "table", "--spec", spec, "--seeds", "2", "--horizons", "3", "--out", out, "--threads", "1")
    assert r.returncode == 0, r.stderr
    table = json.loads((out / "table.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert table["rows"] == results["rows"] and table["seeds"] == [0, 1] and table["horizons"] == [3]
    assert {"first_acc", "last_acc"} <= set(table["rows"][0])  # the step model's accuracy rides on every row
    # mean ± std over seeds of the protocol's per-seed rows, printed and written as the same table
    assert table["summary"] == summarise(results["rows"], METRICS + STEP_METRICS, ("method", "T", "setting"), "std")
    md = horizon_table(table["summary"], [3])
    assert (out / "table.md").read_text() == md + "\n" and md in r.stdout and "(SR ± " in md
    assert (out / "frac100" / "seed1" / "T3" / "plan-none" / "config.json").is_file()
    assert len(read_records(out / "records.jsonl")) == 2 * results["episodes"]["3"]
    assert not (tmp_path / "elsewhere").exists()


def test_the_shipped_demo_table_spec_loads():
    from kepp_core.paths import DEMO_TABLE_SPEC
    from kepp_core.experiments.protocol import load_protocol, override_spec

    spec = load_protocol(DEMO_TABLE_SPEC)
    assert spec.seeds == (0, 1, 2) and spec.horizons == (3, 4, 5, 6) and spec.out == "runs/demo-table"
    assert override_spec(spec, "cli", seeds=1, horizons=[3]).horizons == (3,)
