"""The catalogue (``kepp_core.catalog``) is the one home of the evaluation methods, model roles,
folder names, metrics and file names: it loads without torch or numpy, and a method added as one
catalogue entry and one registered class reaches evaluation, the records, the failure analysis,
the Results page and its Open-in-Plan link with its own R."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import ExitStack

import pytest

from kepp_core import catalog
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
APP = REPO / "app" / "Home.py"


def test_the_catalogue_loads_without_torch_or_numpy():
    code = ("import sys, kepp_core.catalog as c; c.method('kepp-R2'); c.parse_model_folder('plan-graph-R2'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_folder_names_and_plan_page_ids_round_trip():
    from kepp_core import catalog as c
    from kepp_core.errors import KeppError

    for role in c.SUITE_ROLES + c.EXTRA_ROLES + (c.ModelRole("plan", "graph", 7), c.ModelRole("plan", "graph+llm")):
        assert c.parse_model_folder(c.model_folder(role)) == role
    assert c.parse_plan_model_id(c.plan_model_id(c.ModelRole("plan", "graph", 3))) == c.ModelRole("plan", "graph", 3)
    with pytest.raises(KeppError, match="not a model folder name"):
        c.parse_model_folder("plan-graph-Rx")


def test_every_registered_method_is_its_catalogue_entry():
    from kepp_core import catalog
    from kepp_core.evaluation.methods import REGISTRY

    assert list(REGISTRY) == [m.name for m in catalog.METHODS]
    for name, method in REGISTRY.items():
        entry = catalog.method(name)
        assert (method.label, method.requires, method.needs_llm, method.entry) == (entry.label, entry.roles, entry.llm,
                                                                                   entry)
    # sampling is the implementation's: the planning models and random draw K plans, the rest cannot
    assert sorted(n for n, m in REGISTRY.items() if m.sampled) == sorted(
        ["random", "pdpp", "kepp-nograph", "kepp-R1", "kepp-R2", "kepp-gt", "kepp-R1-struct", "kepp-llm",
         "kepp-graph-llm"])


def test_protocol_and_results_page_share_the_metric_names():
    from kepp_core import catalog
    from kepp_core.experiments import protocol
    from kepp_core.api import protocols

    assert protocol.METRIC_KEYS is protocols.METRIC_KEYS is catalog.METRIC_KEYS
    assert protocol.PAIRED_TEST is protocols.PAIRED_TEST is catalog.PAIRED_TEST
    assert catalog.METRIC_NAMES["mIoU"] == "mIoU"


@pytest.fixture
def kepp_r3(demo_t3):
    """``kepp-R3`` registered for one test (a catalogue entry and the KEPP planner class), with
    a planning model for it: the shipped R=2 model, its config saying R = 3 (the condition row
    aggregates any number of paths)."""
    from kepp_core import catalog
    from kepp_core.evaluation.methods import implementation, registered

    ds, root, models = demo_t3
    folder = models / "T3" / "plan-graph-R3"
    if not folder.is_dir():
        shutil.copytree(models / "T3" / "plan-graph-R2", folder)
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, "R": 3}))
    with ExitStack() as stack:
        entry = stack.enter_context(catalog.extra_method(catalog.kepp_r(3)))
        stack.enter_context(registered(implementation(entry)))
        yield ds, root, models
    assert catalog.find_method("kepp-R3") is None


@pytest.mark.slow
def test_a_new_method_reaches_evaluation_records_failures_results_and_the_plan_link(kepp_r3, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from kepp_core import api
    from kepp_core.cli import main
    from kepp_core.evaluation.failures import outcome_from_record
    from kepp_core.evaluation.records import read_records

    ds, root, models = kepp_r3
    records, out = tmp_path / "preds.jsonl", tmp_path / "rows.json"
    code = main(["eval", "--dataset", "demo", "--root", str(root), "--models", str(models), "-T", "3",
                 "--methods", "random", "kepp-R1", "kepp-R3", "--records", str(records), "--out", str(out)])
    assert code == 0
    rows = {r["method"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"random", "kepp-R1", "kepp-R3"} and 0 <= rows["kepp-R3"]["SR"] <= 100
    recs = read_records(records)
    assert all("kepp-R3" in r["plans"] for r in recs)
    assert max(len(r["paths"]) for r in recs) == 3  # the paths of the planner with the most paths
    o = outcome_from_record(recs[0], "kepp-R3")
    assert o.endpoints == tuple(recs[0]["endpoints"]) and o.top_path == tuple(recs[0]["paths"][0])
    table = api.read_predictions([records])
    r3 = table[table["method"] == "kepp-R3"]
    assert len(r3) == len(recs) and [len(p) for p in r3["paths"]] == [len(r["paths"]) for r in recs]
    assert catalog.method_label("kepp-R3") == "KEPP R=3"

    env = {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": str(root), "KEPP_APP_CHECKPOINTS": str(models),
           "KEPP_APP_PREDICTIONS": str(records), "OMP_NUM_THREADS": "2"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.switch_page("views/5_Results.py")
    at.run()
    assert not at.exception and not at.error, [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]
    assert at.selectbox(key="res_method").value == "kepp-R3"  # shown first: the planner with the most paths
    assert "KEPP R=3" in at.dataframe[0].value.index
    link = next(e.proto for e in at.get("page_link") if "Open in Plan" in e.proto.label)
    query = dict(p.split("=") for p in link.query_string.split("&"))
    assert (query["model"], query["R"]) == ("graph-R3", "3")

    plan = AppTest.from_file(str(APP), default_timeout=180)
    plan.query_params.update(query)
    plan.switch_page("views/1_Plan.py")
    plan.run()
    assert not plan.exception, [str(e.value) for e in plan.exception]
    assert plan.selectbox(key="plan_variant").value == "KEPP (P²KG condition, trained with R=3)"
    assert plan.selectbox(key="plan_R").value == 3 and plan.selectbox(key="plan_R").options == ["3"]


def test_every_row_is_built_from_named_parts_and_its_implementation_is_registered_by_name():
    """A row is a kind, an implementation named once and an endpoint source from the one registry: every
    catalogue row's implementation is the registered class of that name, its source's model is among
    its models, and the derived rows keep their base's parts."""
    from kepp_core.evaluation.methods import IMPLEMENTATIONS, REGISTRY

    rows = catalog.METHODS
    assert len(rows) == 31 and {m.kind for m in rows} == set(catalog.ROW_KINDS)
    for m in rows:
        assert type(REGISTRY[m.name]) is IMPLEMENTATIONS[m.impl] and REGISTRY[m.name].impl == m.impl
        ends = m.ends
        assert ends is None or ends is catalog.ENDPOINT_SOURCES[m.endpoints_from]
        assert ends is None or ends.role is None or ends.role in m.roles
        if m.decoded:
            base = catalog.method(m.base)
            assert m.impl == "decoded" and m.R == base.R and base.plan_model == m.plan_model
            assert m.decoder.accepts(ends) and m.decoder.distributions == ends.distributions
    joint = [m for m in rows if m.decoder is catalog.JOINT_DECODING]
    assert sorted({m.base for m in joint}) == sorted(catalog.JOINT_BASES)
    assert {m.ends.name for m in joint} == {"endpoint-model", "endpoint-model-pair", "text"} and len(joint) == 9


