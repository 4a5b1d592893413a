"""The discriminative endpoint model: the task, the first step ``a_1`` and the last step ``a_T``
from the start and goal observations (docs, Models: the endpoint model).

Two architectures, each giving task ``[B, K]``, first-step and last-step ``[B, A]`` logits:

- ``clips`` (:class:`ClipEndpointModel`, the default): one encoder per clip (a two-layer MLP over the
  standardised start window, another over the goal window). The first step is read from the start
  clip's code, the last step from the goal clip's, each plus a correction from both codes; the
  task from both. Because the per-clip heads need one clip only, they also train on *every*
  labelled window of the training videos (:meth:`ClipEndpointModel.window_logits`: the window at
  each step's start names that step for the first-step head, the window at its end for the
  last-step head), about twice the examples the episodes give, and the steps that never start or
  end an episode of this horizon among them.
- ``pair`` (:class:`PairEndpointModel`, the previous default): the task classifier's network (one
  MLP over standardised ``[v_s, v_g]``) with two more heads on its hidden layer.

Either endpoint distribution is *flat*, ``softmax(first / τ_first)``, or *hierarchical*:

    p(a_1 | v) = Σ_k p(k | v) · p(a_1 | v, k)

with ``p(k | v) = softmax(task / τ_task)`` and ``p(a_1 | v, k)`` the flat distribution
renormalised over the actions the training plans show for task ``k``
(:func:`kepp_core.models.endpoint_probs.hierarchical_probs`), so a wrong top task is recoverable.
The temperatures ``τ`` (one per head, fitted on held-out training videos after training) live
in the model's config, so a loaded checkpoint applies them.

>>> m = ClipEndpointModel(obs_dim=6, n_tasks=2, num_actions=3, hidden=8)
>>> [t.shape[-1] for t in m(torch.zeros(4, 6), torch.zeros(4, 6))]
[2, 3, 3]
>>> m.endpoint_log_probs(torch.zeros(4, 6), torch.zeros(4, 6)).shape
(4, 2, 3)
>>> endpoint_model_from_config(m.config()).arch, endpoint_model_from_config({**m.config(), 'arch': None}).arch
('clips', 'pair')
"""

from __future__ import annotations

import msgspec
import numpy as np
import torch
from torch import nn

from kepp_core.catalog import ENDPOINT_HEADS
from kepp_core.errors import KeppError
from kepp_core.models.classifier import TaskClassifier
from kepp_core.calibration import calibrated_log_probs
from kepp_core.models.endpoint_probs import hierarchical_log_probs
from kepp_core.models.options import EndpointNet
from kepp_core.schema import convert

CHUNK = 4096  # queries per batch when computing distributions (bounds [N, A] float64 arrays)
DROPOUT = 0.1


