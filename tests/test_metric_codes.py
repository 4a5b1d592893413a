"""An evaluation code is one object (``kepp_core.catalog.benchmark.MetricFamily``): its function, its array path, its
metrics' columns and headers, where the code lives. Everything asks the registry, so a code registered in one
place reaches ``kepp eval``'s choices and tables, a protocol's columns and the app's picker, captions and
Results table with no other edit (docs/architecture.md's walkthrough "a new metric code")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kepp_core.catalog.benchmark import FAMILIES, FamilyMetric, MetricFamily, extra_family, family
from kepp_core.errors import KeppError
from kepp_core.paths import DEMO_ASSETS

RECORDS = DEMO_ASSETS / "predictions.jsonl"


def first_last(pred, gt, batch_size: int = 256) -> dict:
    """The share of plans whose first step is right and whose last step is right (%), record by record."""
    firsts = [int(p[0]) == int(g[0]) for p, g in zip(pred, gt)]
    lasts = [int(p[-1]) == int(g[-1]) for p, g in zip(pred, gt)]
    return {"first": 100.0 * sum(firsts) / len(gt), "last": 100.0 * sum(lasts) / len(gt)}


def first_last_episodes(pred: np.ndarray, gt: np.ndarray) -> tuple[dict, dict]:
    """The same on ``[N, T]`` arrays, with each episode's value (what a one-seed interval resamples)."""
    episodes = {"first": (pred[:, 0] == gt[:, 0]).astype(float), "last": (pred[:, -1] == gt[:, -1]).astype(float)}
    return {k: 100.0 * float(v.sum()) / len(v) for k, v in episodes.items()}, episodes


def ends_code() -> MetricFamily:
    """A code no module knows: the first and the last step right, each a mean over episodes."""
    return MetricFamily(
        name="ends-test", label="Ends (test code)", source="tests/test_metric_codes.py", metrics=(
            FamilyMetric(key="first", column="ends_test_first", header="first (ends-test)",
                         description="the plan's first step right (%)"),
            FamilyMetric(key="last", column="ends_test_last", header="last (ends-test)",
                         description="the plan's last step right (%)")),
        compute=first_last, per_episode=first_last_episodes)


