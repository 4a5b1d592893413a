"""The task classifier of the PDPP baseline: an MLP from ``[v_s, v_g]`` to the task class."""

from __future__ import annotations

import msgspec
import torch
from torch import nn

from kepp_core.models.options import ClassifierNet
from kepp_core.schema import convert


class TaskClassifier(nn.Module):
    """``[B, O]`` start and goal observations → ``[B, n_tasks]`` logits.

    >>> c = TaskClassifier(obs_dim=6, n_tasks=3, hidden=8)
    >>> c(torch.zeros(2, 6), torch.zeros(2, 6)).shape
    torch.Size([2, 3])
    """

    def __init__(self, **options) -> None:
        """``options``: the fields of :class:`~kepp_core.models.options.ClassifierNet` (its sizes,
        each checked against its range)."""
        super().__init__()
        self.options = convert(options, ClassifierNet, "task classifier options")
        obs_dim, n_tasks, hidden = self.options.obs_dim, self.options.n_tasks, self.options.hidden
        self.obs_dim, self.n_tasks, self.hidden = obs_dim, n_tasks, hidden
        self.net = nn.Sequential(nn.Linear(2 * obs_dim, hidden), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_tasks))
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))

    def config(self) -> dict:
        """Its options (a checkpoint's ``model`` table)."""
        return msgspec.structs.asdict(self.options)

    @classmethod
    def from_config(cls, cfg: dict) -> TaskClassifier:
        """The network a checkpoint's ``model`` table describes."""
        return cls(**cfg)

    def set_normalisation(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Standardise observations with the training data's per-column ``mean`` and ``std``
        (std floored at 1e-3; see :func:`kepp_core.training.windows.observation_stats`)."""
        self.obs_mean.copy_(mean)
        self.obs_std.copy_(std.clamp_min(1e-3))

    def forward(self, obs_start: torch.Tensor, obs_goal: torch.Tensor) -> torch.Tensor:
        dev = self.obs_mean.device  # observations come from wherever the caller holds them
        s = (obs_start.to(dev) - self.obs_mean) / self.obs_std
        g = (obs_goal.to(dev) - self.obs_mean) / self.obs_std
        return self.net(torch.cat([s, g], dim=-1))
