"""The conditioned projected diffusion model (PDPP-style, paper §3.2 and supplement C.1).

DDPM with a cosine noise schedule; the network predicts ``x_0``; after every denoising step
(in training and in sampling) every given entry (observations, condition rows, zero
padding) is reset to its value, so only the free action entries evolve. The step model
and the planning model are this one class with different :class:`ConditionLayout`.

>>> lay = step_layout(horizon=3, obs_dim=4, num_actions=5)
>>> m = ProjectedDiffusion(lay, n_steps=10, dim=16, mults=(1, 2))
>>> x0 = m.sample(m.template(torch.zeros(2, 4), torch.zeros(2, 4)))
>>> x0.shape, m.decode(x0).shape
(torch.Size([2, 3, 9]), torch.Size([2, 3]))
"""

from __future__ import annotations

import math

import torch
from torch import nn

from kepp_core.diffusion.layout import ConditionLayout, step_layout  # noqa: F401  (doctest)
from kepp_core.diffusion.unet import TemporalUNet
from kepp_core.catalog import LOGIT_SCALE
from kepp_core.diffusion.scheduler import DiffusionScheduler
from kepp_core.errors import KeppError

__all__ = ["ProjectedDiffusion", "cosine_betas"]



def cosine_betas(n_steps: int, s: float = 0.008) -> torch.Tensor:
    """Cosine noise schedule (Nichol & Dhariwal): ``ᾱ(t) = cos²((t/N + s)/(1 + s) · π/2)``.

    >>> b = cosine_betas(4); bool((b > 0).all() and (b <= 0.999).all())
    True
    """
    # on the CPU whatever device context is active: a linspace on the meta device (a checkpoint's size check,
    # models.checkpoint.check_model_size) imports sympy and torch._dynamo, seconds of a cold server's first run
    x = torch.linspace(0, n_steps, n_steps + 1, dtype=torch.float64, device="cpu")
    ac = torch.cos(((x / n_steps) + s) / (1 + s) * math.pi * 0.5) ** 2
    ac = ac / ac[0]
    return (1 - ac[1:] / ac[:-1]).clamp(0, 0.999).float()


