"""A row's parts act: its endpoint source gives the endpoints, their distributions and what a
planner is given; its decoder owns its modes, its stored choice key and its words. Parts that do not fit
are refused when the row is built, in one line; a new decoder and a row with another endpoint source
reach ``kepp eval``'s table and the app's names with no other edit (docs/architecture.md's walkthroughs)."""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from dataclasses import replace

import numpy as np
import pytest

from kepp_core import catalog
from kepp_core.errors import KeppError


def refusal(**parts) -> str:
    """The one-line error building the row ``parts`` raises."""
    with pytest.raises(KeppError) as err:
        catalog.MethodEntry(**parts)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"method {parts['name']!r}: ")
    return text


class PinnedDecoder(catalog.Decoder):
    """A decoder written in a test: the exact best plan between the source's most probable ends."""

    def decode(self, ops, block, probs, choice):
        return ops.best(ops.emissions(block), choice.lam, "pinned", probs[:, 0].argmax(-1), probs[:, 1].argmax(-1))


def test_a_row_whose_planner_cannot_use_its_source_is_refused_when_it_is_built():
    nograph = catalog.method("kepp-nograph")
    assert "plans without endpoints: it cannot plan from the endpoint source 'endpoint-model'" in refusal(
        **{**vars(nograph), "name": "kepp-nograph-ce", "roles": (*nograph.roles, catalog.ENDPOINTS),
           "endpoints_from": catalog.ENDPOINT_MODEL})
    assert "(plan-task) plans without endpoints" in refusal(**{**vars(catalog.method("pdpp")), "name": "pdpp-gt",
                                                                "endpoints_from": catalog.TRUTH})
    assert "a baseline row plans without endpoints" in refusal(name="random-gt", label="x", kind=catalog.BASELINE,
                                                              impl="random", endpoints_from=catalog.TRUTH)
    assert "plans between endpoints: name its endpoint source" in refusal(
        name="graph-none", label="x", kind=catalog.ZERO_SHOT, impl="zero-shot", R=1)
    assert "plans between endpoints" in refusal(**{**vars(catalog.kepp_r(3)), "endpoints_from": None})
    # a decoder refuses a source it cannot decode with; a decoded row names its base and its decoder
    r1 = catalog.method("kepp-R1")
    assert "decoder (joint) cannot decode with the endpoint source 'predicted'" in refusal(
        **{**vars(catalog.joint_decoded(r1)), "name": "kepp-R1+jdec-step", "endpoints_from": catalog.PREDICTED})
    assert "decoder (graph) cannot decode with the endpoint source 'text'" in refusal(
        **{**vars(catalog.decoded(r1)), "name": "kepp-R1+dec-text", "endpoints_from": catalog.TEXT})
    assert "its base and its decoder go together" in refusal(**{**vars(catalog.decoded(r1)), "decoder": None})
    with pytest.raises(KeppError, match="already in the catalogue"), catalog.extra_method(catalog.decoded(r1)):
        pass


def test_two_decoders_of_one_base_keep_their_choices_apart():
    """The graph decoder keys a row's choice by its base (decoding.json's first layout); any other decoder
    by the row's own name, so a second non-joint decoder of kepp-R1 never shares kepp-R1+dec's entry; a
    decoder that would is refused when its row joins the catalogue."""
    r1 = catalog.method("kepp-R1")
    pinned = catalog.Decoder(name="pinned", suffix="+pdec", tail=" + pinned decoding", modes=("pinned",),
                             distributions=False, words="pinned")
    keys = {m.choice_key for m in catalog.METHODS if m.decoded}
    assert len(keys) == sum(m.decoded for m in catalog.METHODS)
    assert catalog.method("kepp-R1+dec").choice_key == "kepp-R1" and catalog.decoded(r1, pinned).choice_key == "kepp-R1+pdec"
    with catalog.extra_method(catalog.decoded(r1, pinned)) as row:
        assert catalog.find_method(row.name) is row
    clash = replace(pinned, keyed_by_base=True)
    with pytest.raises(KeppError, match="would be stored under 'kepp-R1', as method 'kepp-R1\\+dec'"):
        with catalog.extra_method(catalog.decoded(r1, clash)):
            pass
    assert catalog.find_method("kepp-R1+pdec") is None


def test_what_a_row_is_follows_its_source_not_its_name():
    """kepp-R2 moved to the endpoint model (once accepted and then planned with the step
    model's endpoints under the new label): it leaves the default table, the live planner, the paths the
    records keep and the failure analysis's stored paths."""
    from kepp_core.evaluation.failures import stored_paths

    r2 = catalog.method("kepp-R2")
    moved = replace(r2, name="kepp-R2-ce", roles=(*r2.roles, catalog.ENDPOINTS), endpoints_from=catalog.ENDPOINT_MODEL)
    assert (r2.default, r2.planner_role is not None, r2.judged_on_stored_paths) == (True, True, True)
    assert (moved.default, moved.planner_role, moved.judged_on_stored_paths, moved.stores_paths) == (False, None, False, False)
    assert moved.endpoint_role == catalog.ENDPOINTS
    with catalog.extra_method(moved):
        assert catalog.live_planner("kepp-R2-ce") is None and stored_paths("kepp-R2-ce") == 0
        assert catalog.paths_source(["kepp-R2-ce", "kepp-R1"]) == "kepp-R1"


