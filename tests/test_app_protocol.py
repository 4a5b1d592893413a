"""The Results page shows ``kepp protocol`` results (docs, How to use the graph): intervals over seeds as error bars
with a metric picker, the paired test of a chosen pair (its p-value is
``stats.paired_permutation_test`` on the records' differences), the data-efficiency curves;
bad or missing files are messages, not tracebacks. The protocol output is real: ``run_protocol``
on a tiny world with the methods that need no training (a second or two)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kepp_core import api, catalog
from kepp_core.api import protocols
from kepp_core.errors import KeppError
from kepp_core.evaluation.stats import mean_ci, paired_permutation_test
from kepp_core.paths import REPO_ROOT
from tests.helpers.training import tiny_world

REPO = REPO_ROOT
APP = REPO / "app" / "Home.py"
METHODS = ["random", "retrieval", "graph-gt"]


@pytest.fixture(scope="module")
def proto(tmp_path_factory):
    """A tiny world and a real protocol output: 3 seeds, T = 3 and 4, 50% and 100% of the training videos."""
    from kepp_core.experiments.protocol import parse_spec, run_protocol

    base = tmp_path_factory.mktemp("app-protocol")
    world = tiny_world(base / "world", seed=4)
    spec = parse_spec({"dataset": "demo", "root": str(world), "horizons": [3, 4], "methods": METHODS, "seeds": 3,
                       "train_fractions": [0.5, 1.0], "pairs": [["graph-gt", "retrieval"]], "out": str(base / "out")})
    run_protocol(spec, log=lambda s: None)
    return world, base / "out"


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def raw_diffs(out: Path, a: str, b: str, horizon: int, fraction: float, field: str = "success"):
    """``A − B`` per (seed, episode) straight from records.jsonl, and the units' seeds."""
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    recs = [r for r in recs if r["T"] == horizon and r["fraction"] == fraction]
    return np.array([r[field][a] - r[field][b] for r in recs], float), np.array([r["seed"] for r in recs])


def session(monkeypatch, world: Path, protocol: Path | None, query: dict | None = None) -> AppTest:
    """A fresh session on the Results page: the tiny world, no models or records, ``protocol``."""
    for var in ("KEPP_APP_PREDICTIONS", "KEPP_APP_CHECKPOINTS", "KEPP_APP_RUNS", "KEPP_APP_CONFIG",
                "KEPP_APP_PROTOCOL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KEPP_APP_DATASET", "demo")
    monkeypatch.setenv("KEPP_APP_ROOT", str(world))
    if protocol is not None:
        monkeypatch.setenv("KEPP_APP_PROTOCOL", str(protocol))
    monkeypatch.setenv("KEPP_THREADS", "1")
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update(query or {})
    at.switch_page("pages/5_Results.py")
    return at.run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [str(e.value) for e in at.exception]
    assert not at.error, [str(e.value) for e in at.error]
    return at


def figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def frame(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


# --- the API ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_reading_a_protocol_folder_and_its_tables(proto):
    _, out = proto
    res = results(out)
    run = api.read_protocol(out)
    assert run.methods == METHODS and run.horizons == [3, 4] and run.fractions == [0.5, 1.0]
    assert run.seeds == [0, 1, 2] and run.confidence == 0.9 and run.dataset == res["dataset"]
    table = run.intervals("mAcc", 1.0)
    assert list(table["method"]) == ["random", "random", "retrieval", "retrieval", "graph-gt", "graph-gt"]
    for row in res["summary"]:
        if row["fraction"] != 1.0:
            continue
        got = table[(table["method"] == row["method"]) & (table["T"] == row["T"])].iloc[0]
        assert got["mean"] == pytest.approx(row["mAcc"]) and got["ci"] == pytest.approx(row["mAcc_ci"])
        per_seed = [r["mAcc"] for r in res["rows"] if (r["method"], r["T"], r["fraction"]) ==
                    (row["method"], row["T"], 1.0)]
        assert got["ci"] == pytest.approx(mean_ci(per_seed)[1])  # Student t over the 3 seeds
    random_ci = table[table["method"] == "random"]["ci"]
    assert (random_ci > 0).all()  # random plans differ between seeds: a real interval
    curve = run.efficiency(4, "SR")
    assert list(curve["percent"][curve["method"] == "graph-gt"]) == [50.0, 100.0]
    with pytest.raises(KeppError, match="unknown metric 'BLEU'"):
        run.intervals("BLEU")


def test_pair_test_is_the_permutation_test_on_the_records(proto):
    _, out = proto
    recs = api.protocol_records(out)
    for a, b, h, f in (("graph-gt", "random", 3, 1.0), ("retrieval", "graph-gt", 4, 1.0),
                       ("graph-gt", "retrieval", 3, 0.5)):
        d, seeds = raw_diffs(out, a, b, h, f)
        got = protocols.pair_test(recs, a, b, h, f)
        assert got["p"] == paired_permutation_test(d) and got["units"] == d.size == 3 * results(out)["episodes"][str(h)]
        assert got["delta"] == pytest.approx(100 * d.mean())
        per_seed = [100 * d[seeds == s].mean() for s in (0, 1, 2)]
        half = mean_ci(per_seed)[1]
        assert (got["delta_ci"] is None and half == 0) or got["delta_ci"] == pytest.approx(half)
        assert got["wins"] == (d > 0).sum() and got["losses"] == (d < 0).sum() and got["significant"] == (got["p"] < 0.05)
    # the same numbers as the protocol's own paired tests for the spec's pair
    for p in results(out)["pairs"]:
        got = protocols.pair_test(recs, p["a"], p["b"], p["T"], p["fraction"])
        assert got["p"] == p["p"] and got["delta"] == pytest.approx(p["delta_SR"])
    # mAcc compares the per-episode step accuracy
    d, _ = raw_diffs(out, "graph-gt", "random", 4, 0.5, "acc")
    assert protocols.pair_test(recs, "graph-gt", "random", 4, 0.5, "mAcc")["p"] == paired_permutation_test(d)
    assert "significantly better" in api.pair_verdict(protocols.pair_test(recs, "graph-gt", "random", 3, 1.0))
    table = api.pair_table(recs, "graph-gt", "retrieval", 1.0)
    assert list(table["T"]) == [3, 4]
    with pytest.raises(KeppError, match="'kepp-R9' is not recorded"):
        protocols.pair_test(recs, "kepp-R9", "random", 3, 1.0)
    with pytest.raises(KeppError, match="no records for T=5"):
        protocols.pair_test(recs, "graph-gt", "random", 5, 1.0)


def test_finding_protocols_and_clear_errors_for_bad_files(proto, tmp_path):
    _, out = proto
    assert protocols.find_protocols([out.parent]) == [str(out)] and protocols.find_protocols([out]) == [str(out)]
    assert protocols.find_protocols([out.parent], dataset="coin") == []  # another dataset format's protocol
    ws = api.Workspace(api.AppConfig(protocol=str(out / "results.json")))
    assert ws.protocol_folders() == [str(out)]
    with pytest.raises(KeppError, match="protocol folder does not exist"):
        api.Workspace(api.AppConfig(protocol=str(tmp_path / "nope"))).protocol_folders()
    with pytest.raises(KeppError, match="no protocol results in it"):
        api.Workspace(api.AppConfig(protocol=str(tmp_path))).protocol_folders()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json", encoding="utf-8")
    assert not protocols.is_protocol_folder(bad) and protocols.find_protocols([tmp_path]) == []
    with pytest.raises(KeppError, match=r"bad/results.json: not a readable JSON file"):
        api.read_protocol(bad)
    (bad / "results.json").write_text(json.dumps({"spec": {}, "summary": [{"method": "x", "T": "three"}]}))
    with pytest.raises(KeppError, match=r"summary row 1: 'T' must be a number"):
        api.read_protocol(bad)
    (bad / "records.jsonl").write_text((out / "records.jsonl").read_text().splitlines()[0] + "\n{oops\n")
    with pytest.raises(KeppError, match=r"records.jsonl:2: invalid JSON"):
        api.protocol_records(bad)
    with pytest.raises(KeppError, match="the paired test needs the protocol's records.jsonl"):
        api.protocol_records(tmp_path)


def test_the_protocol_option_reaches_the_app(proto, tmp_path):
    from kepp_core.api.serving import check_options

    _, out = proto
    env = api.AppConfig(protocol=str(out)).environment()
    assert env["KEPP_APP_PROTOCOL"] == str(out.resolve())
    assert api.AppConfig.from_env(env).protocol == str(out.resolve())
    cfg = tmp_path / "app.toml"
    cfg.write_text('[app]\nprotocol = "runs/p"\n', encoding="utf-8")
    assert api.AppConfig.read_file(cfg)["protocol"] == str(tmp_path / "runs" / "p")
    with pytest.raises(KeppError, match="--protocol .*: path does not exist"):
        check_options(api.AppConfig(protocol=str(tmp_path / "missing"), port=1))


# --- the page -----------------------------------------------------------------------------------------------
def test_results_page_shows_intervals_pair_test_and_curves(monkeypatch, proto):
    world, out = proto
    res = results(out)
    at = ok(session(monkeypatch, world, out))
    assert any("No prediction records" in i.value for i in at.info)  # no kepp eval records: the protocol still shows
    assert any(c.value.startswith("Metrics computed by KEPP (this package)'s code") and "that code's numbers only"
               in c.value for c in at.caption)  # the section names the code its charts and tables come from
    at.selectbox(key="proto_metric").select("mAcc").run()
    ok(at)
    bars = figures(at)[0]
    summary = {(r["method"], r["T"]): r for r in res["summary"] if r["fraction"] == 1.0}
    assert "mAcc per horizon: mean ± 90% CI over seeds" in bars["layout"]["title"]["text"]
    for trace in bars["data"]:
        method = next(m for m in METHODS if catalog.method_label(m) == trace["name"])
        assert trace["x"] == ["T=3", "T=4"]
        assert trace["y"] == pytest.approx([summary[(method, h)]["mAcc"] for h in (3, 4)])
        assert trace["error_y"]["array"] == pytest.approx([summary[(method, h)]["mAcc_ci"] for h in (3, 4)])
    table = frame(at, "T=3 mAcc").set_index("method")
    r = summary[("random", 3)]
    assert table.loc[catalog.method_label("random"), "T=3 mAcc"] == f"{r['mAcc']:.1f} ± {r['mAcc_ci']:.1f}"
    # the pair: graph-gt vs random at T=4 (100% of the videos)
    at.selectbox(key="proto_a").select("graph-gt")
    at.selectbox(key="proto_b").select("random").run()
    at.selectbox(key="proto_pair_T").select(4).run()
    ok(at)
    d, _ = raw_diffs(out, "graph-gt", "random", 4, 1.0)
    pair = frame(at, "p").set_index("T")
    assert pair.loc[4, "p"] == paired_permutation_test(d) and pair.loc[4, "Δ SR"] == pytest.approx(100 * d.mean())
    assert any("significantly better" in s.value and "< 0.05" in s.value for s in at.success)
    assert any(m.label == "p-value" and m.value == catalog.p_text(paired_permutation_test(d)) for m in at.metric)
    # a tie is said plainly: retrieval vs graph-gt at T=4 with all the videos
    at.selectbox(key="proto_a").select("retrieval")
    at.selectbox(key="proto_b").select("graph-gt").run()
    at.selectbox(key="proto_pair_T").select(4).run()
    d, _ = raw_diffs(out, "retrieval", "graph-gt", 4, 1.0)
    assert frame(at, "p").set_index("T").loc[4, "p"] == paired_permutation_test(d) >= 0.05
    assert any("no significant difference" in w.value for w in at.warning)
    # data efficiency: SR against the share of training videos, per method, with error bars
    at.selectbox(key="proto_metric").select("SR").run()
    at.selectbox(key="proto_eff_T").select(3).run()
    ok(at)
    curve = next(f for f in figures(at) if "Data efficiency" in f["layout"]["title"]["text"])
    by = {(r["method"], r["fraction"]): r for r in res["summary"] if r["T"] == 3}
    for trace in curve["data"]:
        method = next(m for m in METHODS if catalog.method_label(m) == trace["name"])
        assert trace["x"] == [50.0, 100.0]
        assert trace["y"] == pytest.approx([by[(method, f)]["SR"] for f in (0.5, 1.0)])
        assert trace["error_y"]["array"] == pytest.approx([by[(method, f)]["SR_ci"] for f in (0.5, 1.0)])


def test_presentation_mode_and_bad_or_missing_files_are_messages(monkeypatch, proto, tmp_path):
    world, out = proto
    at = ok(session(monkeypatch, world, out, {"present": "1"}))
    assert any("kepp-present" in str(m.value) for m in at.markdown)
    bars = figures(at)[0]
    assert bars["layout"]["font"]["size"] == max(20, round(12 * 1.43))  # grows with the mode, 20 px at least
    assert not any("Student t" in c.value for c in at.caption)  # captions fold away
    # no protocol anywhere for this dataset format: a hint, no error
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("nothing here")
    at = session(monkeypatch, world, empty)
    assert not at.exception and any("no protocol results in it" in e.value for e in at.error)
    # a corrupt results.json: one clear message naming the file
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json", encoding="utf-8")
    at = session(monkeypatch, world, bad)
    assert not at.exception and any("results.json" in e.value and "not a readable JSON file" in e.value
                                    for e in at.error)
    # results without records: the intervals show, the pair test says what is missing
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "results.json").write_text((out / "results.json").read_text(), encoding="utf-8")
    at = session(monkeypatch, world, partial)
    assert not at.exception and figures(at)
    assert any("records.jsonl" in e.value for e in at.error)
    assert math.isfinite(figures(at)[0]["data"][0]["y"][0])