class EndpointModel(nn.Module):
    """What every endpoint model shares: observation standardisation, the ``[K, A]`` task mask, one
    calibration temperature per head (``temperature``) and the calibrated distributions;
    ``forward(obs_start, obs_goal)`` gives the task, first-step and last-step logits."""

    arch = ""
    obs_dim: int
    n_tasks: int
    num_actions: int
    hidden: int

    @classmethod
    def _options(cls, options: dict) -> EndpointNet:
        """The network's options (:class:`~kepp_core.models.options.EndpointNet`) checked, and of this
        architecture."""
        net = convert({"arch": cls.arch, **options}, EndpointNet, f"endpoint model ({cls.arch}) options")
        if net.architecture != cls.arch:
            raise KeppError(f"endpoint model options say architecture {net.architecture!r}, not {cls.arch!r}")
        return net

    def _init_endpoints(self, net: EndpointNet) -> None:
        self.register_buffer("task_mask", torch.ones(net.n_tasks, net.num_actions, dtype=torch.bool))
        self.temperature = {h: 1.0 for h in ENDPOINT_HEADS}
        self.set_temperature(net.temperature)

    def config(self) -> dict:
        """Its options (a checkpoint's ``model`` table), the fitted temperatures included."""
        return msgspec.structs.asdict(EndpointNet(arch=self.arch, obs_dim=self.obs_dim, n_tasks=self.n_tasks,
                                                  num_actions=self.num_actions, hidden=self.hidden,
                                                  temperature=dict(self.temperature)))

    @classmethod
    def from_config(cls, cfg: dict) -> EndpointModel:
        """The network a checkpoint's ``model`` table describes."""
        return cls(**cfg)

    def set_normalisation(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Standardise observations with the training data's per-column ``mean`` and ``std``
        (std floored at 1e-3; see :func:`kepp_core.training.windows.observation_stats`)."""
        self.obs_mean.copy_(mean)
        self.obs_std.copy_(std.clamp_min(1e-3))

    def set_temperature(self, temperature: dict[str, float]) -> None:
        """Set the calibration temperature of some heads (each a number > 0)."""
        for head, t in temperature.items():
            if head not in ENDPOINT_HEADS or not isinstance(t, (int, float)) or isinstance(t, bool) or not t > 0:
                raise KeppError(f"endpoint model temperature {head}={t!r} is invalid "
                                f"(expected {', '.join(ENDPOINT_HEADS)} with numbers > 0)")
            self.temperature[head] = float(t)

    def set_task_actions(self, mask) -> None:
        """The ``[K, A]`` booleans of the actions each task's training plans show
        (:func:`kepp_core.models.endpoint_probs.task_actions_mask`)."""
        self.task_mask.copy_(torch.as_tensor(np.asarray(mask), dtype=torch.bool))

    def standardise(self, obs: torch.Tensor) -> torch.Tensor:
        """Observations on the model's device, standardised."""
        return (obs.to(self.obs_mean.device) - self.obs_mean) / self.obs_std

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


class PairEndpointModel(EndpointModel, TaskClassifier):
    """``pair``: the task classifier's network over ``[v_s, v_g]`` with first-step and last-step
    heads on its hidden layer (module docstring)."""

    arch = "pair"

    def __init__(self, **options) -> None:
        """``options``: the fields of :class:`~kepp_core.models.options.EndpointNet`."""
        net = self._options(options)
        TaskClassifier.__init__(self, obs_dim=net.obs_dim, n_tasks=net.n_tasks, hidden=net.hidden)
        self.num_actions = net.num_actions
        self.first = nn.Linear(net.hidden, net.num_actions)
        self.last = nn.Linear(net.hidden, net.num_actions)
        self._init_endpoints(net)

    def forward(self, obs_start: torch.Tensor, obs_goal: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.net[:-1](torch.cat([self.standardise(obs_start), self.standardise(obs_goal)], dim=-1))
        return self.net[-1](h), self.first(h), self.last(h)


def _encoder(obs_dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Dropout(DROPOUT),
                         nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(DROPOUT))


def _head(width: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(DROPOUT), nn.Linear(hidden, out))


class ClipEndpointModel(EndpointModel):
    """``clips``: one encoder per clip; ``first = first(z_s) + pair_first([z_s, z_g])``, ``last =
    last(z_g) + pair_last([z_s, z_g])``, ``task = task([z_s, z_g])`` (module docstring).

    >>> m = ClipEndpointModel(obs_dim=6, n_tasks=2, num_actions=3, hidden=8)
    >>> [t.shape for t in m.window_logits(torch.zeros(5, 6), torch.zeros(5, 6))]
    [torch.Size([5, 3]), torch.Size([5, 3]), torch.Size([5, 2]), torch.Size([5, 2])]
    """

    arch = "clips"

    def __init__(self, **options) -> None:
        """``options``: the fields of :class:`~kepp_core.models.options.EndpointNet`."""
        super().__init__()
        net = self._options(options)
        obs_dim, n_tasks, num_actions, hidden = net.obs_dim, net.n_tasks, net.num_actions, net.hidden
        self.obs_dim, self.n_tasks, self.num_actions, self.hidden = obs_dim, n_tasks, num_actions, hidden
        self.start, self.goal = _encoder(obs_dim, hidden), _encoder(obs_dim, hidden)
        self.first, self.last = nn.Linear(hidden, num_actions), nn.Linear(hidden, num_actions)
        self.task_start, self.task_goal = nn.Linear(hidden, n_tasks), nn.Linear(hidden, n_tasks)
        self.task = _head(2 * hidden, hidden, n_tasks)
        self.pair_first, self.pair_last = _head(2 * hidden, hidden, num_actions), _head(2 * hidden, hidden, num_actions)
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self._init_endpoints(net)

    def forward(self, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                windows: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, ...]:
        """Task, first-step and last-step logits; with ``windows`` (the windows at the start and end
        of some steps), :meth:`window_logits` of them after those (one call, so that a distributed
        run's gradient hooks see every use of the weights)."""
        zs, zg = self.start(self.standardise(obs_start)), self.goal(self.standardise(obs_goal))
        both = torch.cat([zs, zg], dim=-1)
        out = (self.task(both), self.first(zs) + self.pair_first(both), self.last(zg) + self.pair_last(both))
        return out if windows is None else out + self.window_logits(*windows)

    def window_logits(self, at_start: torch.Tensor, at_end: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The per-clip heads on single windows ``[B, O]``: the windows at the start and at the end
        of ``B`` steps → the step from its start window (first-step head), the step from its end
        window (last-step head) and the task from each window."""
        zs, zg = self.start(self.standardise(at_start)), self.goal(self.standardise(at_end))
        return self.first(zs), self.last(zg), self.task_start(zs), self.task_goal(zg)


ARCHS: dict[str, type[EndpointModel]] = {"clips": ClipEndpointModel, "pair": PairEndpointModel}


def endpoint_model_from_config(cfg: dict) -> EndpointModel:
    """The endpoint model a checkpoint's ``model`` table, or a fresh model's options, describe
    (:class:`~kepp_core.models.options.EndpointNet`: its architecture and sizes; a table without
    ``arch``, written before there were two architectures, is the ``pair`` model)."""
    net = convert(cfg, EndpointNet, "endpoint model options")
    return ARCHS[net.architecture].from_config({**msgspec.structs.asdict(net), "arch": net.architecture})