@contextmanager
def added(entry: catalog.MethodEntry):
    """``entry`` in the catalogue and its implementation in the registry for a ``with`` block."""
    from kepp_core.evaluation.methods import implementation, registered

    with ExitStack() as stack:
        stack.enter_context(catalog.extra_method(entry))
        yield stack.enter_context(registered(implementation(entry)))


def eval_rows(root, models, methods, tmp_path, *extra) -> dict[str, dict]:
    """``kepp eval`` (in this process) of ``methods`` on the demo world's T=3 test episodes: its table's
    rows by method."""
    from kepp_core.cli import main

    out = tmp_path / "rows.json"
    code = main(["eval", "--dataset", "demo", "--root", str(root), "--models", str(models), "-T", "3",
                 "--methods", *methods, "--out", str(out), "--threads", "1", "--device", "cpu", *extra])
    assert code == 0
    return {r["method"]: r for r in json.loads(out.read_text())["rows"]}


@pytest.mark.slow
def test_a_row_with_another_endpoint_source_plans_between_that_sources_endpoints(demo_t3, tmp_path, monkeypatch):
    """Walkthrough "a row with a new endpoint source" (docs/architecture.md): one catalogue entry, here
    kepp-R2 between the endpoint model's endpoints, reaches kepp eval's table and the app's names, and the
    KEPP planner plans between the endpoint model's endpoints, not the step model's."""
    from components.ui.names import method_name

    from kepp_core.evaluation.methods import EvalContext, EvalOptions
    from kepp_core.graph.build import build_graph
    from kepp_core.training.data import episode_tensors

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    ds, root, models = demo_t3
    r2 = catalog.method("kepp-R2")
    row = replace(r2, name="kepp-R2-ce", label="KEPP R=2, endpoint model's endpoints",
                  roles=(*r2.roles, catalog.ENDPOINTS), endpoints_from=catalog.ENDPOINT_MODEL)
    with added(row) as method:
        rows = eval_rows(root, models, ["kepp-R2", "kepp-R2-ce"], tmp_path)
        assert set(rows) == {"kepp-R2", "kepp-R2-ce"} and 0 <= rows["kepp-R2-ce"]["SR"] <= 100
        assert method_name("kepp-R2-ce") == "KEPP R=2, endpoint model's endpoints"
        ctx = EvalContext(ds, 3, episode_tensors(ds, 3, "test"), build_graph(ds, "train"), models / "T3", EvalOptions())
        out = method.plan(ctx)
        ends = ctx.endpoint_model_log_probs().argmax(-1)
        assert np.array_equal(out.endpoints, ends)  # the paths and the plan run between them
        assert not np.array_equal(ends, ctx.step_endpoints())  # the two sources differ on these episodes
    assert catalog.find_method("kepp-R2-ce") is None


@pytest.mark.slow
def test_a_new_decoder_reaches_the_eval_table_the_app_and_its_own_stored_choice(demo_t3, tmp_path, monkeypatch):
    """Walkthrough "a new decoder" (docs/architecture.md): a Decoder object and its row, added here, reach
    kepp eval's table and the app's names (its label, its words on a live plan); its choice is made among
    its own modes and stored under its own key beside kepp-R1+dec's."""
    from components.ui.names import method_name

    from kepp_core.evaluation.methods.choice import planner_rows

    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    _, root, models = demo_t3
    pinned = PinnedDecoder(name="pinned", suffix="+pdec", tail=" + graph decoding between pinned ends",
                           modes=("pinned",), distributions=False, mode_words={"pinned": "the {ends}'s ends pinned"},
                           words="+ pinned graph decoding: the plan decoded between the step model's ends.")
    row = catalog.decoded(catalog.method("kepp-R1"), pinned)
    with added(row):
        rows = eval_rows(root, models, ["kepp-R1+dec", "kepp-R1+pdec"], tmp_path, "--save-decoding")
        assert set(rows) == {"kepp-R1+dec", "kepp-R1+pdec"} and 0 <= rows["kepp-R1+pdec"]["SR"] <= 100
        assert method_name("kepp-R1+pdec") == "KEPP R=1 + graph decoding between pinned ends"
        assert catalog.find_method("kepp-R1+pdec").decoder.words == pinned.words  # the Plan page's note
        assert catalog.live_planner("kepp-R1+pdec") == catalog.live_planner("kepp-R1")
        assert row in planner_rows(catalog.method("kepp-R1"))
        stored = json.loads((models / "T3" / catalog.DECODING_FILE).read_text())
        assert {g["mode"] for g in stored["kepp-R1+pdec"]["grid"]} == {"pinned"}
        assert stored["kepp-R1"]["choice"]["mode"] in catalog.MARGINAL_MODES  # kepp-R1+dec's entry, untouched
