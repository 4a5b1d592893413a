"""The discriminative endpoint model (docs, Models: the endpoint model): trained by the real
``kepp train`` command on a tiny world, calibrated (one temperature per head, stored and applied
on load), hierarchical distributions that sum to 1; its evaluation rows (``graph-ce`` and the
``+jdec`` rows) through ``kepp eval`` into the records and the failure analysis; and the
auxiliary cross-entropy on the diffusion models' action block (off: the plain diffusion loss)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.helpers.training import kepp, tiny_cfg, tiny_world

torch.set_num_threads(1)

SMALL = ["--preset", "demo", "--train-steps", "40", "--diffusion-steps", "10", "--dim", "16", "--val-every", "20",
         "--set", "classifier_epochs=15", "--no-progress"]
ROWS = ["graph-ce", "kepp-R1+jdec", "kepp-nograph+jdec"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny world, its T=3 step, planning and endpoint models (``kepp train all``) and a
    ``kepp eval`` of the new rows with records."""
    root = tmp_path_factory.mktemp("ends")
    world = tiny_world(root / "world", seed=4)
    models = root / "models"
    r = kepp("train", "all", "--dataset", "demo", "--root", world, "--horizons", "3", "--out", models,
             "--only", "step", "plan-graph-R1", "plan-none", "endpoints", *SMALL)
    assert r.returncode == 0, r.stderr
    records, table = root / "records.jsonl", root / "table.json"
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3",
             "--methods", "graph-pred", *ROWS, "--records", records, "--out", table)
    assert r.returncode == 0, r.stderr
    return world, models, records, table


