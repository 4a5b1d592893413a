"""The projected diffusion model: layouts, projection, schedule, loss weights, samplers."""

from __future__ import annotations

import pytest
import torch

from kepp_core.diffusion import ProjectedDiffusion, TemporalUNet, cosine_betas, plan_layout, step_layout
from kepp_core.errors import KeppError

torch.set_num_threads(1)


def test_step_layout_frees_only_first_and_last_action_columns():
    lay = step_layout(horizon=4, obs_dim=3, num_actions=5)
    free = lay.free_mask()
    assert free.shape == (4, 3 + 5)
    assert free[0, 3:].all() and free[-1, 3:].all()
    assert not free[1:-1].any() and not free[:, :3].any()


def test_plan_layout_frees_every_action_column_and_stacks_rows_in_order():
    lay = plan_layout(horizon=3, obs_dim=2, num_actions=4, condition="graph")
    assert lay.channels == 2 + 4 + 4
    assert lay.row_slice("graph") == slice(2, 6)
    assert lay.free_mask()[:, 6:].all() and not lay.free_mask()[:, :6].any()
    assert plan_layout(3, 2, 4, "none").channels == 6


def test_loss_weights_are_10_on_ends_for_step_and_5_for_plan():
    w = step_layout(4, 2, 3).loss_weights()
    assert w[0].tolist() == [10.0] * 3 and w[-1].tolist() == [10.0] * 3 and w[1:-1].sum() == 0
    w = plan_layout(4, 2, 3, "none").loss_weights()
    assert w[0].tolist() == [5.0] * 3 and w[1].tolist() == [1.0] * 3 and w[-1].tolist() == [5.0] * 3


def test_template_places_observations_in_end_columns_and_task_row_in_every_column():
    lay = plan_layout(3, 2, 4, "task", width=3)
    s, g = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]])
    x = lay.template(s, g, {"task": torch.tensor([[0.0, 1.0, 0.0]])})
    assert x[0, 0, :2].tolist() == [1, 2] and x[0, -1, :2].tolist() == [3, 4] and x[0, 1, :2].tolist() == [0, 0]
    assert (x[0, :, 2:5] == torch.tensor([0.0, 1.0, 0.0])).all()
    assert (x[0, :, 5:] == 0).all()


def test_extra_condition_row_accepts_any_width():
    lay = plan_layout(4, 2, 5, "extra", width=7)
    x = lay.template(torch.zeros(2, 2), torch.zeros(2, 2), {"extra": torch.ones(2, 4, 7)})
    assert x.shape == (2, 4, 2 + 7 + 5) and (x[:, :, 2:9] == 1).all()


def test_template_rejects_wrong_feature_size_and_missing_rows():
    lay = plan_layout(3, 4, 5, "graph")
    with pytest.raises(KeppError, match="feature size"):
        lay.template(torch.zeros(1, 3), torch.zeros(1, 3), {"graph": torch.zeros(1, 3, 5)})
    with pytest.raises(KeppError, match="missing condition row"):
        lay.template(torch.zeros(1, 4), torch.zeros(1, 4))
    with pytest.raises(KeppError, match="shape"):
        lay.template(torch.zeros(1, 4), torch.zeros(1, 4), {"graph": torch.zeros(1, 4, 5)})


def test_cosine_schedule_noise_grows_monotonically():
    b = cosine_betas(50)
    ac = torch.cumprod(1 - b, 0)
    assert (ac[1:] < ac[:-1]).all() and ac[0] > 0.99 and ac[-1] < 0.01


@pytest.mark.parametrize("horizon", [2, 3, 5, 6])
def test_unet_keeps_odd_and_even_horizons(horizon):
    net = TemporalUNet(9, 4, dim=8, mults=(1, 2, 4))
    assert net(torch.randn(3, 9, horizon), torch.tensor([0, 5, 9])).shape == (3, 4, horizon)


@pytest.mark.parametrize("sampler", ["ddpm", "ddim"])
def test_sampling_never_changes_given_entries(sampler):
    lay = plan_layout(4, 3, 5, "graph")
    m = ProjectedDiffusion(lay, n_steps=8, dim=8, mults=(1, 2))
    cond = {"graph": torch.rand(2, 4, 5)}
    tpl = m.template(torch.randn(2, 3), torch.randn(2, 3), cond)
    x0 = m.sample(tpl, sampler, steps=3, generator=torch.Generator().manual_seed(0))
    given = ~m.free
    assert torch.equal(x0[:, given], tpl[:, given])


def test_projected_training_input_keeps_condition_clean():
    lay = step_layout(3, 2, 4)
    m = ProjectedDiffusion(lay, n_steps=10, dim=8, mults=(1, 2))
    tpl = m.template(torch.randn(4, 2), torch.randn(4, 2))
    x0 = lay.with_actions(tpl, torch.tensor([[0, 1, 2]] * 4))
    x_t = m.project(m.q_sample(x0, torch.full((4,), 9)), tpl)
    assert torch.equal(x_t[:, ~m.free], tpl[:, ~m.free])
    assert not torch.equal(x_t[:, m.free], x0[:, m.free])  # the free entries are noisy
    assert x0[:, 1, lay.action_start:].sum() == 0  # the step model's middle action column is zero padding


@pytest.mark.slow
def test_model_learns_endpoints_from_observations_with_both_samplers():
    """A step model learns a_1 = argmax(v_s), a_T = argmax(v_g) in a few hundred steps."""
    torch.manual_seed(0)
    A, T = 4, 3
    lay = step_layout(T, A, A)
    m = ProjectedDiffusion(lay, n_steps=10, dim=16, mults=(1, 2))
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(300):
        a1, aT = torch.randint(0, A, (64,)), torch.randint(0, A, (64,))
        s = torch.nn.functional.one_hot(a1, A).float() + 0.1 * torch.randn(64, A)
        g = torch.nn.functional.one_hot(aT, A).float() + 0.1 * torch.randn(64, A)
        tpl = m.template(s, g)
        loss = m(lay.with_actions(tpl, torch.stack([a1, a1, aT], 1)), tpl)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    a1, aT = torch.randint(0, A, (200,)), torch.randint(0, A, (200,))
    tpl = m.template(torch.nn.functional.one_hot(a1, A).float(), torch.nn.functional.one_hot(aT, A).float())
    for sampler in ("ddpm", "ddim"):
        pred = m.decode(m.sample(tpl, sampler, steps=4, generator=torch.Generator().manual_seed(1)))
        acc = ((pred[:, 0] == a1).float().mean() + (pred[:, -1] == aT).float().mean()) / 2
        assert acc > 0.95, (sampler, float(acc))
    assert pred.shape == (200, T)  # the accuracy is over 200 plans of T steps


def test_config_round_trip_builds_the_same_network():
    m = ProjectedDiffusion(plan_layout(5, 6, 7, "task", width=3), n_steps=12, dim=8, mults=(1, 2))
    m2 = ProjectedDiffusion.from_config(m.config())
    m2.load_state_dict(m.state_dict())
    assert m2.layout == m.layout and m2.n_steps == 12
