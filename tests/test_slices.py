"""Metrics by slice and the episode map, against brute force: every slice's count, SR, mAcc and
ends right (first and last step right) equal a loop over the records with the metrics module; the differences and the
paired p-value equal the statistics module's test on the same per-unit numbers; the map's PCA
equals numpy's full SVD, and the map is remembered per dataset until a feature file changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kepp_core import api
from kepp_core.catalog import PATTERNS, SLICE_BY
from kepp_core.errors import KeppError
from kepp_core.evaluation import slices
from kepp_core.evaluation.episode_map import episode_coordinates, pca_2d
from kepp_core.evaluation.stats import paired_permutation_test
from kepp_core.metrics import endpoint_rate, mean_accuracy, success_rate

TASKS = ["tea", "coffee", "<img src=x onerror=alert(1)>", "a:b | c"]


def write_records(path: Path, seeds=(0, 1, 2), episodes: int = 40, rng_seed: int = 0) -> Path:
    """Prediction records as ``kepp eval --records`` writes them: two methods, several seeds and
    horizons, plans that are right, wrong at the ends, repeated or otherwise wrong."""
    rng = np.random.default_rng(rng_seed)
    lines = []
    for seed in seeds:
        for i in range(episodes):
            horizon = 3 + i % 3
            task = TASKS[i % len(TASKS)]
            gt = [int(a) for a in rng.integers(0, 6, horizon)]
            plans = {}
            for method, noise in (("kepp-R2", 0.25), ("kepp-nograph", 0.4)):
                plans[method] = [a if rng.random() > noise else int(rng.integers(0, 6)) for a in gt]
            ends = [gt[0] if rng.random() > 0.3 else (gt[0] + 1) % 6, gt[-1]]
            lines.append({"episode": f"{task}/v{i}/0:{horizon}", "video": f"v{i}", "task": task, "T": horizon,
                          "setting": "conventional", "seed": seed, "gt": gt, "endpoints": ends,
                          "endpoint_scores": [0.9, 0.8], "paths": [gt], "path_scores": [0.5], "plans": plans})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


@pytest.fixture(scope="module")
def preds(tmp_path_factory):
    return api.read_predictions([write_records(tmp_path_factory.mktemp("slices") / "records.jsonl")])


def brute_force(preds: pd.DataFrame, method: str, by: str, horizon: int | None) -> dict[str, dict]:
    """Each slice's metrics by a loop over the rows, with the metrics module."""
    groups: dict[str, list] = {}
    for r in preds.itertuples():
        if r.method != method or (horizon is not None and r.horizon != horizon):
            continue
        ends = r.plan[0] == r.truth[0] and r.plan[-1] == r.truth[-1]
        key = {"task": str(r.task), "pattern": r.pattern or "success", "horizon": str(r.horizon),
               "ends": "right" if ends else "wrong"}[by]
        groups.setdefault(key, []).append((r.plan, r.truth, ends))
    return {k: {"count": len(g), "SR": success_rate([p for p, _, _ in g], [t for _, t, _ in g]),
                "mAcc": mean_accuracy([p for p, _, _ in g], [t for _, t, _ in g]),
                "ends right": endpoint_rate([p for p, _, _ in g], [t for _, t, _ in g])} for k, g in groups.items()}


@pytest.mark.parametrize("by", list(SLICE_BY))
@pytest.mark.parametrize("horizon", [None, 4])
def test_every_slice_counts_and_scores_like_a_loop_over_the_records(preds, by, horizon):
    table = slices.slice_table(preds, "kepp-R2", by, horizon=horizon).table
    expected = brute_force(preds, "kepp-R2", by, horizon)
    assert sorted(table["slice"]) == sorted(expected)
    for row in table.to_dict("records"):
        want = expected[row["slice"]]
        assert row["count"] == want["count"]
        for metric in ("SR", "mAcc", "ends right"):
            assert row[metric] == pytest.approx(want[metric], abs=0.005), (row["slice"], metric)
    assert table["count"].sum() == ((preds["method"] == "kepp-R2")
                                    & ((preds["horizon"] == horizon) if horizon else True)).sum()


