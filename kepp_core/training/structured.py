"""Structured training loss: the true plan's negative log-likelihood under a linear-chain model
whose transitions are the P²KG (docs, How to use the graph).

The planning model's per-position action scores ``e`` ``[B, T, A]`` (e.g. its ``x_0`` action
block scaled like ``ProjectedDiffusion.action_scores``, ``x0 * 10``) are the emissions of a
linear-chain CRF; the transitions are the graph's ``log P(v | u)`` ``[A, A]`` times a scale
``λ`` (fixed or learnable):

    log p(a | e) = Σ_t e[t, a_t] + λ Σ_t log P(a_t+1 | a_t) - log Z(e),
    log Z(e)     = logsumexp over all A^T plans of the same sum.

``log Z`` comes from the forward algorithm (exact, batched, differentiable w.r.t. ``e`` and
``λ``). A pair without an edge has ``P = 0``; the loss floors every transition probability at
``floor`` (default ``1e-6``: ``log P >= -13.8``) so a true plan that leaves the graph (a
test-time novelty, or a graph built on other plans) still has a finite likelihood and a finite
gradient.

**Sparse forward algorithm.** Floored, the transition matrix is one constant ``b = log(floor)``
except on the graph's ``E`` edges, so each step of the recursion splits into a dense part that
is the same for every target and a sparse correction on the edges:

    Σ_u exp(α_u + λ·trans[u, v]) = exp(λ·b) · (Σ_u exp(α_u) + Σ_{u→v} exp(α_u) · (exp(λ·(trans[u, v] - b)) - 1))

(:class:`SparseTransitions`; ``b`` is the matrix's minimum, so any ``[A, A]`` matrix has this
form, with every entry above the minimum an "edge"). One step costs ``O(A + E)`` per plan
instead of ``O(A²)``: with COIN's 768 actions and its graph's few thousand edges that is the
difference between the structured planner training at the plain planner's pace and 30 times
slower (``benchmarks/bench_structured_scale.py``). The recursion runs in float64 with ``α``
shifted by its maximum, so the sum in brackets is at least 1 and never underflows;
:func:`chain_log_partition` is the dense ``O(T·A²)`` reference (``torch.logsumexp``).

>>> from kepp_core.graph.build import ProcedureGraph
>>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1), (1, 1)])
>>> loss = StructuredLoss(g)
>>> e = torch.zeros(1, 2, 2)                     # an uninformative model: only the graph speaks
>>> round(loss(e, torch.tensor([[0, 1]])).item(), 4)   # -log(1 / (1 + 1 + 2e-6)): a->b or b->b
0.6931
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
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


class SparseTransitions(NamedTuple):
    """An ``[A, A]`` matrix of log-transitions as one value ``base`` (0-d tensor) everywhere except
    on ``E`` edges ``src[e] → dst[e]`` (``[E]`` long, row-major order) whose values ``logp`` ``[E]``
    are above it (module docstring: the sparse forward algorithm)."""

    base: torch.Tensor
    src: torch.Tensor
    dst: torch.Tensor
    logp: torch.Tensor
    num_actions: int

    def dense(self) -> torch.Tensor:
        """The ``[A, A]`` matrix itself."""
        out = self.base.expand(self.num_actions, self.num_actions).clone()
        out[self.src, self.dst] = self.logp
        return out

    def lookup(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The matrix's values at the pairs ``(u, v)`` (any equal shapes; binary search in the edges)."""
        keys = self.src * self.num_actions + self.dst  # ascending: the edges are row-major
        want = u.long() * self.num_actions + v.long()
        pos = torch.searchsorted(keys, want.reshape(-1)).reshape(want.shape).clamp_max(max(len(keys) - 1, 0))
        if len(keys) == 0:
            return self.base.expand(want.shape)
        return torch.where(keys[pos] == want, self.logp[pos], self.base)