class ProjectedDiffusion(nn.Module):
    """Conditioned projected diffusion over a :class:`TemporalUNet`.

    ``obs_mean``/``obs_std`` standardise observations (set from training data) and travel
    with the checkpoint.
    """

    def __init__(self, layout: ConditionLayout, *, n_steps: int, dim: int, mults: tuple[int, ...],
                 end_weight: float | None = None) -> None:
        """``n_steps``, ``dim``, ``mults``: the network's options (their defaults and ranges:
        :class:`kepp_core.models.options.DiffusionOptions`, what training and checkpoints read them
        with); ``end_weight``: the loss weight of the first and last action (training only)."""
        super().__init__()
        if n_steps < 1:
            raise KeppError(f"diffusion steps must be at least 1, got {n_steps}")
        self.layout = layout
        self.n_steps = n_steps
        self.dim = dim
        self.mults = tuple(mults)
        self.net = TemporalUNet(layout.channels, layout.num_actions, dim, self.mults)
        betas = cosine_betas(n_steps)
        alphas = 1 - betas
        ac = torch.cumprod(alphas, 0)
        ac_prev = torch.cat([ac.new_ones(1), ac[:-1]])  # on ac's device, whatever device context is active
        self.register_buffer("betas", betas)
        self.register_buffer("alphas_cumprod", ac)
        self.register_buffer("alphas_cumprod_prev", ac_prev)
        self.register_buffer("posterior_var", betas * (1 - ac_prev) / (1 - ac))
        self.register_buffer("posterior_c0", betas * ac_prev.sqrt() / (1 - ac))
        self.register_buffer("posterior_ct", (1 - ac_prev) * alphas.sqrt() / (1 - ac))
        self.register_buffer("free", layout.free_mask())
        self.register_buffer("weights", layout.loss_weights(end_weight))
        self.register_buffer("obs_mean", torch.zeros(layout.obs_dim))
        self.register_buffer("obs_std", torch.ones(layout.obs_dim))

    # --- config ---------------------------------------------------------------------------
    def config(self) -> dict:
        return {"layout": self.layout.to_dict(), "n_steps": self.n_steps, "dim": self.dim,
                "mults": list(self.mults)}

    @classmethod
    def from_config(cls, cfg: dict) -> ProjectedDiffusion:
        return cls(ConditionLayout.from_dict(cfg["layout"]), n_steps=int(cfg["n_steps"]),
                   dim=int(cfg["dim"]), mults=tuple(cfg["mults"]))

    def set_normalisation(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Standardise observations with the training data's per-column ``mean`` and ``std``
        (std floored at 1e-3; see :func:`kepp_core.training.windows.observation_stats`)."""
        self.obs_mean.copy_(mean)
        self.obs_std.copy_(std.clamp_min(1e-3))

    # --- samples --------------------------------------------------------------------------
    def template(self, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                 conditions: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Given entries ``[B, T, C]`` (normalised observations, condition rows, zeros)."""
        dev = self.obs_mean.device
        s = (obs_start.to(dev) - self.obs_mean) / self.obs_std
        g = (obs_goal.to(dev) - self.obs_mean) / self.obs_std
        return self.layout.template(s, g, {k: v.to(dev) for k, v in (conditions or {}).items()})

    def project(self, x: torch.Tensor, template: torch.Tensor) -> torch.Tensor:
        """Reset every given entry of ``x`` to its value in ``template``."""
        return torch.where(self.free, x, template)

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """``x_t ~ q(x_t | x_0) = N(√ᾱ_t x_0, (1-ᾱ_t) I)``."""
        noise = torch.randn_like(x0) if noise is None else noise
        ac = self.alphas_cumprod[t][:, None, None]
        return ac.sqrt() * x0 + (1 - ac).sqrt() * noise

    def predict_start(self, x_t: torch.Tensor, t: torch.Tensor, template: torch.Tensor) -> torch.Tensor:
        """The network's estimate of ``x_0``, projected (given entries from ``template``)."""
        a0 = self.layout.action_start
        out = self.net(x_t.transpose(1, 2), t).transpose(1, 2)
        x0 = torch.cat([template[:, :, :a0], out], dim=-1)
        return self.project(x0, template)

    def scheduler(self) -> DiffusionScheduler:
        """The sampler over this model's schedule (its buffers, on its device): ``x_0`` clipped to
        [-1, 1], DDIM's steps spread evenly, its last step returning ``x_0``, noise drawn only where
        DDPM adds it (:mod:`kepp_core.diffusion.scheduler`)."""
        ac = self.alphas_cumprod
        return DiffusionScheduler(alphas_cumprod=ac, mean_x0=self.posterior_c0, mean_xt=self.posterior_ct,
                                  sigmas=self.posterior_var.sqrt(), eps_xt=torch.ones_like(ac), eps_x0=ac.sqrt(),
                                  eps_div=(1 - ac).sqrt(), timestep_rule="linspace", clip_sample=True)

    @torch.no_grad()
    def sample(self, template: torch.Tensor, sampler: str = "ddpm", steps: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``x_0`` given ``template``: full DDPM, or DDIM over ``steps`` evenly spaced steps."""

        def draw(shape: tuple[int, ...]) -> torch.Tensor:
            return torch.randn(shape, generator=generator, device=template.device)

        return self.scheduler().run(lambda x, t: self.predict_start(x, t, template),
                                    lambda x: self.project(x, template), template.shape, draw, sampler, steps)

    def decode(self, x0: torch.Tensor) -> torch.Tensor:
        """Argmax action per column ``[B, T]``."""
        return x0[:, :, self.layout.action_start:].argmax(-1)

    def action_scores(self, x0: torch.Tensor) -> torch.Tensor:
        """Softmax over the action block per column ``[B, T, A]`` (a confidence, not a calibrated probability)."""
        return torch.softmax(x0[:, :, self.layout.action_start:] * LOGIT_SCALE, dim=-1)

    # --- training -------------------------------------------------------------------------
    def forward(self, x0: torch.Tensor, template: torch.Tensor, t: torch.Tensor | None = None,
                return_prediction: bool = False):
        """The training loss (``forward`` so that DDP can wrap the model)."""
        return self.loss(x0, template, t, return_prediction)

    def loss(self, x0: torch.Tensor, template: torch.Tensor, t: torch.Tensor | None = None,
             return_prediction: bool = False):
        """Weighted MSE between the projected ``x_0`` estimate and ``x_0`` (action block);
        with ``return_prediction`` also the estimate ``[B, T, C]`` (for a loss on top of it)."""
        b = x0.shape[0]
        if t is None:
            t = torch.randint(0, self.n_steps, (b,), device=x0.device)
        x_t = self.project(self.q_sample(x0, t), template)
        pred = self.predict_start(x_t, t, template)
        a0 = self.layout.action_start
        err = (pred[:, :, a0:] - x0[:, :, a0:]) ** 2
        loss = (err * self.weights).sum() / (b * self.weights.sum())
        return (loss, pred) if return_prediction else loss
