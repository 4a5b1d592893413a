"""A and B, episode by episode, in real app sessions (AppTest): Results and Failure cases pick two
methods, show their 2×2 table with the API's numbers, and a clicked cell lists exactly that cell's
episodes (every page of it), with both plans side by side and each method's record one link away;
the choice lives in the URL (a reload lists the same episodes); with several seeds the units are
(seed, episode); the protocol section compares its chosen pair the same way."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from components.records import ab
from components.ui.names import episode_label
from components.ui.text import md, plan_text
from kepp_core import api, catalog
from tests.helpers.app_env import AppEnv
from tests.helpers.app_session import dataset, no_problems, open_page, prediction_table, texts, with_a_second_seed
from tests.helpers.training import untrained_protocol

RESULTS, FAILURES = "views/5_Results.py", "views/4_Failure_cases.py"


def cell_buttons(at, prefix: str) -> dict[str, str]:
    """The 2×2 table's buttons: cell name -> label."""
    return {name: at.button(key=f"{prefix}_ab_{name}").label for name in catalog.AB_CELLS}


def listed(at, prefix: str) -> pd.DataFrame:
    """Every row the cell's list holds, page after page (the table whose columns hold both verdicts),
    checked against the pages' captions ("episodes 51–70 of 70")."""
    pages, seen = [], 0
    while True:
        (table,) = [d.value for d in at.dataframe if "A right" in d.value.columns and "B right" in d.value.columns]
        pages.append(table)
        captions = [t for t in texts(at.caption) if t.startswith("paired ")]
        seen += len(table)
        assert len(table) and len(captions) == 1 and f" {seen - len(table) + 1:,}–{seen:,} of " in captions[0]
        nxt = at.button(key=f"{prefix}_ab_page_next")
        if nxt.disabled:
            assert captions[0].endswith(f" of {seen:,}"), captions
            return pd.concat(pages, ignore_index=True)
        nxt.click().run()
        no_problems(at)


def query(at) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def expected(env, comparison, cell: str) -> pd.DataFrame:
    """The cell's rows as the page should write them (the dataset's step names, readable episodes)."""
    ds = dataset(env)
    names = {t: ds.tasks[t].name for t in ds.tasks}
    return comparison.table(cell, lambda p: plan_text(ds.labels(p)), lambda e: episode_label(e, names), seeds=True)


@pytest.mark.slow
def test_the_ab_caption_names_the_evaluation_code_the_results_page_shows(monkeypatch, demo_env):
    """The A/B caption names the SR of the code the page shows (it named this package's under ViterbiPlanNet's)."""
    captions = {}
    for code, label in (("vpn", "ViterbiPlanNet"), (None, "KEPP (this package)")):
        at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3"}
                                   | ({"code": code} if code else {})))
        (captions[label],) = [t for t in texts(at.caption) if "McNemar" in t]
    assert len(captions) == 2 and all("SR in % (" + md(f"{label}'s code: ") in caption and caption.count("'s code") == 1
                                      for label, caption in captions.items())


