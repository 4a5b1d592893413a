"""The endpoint model's two architectures (docs, Models: the endpoint model): the per-clip model
(``clips``, the default) and the earlier one (``pair``) — shapes, the windows every labelled step
gives (against the episodes, by brute force), deterministic and resumable training, calibration,
old checkpoints, and the ``endpoints-pair`` variant that a protocol runs beside the default
(folder, rows, training recipe, run lists, evaluation)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.helpers.training import kepp, tiny_cfg, tiny_world

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tiny_world(tmp_path_factory.mktemp("variants") / "world", seed=5)


def ecfg(**kw):
    return tiny_cfg(horizon=3, classifier_epochs=6, **kw)


@pytest.mark.parametrize("arch", ["clips", "pair"])
def test_both_architectures_give_task_first_and_last_logits_and_distributions(arch):
    from kepp_core.models.endpoints import endpoint_model_from_config

    m = endpoint_model_from_config({"arch": arch, "obs_dim": 12, "n_tasks": 3, "num_actions": 7, "hidden": 16})
    s, g = torch.randn(5, 12), torch.randn(5, 12)
    task, first, last = m(s, g)
    assert task.shape == (5, 3) and first.shape == last.shape == (5, 7)
    logp = m.endpoint_log_probs(s, g)
    assert logp.shape == (5, 2, 7) and np.allclose(np.exp(logp).sum(-1), 1.0)
    again = endpoint_model_from_config(m.config())
    assert type(again) is type(m) and again.arch == arch and m.config()["arch"] == arch


def test_the_clip_model_reads_each_endpoint_from_its_own_clip_plus_a_correction_from_both():
    from kepp_core.models.endpoints import ClipEndpointModel

    m = ClipEndpointModel(obs_dim=6, n_tasks=2, num_actions=4, hidden=8).eval()
    s, g = torch.randn(3, 6), torch.randn(3, 6)
    outs = m(s, g, windows=(s, g))
    assert len(outs) == 7 and [o.shape[-1] for o in outs] == [2, 4, 4, 4, 4, 2, 2]
    with torch.no_grad():
        zs, zg = m.start(m.standardise(s)), m.goal(m.standardise(g))
        both = torch.cat([zs, zg], -1)
        assert torch.allclose(outs[1], m.first(zs) + m.pair_first(both))
        assert torch.allclose(outs[2], m.last(zg) + m.pair_last(both))
        assert torch.allclose(outs[3], m.first(zs)) and torch.allclose(outs[4], m.last(zg))


def test_the_clip_models_distributions_do_not_depend_on_dropout():
    """The clip model has dropout; its distributions are computed in evaluation mode, so a model left
    in training mode gives the same distribution every call, and its logits in evaluation mode."""
    from kepp_core.models.endpoints import ClipEndpointModel

    torch.manual_seed(0)
    m = ClipEndpointModel(obs_dim=6, n_tasks=2, num_actions=5, hidden=16).train()
    s, g = torch.randn(4, 6), torch.randn(4, 6)
    noisy = [m(s, g)[1] for _ in range(2)]
    assert not torch.allclose(*noisy)  # dropout is on in training mode
    m.train()
    first = m.endpoint_log_probs(s, g)
    m.train()
    assert np.array_equal(first, m.endpoint_log_probs(s, g)) and not m.training
    with torch.no_grad():
        assert torch.equal(m(s, g)[1], m(s, g)[1])


def test_every_step_window_is_the_window_of_the_episodes_it_begins_or_ends(world):
    """Brute force: for every episode of every horizon, its start window is the step window of its
    first step and its goal window the step window of its last step; every timed step is there once."""
    from kepp_core.data import load_dataset
    from kepp_core.data.episodes import make_episodes, step_episodes

    ds = load_dataset("demo", world)
    checked = 0
    for setting in ("conventional", "pdpp"):
        steps = {(e.video.task, e.video.id, e.first): e for e in step_episodes(ds, None, setting)}
        assert len(steps) == sum(len(v.steps) for v in ds.videos)
        for horizon in (2, 3, 5):
            for ep in make_episodes(ds, horizon, None, setting):
                v = (ep.video.task, ep.video.id)
                first, last = steps[(*v, ep.first)], steps[(*v, ep.first + horizon - 1)]
                assert first.start_window == ep.start_window and last.goal_window == ep.goal_window
                assert first.actions == ep.actions[:1] and last.actions == ep.actions[-1:]
                checked += 1
    assert checked == 964  # the small world's episodes of T = 2, 3 and 5, in both settings


def test_window_batches_cover_every_window_once_per_epoch():
    from kepp_core.training.trainers import WindowBatches

    b = WindowBatches(10, 3, seed=1)
    epoch = torch.cat([b.draw() for _ in range(3)])  # 3 batches of 3 per epoch of 10 windows
    assert len(set(epoch.tolist())) == 9
    nxt = torch.cat([b.draw() for _ in range(3)])
    assert not torch.equal(epoch, nxt)  # each epoch its own permutation
    again = WindowBatches(10, 3, seed=1)
    assert torch.equal(torch.cat([again.draw() for _ in range(3)]), epoch)


@pytest.mark.slow
@pytest.mark.cpu
def test_training_is_deterministic_and_a_resumed_run_ends_with_the_same_weights(world, tmp_path, monkeypatch):
    """The windows' batches are part of the saved state: killed after its first validation and
    resumed, a run ends where an uninterrupted one does."""
    import kepp_core.training.trainers as trainers
    from kepp_core.data import load_dataset
    from kepp_core.training import train_endpoint_model

    ds = load_dataset("demo", world)
    cfg = ecfg()
    full = train_endpoint_model(ds, cfg, tmp_path / "a", progress=False)
    same = train_endpoint_model(ds, cfg, tmp_path / "b", progress=False)
    assert full["rank_digests"] == same["rank_digests"]
    stored = json.loads((tmp_path / "a" / "config.json").read_text())
    assert stored["model"]["arch"] == "clips" and stored["windows"] > 0
    real, calls = trainers.endpoint_accuracy, []

    def dies_at_the_second_validation(model, part):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(model, part)

    monkeypatch.setattr(trainers, "endpoint_accuracy", dies_at_the_second_validation)
    with pytest.raises(RuntimeError, match="killed"):
        train_endpoint_model(ds, cfg, tmp_path / "cut", progress=False)
    monkeypatch.setattr(trainers, "endpoint_accuracy", real)
    resumed = train_endpoint_model(ds, cfg, tmp_path / "cut", resume=True, progress=False)
    assert resumed["rank_digests"] == full["rank_digests"]


def test_the_windows_and_the_smoothing_change_the_model_and_each_head_is_calibrated(world, tmp_path):
    from kepp_core.data import load_dataset
    from kepp_core.calibration import fit_temperature
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.training import train_endpoint_model
    from kepp_core.training.trainers import _parts

    ds = load_dataset("demo", world)
    base = train_endpoint_model(ds, ecfg(), tmp_path / "base", progress=False)
    bare = train_endpoint_model(ds, ecfg(endpoint_windows=False, endpoint_smoothing=0.0), tmp_path / "bare",
                                progress=False)
    assert base["rank_digests"] != bare["rank_digests"]
    model, _ = load_checkpoint(tmp_path / "base", "endpoints")
    _, val = _parts(ds, ecfg())
    with torch.no_grad():
        task, first, last = model(val.obs_start, val.obs_goal)
    want = {"task": fit_temperature(task.numpy(), val.tasks.numpy()),
            "first": fit_temperature(first.numpy(), val.actions[:, 0].numpy()),
            "last": fit_temperature(last.numpy(), val.actions[:, -1].numpy())}
    assert model.temperature == pytest.approx(want)
    assert base["temperature"] == pytest.approx(want)


def test_a_checkpoint_from_before_the_two_architectures_loads_as_the_pair_model(tmp_path):
    from kepp_core.models.checkpoint import load_checkpoint, save_checkpoint
    from kepp_core.models.endpoints import PairEndpointModel

    m = PairEndpointModel(obs_dim=6, n_tasks=2, num_actions=3, hidden=8)
    old = m.config()
    del old["arch"]
    assert sorted(m.state_dict()) == sorted(["net.0.weight", "net.0.bias", "net.3.weight", "net.3.bias", "net.5.weight",
                                             "net.5.bias", "obs_mean", "obs_std", "first.weight", "first.bias",
                                             "last.weight", "last.bias", "task_mask"])  # the earlier model's layout
    dataset = {"vocabulary_hash": "v0", "num_actions": 3, "obs_dim": 6, "horizon": 3}  # what every checkpoint names
    save_checkpoint(tmp_path / "e", m, {"kind": "endpoints", "model": old, "dataset": dataset})
    loaded, _ = load_checkpoint(tmp_path / "e", "endpoints")
    s, g = torch.randn(4, 6), torch.randn(4, 6)
    assert isinstance(loaded, PairEndpointModel)
    assert np.allclose(loaded.endpoint_log_probs(s, g), m.endpoint_log_probs(s, g))


def test_the_pair_variant_has_its_folder_its_rows_and_the_earlier_recipe():
    from kepp_core import catalog as c
    from kepp_core.errors import KeppError
    from kepp_core.experiments.protocol import members_for
    from kepp_core.training.suite import role_config

    assert c.model_folder(c.ENDPOINTS_PAIR) == "endpoints-pair"
    assert c.parse_model_folder("endpoints-pair") == c.ENDPOINTS_PAIR
    with pytest.raises(KeppError, match="only the endpoint model has variants"):
        c.model_folder(c.ModelRole("step", variant="pair"))
    for name in ("endpoints-bogus", "endpoints-clips"):  # the default architecture is no variant: one folder, endpoints
        with pytest.raises(KeppError, match="not a model folder name"):
            c.parse_model_folder(name)
    with pytest.raises(KeppError, match="only the endpoint model has variants"):
        c.model_folder(c.ModelRole("endpoints", variant="clips"))
    pairs = {m.name: m for m in c.METHODS if c.ENDPOINTS_PAIR in m.roles}
    defaults = {m.name for m in c.METHODS if c.ENDPOINTS in m.roles}
    assert set(pairs) == {f"{n}-pair" for n in defaults}
    for name, m in pairs.items():
        twin = c.method(name[:-len("-pair")])
        assert m.roles == tuple(c.ENDPOINTS_PAIR if r == c.ENDPOINTS else r for r in twin.roles)
        assert (m.base, m.kind, m.decoder, m.R, type(m.ends)) == (twin.base, twin.kind, twin.decoder, twin.R, type(twin.ends))
        assert (m.ends.role, m.ends.words, twin.ends.words) == (c.ENDPOINTS_PAIR, "pair endpoint model", "endpoint model")
        assert not m.default and name not in c.DEMO_RECORDED
    assert members_for(["kepp-R1+jdec", "kepp-R1+jdec-pair"]) == ["step", "plan-graph-R1", "endpoints",
                                                                  "endpoints-pair"]
    cfg = role_config(ecfg(), c.ENDPOINTS_PAIR)
    assert (cfg.endpoint_arch, cfg.endpoint_windows, cfg.endpoint_smoothing, cfg.endpoint_epochs) == ("pair", False,
                                                                                                      0.0, 0)
    assert role_config(ecfg(), c.ENDPOINTS) == ecfg()


def test_the_run_list_line_of_the_pair_variant_trains_it_with_the_earlier_recipe(tmp_path):
    from kepp_core import catalog as c
    from kepp_core.commands.runlist import train_command

    cmd = train_command(c.ENDPOINTS_PAIR, ecfg(), "demo", tmp_path / "T3", ["--dataset", "demo"])
    line = cmd.line
    assert cmd.stage == 1 and cmd.out.endswith("endpoints-pair") and " train endpoints " in line
    for opt in ("endpoint_arch=\"pair\"", "endpoint_windows=false", "endpoint_smoothing=0.0"):
        assert f"--set '{opt}'" in line or f"--set {opt}" in line, line


@pytest.mark.slow
def test_kepp_eval_runs_both_endpoint_models_side_by_side(world, tmp_path):
    """The default and the earlier endpoint model in one evaluation: their rows, and each model's accuracy."""
    models = tmp_path / "models"
    small = ["--preset", "demo", "--dim", "16", "--diffusion-steps", "10", "--set", "classifier_epochs=6",
             "--no-progress"]
    r = kepp("train", "all", "--dataset", "demo", "--root", world, "--horizons", "3", "--out", models,
             "--only", "endpoints", "endpoints-pair", *small)
    assert r.returncode == 0, r.stderr
    assert json.loads((models / "T3" / "endpoints-pair" / "config.json").read_text())["model"]["arch"] == "pair"
    table = tmp_path / "t.json"
    r = kepp("eval", "--dataset", "demo", "--root", world, "--models", models, "-T", "3",
             "--methods", "graph-ce", "graph-ce-pair", "--out", table)
    assert r.returncode == 0, r.stderr
    rows = {row["method"]: row for row in json.loads(table.read_text())["rows"]}
    assert set(rows) == {"graph-ce", "graph-ce-pair"}
    for row in rows.values():
        assert {"ce_first_acc", "ce_last_acc", "ce_pair_first_acc", "ce_pair_last_acc"} <= set(row)


def test_bad_endpoint_options_are_clear_errors():
    from kepp_core.errors import KeppError

    with pytest.raises(KeppError, match="endpoint_arch='mlp' is not one of clips, pair"):
        ecfg(endpoint_arch="mlp")
    with pytest.raises(KeppError, match="endpoint_windows=true needs endpoint_arch='clips'"):
        ecfg(endpoint_arch="pair")
    with pytest.raises(KeppError, match="endpoint_smoothing=1.0 must be in"):
        ecfg(endpoint_smoothing=1.0)