def test_pattern_slices_follow_the_failure_analysis_order(preds):
    table = slices.slice_table(preds, "kepp-R2", "pattern").table
    order = ["success", *PATTERNS]
    assert list(table["slice"]) == sorted(table["slice"], key=order.index)


def paired_units(preds, method: str, reference: str, by: str, value: str):
    """Per (episode, seed) unit of the slice: success, steps right and ends right of both methods."""
    own = preds[preds["method"] == method]
    own = own[slices.slice_values(own, by) == value]
    ref = {(r.episode, r.seed): r for r in preds[preds["method"] == reference].itertuples()}
    units = []
    for r in own.itertuples():
        b = ref[(r.episode, r.seed)]
        units.append([(float(x.success), sum(p == t for p, t in zip(x.plan, x.truth)), len(x.truth),
                       float(x.plan[0] == x.truth[0] and x.plan[-1] == x.truth[-1])) for x in (r, b)])
    return units


@pytest.mark.parametrize("by", ["task", "ends", "pattern"])
def test_differences_and_the_paired_p_value_are_the_statistics_modules_on_the_same_units(preds, by):
    table = slices.slice_table(preds, "kepp-R2", by, reference="kepp-nograph").table
    assert len(table) == len(brute_force(preds, "kepp-R2", by, None)) >= 2  # every slice of the cut, compared
    for row in table.to_dict("records"):
        units = paired_units(preds, "kepp-R2", "kepp-nograph", by, row["slice"])
        d = [a[0] - b[0] for a, b in units]
        assert row["pairs"] == len(units)
        assert row["Δ SR"] == pytest.approx(100 * np.mean(d), abs=0.005)
        assert row["Δ mAcc"] == pytest.approx(100 * (sum(a[1] for a, _ in units) - sum(b[1] for _, b in units))
                                               / sum(a[2] for a, _ in units), abs=0.005)
        assert row["Δ ends right"] == pytest.approx(100 * np.mean([a[3] - b[3] for a, b in units]), abs=0.005)
        assert row["p"] == paired_permutation_test(d, slices.PERMUTATIONS)


def test_one_seed_gives_differences_but_no_p_value(tmp_path):
    one = api.read_predictions([write_records(tmp_path / "r.jsonl", seeds=(0,))])
    table = slices.slice_table(one, "kepp-R2", "task", reference="kepp-nograph").table
    assert table["p"].isna().all() and table["Δ SR"].notna().all()