@pytest.mark.slow
def test_results_shows_the_two_by_two_and_a_clicked_cell_lists_exactly_its_episodes(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3"}))
    c = api.compare_methods(prediction_table(demo_env), "kepp-R2", "kepp-nograph", 3)
    assert at.selectbox(key="res_ab_a").value == "kepp-R2" and at.selectbox(key="res_ab_b").value == "kepp-nograph"
    assert cell_buttons(at, "res") == {n: ab.cell_label(n, c.counts[n], len(c.units)) for n in catalog.AB_CELLS}
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["p (McNemar)"] == catalog.p_text(c.p)
    assert metrics["Δ SR (A − B), points"] == f"{c.delta:+.1f} [{c.delta_interval[0]:+.1f}, {c.delta_interval[1]:+.1f}]"
    assert metrics[f"SR A: {catalog.method_label('kepp-R2')}"].startswith(f"{c.sr_a:.1f} [")
    assert any("one seed" in t and "McNemar" in t for t in texts(at.caption))
    assert not [d for d in at.dataframe if "A right" in d.value.columns]  # no list before a click
    at.button(key="res_ab_a-only").click().run()
    no_problems(at)
    shown = listed(at, "res")
    want = expected(demo_env, c, "a-only")
    assert len(shown) == c.counts["a-only"] == len(want) > 50  # two pages
    pd.testing.assert_frame_equal(shown, want.reset_index(drop=True), check_dtype=False)
    assert shown["A right"].all() and not shown["B right"].any()
    assert (shown["A: KEPP R=2"] == shown["ground truth"]).all()
    assert (shown["B: KEPP without graph condition"] != shown["ground truth"]).all()
    assert query(at)["cell"] == "a-only" and query(at)["a"] == "kepp-R2" and query(at)["b"] == "kepp-nograph"
    # each method's record of the episode shown, one link away
    labels = {p.proto.label for p in at.get("page_link")}
    assert {f"Open {catalog.method_label(m)} in Plan" for m in ("kepp-R2", "kepp-nograph")} <= labels


@pytest.mark.slow
def test_failure_cases_lists_a_cell_from_its_url_and_a_reload_lists_the_same(monkeypatch, demo_env):
    link = {"method": "kepp-R2", "T": "6", "a": "kepp-R2", "b": "pdpp", "cell": "b-only"}
    c = api.compare_methods(prediction_table(demo_env), "kepp-R2", "pdpp", 6)
    want = expected(demo_env, c, "b-only").reset_index(drop=True)
    for _ in range(2):  # the link, then a reload: a new session on the address the page wrote
        at = no_problems(open_page(monkeypatch, demo_env, FAILURES, link))
        assert at.button(key="fail_ab_b-only").proto.type == "primary"
        shown = listed(at, "fail")
        pd.testing.assert_frame_equal(shown, want, check_dtype=False)
        assert not shown["A right"].any() and shown["B right"].all()
        link = query(at)
        assert link["cell"] == "b-only" and link["b"] == "pdpp" and link["abep"] == c.select("b-only")["episode"].iloc[0]
    # A and B picked on the page, the other way round: the same episodes are now "A right, B wrong"
    at.selectbox(key="fail_ab_a").select("pdpp")
    at.selectbox(key="fail_ab_b").select("kepp-R2").run()
    at.button(key="fail_ab_a-only").click().run()
    no_problems(at)
    swapped = listed(at, "fail")
    assert sorted(swapped["episode"]) == sorted(want["episode"]) and swapped["A right"].all()
    assert (swapped["A: PDPP (task classifier)"] == list(want["B: PDPP (task classifier)"])).all()
    assert query(at)["a"] == "pdpp" and query(at)["b"] == "kepp-R2" and query(at)["cell"] == "a-only"
    # a second click on the cell closes its list and drops it from the URL
    at.button(key="fail_ab_a-only").click().run()
    no_problems(at)
    assert not [d for d in at.dataframe if "A right" in d.value.columns] and "cell" not in at.query_params


def test_the_chosen_episode_opens_each_methods_record_on_the_plan_page(monkeypatch, demo_env):
    c = api.compare_methods(prediction_table(demo_env), "kepp-R2", "pdpp", 4)
    second = c.select("neither")["episode"].iloc[1]
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "4", "a": "kepp-R2",
                                                                 "b": "pdpp", "cell": "neither", "abep": second}))
    assert at.selectbox(key="res_ab_episode").value == second
    targets = {p.proto.label: p.proto.query_string for p in at.get("page_link") if p.proto.label.startswith("Open ")}
    for method in ("kepp-R2", "pdpp"):
        q = targets[f"Open {catalog.method_label(method)} in Plan"]
        assert f"rec={method.replace('+', '%2B')}" in q and "video=" in q and "T=4" in q
    # the side-by-side view below shows both methods' plans for that episode
    heads = " ".join(texts(at.markdown))
    assert catalog.method_label("kepp-R2") in heads and catalog.method_label("pdpp") in heads


def test_a_bad_cell_or_method_in_the_url_is_ignored_and_the_same_method_twice_is_a_message(monkeypatch, demo_env):
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"T": "3", "cell": "sideways", "a": "nope"}))
    assert "cell" not in at.query_params and query(at)["a"] == at.selectbox(key="res_ab_a").value != "nope"
    at.selectbox(key="res_ab_b").select(at.selectbox(key="res_ab_a").value).run()
    no_problems(at)
    assert any("two different methods" in i.value for i in at.info)