def recorded(method: str = "kepp-R1", horizon: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The demo records' plans and truths of one method and T, in the records' order."""
    from kepp_core import api

    preds = api.read_predictions([RECORDS])
    rows = preds[(preds["method"] == method) & (preds["horizon"] == horizon)]
    return np.array(list(rows["plan"]), dtype=np.int64), np.array(list(rows["truth"]), dtype=np.int64)


def kepp(*argv: str) -> tuple[int, str]:
    """``kepp ARGV`` in this process (so a code registered by the test is seen): exit code and stdout."""
    import contextlib
    import io

    from kepp_core.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue()


@pytest.mark.slow
def test_a_new_metric_code_reaches_kepp_eval_the_protocol_and_the_app_with_no_other_edit(demo_t3, tmp_path,
                                                                                         monkeypatch):
    """Walkthrough "a new metric code": one object registered here is a --metrics choice of kepp eval, its
    table (headers naming the code, numbers its function's, the one-seed interval from its array path), a
    protocol spec's code with its columns, and the app's picker, help and captions; gone again after."""
    from components.records import metric_codes
    from components.ui import url_schema

    from kepp_core.experiments.protocol import benchmark_markdown, parse_spec, with_families

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    scoring = ("eval", "--from-records", str(RECORDS), "-T", "3", "--methods", "kepp-R1", "--metrics", "ends-test")
    assert kepp(*scoring)[0] == 2  # not a choice before it is registered
    pred, gt = recorded()
    with extra_family(ends_code()) as code:
        rc, text = kepp(*scoring)
        text = " ".join(text.split())  # the title wraps to the table's width
        assert rc == 0 and "Ends (test code)'s metrics (tests/test_metric_codes.py)" in text
        assert "T=3 first (ends-test)" in text and "T=3 last (ends-test)" in text
        rc, out = kepp(*scoring, "--json")
        (table,) = json.loads(out)["tables"]
        assert (table["code"], table["label"], table["source"]) == ("ends-test", code.label, code.source)
        (row,) = table["rows"]
        want = first_last(pred.tolist(), gt.tolist())
        assert row["T=3 first (ends-test)"].startswith(f"{want['first']:.2f} [")  # one seed: its episodes' interval
        assert {k: table["runs"][0][k] for k in want} == want
        assert "ends-test" in kepp("eval", "--help")[1] and "ends-test" in kepp("protocol", "--help")[1]
        _, root, models = demo_t3  # a run of models: its rows carry the code's columns, its table the code's headers
        rc, text = kepp("eval", "--dataset", "demo", "--root", str(root), "--models", str(models), "-T", "3",
                        "--methods", "retrieval", "--metrics", "ends-test", "--out", str(tmp_path / "rows.json"),
                        "--threads", "1", "--device", "cpu")
        (run,) = json.loads((tmp_path / "rows.json").read_text())["rows"]
        assert rc == 0 and 0 <= run["ends_test_first"] <= 100 and "first (ends-test)" in text

        spec = parse_spec({"dataset": "demo", "horizons": [3], "methods": ["random"],
                           "metrics": ["kepp", "ends-test"],
                           "out": str(tmp_path / "protocol")})
        assert spec.families == ("ends-test",)
        rows = with_families([{"method": "m"}], [{"plans": {"m": p}, "gt": g} for p, g in zip(pred.tolist(), gt.tolist())],
                             spec.families)
        assert (rows[0]["ends_test_first"], rows[0]["ends_test_last"]) == (want["first"], want["last"])
        lines = benchmark_markdown({"metrics": ["kepp", "ends-test"], "confidence": 0.9}, rows, 3)
        assert lines[0].startswith("Ends (test code)'s metrics (tests/test_metric_codes.py)")
        assert "first (ends-test)" in lines[2]

        assert metric_codes.code_label("ends-test") == "Ends (test code)"
        assert "Ends (test code): tests/test_metric_codes.py" in metric_codes.code_help()
        assert "first (ends-test): the plan's first step right (%)" in metric_codes.code_caption("ends-test")
        assert url_schema.RESULTS["code"].parse("ends-test") == "ends-test"
    assert "ends-test" not in FAMILIES and kepp(*scoring)[0] == 2


@pytest.mark.slow
def test_the_results_page_offers_a_new_code_and_heads_its_table_with_it(monkeypatch, demo_env):
    """The Results page's picker and method x T table read the registry: a code added in the test is an option
    named by its label and, chosen by the URL, heads the table's columns."""
    from tests.helpers.app_session import no_problems, open_page, texts

    with extra_family(ends_code()):
        at = no_problems(open_page(monkeypatch, demo_env, "views/5_Results.py", {"code": "ends-test", "metric": "all"}))
        picker = at.segmented_control(key="res_code")
        assert picker.options[-1] == "Ends (test code)" and picker.value == "ends-test"  # offered by its label
        assert [c for c in at.dataframe[0].value.columns if c.startswith("T=3 ")] == ["T=3 first (ends-test)",
                                                                                    "T=3 last (ends-test)"]
        (caption,) = [c for c in texts(at.caption) if c.startswith("Metrics computed by Ends (test code)'s code")]
        assert "bootstrap interval over the test episodes" in caption  # its array path gives each episode's value


def test_each_codes_array_path_gives_what_its_function_gives():
    """Where a code has an array path (the method x T table's), its numbers are its function's, value for value,
    and its per-episode values average to them (the brute-force reference is the record-by-record function)."""
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 6, size=(700, 4))
    pred = np.where(rng.random(gt.shape) < 0.7, gt, rng.integers(0, 6, size=gt.shape))
    with_arrays = [c for c in FAMILIES.values() if c.per_episode is not None]
    assert [c.name for c in with_arrays] == ["kepp"]
    for code in (*with_arrays, ends_code()):
        values, episodes = code.per_episode(pred, gt)
        record_by_record = code.scores(pred.tolist(), gt.tolist())
        for m in code.table_metrics:
            assert values[m.key] == record_by_record[m.key], (code.name, m.key)
            assert 100 * episodes[m.key].mean() == pytest.approx(values[m.key]), (code.name, m.key)


def test_a_codes_parts_that_do_not_fit_are_refused_when_it_is_built():
    sr = FamilyMetric(key="sr", column="x_sr", header="SR (x)", description="whole plan right (%)")
    with pytest.raises(KeppError, match="metric code 'x': table \\['miou'\\]"):
        MetricFamily(name="x", label="x", source="x", metrics=(sr,), compute=first_last, table=("miou",))
    with pytest.raises(KeppError, match="expected distinct metrics"):
        MetricFamily(name="x", label="x", source="x", metrics=(sr, sr), compute=first_last)
    with pytest.raises(KeppError, match="'vpn' is already registered"), extra_family(family("vpn")):
        pass
    clash = MetricFamily(name="x", label="x", source="x", metrics=(FamilyMetric(key="sr", column="SR", header="SR",
                                                                                description="x"),), compute=first_last)
    with pytest.raises(KeppError, match="metric code 'x': column 'SR' is already metric code 'kepp''s"):
        with extra_family(clash):
            pass
    assert "x" not in FAMILIES