@pytest.mark.slow
def test_kepp_train_stores_one_fitted_temperature_per_head_and_loading_applies_it(trained):
    from kepp_core.catalog import ENDPOINTS, model_folder
    from kepp_core.calibration import calibrated_log_probs
    from kepp_core.models.checkpoint import load_checkpoint

    world, models, _, _ = trained
    folder = models / "T3" / model_folder(ENDPOINTS)
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["kind"] == "endpoints" and "training" in cfg
    stored = cfg["model"]["temperature"]
    assert set(stored) == {"task", "first", "last"} and all(0 < t < 100 for t in stored.values())
    assert stored != {"task": 1.0, "first": 1.0, "last": 1.0}  # fitted, not the defaults
    model, _ = load_checkpoint(folder, "endpoints")
    assert model.temperature == stored
    gen = torch.Generator().manual_seed(0)
    s, g = torch.randn(5, model.obs_dim, generator=gen), torch.randn(5, model.obs_dim, generator=gen)
    _, first, last = model(s, g)
    flat = model.endpoint_log_probs(s, g, hierarchical=False)
    # Two float32 forward passes (here and inside endpoint_log_probs) may sum in another order (threads on a
    # busy machine): their logits differ by float32 rounding, about 1e-6 of their size, which np.allclose's
    # default absolute 1e-8 refuses for log-probabilities near 0. 1e-5 is ten times that rounding.
    np.testing.assert_allclose(flat[:, 0], calibrated_log_probs(first.detach().numpy(), stored["first"]),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(flat[:, 1], calibrated_log_probs(last.detach().numpy(), stored["last"]),
                               rtol=1e-5, atol=1e-5)
    model.set_temperature({"first": stored["first"] * 3})
    assert not np.allclose(model.endpoint_log_probs(s, g, hierarchical=False)[:, 0], flat[:, 0])


@pytest.mark.slow
def test_hierarchical_endpoints_sum_to_one_and_equal_the_flat_model_when_every_task_has_every_action(trained):
    from kepp_core.models.checkpoint import load_checkpoint

    _, models, _, _ = trained
    model, _ = load_checkpoint(models / "T3" / "endpoints", "endpoints")
    mask = model.task_mask.numpy()
    assert mask.any(1).all() and not mask.all()  # the tasks' own training actions
    s, g = torch.randn(64, model.obs_dim), torch.randn(64, model.obs_dim)
    hier = np.exp(model.endpoint_log_probs(s, g))
    assert np.allclose(hier.sum(-1), 1.0)
    outside = ~mask.any(0)  # an action no task shows gets no mass
    assert (hier[:, :, outside] == 0).all()
    model.set_task_actions(np.ones_like(mask))
    assert np.allclose(model.endpoint_log_probs(s, g), model.endpoint_log_probs(s, g, hierarchical=False))


@pytest.mark.slow
def test_the_new_rows_run_through_kepp_eval_into_the_records_and_the_failure_analysis(trained):
    from kepp_core import api
    from kepp_core.evaluation.failures import outcome_from_record
    from kepp_core.evaluation.records import read_records

    _, models, records, table = trained
    rows = {r["method"]: r for r in json.loads(table.read_text())["rows"]}
    assert set(ROWS) <= set(rows) and all(0 <= rows[m]["SR"] <= 100 for m in ROWS)
    recs = read_records(records)
    assert all(set(ROWS) <= set(r["plans"]) for r in recs)
    for m in ROWS:
        o = outcome_from_record(recs[0], m)
        assert list(o.plan) == recs[0]["plans"][m]
    from kepp_core.evaluation.methods.choice import cache_file

    assert not (models / "T3" / "decoding.json").exists()  # kept in the cache home, as the +dec rows' choices
    choices = json.loads(cache_file(models / "T3").read_text())
    assert {"kepp-R1+jdec", "kepp-nograph+jdec"} <= set(choices)  # stored under the rows' own names
    assert {c["choice"]["mode"] for k, c in choices.items() if k.endswith("+jdec")} == {"dist"}
    assert "endpoints" in choices["kepp-R1+jdec"]["models"]  # remade when the endpoint model changes
    df = api.read_predictions([records])
    assert set(ROWS) <= set(df["method"])
    outcomes, _, _ = api.failure_analysis(df[df["method"] == "graph-ce"])
    assert len(outcomes) == len(recs)


@pytest.mark.slow
def test_graph_ce_plans_the_top_graph_path_between_the_endpoint_models_argmax(trained):
    from kepp_core.data import load_dataset
    from kepp_core.evaluation.methods import EvalContext, get_method
    from kepp_core.graph.build import build_graph
    from kepp_core.graph.retrieval import make_retriever
    from kepp_core.training import episode_tensors

    world, models, _, _ = trained
    ds = load_dataset("demo", world)
    ctx = EvalContext(ds, 3, episode_tensors(ds, 3, "test"), build_graph(ds, "train"), models / "T3")
    plans = get_method("graph-ce").plan(ctx).plans
    ends = ctx.endpoint_model_log_probs().argmax(-1)
    top = [r.top for r in make_retriever(ctx.graph, "p2kg", 1).batch([tuple(e) for e in ends.tolist()], 3)]
    assert plans.tolist() == [list(t) for t in top]
    assert ctx.cache.step_endpoints is None  # the step model's endpoints (the records') are not touched
    # the horizon's endpoint accuracy is the endpoint model's (only: the step model was not run)
    acc = ctx.step_accuracy()
    assert set(acc) == {"ce_first_acc", "ce_last_acc"}
    gt = ctx.gt
    assert acc["ce_first_acc"] == pytest.approx((plans[:, 0] == gt[:, 0]).mean() * 100)
    assert acc["ce_last_acc"] == pytest.approx((plans[:, -1] == gt[:, -1]).mean() * 100)


def test_the_protocol_results_say_both_endpoint_models_accuracy():
    from kepp_core.experiments.protocol import markdown

    spec = {"confidence": 0.9, "setting": "conventional", "preset": "demo", "seeds": [0, 1],
            "train_fractions": [1.0], "horizons": [3], "methods": ["graph-ce"]}
    row = {"fraction": 1.0, "T": 3, "method": "graph-ce", "SR": 40.0, "SR_ci": 1.0, "first_acc": 2.5,
           "first_acc_ci": 0.5, "last_acc": 3.0, "last_acc_ci": 0.5, "ce_first_acc": 68.1, "ce_first_acc_ci": 0.4,
           "ce_last_acc": 63.9, "ce_last_acc_ci": 0.3}
    text = markdown({"spec": spec, "summary": [row], "dataset": "demo", "episodes": {"3": 10}, "pairs": []})
    assert ("Endpoint accuracy on the test episodes, first / last step (%): step model 2.5 ± 0.5 / 3.0 ± 0.5; "
            "endpoint model 68.1 ± 0.4 / 63.9 ± 0.3.") in text
    no_model = {k: v for k, v in row.items() if not k.startswith("ce_")}
    text = markdown({"spec": spec, "summary": [no_model], "dataset": "demo", "episodes": {"3": 10}, "pairs": []})
    assert "step model 2.5 ± 0.5 / 3.0 ± 0.5." in text and "; endpoint model" not in text


def test_the_protocol_trains_the_endpoint_model_for_the_rows_that_need_it():
    from kepp_core.experiments.protocol import members_for

    assert members_for(["kepp-R1+jdec"]) == ["step", "plan-graph-R1", "endpoints"]
    assert members_for(["graph-ce"]) == ["endpoints"] and "endpoints" not in members_for(["kepp-R1+dec"])


def _losses(folder) -> list[float]:
    return [json.loads(x)["loss"] for x in (folder / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.cpu
def test_aux_ce_off_is_the_plain_diffusion_loss_and_on_changes_it(trained, tmp_path):
    from kepp_core.data import load_dataset
    from kepp_core.diffusion import ProjectedDiffusion, step_layout
    from kepp_core.training import fit, train_step_model
    from kepp_core.training.trainers import _parts
    from kepp_core.training.windows import observation_stats

    world = trained[0]
    ds = load_dataset("demo", world)
    cfg = tiny_cfg(horizon=3, train_steps=12, log_every=1, val_every=12)
    train_step_model(ds, cfg, tmp_path / "off", progress=False)
    train_step_model(ds, tiny_cfg(horizon=3, train_steps=12, log_every=1, val_every=12, aux_ce_weight=0.5),
                     tmp_path / "on", progress=False)
    # the reference: the diffusion loss alone, through the same loop, data and seeds
    torch.manual_seed(cfg.seed)
    data, _ = _parts(ds, cfg)
    model = ProjectedDiffusion(step_layout(3, data.obs_dim, ds.num_actions), n_steps=cfg.n_steps, dim=cfg.dim, mults=cfg.mults)
    model.set_normalisation(*observation_stats(data.obs_start, data.obs_goal))

    def plain(net, idx):
        tpl = model.template(data.obs_start[idx], data.obs_goal[idx])
        return net(model.layout.with_actions(tpl, data.actions[idx]), tpl)

    fit(model, len(data), plain, cfg, tmp_path / "ref", {"kind": "step", "model": model.config()}, progress=False)
    off, on, ref = _losses(tmp_path / "off"), _losses(tmp_path / "on"), _losses(tmp_path / "ref")
    assert off == ref  # bit for bit
    assert len(on) == len(off) and on[0] > off[0] and on != off  # the CE term is added from step 1


@pytest.mark.slow
def test_aux_ce_reaches_the_planning_model_and_a_negative_weight_is_one_clear_error(trained, tmp_path):
    world = trained[0]
    common = ["train", "plan", "--dataset", "demo", "--root", world, "-T", "3", "--condition", "none",
              "--train-steps", "6", "--log-every", "1", "--val-every", "6", "--preset", "demo", "--dim", "16",
              "--diffusion-steps", "10", "--no-progress"]
    assert kepp(*common, "--out", tmp_path / "off").returncode == 0
    r = kepp(*common, "--aux-ce-weight", "0.5", "--out", tmp_path / "on")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "on" / "config.json").read_text())["train"]["aux_ce_weight"] == 0.5
    on, off = _losses(tmp_path / "on"), _losses(tmp_path / "off")
    assert on[0] > off[0] and on != off
    bad = kepp(*common, "--aux-ce-weight", "-1", "--out", tmp_path / "bad")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "aux_ce_weight=-1.0 must be a finite number >= 0" in bad.stderr


def test_only_the_coin_world_ce_preset_turns_the_aux_term_on():
    from kepp_core.training import PRESETS, preset

    assert {name for name in PRESETS if preset(name).aux_ce_weight} == {"coin-world-ce"}
    assert preset("coin-world-ce").to_dict() == {**preset("coin-world").to_dict(), "aux_ce_weight": 0.5}


@pytest.mark.slow
def test_the_results_page_shows_the_new_rows_with_their_labels(trained, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from kepp_core import catalog
    from kepp_core.paths import REPO_ROOT

    world, models, records, _ = trained
    env = {"KEPP_APP_DATASET": "demo", "KEPP_APP_ROOT": str(world), "KEPP_APP_CHECKPOINTS": str(models),
           "KEPP_APP_PREDICTIONS": str(records), "OMP_NUM_THREADS": "1"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(str(REPO_ROOT / "app" / "Home.py"), default_timeout=180)
    at.switch_page("views/5_Results.py")
    at.run()
    assert not at.exception and not at.error, [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]
    shown = set(at.dataframe[0].value.index)
    assert {catalog.method_label(m) for m in ROWS} <= shown


def test_joint_decoding_of_a_block_with_one_hot_endpoint_distributions_is_pinned_decoding():
    from kepp_core.graph.build import ProcedureGraph
    from kepp_core.graph.decoding import DecodeChoice, decode, decode_block, emission_log_probs, transition_log_probs

    rng = np.random.default_rng(0)
    g = ProcedureGraph.from_plans([f"a{i}" for i in range(5)], [tuple(rng.integers(0, 5, 4)) for _ in range(30)])
    trans = transition_log_probs(g)
    block = rng.normal(0, 0.3, (40, 4, 5))
    probs = rng.dirichlet(np.ones(5), (40, 2))
    one_hot = (np.arange(5)[None, None] == probs.argmax(-1)[:, :, None]).astype(float)
    for lam in (0.0, 1.0):
        assert (decode_block(block, trans, DecodeChoice("dist", lam), one_hot)
                == decode_block(block, trans, DecodeChoice("pinned", lam), probs)).all()
        logp = np.log(probs)
        full = decode(emission_log_probs(block), trans, lam, "dist", start_logp=logp[:, 0], goal_logp=logp[:, 1])
        assert (decode_block(block, trans, DecodeChoice("dist", lam), probs) == full.plans).all()
    assert full.plans.shape == (40, 4)  # every episode's plan was compared