@pytest.mark.slow
def test_with_several_seeds_the_units_are_seed_and_episode_and_the_intervals_draw_whole_episodes(
        monkeypatch, demo_env, tmp_path):
    records = with_a_second_seed(demo_env, tmp_path / "two-seeds.jsonl")
    at = no_problems(open_page(monkeypatch, demo_env, RESULTS, {"method": "kepp-R2", "T": "3", "cell": "both"},
                               KEPP_APP_PREDICTIONS=str(records)))
    c = api.compare_methods(api.read_predictions([records]), "kepp-R2", "kepp-nograph", 3)
    assert len(c.units) == 2 * 585 and c.seeds == 2
    assert cell_buttons(at, "res")["both"] == ab.cell_label("both", c.counts["both"], 2 * 585)
    assert any("(seed × episode) units" in t and "each drawn with all its 2 seeds" in t for t in texts(at.caption))
    shown = listed(at, "res")
    assert "seed" in shown.columns and len(shown) == c.counts["both"]
    assert sorted(zip(shown["seed"], shown["episode"])) == sorted(zip(c.select("both")["seed"], expected(
        demo_env, c, "both")["episode"]))


@pytest.fixture(scope="module")
def proto(tmp_path_factory):
    return untrained_protocol(tmp_path_factory.mktemp("ab-app-protocol"), ["random", "retrieval", "graph-gt"], [3])


def test_the_protocol_section_compares_its_pair_episode_by_episode(monkeypatch, proto):
    world, out = proto
    env = AppEnv(world, world, world, 3)  # the tiny world, no models or records: the protocol alone
    at = no_problems(open_page(monkeypatch, env, RESULTS, KEPP_APP_PREDICTIONS=None, KEPP_APP_CHECKPOINTS=None,
                               KEPP_APP_RUNS=None, KEPP_APP_CONFIG=None, KEPP_APP_PROTOCOL=str(out)))
    at.selectbox(key="proto_a").select("graph-gt")
    at.selectbox(key="proto_b").select("random").run()
    no_problems(at)
    recs = [json.loads(x) for x in (out / catalog.RECORDS_FILE).read_text().splitlines()]
    a_only = [(r["seed"], r["episode"]) for r in recs if r["success"]["graph-gt"] and not r["success"]["random"]]
    assert at.button(key="proto_ab_a-only").label == ab.cell_label("a-only", len(a_only), len(recs))
    at.button(key="proto_ab_a-only").click().run()
    no_problems(at)
    shown = listed(at, "proto")
    ds = api.open_dataset(api.AppConfig(dataset="demo", root=str(world)), str(world))
    names = {t: ds.tasks[t].name for t in ds.tasks}
    assert sorted(zip(shown["seed"], shown["episode"])) == sorted((s, episode_label(e, names)) for s, e in a_only)
    truth = {(r["seed"], episode_label(r["episode"], names)): plan_text(ds.labels(r["gt"])) for r in recs}
    assert all(truth[(s, e)] == g for s, e, g in zip(shown["seed"], shown["episode"], shown["ground truth"]))
    assert not [p for p in at.get("page_link") if str(p.proto.label).startswith("Open ")]  # not the app's models


def test_the_downloads_hold_both_plans_and_verdicts_of_every_episode_of_the_cell(demo_env):
    import csv
    import io

    c = api.compare_methods(prediction_table(demo_env), "kepp-R2", "graph-pred", 5)
    ds = dataset(demo_env)
    names = {t: ds.tasks[t].name for t in ds.tasks}
    steps = lambda p: plan_text(ds.labels(p))  # noqa: E731 - as the page writes a plan
    preds = prediction_table(demo_env)
    plans = {(m, e): p for m, e, p in zip(preds["method"], preds["episode"], preds["plan"])}
    assert sum(c.counts.values()) == 401  # the demo's T=5 test episodes, every one in a cell
    for cell in (*catalog.AB_CELLS, None):
        rows = list(csv.DictReader(io.StringIO(ab.episodes_csv(c, cell, steps, lambda e: episode_label(e, names))
                                               .decode())))
        units = c.select(cell)
        assert len(rows) == len(units) == (c.counts[cell] if cell else sum(c.counts.values()))
        assert list(rows[0]) == ["episode", "T", "seed", "ground truth", "A: KEPP R=2", "A right",  # seed: every CSV
                                 f"B: {catalog.method_label('graph-pred')}", "B right", "cell"]
        for row, (_, unit) in zip(rows, units.iterrows()):
            assert row["A: KEPP R=2"] == steps(plans[("kepp-R2", unit["episode"])])
            assert row[f"B: {catalog.method_label('graph-pred')}"] == steps(plans[("graph-pred", unit["episode"])])
            assert row["ground truth"] == steps(unit["truth"]) and row["episode"] == episode_label(unit["episode"], names)
            assert (row["A right"], row["B right"]) == (str(unit["success_a"]), str(unit["success_b"]))
            assert row["cell"] == catalog.AB_CELLS[unit["cell"]]