def sparse_transitions(transitions: torch.Tensor) -> SparseTransitions:
    """``[A, A]`` log-transitions in sparse form: ``base`` their minimum, the edges every entry
    above it (exact for any matrix; sparse when most entries are the minimum, as a floored graph's).

    >>> st = sparse_transitions(torch.tensor([[-5.0, 0.0], [-5.0, -5.0]]))
    >>> float(st.base), st.src.tolist(), st.dst.tolist(), st.logp.tolist()
    (-5.0, [0], [1], [0.0])
    """
    base = transitions.min()
    src, dst = torch.nonzero(transitions > base, as_tuple=True)
    return SparseTransitions(base, src, dst, transitions[src, dst], int(transitions.shape[0]))


def graph_sparse_transitions(graph: ProcedureGraph, floor: float = DEFAULT_FLOOR,
                             dtype: torch.dtype = torch.float32) -> SparseTransitions:
    """:func:`graph_transitions` in sparse form, read from the graph's stored edges (never an
    ``[A, A]`` array): ``base = log(floor)``, the edges those whose probability is above ``floor``.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1), (0, 2), (1, 1)])
    >>> st = graph_sparse_transitions(g, dtype=torch.float64)
    >>> st.src.tolist(), st.dst.tolist(), st.logp.exp().tolist()
    ([0, 0, 1], [1, 2, 1], [0.5, 0.5, 1.0])
    """
    if not 0 < floor < 1:
        raise KeppError(f"transition floor {floor!r} is invalid (expected a probability in (0, 1))")
    c = graph.counts
    u, v = c.rows(), c.indices
    logp = np.log(c.data.astype(np.float64)) - np.log(np.asarray(graph.out_counts, dtype=np.float64)[u])
    keep = logp > math.log(floor)
    return SparseTransitions(torch.tensor(math.log(floor), dtype=dtype), torch.as_tensor(u[keep]),
                             torch.as_tensor(v[keep]), torch.as_tensor(logp[keep], dtype=dtype), graph.num_actions)


def _check(emissions: torch.Tensor, transitions: torch.Tensor | SparseTransitions,
           plans: torch.Tensor | None = None) -> None:
    """Shapes, dtypes and ranges of the loss inputs (KeppError naming what was expected). The plans' action
    range is read where they are on the CPU (free; the trainers pass them so); plans already on a GPU are not
    read back for it (a sync every step)."""
    if not isinstance(emissions, torch.Tensor) or not emissions.is_floating_point() or emissions.dim() != 3:
        shape = list(emissions.shape) if isinstance(emissions, torch.Tensor) else type(emissions).__name__
        raise KeppError(f"emissions must be a float tensor [B, T, A], got {shape}")
    _, t_len, a = emissions.shape
    if t_len < 1 or a < 1:
        raise KeppError(f"emissions have shape {list(emissions.shape)} (expected T >= 1 and A >= 1)")
    if isinstance(transitions, SparseTransitions):
        if transitions.num_actions != a:
            raise KeppError(f"transitions are over {transitions.num_actions} actions (expected {a})")
    elif not isinstance(transitions, torch.Tensor) or tuple(transitions.shape) != (a, a):
        shape = list(transitions.shape) if isinstance(transitions, torch.Tensor) else type(transitions).__name__
        raise KeppError(f"transitions have shape {shape} (expected [{a}, {a}] for {a} actions)")
    elif not torch.isfinite(transitions).all():
        raise KeppError("transitions contain -inf/NaN (expected finite log-probabilities: "
                        "use graph_transitions(graph, floor))")
    if plans is None:
        return
    if not isinstance(plans, torch.Tensor) or plans.dtype not in (torch.int64, torch.int32) \
            or tuple(plans.shape) != tuple(emissions.shape[:2]):
        shape = list(plans.shape) if isinstance(plans, torch.Tensor) else type(plans).__name__
        raise KeppError(f"plans must be an integer tensor {list(emissions.shape[:2])} (got {shape})")
    if plans.numel() and plans.device.type == "cpu" and (int(plans.min()) < 0 or int(plans.max()) >= a):
        bad = int(plans.min()) if int(plans.min()) < 0 else int(plans.max())
        raise KeppError(f"plans have action index {bad} outside 0..{a - 1}")