def test_one_function_says_which_planner_replans_every_row():
    """catalog.live_planner decides which planner re-plans a row on two clips; the Plan page's links
    (urls.plan_query) ask it for every row of the catalogue, and kepp plan --planning-model reads its
    id back. A graph-decoded row is re-planned by its base's planner (the +dec rows were once told
    apart by four functions that disagreed)."""
    from components.records import urls

    rows = catalog.METHODS
    none = sorted(m.name for m in rows if catalog.live_planner(m.name) is None)
    assert none == sorted(["random", "retrieval", "graph-pred", "graph-gt", "graph-ce", "graph-ce-pair", "pdpp",
                           "kepp-gt", "kepp-llm", "kepp-graph-llm", "pdpp+dec", "kepp-gt+dec"])
    checked = 0
    for m in rows:
        live = catalog.live_planner(m.name)
        query = urls.plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": m.name,
                                 "seed": 0})
        assert (query.get("model"), query.get("R")) == ((live.id, None if live.R is None else str(live.R))
                                                        if live else (None, None))
        if live is None:
            continue
        assert catalog.parse_planner_id(live.id) == live.role
        if m.decoded:
            assert live == catalog.live_planner(m.base)
        elif m.planner_role is not None:
            assert live.role == m.planner_role and catalog.planner_method(live.role) is m
        else:
            assert m.name == catalog.TEXT_PLANNER and live.role is None and live.R == m.R
        checked += 1
    assert checked == len(rows) - len(none) == 19
    assert catalog.live_planner("kepp-R1+dec").id == catalog.live_planner("kepp-R1").id == "graph-R1"
