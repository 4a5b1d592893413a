"""The demo: shipped checkpoints load and reproduce their recorded metrics; ``kepp demo`` commands."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.training import kepp
from kepp_core.paths import REPO_ROOT

torch.set_num_threads(1)
REPO = REPO_ROOT
ASSETS = REPO / "assets" / "demo"


def manifest() -> dict:
    path = ASSETS / "manifest.json"
    if not path.is_file():
        pytest.skip("no shipped demo checkpoints in assets/demo (make them with 'kepp demo models')")
    return json.loads(path.read_text())


@pytest.mark.slow
def test_shipped_checkpoints_load_for_every_horizon():
    from kepp_core.experiments.demo import DEMO_MEMBERS
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.models.folders import trained_horizons
    from kepp_core.planner import KEPPPlanner

    man = manifest()
    assert trained_horizons(ASSETS) == man["horizons"]
    for h in man["horizons"]:
        for m in DEMO_MEMBERS:
            _, cfg = load_checkpoint(ASSETS / f"T{h}" / m)
            assert cfg["dataset"]["vocabulary_hash"] == man["vocabulary_hash"] and cfg["dataset"]["horizon"] == h
        assert KEPPPlanner.from_models(ASSETS, h, R=2).horizon == h
    size = sum(p.stat().st_size for p in ASSETS.rglob("*") if p.is_file())
    assert size < 40e6, f"assets/demo is {size / 1e6:.1f} MB"


def _default_world():
    """The default demo world, built here (about a minute) on a machine that has none yet."""
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world

    return load_dataset("demo", ensure_world(progress=False))


@pytest.mark.slow
@pytest.mark.cpu  # the recorded metrics were sampled on the CPU: a GPU draws other random numbers
def test_shipped_checkpoints_reproduce_their_recorded_metrics():
    from kepp_core.evaluation.methods import EvalOptions, evaluate_horizon

    man = manifest()
    ds = _default_world()
    if ds.vocabulary_hash() != man["vocabulary_hash"]:
        pytest.fail("the default world's vocabulary changed; retrain the shipped models")
    for h in man["horizons"][:2]:  # two horizons keep the test short; the manifest has all
        ev = evaluate_horizon(ds, ASSETS, h, ["kepp-R1", "kepp-nograph", "pdpp", "graph-ce"],
                              EvalOptions(seed=man["seed"], strict=True))
        for row in ev.rows():
            rec = man["metrics"][f"T{h}"][row["method"]]
            assert row["SR"] == pytest.approx(rec["SR"], abs=1.0), (h, row["method"])
            assert row["mAcc"] == pytest.approx(rec["mAcc"], abs=1.0), (h, row["method"])


def test_shipped_records_hold_every_method_the_demo_models_run():
    """The app's Results and Failure cases on a fresh clone: PDPP, the endpoint model's rows and
    the decoded rows (the project's best methods) at every horizon."""
    from kepp_core.catalog import DEMO_RECORDED

    man = manifest()
    assert {"pdpp", "pdpp+dec", "graph-ce", "kepp-R1+dec", "kepp-R1+jdec", "kepp-R1-struct+dec"} <= set(DEMO_RECORDED)
    seen: dict[int, set] = {}
    with open(ASSETS / "predictions.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            seen.setdefault(rec["T"], set()).update(rec["plans"])
    assert sorted(seen) == man["horizons"]
    for h, methods in seen.items():
        assert methods == set(DEMO_RECORDED), (h, set(DEMO_RECORDED) ^ methods)
        assert set(man["metrics"][f"T{h}"]) - {"step"} == set(DEMO_RECORDED)


def test_demo_help_lists_table_and_models():
    r = kepp("demo", "--help")
    assert r.returncode == 0 and "table" in r.stdout and "--no-app" in r.stdout


@pytest.mark.slow
def test_demo_table_rejects_zero_seeds():
    r = kepp("demo", "table", "--seeds", "0")
    assert r.returncode == 2 and "at least one seed" in r.stderr and "Traceback" not in r.stderr


def test_claim_check_compares_mean_sr_at_t4_and_t5():
    from kepp_core.experiments.demo import check_claim

    rows = [{"method": "kepp-R1", "T": 4, "SR": 30.0}, {"method": "kepp-nograph", "T": 4, "SR": 25.0},
            {"method": "kepp-R1", "T": 5, "SR": 20.0}, {"method": "kepp-nograph", "T": 5, "SR": 21.0}]
    assert not check_claim(rows)["holds"]
    rows[2]["SR"] = 22.0
    assert check_claim(rows)["holds"]


def test_shipped_checkpoints_read_as_specs_whose_folder_names_round_trip():
    from kepp_core.experiments.demo import DEMO_MEMBERS
    from kepp_core.catalog import parse_model_folder
    from kepp_core.models.spec import load_spec

    man = manifest()
    read = 0
    for h in man["horizons"]:
        for m in DEMO_MEMBERS:
            spec = load_spec(ASSETS / f"T{h}" / m)
            assert spec.folder_name == m and parse_model_folder(m) == spec.role
            assert spec.horizon == h and spec.vocabulary_hash == man["vocabulary_hash"] and spec.sampler == "ddpm"
            read += 1
        assert load_spec(ASSETS / f"T{h}" / "plan-graph-R2").R == 2
    assert read == len(list(ASSETS.glob("T*/*/"))) > 0  # every shipped model folder was read as a spec
