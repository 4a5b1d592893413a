"""Every network and training loss works where its weights are, whatever device the data comes from:
tensors are created on, or moved to, the device of what they meet.

A SIMULATION of a GPU on any machine: the networks are moved to PyTorch's ``meta`` device (tensors with
shapes and no values), which refuses to meet a CPU tensor exactly as CUDA does ("Tensor on device cpu is not
on the expected device meta"), while the data stays on the CPU. A loss or a sample that mixes the two
fails here as it would on a GPU (the first GPU run found one: ``ConditionLayout.with_actions`` combined CPU
actions with a CUDA template). What the meta device cannot do (hand back a value: ``.item()``, ``.cpu()``)
is left to the CUDA run of the suite (benchmarks/gpu_check.sh)."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.training import tiny_cfg, tiny_world

ELSEWHERE = torch.device("meta")


class OneLoss(Exception):
    """Raised by the stand-in training loop after one loss on the other device."""


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    from kepp_core.data import load_dataset

    return load_dataset("demo", tiny_world(tmp_path_factory.mktemp("agnostic-world")))


@pytest.fixture
def one_loss_elsewhere(monkeypatch):
    """Replace the training loop by one that moves the model (and a trained-alongside module) to the other
    device, computes one batch's loss from the trainer's CPU data and runs its backward pass."""
    import kepp_core.training.trainers as trainers

    losses = []

    def fit(model, n_items, batch_loss, cfg, out, meta, validate=None, resume=False, progress=True, rt=None,
            extra=None):
        model.to(ELSEWHERE)
        if extra is not None and not isinstance(extra, trainers.WindowBatches):  # the batches read their count
            extra.to(ELSEWHERE)
        loss = batch_loss(model, torch.arange(min(cfg.batch_size, n_items)))
        loss.backward()
        losses.append(loss)
        raise OneLoss

    monkeypatch.setattr(trainers, "fit", fit)
    return losses


@pytest.mark.parametrize("trainer, options", [
    ("step", {"aux_ce_weight": 0.5}),
    ("plan", {"condition": "task", "aux_ce_weight": 0.5, "structured_weight": 0.1}),
    ("plan", {"condition": "none", "structured_weight": 0.1, "structured_learn_scale": True}),
    ("task-classifier", {}),
    ("endpoints", {"endpoint_windows": True}),
    ("endpoints", {"endpoint_arch": "pair", "endpoint_windows": False}),
])
def test_each_trainers_loss_runs_where_the_model_is_with_the_data_on_the_cpu(trainer, options, ds, one_loss_elsewhere,
                                                                             tmp_path):
    from kepp_core.training import train_endpoint_model, train_plan_model, train_step_model, train_task_classifier

    train = {"step": train_step_model, "plan": train_plan_model, "task-classifier": train_task_classifier,
             "endpoints": train_endpoint_model}[trainer]
    with pytest.raises(OneLoss):
        train(ds, tiny_cfg(horizon=3, **options), tmp_path / trainer, progress=False)
    (loss,) = one_loss_elsewhere
    assert loss.device == ELSEWHERE and loss.shape == ()


def test_actions_meet_a_template_on_its_device():
    from kepp_core.diffusion import plan_layout

    layout = plan_layout(3, 4, 5, "none")
    template = torch.zeros(2, 3, layout.channels, device=ELSEWHERE)
    x0 = layout.with_actions(template, torch.tensor([[0, 1, 2], [4, 3, 2]]))
    assert x0.device == ELSEWHERE and x0.shape == template.shape


def test_a_diffusion_model_samples_where_it_is_from_cpu_observations_and_condition_rows():
    from kepp_core.diffusion import ProjectedDiffusion, plan_layout

    model = ProjectedDiffusion(plan_layout(3, 4, 5, "graph"), n_steps=5, dim=8, mults=(1, 2)).to(ELSEWHERE)
    template = model.template(torch.zeros(2, 4), torch.ones(2, 4), {"graph": torch.zeros(2, 3, 5)})
    for sampler in ("ddim", "ddpm"):
        x0 = model.sample(template, sampler, 2)
        assert x0.device == ELSEWHERE and model.decode(x0).shape == (2, 3)
    assert model(model.layout.with_actions(template, torch.zeros(2, 3, dtype=torch.long)), template).device == ELSEWHERE


def test_classifiers_and_endpoint_models_take_observations_from_the_cpu():
    from kepp_core.models.classifier import TaskClassifier
    from kepp_core.models.endpoints import endpoint_model_from_config

    s, g = torch.zeros(3, 6), torch.ones(3, 6)
    assert TaskClassifier(obs_dim=6, n_tasks=2, hidden=8).to(ELSEWHERE)(s, g).device == ELSEWHERE
    for arch in ("clips", "pair"):
        model = endpoint_model_from_config({"arch": arch, "obs_dim": 6, "n_tasks": 2, "num_actions": 5,
                                            "hidden": 8}).to(ELSEWHERE)
        assert {t.device for t in model(s, g)} == {ELSEWHERE}


def test_the_s3d_network_takes_frames_and_sentences_from_the_cpu():
    from kepp_core.video.s3d import S3D, rule_state_dict

    net = S3D.from_state_dict(rule_state_dict(vocabulary=3), ["open", "door"], device="meta")
    out = net.video(torch.zeros(1, 3, 4, 32, 32))
    assert {v.device for v in out.values()} == {ELSEWHERE}
    assert net.text(["open the door"]).device == ELSEWHERE
