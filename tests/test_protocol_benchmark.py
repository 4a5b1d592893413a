"""The unified benchmark as a protocol: split lists per horizon (``{T}``), each evaluation code's columns,
the benchmark's own bootstrap interval beside ours and the published numbers apart; the shipped specs."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from kepp_core.cli import main
from kepp_core.data.split_lists import listed_episode_ids, read_split_list
from kepp_core.catalog.benchmark import protocol_metrics
from kepp_core.paths import REPO_ROOT
from kepp_core.experiments.protocol import load_protocol, parse_spec
from tests.helpers.split_lists import write_lists
from tests.helpers.training import kepp

METHODS = ["random", "retrieval", "graph-gt"]  # no model to train: the run takes seconds


@pytest.fixture()
def lists(tmp_path):
    for h in (3, 4):
        p = write_lists(tmp_path / "lists", horizon=h)
    return p


def _spec(tmp_path, lists, **extra) -> str:
    spec = {"dataset": "split-lists", "train_list": str(tmp_path / "lists" / "train_{T}.json"),
            "test_list": str(tmp_path / "lists" / "test_{T}.json"), "taxonomy": str(lists["taxonomy"]),
            "features": str(lists["features"]), "horizons": [3, 4], "methods": METHODS, "seeds": 3,
            "out": str(tmp_path / "out"), **extra}
    path = tmp_path / "spec.toml"
    path.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in spec.items()) + "\n")
    return str(path)


def _reference_bootstrap(series):
    """calculate_results.py's steps, written out: random.seed(42) once, 1,000 means per series, 95th − 5th."""
    random.seed(42)
    out = []
    for data in series:
        means = [np.mean([random.choice(data) for _ in range(len(data))]) for _ in range(1000)]
        out.append(np.percentile(means, 95) - np.percentile(means, 5))
    return out


@pytest.mark.slow
def test_the_benchmark_protocol_reports_both_codes_and_its_own_interval_beside_ours(tmp_path, lists):
    r = kepp("protocol", _spec(tmp_path, lists, metrics=["pdpp", "vpn"], benchmark="niv"), "--threads", "1")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    result = json.loads((out / "results.json").read_text())
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    for h in (3, 4):  # each horizon's own list, its episodes in its order
        mine = [x["episode"] for x in recs if x["T"] == h and x["seed"] == 0]
        assert mine == listed_episode_ids(read_split_list(tmp_path / "lists" / f"test_{h}.json"))
    for row in result["rows"]:
        rs = [x for x in recs if (x["T"], x["seed"]) == (row["T"], row["seed"])]
        plans, gt = [x["plans"][row["method"]] for x in rs], [x["gt"] for x in rs]
        for code in ("pdpp", "vpn"):
            for key, value in protocol_metrics(plans, gt, code).items():
                assert row[f"{code}_{key}"] == pytest.approx(value)
    for s in result["summary"]:
        seeds = sorted((x for x in result["rows"] if (x["T"], x["method"]) == (s["T"], s["method"])),
                       key=lambda x: x["seed"])
        want = _reference_bootstrap([[x[f"vpn_{k}"] for x in seeds] for k in ("sr", "macc", "miou")])
        assert [s["vpn_sr_boot"], s["vpn_macc_boot"], s["vpn_miou_boot"]] == pytest.approx(want)
        assert s["vpn_sr"] == pytest.approx(np.mean([x["vpn_sr"] for x in seeds])) and "vpn_sr_ci" in s
    md = (out / "results.md").read_text()
    assert "SR (PDPP)" in md and "mIoU (ViterbiPlanNet acc_iou)" in md
    assert "The benchmark's own 90% interval" in md and "Published numbers of niv, T=3" in md
    assert "KEPP (published)" in md.split("Published numbers of niv, T=3")[1]
    assert result["spec"]["benchmark"] == "niv" and result["spec"]["metrics"] == ["pdpp", "vpn"]


@pytest.mark.slow
def test_a_spec_without_other_codes_writes_what_it_wrote_before(tmp_path, lists):
    r = kepp("protocol", _spec(tmp_path, lists, horizons=[3]), "--threads", "1")
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert not {"metrics", "benchmark"} & set(result["spec"])
    assert not any(k.startswith(("pdpp_", "vpn_")) for row in result["summary"] for k in row)
    md = (tmp_path / "out" / "results.md").read_text()
    assert "PDPP" not in md and "ViterbiPlanNet" not in md and "| SR | mAcc |" in md


@pytest.mark.parametrize("line, words", [
    ('metrics = ["pdp"]', ["metrics", "unknown metric family 'pdp'"]),
    ('train_list = "a.json"', ["train_list goes with dataset = \"split-lists\""]),
    ('benchmark = "nivv"', ["benchmark", "unknown benchmark dataset 'nivv'"]),
])
def test_bad_benchmark_keys_are_refused_naming_the_key(capsys, tmp_path, line, words):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'out = "{tmp_path / "out"}"\nmethods = ["random"]\n{line}\n')
    assert main(["protocol", str(spec), "--print-commands"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err


def test_split_list_paths_come_in_pairs_and_hold_only_the_horizon():
    base = {"out": "o", "methods": ["random"], "dataset": "split-lists"}
    with pytest.raises(Exception, match="test_list is missing"):
        parse_spec({**base, "train_list": "a_{T}.json"})
    with pytest.raises(Exception, match=r"the only field a list's path may hold is \{T\}"):
        parse_spec({**base, "train_list": "a_{H}.json", "test_list": "b.json"})
    with pytest.raises(Exception, match="needs train_list and test_list"):
        parse_spec(base)


@pytest.mark.parametrize("name", ["niv", "crosstask-105", "crosstask-133", "coin"])
def test_the_shipped_benchmark_specs_point_at_the_users_lists_and_features(capsys, tmp_path, name):
    path = REPO_ROOT / "protocols" / f"benchmark-{name}.toml"
    spec = load_protocol(path)
    assert spec.benchmark == name and spec.horizons == (3, 4, 5, 6) and len(spec.seeds) == 5
    assert set(spec.metrics) == {"kepp", "pdpp", "vpn"} and "/" not in spec.train_list  # nothing absolute shipped
    lists = tmp_path / "vpn-dataset"
    lists.mkdir()
    code = main(["protocol", str(path), "--lists-dir", str(lists), "--features", str(tmp_path / "feats"),
                 "--out", str(tmp_path / "out"), "--print-commands", "--stage", "1"])
    out = capsys.readouterr().out
    assert code == 0
    for h in (3, 6):
        want = spec.train_list.replace("{T}", str(h))
        assert f"--train-list {lists / want}" in out and f"--features {tmp_path / 'feats'}" in out


def test_every_shipped_spec_parses():
    specs = sorted((REPO_ROOT / "protocols").glob("*.toml"))
    assert len([p for p in specs if p.name.startswith("benchmark-")]) >= 5  # the four benchmarks and the NIV world
    for path in specs:
        assert load_protocol(path).out
