"""Structured training loss: the true plan's negative log-likelihood under a linear-chain model
whose transitions are the P²KG (docs, How to use the graph).

The planning model's per-position action scores ``e`` ``[B, T, A]`` (e.g. its ``x_0`` action
block scaled like ``ProjectedDiffusion.action_scores``, ``x0 * 10``) are the emissions of a
linear-chain CRF; the transitions are the graph's ``log P(v | u)`` ``[A, A]`` times a scale
``λ`` (fixed or learnable):

    log p(a | e) = Σ_t e[t, a_t] + λ Σ_t log P(a_t+1 | a_t) - log Z(e),
    log Z(e)     = logsumexp over all A^T plans of the same sum.

``log Z`` comes from the forward algorithm in log-space (``torch.logsumexp``; exact, batched,
``O(T·A²)`` per plan, differentiable w.r.t. ``e`` and ``λ``). A pair without an edge has
``P = 0``; the loss floors every transition probability at ``floor`` (default ``1e-6``:
``log P >= -13.8``) so a true plan that leaves the graph (a test-time novelty, or a
graph built on other plans) still has a finite likelihood and a finite gradient.

>>> from kepp_core.graph.build import ProcedureGraph
>>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1), (1, 1)])
>>> loss = StructuredLoss(g)
>>> e = torch.zeros(1, 2, 2)                     # an uninformative model: only the graph speaks
>>> round(loss(e, torch.tensor([[0, 1]])).item(), 4)   # -log(1 / (1 + 1 + 2e-6)): a->b or b->b
0.6931
"""

from __future__ import annotations

import math

import torch
from torch import nn

from kepp_core.errors import KeppError
from kepp_core.graph.build import ProcedureGraph
from kepp_core.graph.decoding import transition_log_probs

DEFAULT_FLOOR = 1e-6
REDUCTIONS = ("mean", "sum", "none")


def graph_transitions(graph: ProcedureGraph, floor: float = DEFAULT_FLOOR,
                      dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The graph's ``log P(v | u)`` ``[A, A]``, floored at ``log(floor)`` (finite everywhere).

    >>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1)])
    >>> graph_transitions(g, dtype=torch.float64).exp().round(decimals=6).tolist()
    [[1e-06, 1.0], [1e-06, 1e-06]]
    """
    return torch.as_tensor(transition_log_probs(graph, floor), dtype=dtype)


def _check(emissions: torch.Tensor, transitions: torch.Tensor, plans: torch.Tensor | None = None) -> None:
    """Shapes, dtypes and ranges of the loss inputs (KeppError naming what was expected)."""
    if not isinstance(emissions, torch.Tensor) or not emissions.is_floating_point() or emissions.dim() != 3:
        shape = list(emissions.shape) if isinstance(emissions, torch.Tensor) else type(emissions).__name__
        raise KeppError(f"emissions must be a float tensor [B, T, A], got {shape}")
    _, t_len, a = emissions.shape
    if t_len < 1 or a < 1:
        raise KeppError(f"emissions have shape {list(emissions.shape)} (expected T >= 1 and A >= 1)")
    if not isinstance(transitions, torch.Tensor) or tuple(transitions.shape) != (a, a):
        shape = list(transitions.shape) if isinstance(transitions, torch.Tensor) else type(transitions).__name__
        raise KeppError(f"transitions have shape {shape} (expected [{a}, {a}] for {a} actions)")
    if not torch.isfinite(transitions).all():
        raise KeppError("transitions contain -inf/NaN (expected finite log-probabilities: "
                        "use graph_transitions(graph, floor))")
    if plans is None:
        return
    if not isinstance(plans, torch.Tensor) or plans.dtype not in (torch.int64, torch.int32) \
            or tuple(plans.shape) != tuple(emissions.shape[:2]):
        shape = list(plans.shape) if isinstance(plans, torch.Tensor) else type(plans).__name__
        raise KeppError(f"plans must be an integer tensor {list(emissions.shape[:2])} (got {shape})")
    if plans.numel() and (int(plans.min()) < 0 or int(plans.max()) >= a):
        bad = int(plans.min()) if int(plans.min()) < 0 else int(plans.max())
        raise KeppError(f"plans have action index {bad} outside 0..{a - 1}")


def chain_log_partition(emissions: torch.Tensor, transitions: torch.Tensor) -> torch.Tensor:
    """``log Z`` ``[B]``: logsumexp over all plans of ``Σ_t e[t, a_t] + Σ_t trans[a_t, a_t+1]``
    (forward algorithm; ``transitions`` already scaled).

    >>> chain_log_partition(torch.zeros(1, 3, 2), torch.zeros(2, 2)).exp().round().tolist()   # 2^3 plans
    [8.0]
    """
    _check(emissions, transitions)
    trans = transitions.to(emissions.dtype)
    alpha = emissions[:, 0]
    for t in range(1, emissions.shape[1]):
        alpha = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
    return torch.logsumexp(alpha, dim=-1)


def chain_score(emissions: torch.Tensor, transitions: torch.Tensor, plans: torch.Tensor) -> torch.Tensor:
    """``Σ_t e[t, a_t] + Σ_t trans[a_t, a_t+1]`` of given plans ``[B, T]`` → ``[B]``."""
    _check(emissions, transitions, plans)
    plans = plans.long()
    score = emissions.gather(2, plans.unsqueeze(2)).squeeze(2).sum(1)
    return score + transitions.to(emissions.dtype)[plans[:, :-1], plans[:, 1:]].sum(1)


def structured_nll(emissions: torch.Tensor, plans: torch.Tensor, transitions: torch.Tensor,
                   scale: float | torch.Tensor = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Negative log-likelihood of the true ``plans`` ``[B, T]`` under the chain model with
    emissions ``[B, T, A]`` and ``scale · transitions`` (``mean`` over the batch by default).

    >>> e = torch.tensor([[[2.0, 0.0], [0.0, 2.0]]])
    >>> round(float(structured_nll(e, torch.tensor([[0, 1]]), torch.zeros(2, 2))), 4)
    0.2539
    """
    if reduction not in REDUCTIONS:
        raise KeppError(f"unknown reduction {reduction!r} (expected one of {', '.join(REDUCTIONS)})")
    if not isinstance(scale, torch.Tensor) and not math.isfinite(scale):
        raise KeppError(f"transition scale {scale!r} is invalid (expected a finite number)")
    trans = scale * transitions.to(emissions.dtype)
    nll = chain_log_partition(emissions, trans) - chain_score(emissions, trans, plans)
    if reduction == "none":
        return nll
    return nll.mean() if reduction == "mean" else nll.sum()


