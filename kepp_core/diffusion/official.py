"""The denoiser and samplers of the official KEPP / PDPP code, for checkpoints imported from it.

An imported model computes what the official code computes (README "Bring your own results"):

- the network is the official temporal U-Net: per level two residual blocks (conv → group
  norm with 32 groups → Mish, the diffusion-step embedding added after the first) and a
  length-changing conv (kernel 2, stride 1: ``T → T-1`` going down, a transposed conv
  ``T → T+1`` going up), two middle blocks, and a final conv block + 1×1 conv back to every
  channel. Module names follow the official state dict, so its weights load key for key;
- samples are stacked the official way along the last axis: graph rows ``[0:P]``, LLM rows
  ``[P:P+L]``, actions ``[P+L:P+L+A]``, observations after (the step model: actions, then
  observations);
- DDPM runs the posterior ``q(x_{t-1} | x_t, x_0)`` with the log-variance clipped at 1e-20;
  DDIM (η = 0) runs the timesteps ``range(0, n, n // k)`` with ᾱ_prev = 1 at the last step (both by
  the package's one sampler, :class:`~kepp_core.diffusion.scheduler.DiffusionScheduler`, set so);
  ``x_0`` is never clipped (the official code clamps without keeping the result);
- the condition is set on the initial draw and after every step.

:class:`OfficialDiffusion` offers the interface of
:class:`~kepp_core.diffusion.model.ProjectedDiffusion` (``layout``, ``template``, ``sample``,
``decode``), taking and returning samples in this package's channel order, so the planner and
the evaluation run it unchanged.

>>> m = OfficialDiffusion("step", horizon=3, obs_dim=4, num_actions=5, n_steps=4, dim=32, dim_mults=(1, 2))
>>> x0 = m.sample(m.template(torch.zeros(2, 4), torch.zeros(2, 4)))
>>> x0.shape, m.decode(x0).shape
(torch.Size([2, 3, 9]), torch.Size([2, 3]))
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from kepp_core.diffusion.layout import ConditionLayout, plan_layout, step_layout
from kepp_core.catalog import LOGIT_SCALE, OFFICIAL_ARCHITECTURE
from kepp_core.diffusion.model import cosine_betas
from kepp_core.diffusion.scheduler import DiffusionScheduler
from kepp_core.errors import KeppError

GROUPS = 32  # group-norm groups of the official network
LLM_FROM_GRAPH = "graph"  # LLM rows repeat the graph rows: what the official code does without LLM output
SCHEDULE = ("betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_alphas_cumprod",
            "sqrt_one_minus_alphas_cumprod", "log_one_minus_alphas_cumprod", "sqrt_recip_alphas_cumprod",
            "sqrt_recipm1_alphas_cumprod", "posterior_variance", "posterior_log_variance_clipped",
            "posterior_mean_coef1", "posterior_mean_coef2")  # the official buffers, by their names


class StepEmbedding(nn.Module):
    """Sinusoidal features of the diffusion step (sin half, then cos half; frequencies
    ``exp(-k · log(10000) / (half - 1))``)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(torch.arange(half, device=t.device) * -(math.log(10000) / (half - 1)))
        args = t[:, None] * freqs[None, :]
        return torch.cat((args.sin(), args.cos()), dim=-1)


