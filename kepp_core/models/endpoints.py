"""The discriminative endpoint model: the task, the first step ``a_1`` and the last step ``a_T``
from the start and goal observations (docs, Models: the endpoint model).

The task classifier's network (standardised ``[v_s, v_g]``, a two-layer MLP) with two more
heads on its hidden layer, all three trained jointly with cross-entropy. Its endpoint
distribution is either *flat*, ``softmax(first / τ_first)``, or *hierarchical*:

    p(a_1 | v) = Σ_k p(k | v) · p(a_1 | v, k)

with ``p(k | v) = softmax(task / τ_task)`` and ``p(a_1 | v, k)`` the flat distribution
renormalised over the actions the training plans show for task ``k``
(:func:`kepp_core.models.endpoint_probs.hierarchical_probs`), so a wrong top task is recoverable.
The temperatures ``τ`` (one per head, fitted on held-out training videos after training) live
in the model's config, so a loaded checkpoint applies them.

>>> m = EndpointModel(obs_dim=6, n_tasks=2, num_actions=3, hidden=8)
>>> [t.shape[-1] for t in m(torch.zeros(4, 6), torch.zeros(4, 6))]
[2, 3, 3]
>>> m.endpoint_log_probs(torch.zeros(4, 6), torch.zeros(4, 6)).shape
(4, 2, 3)
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from kepp_core.catalog import ENDPOINT_HEADS as HEADS
from kepp_core.errors import KeppError
from kepp_core.models.endpoint_probs import calibrated_log_probs, hierarchical_log_probs
from kepp_core.models.classifier import TaskClassifier

CHUNK = 4096  # queries per batch when computing distributions (bounds [N, A] float64 arrays)


class EndpointModel(TaskClassifier):
    """``[B, O]`` start and goal observations → task ``[B, K]``, first-step and last-step
    ``[B, A]`` logits; ``temperature`` maps each head to its calibration temperature."""

    def __init__(self, obs_dim: int, n_tasks: int, num_actions: int, hidden: int = 256,
                 temperature: dict[str, float] | None = None) -> None:
        super().__init__(obs_dim, n_tasks, hidden)
        self.num_actions = num_actions
        self.first = nn.Linear(hidden, num_actions)
        self.last = nn.Linear(hidden, num_actions)
        self.register_buffer("task_mask", torch.ones(n_tasks, num_actions, dtype=torch.bool))
        self.temperature = {h: 1.0 for h in HEADS}
        self.set_temperature(temperature or {})

    def config(self) -> dict:
        return {**super().config(), "num_actions": self.num_actions, "temperature": dict(self.temperature)}

    @classmethod
    def from_config(cls, cfg: dict) -> EndpointModel:
        return cls(int(cfg["obs_dim"]), int(cfg["n_tasks"]), int(cfg["num_actions"]), int(cfg.get("hidden", 256)),
                   cfg.get("temperature"))

    def set_temperature(self, temperature: dict[str, float]) -> None:
        """Set the calibration temperature of some heads (each a number > 0)."""
        for head, t in temperature.items():
            if head not in HEADS or not isinstance(t, (int, float)) or isinstance(t, bool) or not t > 0:
                raise KeppError(f"endpoint model temperature {head}={t!r} is invalid "
                                f"(expected {', '.join(HEADS)} with numbers > 0)")
            self.temperature[head] = float(t)

    def set_task_actions(self, mask) -> None:
        """The ``[K, A]`` booleans of the actions each task's training plans show
        (:func:`kepp_core.models.endpoint_probs.task_actions_mask`)."""
        self.task_mask.copy_(torch.as_tensor(np.asarray(mask), dtype=torch.bool))

    def forward(self, obs_start: torch.Tensor, obs_goal: torch.Tensor) -> tuple[torch.Tensor, ...]:
        s = (obs_start - self.obs_mean) / self.obs_std
        g = (obs_goal - self.obs_mean) / self.obs_std
        h = self.net[:-1](torch.cat([s, g], dim=-1))
        return self.net[-1](h), self.first(h), self.last(h)

    @torch.no_grad()
    def endpoint_log_probs(self, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                           hierarchical: bool = True) -> np.ndarray:
        """Calibrated ``log p(a_1 | v)`` and ``log p(a_T | v)`` ``[N, 2, A]`` (float64; ``-inf``
        where no likely task has the action), hierarchical or flat (module docstring)."""
        self.eval()
        dev = self.obs_mean.device
        mask = self.task_mask.cpu().numpy()
        out = []
        for i in range(0, len(obs_start), CHUNK):
            task, first, last = (x.cpu().numpy() for x in self(obs_start[i:i + CHUNK].to(dev),
                                                              obs_goal[i:i + CHUNK].to(dev)))
            ends = []
            for head, logits in (("first", first), ("last", last)):
                scaled = logits / self.temperature[head]
                if hierarchical:
                    p_task = np.exp(calibrated_log_probs(task, self.temperature["task"]))
                    ends.append(hierarchical_log_probs(p_task / p_task.sum(-1, keepdims=True), scaled, mask))
                else:
                    ends.append(calibrated_log_probs(scaled, 1.0))
            out.append(np.stack(ends, axis=1))
        return np.concatenate(out) if out else np.zeros((0, 2, self.num_actions))