class StructuredLoss(nn.Module):
    """Mean NLL of the true plans under the chain model over a fixed graph, with a transition
    scale ``scale`` (an ``nn.Parameter`` when ``learn_scale``, else a buffer).

    ``transitions``: a :class:`ProcedureGraph` (floored at ``floor``) or finite ``[A, A]``
    log-probabilities. Add it to the diffusion loss with its own weight; its parameters
    (the scale) go into the optimiser with the model's.
    """

    def __init__(self, transitions: ProcedureGraph | torch.Tensor, floor: float = DEFAULT_FLOOR,
                 scale: float = 1.0, learn_scale: bool = True) -> None:
        super().__init__()
        if isinstance(transitions, ProcedureGraph):
            transitions = graph_transitions(transitions, floor)
        transitions = torch.as_tensor(transitions)
        if not transitions.is_floating_point():
            transitions = transitions.float()
        if transitions.dim() != 2 or transitions.shape[0] != transitions.shape[1]:
            raise KeppError(f"transitions have shape {list(transitions.shape)} (expected a square [A, A])")
        if not torch.isfinite(transitions).all():
            raise KeppError("transitions contain -inf/NaN (expected finite log-probabilities: pass the graph, "
                            "or floor them with graph_transitions)")
        if not math.isfinite(scale):
            raise KeppError(f"transition scale {scale!r} is invalid (expected a finite number)")
        self.register_buffer("transitions", transitions)
        value = torch.tensor(float(scale))
        if learn_scale:
            self.scale = nn.Parameter(value)
        else:
            self.register_buffer("scale", value)

    @property
    def num_actions(self) -> int:
        return self.transitions.shape[0]

    def forward(self, emissions: torch.Tensor, plans: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """The NLL of ``plans`` ``[B, T]`` given the model's action scores ``[B, T, A]``."""
        return structured_nll(emissions, plans, self.transitions, self.scale.to(emissions.dtype), reduction)
