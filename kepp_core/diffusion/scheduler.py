"""One sampler for every diffusion model of the package: a scheduler that owns the timesteps and the
denoising ``step`` (as a diffusers scheduler does), asked by this package's models and the official
network alike.

A model gives the scheduler two functions and nothing else: ``denoise(x_t, t)``, its estimate of
``x_0``, and ``condition(x)``, which sets the given entries of a sample. :meth:`DiffusionScheduler.run`
then draws ``x_T``, conditions it, and walks the timesteps, each ``x_t → x_{prev}`` a :meth:`step`
followed by ``condition``:

- DDPM (every ``t`` from ``N-1`` down to 0): the posterior mean ``c₀(t) x̂_0 + c_t(t) x_t`` plus
  ``σ_t`` times a Gaussian draw;
- DDIM (η = 0) over ``k`` steps: ``√ᾱ_prev x̂_0 + √(1-ᾱ_prev) ε̂`` with
  ``ε̂ = (a(t) x_t - b(t) x̂_0) / d(t)``.

What differs between this package's models and the official code are the scheduler's parameters,
not its loop: the **timestep rule** (``linspace``: ``k`` steps evenly spread over ``0..N-1``;
``leading``: the official ``range(0, N, N // k)``), whether ``x̂_0`` is clipped to [-1, 1], whether a
Gaussian is drawn at every step (the official order of draws, multiplied by zero where no noise is
added) or only where noise is added, and what the last DDIM step returns (``x̂_0`` itself, or the
DDIM update with the ``ᾱ`` the official code keeps for it). The coefficients are the models' own
buffers, so the numbers are those each model computed before it had a scheduler, bit for bit.

>>> ac = torch.cumprod(1 - torch.tensor([0.1, 0.2, 0.3, 0.4]), 0)
>>> one = torch.ones(4)
>>> s = DiffusionScheduler(alphas_cumprod=ac, mean_x0=one, mean_xt=one, sigmas=one, eps_xt=one, eps_x0=one,
...                        eps_div=one, timestep_rule="linspace")
>>> s.timesteps("ddim", 3)
[(3, 2), (2, 0), (0, None)]
>>> s.timesteps("ddpm")
[(3, 2), (2, 1), (1, 0), (0, None)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from kepp_core.catalog import SAMPLERS
from kepp_core.errors import KeppError

__all__ = ["TIMESTEP_RULES", "DEFAULT_DDIM_STEPS", "DiffusionScheduler", "leading_timesteps", "linspace_timesteps"]

DEFAULT_DDIM_STEPS = 10  # DDIM's steps when none are asked for (this package's models and the official code)
Draw = Callable[[tuple[int, ...]], torch.Tensor]  # one Gaussian draw of the given shape


def linspace_timesteps(n_steps: int, k: int) -> list[int]:
    """``k`` timesteps evenly spread over ``0..n_steps-1`` (rounded, each once), descending.

    >>> linspace_timesteps(20, 4)
    [19, 13, 6, 0]
    """
    k = max(1, min(k, n_steps))
    return sorted({round(i * (n_steps - 1) / max(k - 1, 1)) for i in range(k)}, reverse=True)


def leading_timesteps(n_steps: int, k: int) -> list[int]:
    """The official DDIM timesteps ``range(0, n, n // k)``, descending.

    >>> leading_timesteps(20, 10)
    [18, 16, 14, 12, 10, 8, 6, 4, 2, 0]
    """
    return list(reversed(range(0, n_steps, max(1, n_steps // max(1, k)))))


TIMESTEP_RULES: dict[str, Callable[[int, int], list[int]]] = {
    "linspace": linspace_timesteps,  # this package's models
    "leading": leading_timesteps,  # the official KEPP / PDPP code
}


@dataclass(frozen=True, kw_only=True)
class DiffusionScheduler:
    """The timesteps and the denoising step of a diffusion model with ``N`` steps (the module docstring).

    Per-step coefficients ``[N]``: ``alphas_cumprod`` (``ᾱ_t``); ``mean_x0``, ``mean_xt``: the DDPM
    posterior mean's coefficients; ``sigmas``: the DDPM noise's standard deviation (0 where none is
    added); ``eps_xt``, ``eps_x0``, ``eps_div``: ``ε̂ = (eps_xt·x_t - eps_x0·x̂_0) / eps_div``.
    ``final_alpha_cumprod``: ``ᾱ_prev`` of the last DDIM step (None: that step returns ``x̂_0``).
    ``draw_every_step``: a Gaussian is drawn at every step, in DDIM too (the official order of draws);
    otherwise only where DDPM adds noise (``t > 0``).
    """

    alphas_cumprod: torch.Tensor
    mean_x0: torch.Tensor
    mean_xt: torch.Tensor
    sigmas: torch.Tensor
    eps_xt: torch.Tensor
    eps_x0: torch.Tensor
    eps_div: torch.Tensor
    timestep_rule: str = "linspace"
    clip_sample: bool = True
    draw_every_step: bool = False
    final_alpha_cumprod: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.timestep_rule not in TIMESTEP_RULES:
            raise KeppError(f"unknown timestep rule {self.timestep_rule!r} (expected one of {', '.join(TIMESTEP_RULES)})")

    @property
    def n_steps(self) -> int:
        """``N``, the diffusion steps the model was trained with."""
        return len(self.alphas_cumprod)

    def timesteps(self, sampler: str, steps: int | None = None) -> list[tuple[int, int | None]]:
        """The ``(t, t_prev)`` pairs a run walks (``t_prev`` None at the last step): every ``t`` for
        DDPM, ``steps`` of them (default :data:`DEFAULT_DDIM_STEPS`) by the timestep rule for DDIM."""
        if sampler not in SAMPLERS:
            raise KeppError(f"unknown sampler {sampler!r} (expected one of {', '.join(SAMPLERS)})")
        ts = (list(reversed(range(self.n_steps))) if sampler == "ddpm"
              else TIMESTEP_RULES[self.timestep_rule](self.n_steps, steps or DEFAULT_DDIM_STEPS))
        return [(t, ts[i + 1] if i + 1 < len(ts) else None) for i, t in enumerate(ts)]

    def step(self, x0: torch.Tensor, t: int, x_t: torch.Tensor, draw: Draw, *, sampler: str,
             t_prev: int | None) -> torch.Tensor:
        """``x_t → x_{t_prev}`` given the model's estimate ``x0`` of ``x_0`` (not yet conditioned)."""
        if self.clip_sample:
            x0 = x0.clamp(-1, 1)
        if sampler == "ddpm":
            mean = self.mean_x0[t] * x0 + self.mean_xt[t] * x_t
            if self.draw_every_step or t > 0:
                mean = mean + self.sigmas[t] * draw(tuple(x_t.shape))
            return mean
        if t_prev is None and self.final_alpha_cumprod is None:
            return x0
        eps = (self.eps_xt[t] * x_t - self.eps_x0[t] * x0) / self.eps_div[t]
        ac_prev = self.alphas_cumprod[t_prev] if t_prev is not None else self.final_alpha_cumprod
        out = ac_prev.sqrt() * x0 + (1 - ac_prev).sqrt() * eps
        if self.draw_every_step:
            out = out + 0.0 * draw(tuple(x_t.shape))  # η = 0: the draw is taken (the official order) and has no effect
        return out

    def run(self, denoise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
            condition: Callable[[torch.Tensor], torch.Tensor], shape: tuple[int, ...], draw: Draw,
            sampler: str = "ddpm", steps: int | None = None) -> torch.Tensor:
        """One sampling run: ``x_T`` drawn and conditioned, then a conditioned :meth:`step` per timestep;
        ``denoise(x_t, t)`` gets ``t`` as a ``[B]`` tensor of longs."""
        pairs = self.timesteps(sampler, steps)
        x = condition(draw(tuple(shape)))
        for t, t_prev in pairs:
            tt = torch.full((x.shape[0],), t, device=x.device, dtype=torch.long)
            x = condition(self.step(denoise(x, tt), t, x, draw, sampler=sampler, t_prev=t_prev))
        return x