def chain_log_partition(emissions: torch.Tensor, transitions: torch.Tensor) -> torch.Tensor:
    """``log Z`` ``[B]``: logsumexp over all plans of ``Σ_t e[t, a_t] + Σ_t trans[a_t, a_t+1]``
    (forward algorithm; ``transitions`` already scaled). The dense ``O(T·A²)`` reference of
    :func:`sparse_chain_log_partition`.

    >>> chain_log_partition(torch.zeros(1, 3, 2), torch.zeros(2, 2)).exp().round().tolist()   # 2^3 plans
    [8.0]
    """
    _check(emissions, transitions)
    trans = transitions.to(emissions.dtype)
    alpha = emissions[:, 0]
    for t in range(1, emissions.shape[1]):
        alpha = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
    return torch.logsumexp(alpha, dim=-1)


def sparse_chain_log_partition(emissions: torch.Tensor, transitions: SparseTransitions,
                               scale: float | torch.Tensor = 1.0) -> torch.Tensor:
    """``log Z`` ``[B]`` of the chain with emissions ``[B, T, A]`` and ``scale ·`` the sparse
    ``transitions``, in ``O(T·(A + E))`` per plan (module docstring); equal to
    :func:`chain_log_partition` of the dense, scaled matrix.

    >>> st = sparse_transitions(torch.zeros(2, 2))                  # no edges: base 0 everywhere
    >>> sparse_chain_log_partition(torch.zeros(1, 3, 2), st).exp().round().tolist()
    [8.0]
    """
    _check(emissions, transitions)
    e = emissions.double()
    lam = scale.double() if isinstance(scale, torch.Tensor) else torch.tensor(float(scale), dtype=torch.float64,
                                                                              device=emissions.device)
    base = transitions.base.double()
    # exp(λ·(trans - base)) - 1 on the edges: the edges' excess over the base, per unit of the base
    gain = torch.expm1(lam * (transitions.logp.double() - base))
    src, dst = transitions.src, transitions.dst
    alpha = e[:, 0]
    for t in range(1, e.shape[1]):
        top = alpha.max(-1, keepdim=True).values.detach()  # log Z does not depend on the shift
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        a = torch.exp(alpha - top)  # its largest entry is 1
        edges = torch.zeros_like(a).index_add(1, dst, a[:, src] * gain)
        inner = (a.sum(-1, keepdim=True) + edges).clamp_min(torch.finfo(torch.float64).tiny)
        alpha = top + lam * base + torch.log(inner) + e[:, t]
    return torch.logsumexp(alpha, dim=-1).to(emissions.dtype)


def chain_score(emissions: torch.Tensor, transitions: torch.Tensor | SparseTransitions,
                plans: torch.Tensor) -> torch.Tensor:
    """``Σ_t e[t, a_t] + Σ_t trans[a_t, a_t+1]`` of given plans ``[B, T]`` → ``[B]`` (``transitions``
    dense ``[A, A]`` or sparse)."""
    _check(emissions, transitions, plans)
    plans = plans.to(emissions.device).long()
    score = emissions.gather(2, plans.unsqueeze(2)).squeeze(2).sum(1)
    if isinstance(transitions, SparseTransitions):
        steps = transitions.lookup(plans[:, :-1], plans[:, 1:])
    else:
        steps = transitions[plans[:, :-1], plans[:, 1:]]
    return score + steps.to(emissions.dtype).sum(1)