class ConvBlock(nn.Module):
    """Conv (``padding=1``) → group norm → Mish; index 1 stands where the official code reshapes."""

    def __init__(self, cin: int, cout: int, kernel: int = 3) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Conv1d(cin, cout, kernel, padding=1), nn.Identity(),
                                   nn.GroupNorm(GROUPS, cout), nn.Mish())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class ResidualBlock(nn.Module):
    """Two conv blocks, the step embedding (Mish → linear) added after the first, and a 1×1 skip."""

    def __init__(self, cin: int, cout: int, tdim: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([ConvBlock(cin, cout), ConvBlock(cout, cout)])
        self.time_mlp = nn.Sequential(nn.Mish(), nn.Linear(tdim, cout))
        self.residual_conv = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.blocks[0](x) + self.time_mlp(temb)[:, :, None]
        return self.blocks[1](h) + self.residual_conv(x)


class Resize(nn.Module):
    """Length ``T → T-1`` (a kernel-2 conv) or ``T → T+1`` (a kernel-2 transposed conv)."""

    def __init__(self, dim: int, up: bool) -> None:
        super().__init__()
        self.conv = (nn.ConvTranspose1d if up else nn.Conv1d)(dim, dim, 2, 1, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class OfficialTemporalUnet(nn.Module):
    """The official denoiser: ``[B, T, D]`` → ``[B, T, D]`` (every channel predicted)."""

    def __init__(self, transition_dim: int, dim: int = 32, dim_mults: tuple[int, ...] = (1, 2, 4)) -> None:
        super().__init__()
        dims = [transition_dim, *(dim * m for m in dim_mults)]
        pairs = list(zip(dims[:-1], dims[1:]))
        self.time_mlp = nn.Sequential(StepEmbedding(dim), nn.Linear(dim, dim * 4), nn.Mish(), nn.Linear(dim * 4, dim))
        self.downs = nn.ModuleList()
        for i, (cin, cout) in enumerate(pairs):
            last = i == len(pairs) - 1
            self.downs.append(nn.ModuleList([ResidualBlock(cin, cout, dim), ResidualBlock(cout, cout, dim),
                                             nn.Identity() if last else Resize(cout, up=False)]))
        self.mid_block1 = ResidualBlock(dims[-1], dims[-1], dim)
        self.mid_block2 = ResidualBlock(dims[-1], dims[-1], dim)
        self.ups = nn.ModuleList()
        for cin, cout in reversed(pairs[1:]):  # the official loop never reaches its "last" level
            self.ups.append(nn.ModuleList([ResidualBlock(cout * 2, cin, dim), ResidualBlock(cin, cin, dim),
                                           Resize(cin, up=True)]))
        self.final_conv = nn.Sequential(ConvBlock(dim, dim), nn.Conv1d(dim, transition_dim, 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = x.transpose(1, 2)
        temb = self.time_mlp(t)
        skips = []
        for first, second, resize in self.downs:
            h = second(first(h, temb), temb)
            skips.append(h)
            h = resize(h)
        h = self.mid_block2(self.mid_block1(h, temb), temb)
        for first, second, resize in self.ups:
            h = resize(second(first(torch.cat((h, skips.pop()), dim=1), temb), temb))
        return self.final_conv(h).transpose(1, 2)


def official_schedule(n_steps: int) -> dict[str, torch.Tensor]:
    """The official buffers for ``n_steps`` (float32, computed as the official code does up to
    round-off; an imported checkpoint brings its own)."""
    betas = cosine_betas(n_steps)
    alphas = 1.0 - betas
    ac = torch.cumprod(alphas, 0)
    ac_prev = torch.cat([ac.new_ones(1), ac[:-1]])
    post_var = betas * (1 - ac_prev) / (1 - ac)
    return {"betas": betas, "alphas_cumprod": ac, "alphas_cumprod_prev": ac_prev,
            "sqrt_alphas_cumprod": ac.sqrt(), "sqrt_one_minus_alphas_cumprod": (1 - ac).sqrt(),
            "log_one_minus_alphas_cumprod": (1 - ac).log(), "sqrt_recip_alphas_cumprod": (1 / ac).sqrt(),
            "sqrt_recipm1_alphas_cumprod": (1 / ac - 1).sqrt(), "posterior_variance": post_var,
            "posterior_log_variance_clipped": post_var.clamp(min=1e-20).log(),
            "posterior_mean_coef1": betas * ac_prev.sqrt() / (1 - ac),
            "posterior_mean_coef2": (1 - ac_prev) * alphas.sqrt() / (1 - ac)}


class OfficialDiffusion(nn.Module):
    """An official KEPP / PDPP model (step or planning) behind this package's model interface.

    ``graph_dim`` / ``llm_dim``: widths of the planning model's graph and LLM rows (the
    official models use ``A`` for both); ``llm_rows = "graph"``: the LLM rows repeat the graph
    rows (the official repository's choice when no LLM output is available).
    """

    def __init__(self, kind: str, horizon: int, obs_dim: int, num_actions: int, n_steps: int = 200,
                 dim: int = 256, dim_mults: tuple[int, ...] = (1, 2, 4), graph_dim: int = 0,
                 llm_dim: int = 0, llm_rows: str = LLM_FROM_GRAPH) -> None:
        super().__init__()
        if kind == "plan" and (graph_dim != num_actions or llm_dim != num_actions or llm_rows != LLM_FROM_GRAPH):
            raise KeppError(f"an official planning model needs graph and LLM rows as wide as its {num_actions} "
                            f"actions (got {graph_dim} and {llm_dim}), the LLM rows taken from the graph rows")
        if horizon < len(dim_mults):
            raise KeppError(f"the official network with {len(dim_mults)} levels needs a horizon of at least "
                            f"{len(dim_mults)}, not T={horizon}")
        self.kind, self.horizon, self.n_steps = kind, horizon, n_steps
        self.dim, self.dim_mults = dim, tuple(dim_mults)
        self.graph_dim, self.llm_dim = (graph_dim, llm_dim) if kind == "plan" else (0, 0)
        self.llm_rows = llm_rows
        self.layout: ConditionLayout = (plan_layout(horizon, obs_dim, num_actions, "graph") if kind == "plan"
                                        else step_layout(horizon, obs_dim, num_actions))
        self.action_offset = self.graph_dim + self.llm_dim  # where the official action block starts
        self.transition_dim = self.action_offset + num_actions + obs_dim
        self.model = OfficialTemporalUnet(self.transition_dim, dim, self.dim_mults)
        for name, value in official_schedule(n_steps).items():
            self.register_buffer(name, value)
        # Observations are used as given (the official code does not standardise them).
        self.register_buffer("obs_mean", torch.zeros(obs_dim), persistent=False)
        self.register_buffer("obs_std", torch.ones(obs_dim), persistent=False)

    # --- config ---------------------------------------------------------------------------
    def config(self) -> dict:
        lay = self.layout
        return {"architecture": OFFICIAL_ARCHITECTURE, "kind": self.kind, "horizon": self.horizon, "obs_dim": lay.obs_dim,
                "num_actions": lay.num_actions, "graph_dim": self.graph_dim, "llm_dim": self.llm_dim,
                "llm_rows": self.llm_rows, "n_steps": self.n_steps, "dim": self.dim, "dim_mults": list(self.dim_mults)}

    @classmethod
    def from_config(cls, cfg: dict) -> OfficialDiffusion:
        return cls(cfg["kind"], int(cfg["horizon"]), int(cfg["obs_dim"]), int(cfg["num_actions"]),
                   n_steps=int(cfg["n_steps"]), dim=int(cfg["dim"]), dim_mults=tuple(int(m) for m in cfg["dim_mults"]),
                   graph_dim=int(cfg.get("graph_dim", 0)), llm_dim=int(cfg.get("llm_dim", 0)),
                   llm_rows=cfg.get("llm_rows", LLM_FROM_GRAPH))

    @property
    def feature_layout(self) -> str:
        """The official channel order this model expects, in words."""
        lay = self.layout
        if self.kind == "step":
            return f"[0:{lay.num_actions}] actions | observations ({lay.obs_dim})"
        a0 = self.action_offset
        return (f"[0:{self.graph_dim}] graph rows | [{self.graph_dim}:{a0}] LLM rows ({self.llm_rows}) | "
                f"[{a0}:{a0 + lay.num_actions}] actions | observations ({lay.obs_dim})")

    # --- the official order ---------------------------------------------------------------
    def condition(self, x: torch.Tensor, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                  graph_rows: torch.Tensor | None = None, llm_rows: torch.Tensor | None = None) -> torch.Tensor:
        """Set the given entries of an official-order sample ``[B, T, D]`` (a new tensor)."""
        x = x.clone()
        o0 = self.action_offset + self.layout.num_actions
        x[:, 0, o0:] = obs_start
        x[:, -1, o0:] = obs_goal
        if self.kind == "step":
            x[:, 1:-1, :] = 0.0
            return x
        x[:, 1:-1, o0:] = 0.0
        x[:, :, :self.graph_dim] = graph_rows
        x[:, :, self.graph_dim:self.action_offset] = llm_rows
        return x

    def scheduler(self) -> DiffusionScheduler:
        """The sampler over this model's buffers (the checkpoint's), set as the official code samples:
        ``x_0`` never clipped, DDIM's timesteps ``range(0, n, n // k)``, ᾱ_prev of its last step
        ``alphas_cumprod_prev[0]``, a Gaussian drawn at every step (:mod:`kepp_core.diffusion.scheduler`)."""
        log_var = self.posterior_log_variance_clipped
        # one value at a time, as the official step computed it (a whole-vector exp may round otherwise)
        sigmas = torch.stack([(0.5 * log_var[t]).exp() * (0.0 if t == 0 else 1.0) for t in range(self.n_steps)])
        return DiffusionScheduler(alphas_cumprod=self.alphas_cumprod, mean_x0=self.posterior_mean_coef1,
                                  mean_xt=self.posterior_mean_coef2, sigmas=sigmas,
                                  eps_xt=self.sqrt_recip_alphas_cumprod, eps_x0=torch.ones_like(sigmas),
                                  eps_div=self.sqrt_recipm1_alphas_cumprod, timestep_rule="leading",
                                  clip_sample=False, draw_every_step=True,
                                  final_alpha_cumprod=self.alphas_cumprod_prev[0])

    def run(self, obs_start: torch.Tensor, obs_goal: torch.Tensor, graph_rows: torch.Tensor | None = None,
            llm_rows: torch.Tensor | None = None, sampler: str = "ddpm", steps: int | None = None,
            draw: Callable[[tuple[int, ...]], torch.Tensor] | None = None) -> torch.Tensor:
        """One official sampling run in the official order ``[B, T, D]``; ``draw(shape)`` gives
        each Gaussian draw in the order the official code takes them (default: ``torch.randn``)."""
        draw = draw or (lambda shape: torch.randn(shape, device=obs_start.device))
        shape = (obs_start.shape[0], self.horizon, self.transition_dim)
        return self.scheduler().run(self.model, lambda x: self.condition(x, obs_start, obs_goal, graph_rows, llm_rows),
                                    shape, draw, sampler, steps)

    def to_official(self, x: torch.Tensor) -> torch.Tensor:
        """This package's channel order → the official one."""
        lay = self.layout
        obs, acts = x[..., :lay.obs_dim], x[..., lay.action_start:]
        if self.kind == "step":
            return torch.cat([acts, obs], dim=-1)
        graph = x[..., lay.row_slice("graph")]
        return torch.cat([graph, graph, acts, obs], dim=-1)

    def from_official(self, x: torch.Tensor) -> torch.Tensor:
        """The official channel order → this package's."""
        lay = self.layout
        a0 = self.action_offset
        acts, obs = x[..., a0:a0 + lay.num_actions], x[..., a0 + lay.num_actions:]
        rows = [x[..., :self.graph_dim]] if self.kind == "plan" else []
        return torch.cat([obs, *rows, acts], dim=-1)

    # --- this package's model interface ---------------------------------------------------
    def template(self, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                 conditions: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Given entries ``[B, T, C]`` in this package's order (observations as given)."""
        dev = self.obs_mean.device
        return self.layout.template(obs_start.to(dev), obs_goal.to(dev),
                                    {k: v.to(dev) for k, v in (conditions or {}).items()})

    @torch.no_grad()
    def sample(self, template: torch.Tensor, sampler: str = "ddpm", steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``x_0`` given ``template`` as the official code does; returned in this package's order."""
        lay = self.layout
        obs_s, obs_g = template[:, 0, :lay.obs_dim], template[:, -1, :lay.obs_dim]
        graph = template[..., lay.row_slice("graph")] if self.kind == "plan" else None
        out = self.run(obs_s, obs_g, graph, graph, sampler, steps,
                       lambda shape: torch.randn(shape, generator=generator, device=template.device))
        return self.from_official(out)

    def decode(self, x0: torch.Tensor) -> torch.Tensor:
        """Argmax action per column ``[B, T]``."""
        return x0[:, :, self.layout.action_start:].argmax(-1)

    def action_scores(self, x0: torch.Tensor) -> torch.Tensor:
        """Softmax over the action block per column ``[B, T, A]`` (as this package's models score)."""
        return torch.softmax(x0[:, :, self.layout.action_start:] * LOGIT_SCALE, dim=-1)


__all__ = ["LLM_FROM_GRAPH", "SCHEDULE", "OfficialDiffusion", "OfficialTemporalUnet",
           "official_schedule"]
