"""Batched sampling from a trained diffusion model: ``x_0`` for many queries, ``K`` plans per
query, and the step model's endpoints (shared by the planner, training and evaluation)."""

from __future__ import annotations

import numpy as np
import torch

from kepp_core.diffusion.model import ProjectedDiffusion


@torch.no_grad()
def sample_actions(model: ProjectedDiffusion, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                   conditions: dict[str, torch.Tensor] | None = None, sampler: str = "ddpm",
                   steps: int | None = None, batch_size: int = 1024, seed: int = 0) -> torch.Tensor:
    """Sample ``x_0`` for every query (in batches) and return it ``[N, T, C]`` on the CPU.

    Noise comes from a generator seeded with ``seed`` (reproducible results).
    """
    dev = model.obs_mean.device
    gen = torch.Generator(device=dev).manual_seed(seed)
    outs = []
    for i in range(0, len(obs_start), batch_size):
        sl = slice(i, i + batch_size)
        cond = {k: v[sl] for k, v in (conditions or {}).items()}
        tpl = model.template(obs_start[sl], obs_goal[sl], cond)
        outs.append(model.sample(tpl, sampler, steps, generator=gen).cpu())
    if not outs:
        return torch.zeros(0, model.layout.horizon, model.layout.channels)
    return torch.cat(outs)


def sample_plans(model: ProjectedDiffusion, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                 conditions: dict[str, torch.Tensor] | None, k: int, sampler: str = "ddpm",
                 steps: int | None = None, seed: int = 0, batch_size: int = 1024) -> np.ndarray:
    """``K`` plans per query ``[N, K, T]`` from a planning model: the queries (and their
    condition rows) repeated ``K`` times and sampled in batches, each copy with its own noise.

    >>> sample_plans(model, obs_start, obs_goal, None, k=10).shape   # doctest: +SKIP
    (N, 10, T)
    """
    x0 = _sample_repeated(model, obs_start, obs_goal, conditions, k, sampler, steps, seed, batch_size)
    return model.decode(x0).numpy().reshape(len(obs_start), k, model.layout.horizon)


def _sample_repeated(model: ProjectedDiffusion, obs_start, obs_goal, conditions: dict | None, k: int,
                     sampler: str, steps: int | None, seed: int, batch_size: int) -> torch.Tensor:
    """``x_0`` ``[N·K, T, C]`` of the queries (and their condition rows) each repeated ``K`` times."""

    def rep(t: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(t).repeat_interleave(k, 0)

    cond = {name: rep(v) for name, v in conditions.items()} if conditions else None
    return sample_actions(model, rep(obs_start), rep(obs_goal), cond, sampler, steps, batch_size, seed)


def sample_action_blocks(model: ProjectedDiffusion, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                         conditions: dict[str, torch.Tensor] | None, k: int, sampler: str = "ddpm",
                         steps: int | None = None, seed: int = 0, batch_size: int = 1024) -> np.ndarray:
    """``K`` sampled ``x_0`` action blocks per query ``[N, K, T, A]`` (sampled as
    :func:`sample_plans` does: the queries repeated ``K`` times, batched, each copy with its own
    noise); the mean over ``K`` is what graph-aware decoding's mean-of-K emissions use."""
    x0 = _sample_repeated(model, obs_start, obs_goal, conditions, k, sampler, steps, seed, batch_size)
    block = x0[:, :, model.layout.action_start:].numpy()
    return block.reshape(len(obs_start), k, model.layout.horizon, block.shape[-1])


def predict_endpoints(step_model: ProjectedDiffusion, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                      sampler: str = "ddpm", steps: int | None = None, seed: int = 0,
                      batch_size: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """The step model's ``(â_1, â_T)`` ``[N, 2]`` and their scores ``[N, 2]``."""
    ends, scores, _ = endpoint_distributions(step_model, obs_start, obs_goal, sampler, steps, seed, batch_size)
    return ends, scores


def endpoint_distributions(step_model: ProjectedDiffusion, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                           sampler: str = "ddpm", steps: int | None = None, seed: int = 0,
                           batch_size: int = 1024) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The step model's ``(â_1, â_T)`` ``[N, 2]``, their scores ``[N, 2]`` and the scores of every
    action as the first and the last step ``[N, 2, A]`` (``action_scores`` of one sample: the
    argmax of each row is the endpoint)."""
    x0 = sample_actions(step_model, obs_start, obs_goal, None, sampler, steps, batch_size, seed)
    ends = x0[:, [0, -1], step_model.layout.action_start:]
    probs = step_model.action_scores(x0)[:, [0, -1]]
    return ends.argmax(-1), probs.max(-1).values, probs
