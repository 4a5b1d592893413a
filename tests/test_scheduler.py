"""One sampler for every diffusion model (kepp_core.diffusion.scheduler): this package's models (the shipped
demo checkpoints) and the official network (the checkpoints of ../shared/data/official-kepp) sample through
the same scheduler, bit for bit what their own loops computed before it. The loops below are those
reference loops, written out as the math says them (networkx's habit: a plain reference the fast or
shared version must agree with)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kepp_core.diffusion import ProjectedDiffusion, step_layout
from kepp_core.diffusion.official import OfficialDiffusion
from kepp_core.diffusion.scheduler import TIMESTEP_RULES, DiffusionScheduler, linspace_timesteps
from kepp_core.errors import KeppError
from kepp_core.models.checkpoint import load_checkpoint
from kepp_core.models.official import import_official

DEMO = Path(__file__).resolve().parent.parent / "assets" / "demo"
PLAN, STEP = "official-kepp-plan-T3.pth.tar", "official-kepp-step-T3.pth.tar"


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.detach().numpy().tobytes() == b.detach().numpy().tobytes()


@torch.no_grad()
def own_reference(m: ProjectedDiffusion, tpl: torch.Tensor, sampler: str, steps: int | None,
                  gen: torch.Generator) -> torch.Tensor:
    """This package's sampling as its model computed it: x_0 clipped on the free entries, DDPM noise drawn
    for t > 0 only, DDIM over k evenly spread steps returning x_0 at the end, projected after every step."""
    x = m.project(torch.randn(tpl.shape, generator=gen), tpl)
    if sampler == "ddpm":
        for t in reversed(range(m.n_steps)):
            x0 = m.predict_start(x, torch.full((x.shape[0],), t, dtype=torch.long), tpl)
            x0 = torch.where(m.free, x0.clamp(-1, 1), x0)
            mean = m.posterior_c0[t] * x0 + m.posterior_ct[t] * x
            if t > 0:
                mean = mean + m.posterior_var[t].sqrt() * torch.randn(x.shape, generator=gen)
            x = m.project(mean, tpl)
        return x
    k = max(1, min(steps or 10, m.n_steps))
    ts = sorted({round(i * (m.n_steps - 1) / max(k - 1, 1)) for i in range(k)}, reverse=True)
    for i, t in enumerate(ts):
        x0 = m.predict_start(x, torch.full((x.shape[0],), t, dtype=torch.long), tpl)
        x0 = torch.where(m.free, x0.clamp(-1, 1), x0)
        if i + 1 == len(ts):
            return x0
        ac, ac_prev = m.alphas_cumprod[t], m.alphas_cumprod[ts[i + 1]]
        eps = (x - ac.sqrt() * x0) / (1 - ac).sqrt()
        x = m.project(ac_prev.sqrt() * x0 + (1 - ac_prev).sqrt() * eps, tpl)
    return x


@torch.no_grad()
def official_reference(m: OfficialDiffusion, cond, shape: tuple, sampler: str, steps: int | None, draw) -> torch.Tensor:
    """The official code's sampling: x_0 never clipped, a draw at every step (times 0 where no noise is
    added), DDIM over range(0, n, n // k) with ᾱ_prev = alphas_cumprod_prev[0] at the last step."""
    x = cond(draw(shape))
    if sampler == "ddpm":
        for t in reversed(range(m.n_steps)):
            noise = draw(shape)
            x0 = m.model(x, torch.full((shape[0],), t, dtype=torch.long))
            mean = m.posterior_mean_coef1[t] * x0 + m.posterior_mean_coef2[t] * x
            x = cond(mean + (0.5 * m.posterior_log_variance_clipped[t]).exp() * (0.0 if t == 0 else 1.0) * noise)
        return x
    seq = list(range(0, m.n_steps, max(1, m.n_steps // max(1, steps or 10))))
    for i in reversed(range(len(seq))):
        t, noise = seq[i], draw(shape)
        x0 = m.model(x, torch.full((shape[0],), t, dtype=torch.long))
        eps = (m.sqrt_recip_alphas_cumprod[t] * x - x0) / m.sqrt_recipm1_alphas_cumprod[t]
        ab_prev = m.alphas_cumprod_prev[0] if i == 0 else m.alphas_cumprod[seq[i - 1]]
        x = cond(x0 * ab_prev.sqrt() + (1 - ab_prev).sqrt() * eps + 0.0 * noise)
    return x


def _demo_template(m: ProjectedDiffusion, b: int = 4) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    lay = m.layout
    conds = {r.name: torch.rand((b, r.width) if r.kind == "task" else (b, lay.horizon, r.width), generator=g)
             for r in lay.rows}
    return m.template(torch.randn(b, lay.obs_dim, generator=g), torch.randn(b, lay.obs_dim, generator=g), conds)


@pytest.mark.parametrize("sampler,steps", [("ddpm", None), ("ddim", None), ("ddim", 3)])
@pytest.mark.parametrize("folder,kind", [("T3/step", "step"), ("T3/plan-graph-R1", "plan"), ("T4/plan-task", "plan")])
def test_the_demo_models_sample_through_the_scheduler_bit_for_bit_as_their_own_loop(folder, kind, sampler, steps):
    if not (DEMO / folder / "config.json").is_file():
        pytest.skip("no shipped demo checkpoints in assets/demo")
    m, _ = load_checkpoint(DEMO / folder, kind)
    tpl = _demo_template(m)
    got = m.sample(tpl, sampler, steps, generator=torch.Generator().manual_seed(11))
    want = own_reference(m, tpl, sampler, steps, torch.Generator().manual_seed(11))
    assert _same_bits(got, want)


@pytest.fixture(scope="module")
def official_models(official_kepp, tmp_path_factory) -> dict[str, OfficialDiffusion]:
    out = tmp_path_factory.mktemp("official") / "models"
    import_official(official_kepp / PLAN, official_kepp / STEP, out, horizon=3, seconds=1)
    return {kind: load_checkpoint(out / "T3" / ("plan-graph-R1" if kind == "plan" else "step"), kind)[0]
            for kind in ("plan", "step")}


@pytest.mark.parametrize("sampler", ["ddpm", "ddim"])
@pytest.mark.parametrize("kind", ["plan", "step"])
def test_the_official_network_samples_the_recorded_draws_bit_for_bit_as_the_official_loop(
        official_models, official_kepp, kind, sampler):
    m = official_models[kind]
    ref = load_file(str(official_kepp / f"official-kepp-{kind}-T3-reference.safetensors"))
    args = (ref["obs_start"], ref["obs_goal"], ref.get("pkg_rows"), ref.get("llm_rows"))
    draws = iter(ref[f"{sampler}_noise"])
    got = m.run(*args, sampler=sampler, draw=lambda shape: next(draws))
    assert next(draws, None) is None  # the scheduler takes every recorded draw, in the official order
    draws = iter(ref[f"{sampler}_noise"])
    want = official_reference(m, lambda x: m.condition(x, *args), tuple(ref[f"{sampler}_noise"].shape[1:]), sampler,
                              None, lambda shape: next(draws))
    assert _same_bits(got, want)
    assert (got - ref[f"{sampler}_x0"]).abs().max().item() <= 1e-4  # and the official code's own numbers


@pytest.mark.parametrize("sampler,steps", [("ddpm", None), ("ddim", 3), ("ddim", 7)])
def test_the_official_network_samples_from_a_generator_bit_for_bit_as_the_official_loop(official_models, sampler,
                                                                                         steps):
    m = official_models["plan"]
    g = torch.Generator().manual_seed(5)
    s, goal = torch.randn(3, m.layout.obs_dim, generator=g), torch.randn(3, m.layout.obs_dim, generator=g)
    graph = torch.rand(3, m.horizon, m.graph_dim, generator=g)
    g1 = torch.Generator().manual_seed(9)
    got = m.run(s, goal, graph, graph, sampler, steps, lambda shape: torch.randn(shape, generator=g1))
    g2 = torch.Generator().manual_seed(9)
    want = official_reference(m, lambda x: m.condition(x, s, goal, graph, graph), (3, m.horizon, m.transition_dim),
                              sampler, steps, lambda shape: torch.randn(shape, generator=g2))
    assert _same_bits(got, want)


def test_the_timestep_rule_is_a_parameter_of_one_scheduler_class():
    own = ProjectedDiffusion(step_layout(3, 4, 5), n_steps=20, dim=16, mults=(1, 2)).scheduler()
    official = OfficialDiffusion("step", 3, 4, 5, n_steps=20, dim=32, dim_mults=(1, 2)).scheduler()
    assert type(own) is type(official) is DiffusionScheduler
    assert (own.timestep_rule, official.timestep_rule) == ("linspace", "leading")
    assert [t for t, _ in own.timesteps("ddim", 4)] == linspace_timesteps(20, 4) == [19, 13, 6, 0]
    assert [t for t, _ in official.timesteps("ddim", 4)] == [15, 10, 5, 0]  # range(0, 20, 20 // 4), descending
    assert [t for t, _ in own.timesteps("ddpm")] == [t for t, _ in official.timesteps("ddpm")] == list(range(19, -1, -1))
    assert set(TIMESTEP_RULES) == {"linspace", "leading"}


def test_an_unknown_sampler_or_timestep_rule_is_refused_naming_the_choices():
    m = ProjectedDiffusion(step_layout(3, 4, 5), n_steps=4, dim=16, mults=(1, 2))
    with pytest.raises(KeppError, match="unknown sampler 'euler' .*ddpm, ddim"):
        m.sample(m.template(torch.zeros(1, 4), torch.zeros(1, 4)), "euler")
    with pytest.raises(KeppError, match="unknown timestep rule 'trailing' .*linspace, leading"):
        DiffusionScheduler(**{**vars(m.scheduler()), "timestep_rule": "trailing"})
