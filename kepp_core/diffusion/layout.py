"""Condition layouts: how observations, condition rows and actions stack into one sample.

A sample ``x`` is ``[T, C]``: ``T`` columns (time), each stacking top to bottom the
observation block (``v_s`` in column 0, ``v_g`` in column ``T-1``, zeros elsewhere), the
condition blocks of the layout, and the action block (one-hot over ``A`` actions). Every
entry except the free action entries is *given* and is projected back after each
denoising step (paper §3.2 and supplement C.1).

- step model: free actions only in columns 0 and ``T-1`` (``[a_1, 0, .., 0, a_T]``);
- planning model: every action column free; condition rows such as the P²KG
  recommendation (``T × A``), a task class (PDPP, repeated in every column) or any other
  ``T × K`` array (e.g. an LLM's recommendation).

>>> lay = step_layout(horizon=3, obs_dim=4, num_actions=5)
>>> lay.channels, int(lay.free_mask().sum())
(9, 10)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from kepp_core.catalog import CONDITION_ROW_KINDS, DIFFUSION_KINDS, PLAN_CONDITIONS
from kepp_core.errors import KeppError

__all__ = ["ConditionLayout", "ConditionRow", "plan_layout", "step_layout"]


@dataclass(frozen=True)
class ConditionRow:
    name: str
    width: int
    kind: str = "extra"  # "graph": T×A recommendation, "task": one-hot repeated, "extra": any T×K


@dataclass(frozen=True)
class ConditionLayout:
    """Channel layout of a diffusion sample: observations, condition rows, then the action block."""
    kind: str
    horizon: int
    obs_dim: int
    num_actions: int
    rows: tuple[ConditionRow, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in DIFFUSION_KINDS:
            raise KeppError(f"unknown layout kind {self.kind!r} (expected one of {', '.join(DIFFUSION_KINDS)})")
        if self.horizon < 2:
            raise KeppError(f"horizon T={self.horizon} is too short (expected T >= 2)")
        for r in self.rows:
            if r.kind not in CONDITION_ROW_KINDS:
                raise KeppError(f"unknown condition row kind {r.kind!r} (expected one of {', '.join(CONDITION_ROW_KINDS)})")

    # --- geometry ------------------------------------------------------------------------
    @property
    def channels(self) -> int:
        return self.obs_dim + sum(r.width for r in self.rows) + self.num_actions

    @property
    def action_start(self) -> int:
        return self.channels - self.num_actions

    def row_slice(self, name: str) -> slice:
        """The channels of condition row ``name``."""
        start = self.obs_dim
        for r in self.rows:
            if r.name == name:
                return slice(start, start + r.width)
            start += r.width
        raise KeppError(f"layout has no condition row {name!r} (rows: {[r.name for r in self.rows]})")

    def free_mask(self) -> torch.Tensor:
        """``[T, C]`` bool: True on the entries the model predicts."""
        m = torch.zeros(self.horizon, self.channels, dtype=torch.bool)
        if self.kind == "step":
            m[0, self.action_start:] = True
            m[-1, self.action_start:] = True
        else:
            m[:, self.action_start:] = True
        return m

    def loss_weights(self, end_weight: float | None = None) -> torch.Tensor:
        """``[T, A]`` weights of the action block: ``end_weight`` on ``a_1``/``a_T`` (default 10
        for step models, 5 for planning models), 1 on other free entries, 0 on given ones."""
        if end_weight is None:
            end_weight = 10.0 if self.kind == "step" else 5.0
        w = self.free_mask()[:, self.action_start:].float()
        w[0] *= end_weight
        w[-1] *= end_weight
        return w

    # --- building samples ----------------------------------------------------------------
    def template(self, obs_start: torch.Tensor, obs_goal: torch.Tensor,
                 conditions: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """``[B, T, C]`` with every given entry set and the free action entries zero."""
        b = obs_start.shape[0]
        if obs_start.shape != (b, self.obs_dim) or obs_goal.shape != (b, self.obs_dim):
            raise KeppError(f"observations have shape {tuple(obs_start.shape)} / {tuple(obs_goal.shape)}, "
                            f"expected [B, {self.obs_dim}] (feature size does not match the model)")
        x = obs_start.new_zeros(b, self.horizon, self.channels)
        x[:, 0, : self.obs_dim] = obs_start
        x[:, -1, : self.obs_dim] = obs_goal
        conditions = conditions or {}
        unknown = set(conditions) - {r.name for r in self.rows}
        if unknown:
            raise KeppError(f"conditions {sorted(unknown)} are not rows of this layout "
                            f"(rows: {[r.name for r in self.rows]})")
        for r in self.rows:
            if r.name not in conditions:
                raise KeppError(f"missing condition row {r.name!r} for a {self.kind} model")
            c = conditions[r.name].to(x.device, x.dtype)
            sl = self.row_slice(r.name)
            if r.kind == "task":
                if c.shape != (b, r.width):
                    raise KeppError(f"condition {r.name!r} has shape {tuple(c.shape)}, expected [B, {r.width}]")
                x[:, :, sl] = c[:, None, :]
            else:
                if c.shape != (b, self.horizon, r.width):
                    raise KeppError(f"condition {r.name!r} has shape {tuple(c.shape)}, "
                                    f"expected [B, T={self.horizon}, {r.width}]")
                x[:, :, sl] = c
        return x

    def with_actions(self, template: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The clean sample ``x_0``: ``template`` plus one-hot actions ``[B, T]`` on free entries (the
        actions moved to the template's device)."""
        onehot = torch.nn.functional.one_hot(actions.to(template.device).long(), self.num_actions).to(template.dtype)
        x = template.clone()
        free = self.free_mask()[:, self.action_start:].to(template.device)
        x[:, :, self.action_start:] = torch.where(free, onehot, x[:, :, self.action_start:])
        return x

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ConditionLayout:
        return cls(kind=d["kind"], horizon=int(d["horizon"]), obs_dim=int(d["obs_dim"]),
                   num_actions=int(d["num_actions"]),
                   rows=tuple(ConditionRow(**r) for r in d.get("rows", ())))