def test_an_imported_run_pairs_by_slice_with_a_seeded_reference_as_the_ab_table_pairs_it(tmp_path):
    """By slice against a seeded method once paired 0 episodes with an imported run (no seed, no setting)
    while the A/B table paired them all: both pair by one rule (compare.pair_index)."""
    seeded = write_records(tmp_path / "kepp-records.jsonl")
    lines = [json.loads(line) for line in seeded.read_text().splitlines()]
    imported = [{k: v for k, v in r.items() if k not in ("seed", "setting", "endpoints", "endpoint_scores", "paths",
                                                          "path_scores")} | {"plans": {"vpn": r["plans"]["kepp-R2"]}}
                for r in lines if r["seed"] == 0]
    (tmp_path / "vpn-records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in imported))
    preds = api.read_predictions([seeded, tmp_path / "vpn-records.jsonl"])
    pairs = {}
    for method, reference in (("vpn", "kepp-R2"), ("kepp-R2", "vpn")):
        table = slices.slice_table(preds, method, "task", reference=reference).table
        ab = api.compare_methods(preds, method, reference, resamples=10)
        pairs[method] = (dict(zip(table["slice"], table["pairs"])), ab.units.groupby("task").size().to_dict())
        assert table["p"].notna().all()  # the pairs span three seeds
        deltas = [(row["Δ SR"], 100 * (u["success_a"].mean() - u["success_b"].mean()))
                  for row in table.to_dict("records") for u in [ab.units[ab.units["task"] == row["slice"]]]]
        assert [a for a, _ in deltas] == pytest.approx([b for _, b in deltas], abs=0.005)
    assert all(by_slice == by_ab and sum(by_slice.values()) == len(lines) for by_slice, by_ab in pairs.values())
    assert len(pairs) == 2  # each seed's episode once, both ways round


def test_selecting_a_slice_gives_the_rows_it_counted(preds):
    result = api.slice_table(preds, "kepp-R2", "task", "kepp-nograph", 3)
    own = preds[(preds["method"] == "kepp-R2") & (preds["horizon"] == 3)]
    for value, count in zip(result.table["slice"], result.table["count"]):
        rows = result.select(own, value)
        assert len(rows) == count and set(rows["task"]) == {value}
    assert len(result.select(own, "no such task")) == 0


def test_bad_slice_and_unknown_method_are_clear_errors(preds):
    with pytest.raises(KeppError, match="unknown slice 'colour'"):
        slices.slice_table(preds, "kepp-R2", "colour")
    with pytest.raises(KeppError, match="no records of method 'nope'"):
        slices.slice_table(preds, "nope", "task")


# --- the episode map -----------------------------------------------------------------------------------------------
def test_pca_agrees_with_numpys_full_svd():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((500, 120)) * np.r_[9.0, 4.0, np.linspace(1.0, 0.1, 118)] + rng.standard_normal(120)
    xy, share = pca_2d(x)
    centred = x - x.mean(axis=0)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    reference = u[:, :2] * s[:2]
    for k in range(2):  # the same axis up to its sign, and the sign chosen by the largest loading
        sign = np.sign(vt[k, np.abs(vt[k]).argmax()])
        np.testing.assert_allclose(xy[:, k], reference[:, k] * sign, atol=1e-6 * s[0])
    np.testing.assert_allclose(share, s[:2] ** 2 / (s ** 2).sum(), rtol=1e-6)


def test_pca_of_identical_rows_is_the_origin():
    xy, share = pca_2d(np.ones((5, 3)))
    assert np.all(xy == 0) and np.all(share == 0)
    with pytest.raises(KeppError, match="non-empty"):
        pca_2d(np.zeros((0, 3)))


@pytest.mark.slow
def test_the_map_holds_every_test_episode_and_is_remembered_until_a_feature_file_changes(app_world, monkeypatch,
                                                                                            tmp_path):
    from kepp_core.data import load_dataset, make_episodes

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    ds = load_dataset("demo", app_world)
    first = api.episode_map(ds, 3)
    assert first["episodes"] == [e.id for e in make_episodes(ds, 3, "test")]
    assert len(first["x"]) == len(first["y"]) == len(first["episodes"]) and first["skipped"] == 0
    assert 0 < first["explained"][1] <= first["explained"][0] < 1
    assert first == json.loads(json.dumps(episode_coordinates(ds, 3)))  # what the core computes
    stored = list((tmp_path / "home" / "episode-maps").glob("*.json"))
    assert len(stored) == 1
    # remembered: a second call reads the file (a planted value comes back) ...
    data = json.loads(stored[0].read_text())
    data["value"]["x"][0] = 12345.0
    stored[0].write_text(json.dumps(data))
    assert api.episode_map(ds, 3)["x"][0] == 12345.0
    # ... until a test video's feature file changes
    video = ds.split("test")[0]
    stat = video.feature_file.stat()
    os.utime(video.feature_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    try:
        assert api.episode_map(ds, 3)["x"][0] != 12345.0
    finally:
        os.utime(video.feature_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_dataset_without_features_is_a_clear_error(niv_dataset):
    with pytest.raises(KeppError, match="no test episode of T=3 has observation features"):
        episode_coordinates(niv_dataset, 3)