def structured_nll(emissions: torch.Tensor, plans: torch.Tensor, transitions: torch.Tensor | SparseTransitions,
                   scale: float | torch.Tensor = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Negative log-likelihood of the true ``plans`` ``[B, T]`` under the chain model with
    emissions ``[B, T, A]`` and ``scale · transitions`` (dense ``[A, A]`` or
    :class:`SparseTransitions`; ``mean`` over the batch by default), by the sparse forward algorithm.

    >>> e = torch.tensor([[[2.0, 0.0], [0.0, 2.0]]])
    >>> round(float(structured_nll(e, torch.tensor([[0, 1]]), torch.zeros(2, 2))), 4)
    0.2539
    """
    if reduction not in REDUCTIONS:
        raise KeppError(f"unknown reduction {reduction!r} (expected one of {', '.join(REDUCTIONS)})")
    if not isinstance(scale, torch.Tensor) and not math.isfinite(scale):
        raise KeppError(f"transition scale {scale!r} is invalid (expected a finite number)")
    _check(emissions, transitions, plans)
    sparse = transitions if isinstance(transitions, SparseTransitions) else sparse_transitions(transitions)
    log_z = sparse_chain_log_partition(emissions, sparse, scale)
    plans = plans.to(emissions.device).long()
    steps = sparse.lookup(plans[:, :-1], plans[:, 1:]).to(emissions.dtype).sum(1)
    nll = log_z - emissions.gather(2, plans.unsqueeze(2)).squeeze(2).sum(1) - scale * steps
    if reduction == "none":
        return nll
    return nll.mean() if reduction == "mean" else nll.sum()


class StructuredLoss(nn.Module):
    """Mean NLL of the true plans under the chain model over a fixed graph, with a transition
    scale ``scale`` (an ``nn.Parameter`` when ``learn_scale``, else a buffer).

    ``transitions``: a :class:`ProcedureGraph` (floored at ``floor``; read from its edges, so
    nothing of size ``A²`` is made) or finite ``[A, A]`` log-probabilities. They are kept in
    sparse form (:class:`SparseTransitions`: buffers ``base``, ``edge_src``, ``edge_dst``,
    ``edge_logp``). Add it to the diffusion loss with its own weight; its parameters (the scale)
    go into the optimiser with the model's.
    """

    def __init__(self, transitions: ProcedureGraph | torch.Tensor, floor: float = DEFAULT_FLOOR,
                 scale: float = 1.0, learn_scale: bool = True) -> None:
        super().__init__()
        if isinstance(transitions, ProcedureGraph):
            sparse = graph_sparse_transitions(transitions, floor)
        else:
            sparse = sparse_transitions(_dense_input(transitions))
        if not math.isfinite(scale):
            raise KeppError(f"transition scale {scale!r} is invalid (expected a finite number)")
        self._num_actions = sparse.num_actions
        self.register_buffer("base", sparse.base.clone())
        self.register_buffer("edge_src", sparse.src.clone())
        self.register_buffer("edge_dst", sparse.dst.clone())
        self.register_buffer("edge_logp", sparse.logp.clone())
        value = torch.tensor(float(scale))
        if learn_scale:
            self.scale = nn.Parameter(value)
        else:
            self.register_buffer("scale", value)

    @property
    def num_actions(self) -> int:
        return self._num_actions

    @property
    def transitions(self) -> SparseTransitions:
        """The graph's floored log-transitions, sparse (:meth:`SparseTransitions.dense` gives ``[A, A]``)."""
        return SparseTransitions(self.base, self.edge_src, self.edge_dst, self.edge_logp, self._num_actions)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # a resume state saved before the sparse form holds the dense [A, A] matrix: read it as sparse
        dense = state_dict.pop(prefix + "transitions", None)
        if dense is not None:
            sparse = sparse_transitions(dense)
            state_dict.update({prefix + "base": sparse.base, prefix + "edge_src": sparse.src,
                               prefix + "edge_dst": sparse.dst, prefix + "edge_logp": sparse.logp})
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, emissions: torch.Tensor, plans: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """The NLL of ``plans`` ``[B, T]`` given the model's action scores ``[B, T, A]``."""
        return structured_nll(emissions, plans, self.transitions, self.scale.to(emissions.dtype), reduction)


def _dense_input(transitions) -> torch.Tensor:
    """Given ``[A, A]`` log-transitions as a float tensor (KeppError unless square and finite)."""
    transitions = torch.as_tensor(transitions)
    if not transitions.is_floating_point():
        transitions = transitions.float()
    if transitions.dim() != 2 or transitions.shape[0] != transitions.shape[1]:
        raise KeppError(f"transitions have shape {list(transitions.shape)} (expected a square [A, A])")
    if not torch.isfinite(transitions).all():
        raise KeppError("transitions contain -inf/NaN (expected finite log-probabilities: pass the graph, "
                        "or floor them with graph_transitions)")
    return transitions