def step_layout(horizon: int, obs_dim: int, num_actions: int) -> ConditionLayout:
    """Step model: observations + ``[a_1, 0, .., 0, a_T]``."""
    return ConditionLayout("step", horizon, obs_dim, num_actions)


def plan_layout(horizon: int, obs_dim: int, num_actions: int, condition: str = "graph",
                width: int | None = None) -> ConditionLayout:
    """Planning model: observations + condition row + actions.

    ``condition``: ``graph`` (P²KG recommendation, ``T × A``), ``none`` (KEPP without the
    graph condition), ``task`` (PDPP task class, ``width`` = number of tasks), ``extra``
    (any ``T × width`` array, default ``width = A``), ``llm`` (the LLM's plan, one-hot
    ``T × A``) or ``graph+llm`` (the P²KG row, then the LLM row).

    >>> [r.name for r in plan_layout(3, 4, 5, "graph+llm").rows]
    ['graph', 'llm']
    """
    if condition == "graph":
        rows = (ConditionRow("graph", num_actions, "graph"),)
    elif condition == "none":
        rows = ()
    elif condition == "task":
        if not width:
            raise KeppError("a task-class condition needs the number of tasks")
        rows = (ConditionRow("task", int(width), "task"),)
    elif condition == "extra":
        rows = (ConditionRow("extra", int(width or num_actions), "extra"),)
    elif condition == "llm":
        rows = (ConditionRow("llm", num_actions, "extra"),)
    elif condition == "graph+llm":
        rows = (ConditionRow("graph", num_actions, "graph"), ConditionRow("llm", num_actions, "extra"))
    else:
        raise KeppError(f"unknown plan condition {condition!r} (expected one of {', '.join(PLAN_CONDITIONS)})")
    return ConditionLayout("plan", horizon, obs_dim, num_actions, rows)
