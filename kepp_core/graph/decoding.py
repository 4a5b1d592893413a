"""Graph-aware decoding: the exact best plan under the model's scores and the P²KG (docs, How to use the graph).

The planning model decodes a plan by an argmax per position, so nothing keeps the plan on
the graph. Here the plan of ``T`` actions for query ``n`` maximises

    score(a) = Σ_t e[n, t, a_t] + λ · Σ_t log P(a_t+1 | a_t) + s_n(a_1) + g_n(a_T) + Σ_t r_n(a_t)

- ``e`` ``[N, T, A]``: per-position log-probabilities from the model's action block
  (:func:`emission_log_probs`);
- ``log P`` ``[A, A]``: the P²KG's ``log(count(u, v) / out(u))`` (:func:`transition_log_probs`),
  ``-inf`` without an edge, so with ``λ > 0`` only walks of the graph are allowed
  (``λ = 0`` ignores the graph entirely);
- endpoint terms ``s_n``, ``g_n``: ``free`` (0), ``pinned`` (0 at the given ``â_1`` / ``â_T``,
  ``-inf`` elsewhere), ``topk`` (the log-confidence of each of ``k`` candidates, ``-inf``
  elsewhere) or ``dist`` (full distributions: ``s_n(a) = log p(a_1 = a | start)`` and
  ``g_n(a) = log p(a_T = a | goal)`` given for every action, ``[N, A]`` each, ``-inf`` allowed).
  ``dist`` is *joint* decoding: the endpoints are chosen together with the middle of the plan
  instead of committing to the most probable first and last actions beforehand; one-hot
  vectors (0 at ``â``, ``-inf`` elsewhere) make it ``pinned``;
- ``r_n`` ``[N, A]`` (optional ``action_logprior``, 0 without one): a per-query log-weight of
  every action, added at every position, e.g. ``log p(a | task)`` or a task's action set
  (0 inside, ``-inf`` outside, or the boolean mask itself) to restrict the plan to the task.

**Exact search.** Viterbi over the horizon, batched over queries in numpy (``O(N·T·A²)``):
a backward pass gives, for every position and action, the best score of the rest of the
plan; a forward pass then picks at each position the *smallest* action whose value is
within ``tol`` of the best. That returns the lexicographically smallest optimal plan, the
project's tie-break (docs, The graph): exactly equal scores can round apart in floats (sums in
another order, ``log(1/2) + log(1/3)`` vs ``log(1/6)``), so scores within
``tol = 1e-12 · Σ|terms|`` of each other count as ties (float error is ~1e-15 of that).

**No walk.** When no walk of ``T`` nodes satisfies the endpoint constraints (score
``-inf``), the query is decoded with ``λ = 0`` (per-position argmax, endpoints still pinned,
chosen among the candidates or weighted by their distributions, ``r_n`` still added) and
flagged in :attr:`Decoding.fallback`. Constraints that leave some position without any
possible action even at ``λ = 0`` (e.g. a pinned start outside the allowed actions) are a
:class:`~kepp_core.errors.KeppError`, never a silent plan.

**History method** (:func:`decode_history`): ``λ · log h(path)`` with ``h`` the
:class:`~kepp_core.graph.history.HistoryScorer` window score, for pinned or top-k endpoints.
For an endpoint pair an unseen walk has ``h = c · p(path)`` with ``c = β / (Z (n + β))``
constant and ``p`` the P²KG product, and a seen window scores strictly higher than that.
So the exact best is among the training windows between the endpoints and the Viterbi
plan under the P²KG objective: re-ranking that candidate set (by score, then
lexicographically) is exact over *all* walks, not just a top-``R`` list.

>>> from kepp_core.graph.build import ProcedureGraph
>>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (0, 2, 2)])
>>> e = np.log(np.full((1, 3, 3), 1 / 3))     # uninformative model: the graph decides
>>> d = decode(e, g, lam=1.0, endpoints="pinned", start=[0], goal=[2])
>>> d.plans.tolist(), round(float(d.scores[0]), 4), d.fallback.tolist()   # tie with (0, 2, 2)
([[0, 1, 2]], -3.989, [False])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kepp_core.arrays import as_numpy, float_array
from kepp_core.catalog import (GRAPH_LAMBDA, GRAPH_MODE, JOINT_MODE, LOGIT_SCALE, MARGINAL_MODES, TOPK,  # noqa: F401
                               Decoder, mode_decoder)  # GRAPH_LAMBDA, GRAPH_MODE, TOPK: read here by older callers
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.graph.build import ProcedureGraph
from kepp_core.graph.history import HistoryScorer
from kepp_core.graph.kbest import KBestPlans, k_best
from kepp_core.graph.retrieval import top_paths

# The endpoint modes (named with the decoders that choose among them, kepp_core.catalog.decoders): the
# marginal ones commit to the first and last step (or leave them free) before the middle is decoded; the
# joint one weighs full distributions of both with the rest of the plan.
ENDPOINT_MODES = (*MARGINAL_MODES, JOINT_MODE)
EMISSION_KINDS = ("logits", "probs")
VITERBI_CELLS = 1 << 24  # float64 cells of one Viterbi block (128 MB): 28 queries at A = 768 (COIN's vocabulary)
RTOL = 1e-12  # scores within RTOL · Σ|terms| are ties (rounding of a T-term sum is ~T · 1e-16 of it)


@dataclass(frozen=True)
class Decoding:
    """Decoded plans ``[N, T]`` (int64), their scores ``[N]`` and per-query fallback flags ``[N]``.

    ``scores`` is the objective the plan was decoded under: with ``fallback`` True that is
    the ``λ = 0`` objective (no walk satisfied the constraints).
    """

    plans: np.ndarray
    scores: np.ndarray
    fallback: np.ndarray

    def __len__(self) -> int:
        return len(self.plans)


# --- inputs ----------------------------------------------------------------------------------
def _indices(x, name: str, shape: tuple[int, ...], num_actions: int) -> np.ndarray:
    """Action indices of the given ``shape`` (a scalar is broadcast), each in ``0..A-1``."""
    arr = as_numpy(x)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise KeppError(f"{name} must hold integer action indices, got dtype {arr.dtype}")
    if arr.ndim == 0:
        arr = np.broadcast_to(arr, shape)
    if arr.shape != shape:
        raise KeppError(f"{name} has shape {list(arr.shape)} (expected {list(shape)})")
    bad = (arr < 0) | (arr >= num_actions)
    if bad.any():
        raise KeppError(f"{name} has action index {int(arr[bad][0])} outside 0..{num_actions - 1}")
    return arr.astype(np.int64)


def _check_emissions(emissions) -> np.ndarray:
    e = float_array(emissions, "emissions")
    if e.ndim != 3 or 0 in e.shape[1:]:
        raise KeppError(f"emissions have shape {list(e.shape)} (expected [N, T, A] with T, A >= 1)")
    if np.isneginf(e).any():
        raise KeppError("emissions contain -inf (expected finite log-probabilities; "
                        "emission_log_probs floors them)")
    return e


def check_weight(lam, what: str = "transition weight lam") -> float:
    """The transition weight λ as a float: a finite number >= 0 (a KeppError naming ``what`` otherwise;
    the one check of λ, for the decoder and the ``--decode-weight`` option alike).

    >>> check_weight(0.3), check_weight(2)
    (0.3, 2.0)
    """
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating, np.integer)) \
            or not math.isfinite(lam) or lam < 0:
        raise KeppError(f"{what}={lam!r} is invalid (expected a finite number >= 0)")
    return float(lam)


def _transitions(transitions, num_actions: int) -> np.ndarray:
    """``[A, A]`` log-probabilities from a graph or an array (``-inf`` allowed: no edge)."""
    if isinstance(transitions, ProcedureGraph):
        transitions = transition_log_probs(transitions)
    t = float_array(transitions, "transitions")
    if t.shape != (num_actions, num_actions):
        raise KeppError(f"transitions have shape {list(t.shape)} (expected [{num_actions}, {num_actions}] "
                        f"for emissions over {num_actions} actions)")
    return t


# --- scores ----------------------------------------------------------------------------------
def transition_log_probs(graph: ProcedureGraph, floor: float | None = None) -> np.ndarray:
    """The P²KG's ``log P(v | u)`` ``[A, A]`` (float64): ``-inf`` without an edge, or at least
    ``log(floor)`` everywhere when ``floor`` is given (a smoothed version, e.g. for training).

    >>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1), (0, 0)])
    >>> np.exp(transition_log_probs(g)).tolist()
    [[0.5, 0.5], [0.0, 0.0]]
    >>> transition_log_probs(g, floor=1e-6).min().round(3)
    np.float64(-13.816)
    """
    a = graph.num_actions
    out = np.full((a, a), -np.inf)
    c = graph.counts  # sparse CSR (EdgeCounts): read its stored edges, never a dense A x A scan
    u, v, n = c.rows(), c.indices, c.data.astype(np.float64)
    out[u, v] = np.log(n) - np.log(np.asarray(graph.out_counts, dtype=np.float64)[u])
    if floor is not None:
        if not 0 < floor < 1:
            raise KeppError(f"transition floor {floor!r} is invalid (expected a probability in (0, 1))")
        out = np.maximum(out, math.log(floor))
    return out


def emission_log_probs(actions, kind: str = "logits", temperature: float = 1 / LOGIT_SCALE,
                       floor: float = 1e-6) -> np.ndarray:
    """Per-position log-probabilities ``[N, T, A]`` from a model's action block.

    ``actions`` is ``[N, T, A]`` (one ``x_0`` action block or scores) or ``[N, K, T, A]``
    (``K`` samples per query, averaged as probabilities: ``log mean_k p_k``).
    ``kind="logits"``: ``p = softmax(x / temperature)``; the default 0.1 is the scaling of
    ``ProjectedDiffusion.action_scores``. ``kind="probs"``: the values clipped below at
    ``floor`` and normalised per position (for blocks that already are probabilities or
    one-hot-like ``x_0``). Results are finite (float64).

    >>> emission_log_probs(np.array([[[1.0, 0.0]]]), temperature=1.0).round(4).tolist()
    [[[-0.3133, -1.3133]]]
    >>> np.exp(emission_log_probs(np.array([[[[1.0, 0.0]], [[0.0, 1.0]]]]), kind="probs")).round(3).tolist()
    [[[0.5, 0.5]]]
    """
    if kind not in EMISSION_KINDS:
        raise unknown_name_error("emission kind", kind, EMISSION_KINDS)
    if not (isinstance(temperature, (int, float)) and temperature > 0 and math.isfinite(temperature)):
        raise KeppError(f"temperature {temperature!r} is invalid (expected a finite number > 0)")
    if not (isinstance(floor, (int, float)) and 0 < floor < 1):
        raise KeppError(f"floor {floor!r} is invalid (expected a probability in (0, 1))")
    x = float_array(actions, "action scores")
    if x.ndim not in (3, 4) or 0 in x.shape:
        raise KeppError(f"action scores have shape {list(x.shape)} (expected [N, T, A] or [N, K, T, A])")
    if np.isneginf(x).any():
        raise KeppError("action scores contain -inf (expected finite values)")
    if kind == "logits":
        z = x / temperature
        z = z - z.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        if x.ndim == 4:  # log of the mean probability over samples, in log-space
            m = logp.max(1, keepdims=True)
            logp = (m + np.log(np.exp(logp - m).mean(1, keepdims=True)))[:, 0]
        return np.maximum(logp, math.log(np.finfo(np.float64).tiny))
    p = np.maximum(x, floor)
    p = p / p.sum(-1, keepdims=True)
    if x.ndim == 4:
        p = p.mean(1)
    return np.log(p)


def plan_score(emissions, transitions, plans, lam: float = 1.0) -> np.ndarray:
    """``Σ_t e[n, t, a_t] + λ Σ_t log P(a_t+1 | a_t)`` of given plans ``[N, T]`` (no endpoint
    terms; ``-inf`` for a plan that leaves the graph when ``λ > 0``).

    >>> g = ProcedureGraph.from_plans(["a", "b"], [(0, 1)])
    >>> plan_score(np.zeros((2, 2, 2)), g, [[0, 1], [1, 0]]).tolist()
    [0.0, -inf]
    """
    e = _check_emissions(emissions)
    lam = check_weight(lam)
    n, t_len, a = e.shape
    p = _indices(plans, "plans", (n, t_len), a)
    rows = np.arange(n)[:, None]
    total = e[rows, np.arange(t_len)[None], p].sum(-1)
    if lam > 0 and t_len > 1:
        total = total + lam * _transitions(transitions, a)[p[:, :-1], p[:, 1:]].sum(-1)
    return total


# --- endpoints -------------------------------------------------------------------------------
def _endpoint_terms(mode: str, n: int, horizon: int, a: int, start, goal, start_logp, goal_logp):
    """Log-terms ``[N, A]`` added to the first and the last position."""
    if mode not in ENDPOINT_MODES:
        raise unknown_name_error("endpoint mode", mode, ENDPOINT_MODES)
    if mode == "free":
        if any(x is not None for x in (start, goal, start_logp, goal_logp)):
            raise KeppError("endpoints='free' takes no start/goal (use 'pinned', 'topk' or 'dist')")
        return np.zeros((n, a)), np.zeros((n, a))
    if mode == JOINT_MODE:
        if start is not None or goal is not None:
            raise KeppError("endpoints='dist' takes start_logp/goal_logp ([N, A] log-probabilities), "
                            "not start/goal indices (use 'pinned' or 'topk' for those)")
        if start_logp is None or goal_logp is None:
            raise KeppError("endpoints='dist' needs both start_logp and goal_logp ([N, A] log-probabilities)")
    elif start is None or goal is None:
        raise KeppError(f"endpoints={mode!r} needs both start and goal")
    if horizon < 2:
        raise KeppError(f"endpoints={mode!r} needs plans of T >= 2 actions, got T={horizon}")
    if mode == JOINT_MODE:
        return _log_weights(start_logp, "start_logp", n, a), _log_weights(goal_logp, "goal_logp", n, a)
    if mode == "pinned" and (start_logp is not None or goal_logp is not None):
        raise KeppError("endpoints='pinned' takes no log-confidences (use 'topk')")
    terms = []
    for name, cand, logp in (("start", start, start_logp), ("goal", goal, goal_logp)):
        if mode == "pinned":
            idx, conf = _indices(cand, name, (n,), a)[:, None], np.zeros((n, 1))
        else:
            raw = as_numpy(cand)
            if raw.ndim == 1:
                raw = raw[:, None]
            if raw.ndim != 2 or raw.shape[0] != n or raw.shape[1] < 1:
                raise KeppError(f"topk {name} candidates have shape {list(raw.shape)} (expected [{n}, k], k >= 1)")
            idx = _indices(raw, f"topk {name} candidates", raw.shape, a)
            conf = np.zeros(idx.shape) if logp is None else float_array(logp, f"{name}_logp").reshape(-1)
            if conf.size != idx.size or np.isneginf(conf).any():
                raise KeppError(f"{name}_logp must be {idx.size} finite log-confidences "
                                f"(one per candidate, shape {list(idx.shape)})")
            conf = conf.reshape(idx.shape)
        term = np.full((n, a), -np.inf)
        np.maximum.at(term, (np.repeat(np.arange(n), idx.shape[1]), idx.reshape(-1)), conf.reshape(-1))
        terms.append(term)
    return terms[0], terms[1]


def _log_weights(x, name: str, n: int, a: int) -> np.ndarray:
    """Per-query log-weights ``[N, A]`` (``-inf`` allowed; a boolean mask is 0 / ``-inf``), each
    row with at least one possible action."""
    x = as_numpy(x)
    if x.dtype == bool:
        x = np.where(np.asarray(x), 0.0, -np.inf)
    w = float_array(x, name)
    if w.shape != (n, a):
        raise KeppError(f"{name} has shape {list(w.shape)} (expected [N, A] = [{n}, {a}]: "
                        f"one log-weight per query and action)")
    dead = np.isneginf(w).all(-1)
    if dead.any():
        raise KeppError(f"{name} is -inf for every action in row {int(np.flatnonzero(dead)[0])} "
                        f"(expected at least one possible action per query)")
    return w


def _check_feasible(unary: np.ndarray) -> None:
    """Every position of every query has a possible action (else even ``λ = 0`` has no plan)."""
    dead = np.isneginf(unary).all(-1)  # [N, T]
    if dead.any():
        q, t = (int(i) for i in np.argwhere(dead)[0])
        raise KeppError(f"query {q} has no possible action at position {t + 1} of {unary.shape[1]}: the endpoint "
                        f"terms and action_logprior are -inf for every action there (expected at least one "
                        f"action they both allow)")


# --- Viterbi ---------------------------------------------------------------------------------
def _tolerance(unary: np.ndarray, trans: np.ndarray | None, tol: float | None) -> np.ndarray:
    """Per-query tie band: ``RTOL`` times a bound on the sum of the terms' magnitudes."""
    n, t_len, _ = unary.shape
    if tol is not None:
        return np.full(n, float(tol))
    mag = np.where(np.isfinite(unary), np.abs(unary), 0.0).max(-1).sum(-1)
    if trans is not None:
        finite = trans[np.isfinite(trans)]
        mag = mag + (t_len - 1) * (np.abs(finite).max() if finite.size else 0.0)
    return RTOL * np.maximum(mag, 1.0)


def _first_within(values: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Per row, the smallest index whose value is within ``tol`` of the row's maximum."""
    best = values.max(-1)
    return np.argmax(values >= (best - tol)[:, None], axis=-1)


def _viterbi(unary: np.ndarray, trans: np.ndarray | None, tol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Lexicographically smallest best plans ``[N, T]`` and their scores ``[N]`` for unary
    terms ``[N, T, A]`` and weighted transitions ``[A, A]`` (None: no transition term)."""
    n, t_len, a = unary.shape
    band = _tolerance(unary, trans, tol)
    # rest[t][n, u]: best score of positions t+1 .. T-1 given a_t = u
    rest = np.zeros((t_len, n, a))
    for t in range(t_len - 2, -1, -1):
        w = unary[:, t + 1] + rest[t + 1]
        if trans is None:
            rest[t] = w.max(-1, keepdims=True)
        else:  # [chunk, A, A] at a time: memory bounded by VITERBI_CELLS, not N·A²
            step = max(1, VITERBI_CELLS // (a * a))
            for i in range(0, n, step):
                rest[t, i:i + step] = (trans[None] + w[i:i + step, None, :]).max(-1)
    plans = np.empty((n, t_len), dtype=np.int64)
    first = unary[:, 0] + rest[0]
    scores = first.max(-1)
    plans[:, 0] = _first_within(first, band)
    for t in range(1, t_len):
        values = unary[:, t] + rest[t]
        if trans is not None:
            values = values + trans[plans[:, t - 1]]
        plans[:, t] = _first_within(values, band)
    return plans, scores


def decode(emissions, transitions, lam: float = 1.0, endpoints: str = "free", start=None, goal=None,
           start_logp=None, goal_logp=None, tol: float | None = None, action_logprior=None) -> Decoding:
    """Exact best plans of ``T`` actions under emissions ``[N, T, A]`` and the graph's
    transitions (a :class:`ProcedureGraph` or ``[A, A]`` log-probabilities, ``-inf``: no edge).

    ``endpoints``: ``free``; ``pinned`` (``start``, ``goal``: ``[N]`` action indices); ``topk``
    (``start``, ``goal``: ``[N, k]`` candidates, ``start_logp``/``goal_logp``: ``[N, k]``
    log-confidences added to the score, default 0); ``dist`` (no ``start``/``goal``;
    ``start_logp``/``goal_logp``: ``[N, A]`` log-probabilities of every action as the first and
    the last step, ``-inf`` allowed). ``action_logprior`` ``[N, A]`` (optional, any mode):
    log-weights added at every position, ``-inf`` or a boolean mask's False excluding an action.
    Ties: the lexicographically smallest plan (within ``tol``, default relative, see the module
    docstring). Queries without a feasible walk are decoded with ``λ = 0`` and flagged.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2)])
    >>> e = np.log([[[.1, .1, .8], [.8, .1, .1], [.1, .8, .1]]])
    >>> decode(e, g, lam=0.0).plans.tolist(), decode(e, g, lam=1.0).plans.tolist()
    ([[2, 0, 1]], [[0, 1, 2]])
    >>> d = decode(e, g, lam=1.0, endpoints="pinned", start=[2], goal=[1])   # no walk 2 -> 1
    >>> d.plans.tolist(), d.fallback.tolist()
    ([[2, 0, 1]], [True])

    Joint decoding: the most probable endpoints (a, b) have no walk between them; with their
    distributions the plan that is best as a whole wins, and a task's action set (no b)
    restricts every position.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (1, 2, 2)])
    >>> flat, s, t = np.zeros((1, 3, 3)), np.log([[.5, .3, .2]]), np.log([[.01, .6, .39]])
    >>> decode(flat, g, 1.0, "pinned", start=[0], goal=[1]).fallback.tolist()
    [True]
    >>> decode(flat, g, 1.0, "dist", start_logp=s, goal_logp=t).plans.tolist()
    [[0, 1, 2]]
    >>> decode(flat, g, 1.0, "dist", start_logp=s, goal_logp=t, action_logprior=[[True, False, True]]).plans.tolist()
    [[2, 2, 2]]
    """
    e = _check_emissions(emissions)
    lam = check_weight(lam)
    if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0):
        raise KeppError(f"tie tolerance tol={tol!r} is invalid (expected a number >= 0 or None)")
    n, t_len, a = e.shape
    trans = _transitions(transitions, a) * lam if lam > 0 else None
    first, last = _endpoint_terms(endpoints, n, t_len, a, start, goal, start_logp, goal_logp)
    unary = e.copy()
    if action_logprior is not None:
        unary += _log_weights(action_logprior, "action_logprior", n, a)[:, None, :]
    unary[:, 0] += first
    unary[:, -1] += last
    _check_feasible(unary)
    plans, scores = _viterbi(unary, trans, tol)
    fallback = np.isneginf(scores)
    if fallback.any():
        plans[fallback], scores[fallback] = _viterbi(unary[fallback], None, tol)
    return Decoding(plans, scores, fallback)


# --- a decoding choice -----------------------------------------------------------------------
# The decoders (kepp_core.catalog.decoders) own their modes, their words and their algorithm; a choice names
# its mode and its decoder decodes it with the graph's operations below.


@dataclass(frozen=True)
class DecodeChoice:
    """How a planning model's action block is decoded: endpoint ``mode`` (a mode of one decoder,
    :func:`kepp_core.catalog.mode_decoder`: the ``+dec`` rows' :data:`MARGINAL_MODES` or
    :data:`GRAPH_MODE`, :data:`JOINT_MODE` for the ``+jdec`` rows, :data:`KBEST_MODE` for the ``+kbest``
    rows), transition weight ``lam`` (λ) and ``k`` (the candidates of ``topk``, the plans of a K-best
    decoding); made, stored and found by :mod:`kepp_core.evaluation.methods.choice`, used by evaluation's
    graph-decoded rows and the planner alike. Mode :data:`GRAPH_MODE` (``graph``, λ =
    :data:`GRAPH_LAMBDA`) is the graph's own plan between the pinned endpoints, zero-shot planning's
    exactly: the reference a row with ground-truth endpoints keeps unless validation shows a clear gain.

    >>> DecodeChoice("topk", 0.3).describe("step model")
    "the exact best plan under the planning model's scores and λ = 0.3 × log graph transitions, endpoints among the step model's 3 most probable"
    >>> DecodeChoice("pinned", 0.3).describe("ground truth").rsplit(", ", 1)[1]
    "endpoints pinned to the ground truth's"
    """

    mode: str
    lam: float
    k: int = TOPK

    @property
    def decoder(self) -> Decoder:
        """The decoder whose mode it is (it decodes and describes the choice)."""
        return mode_decoder(self.mode)

    def describe(self, ends: str) -> str:
        """The choice in words (plain text: a page escapes it for its context), ``ends`` the words of
        the endpoint source it decodes with (:attr:`kepp_core.catalog.EndpointSource.words`): its decoder's."""
        return mode_decoder(self.mode, strict=False).describe(self, ends)


@dataclass(frozen=True)
class DecodeOps:
    """The graph's operations a decoder decodes with (:meth:`kepp_core.catalog.Decoder.decode`): the
    graph's ``transitions`` ``[A, A]`` (log-probabilities), the ``graph`` itself (for its own top path)
    and the plans' ``horizon``."""

    transitions: np.ndarray
    graph: ProcedureGraph | None = None
    horizon: int | None = None

    def emissions(self, block) -> np.ndarray:
        """Per-position log-probabilities of action blocks (:func:`emission_log_probs`)."""
        return emission_log_probs(block)

    def log(self, probs) -> np.ndarray:
        """``log probs``, ``-inf`` where a probability is 0."""
        with np.errstate(divide="ignore"):
            return np.log(probs)

    def candidates(self, probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` most probable first and last steps ``[N, 2, k]`` and their log-probabilities."""
        k = min(k, probs.shape[-1])
        top = np.argsort(-probs, axis=-1, kind="stable")[:, :, :k]
        return top, np.log(np.maximum(np.take_along_axis(probs, top, -1), 1e-12))

    def best(self, e, lam: float, endpoints: str = "free", start=None, goal=None, start_logp=None,
             goal_logp=None) -> Decoding:
        """The exact best plans (:func:`decode`)."""
        return decode(e, self.transitions, lam, endpoints, start, goal, start_logp, goal_logp)

    def k_best(self, e, lam: float, k: int, start_logp=None, goal_logp=None) -> KBestPlans:
        """The ``k`` best plans, best first (:func:`kepp_core.graph.kbest.k_best`)."""
        return k_best(e, self.transitions, lam, k, start_logp, goal_logp)

    def graph_paths(self, probs: np.ndarray) -> Decoding:
        """The graph's own top path between the most probable first and last steps
        (:func:`~kepp_core.graph.retrieval.top_paths`); no scores."""
        if self.graph is None or self.horizon is None:
            raise KeppError("decode mode 'graph' needs the graph (decode_block(..., graph=))")
        plans = top_paths(self.graph, probs.argmax(-1), self.horizon)
        return Decoding(plans, np.full(len(plans), np.nan), np.zeros(len(plans), dtype=bool))


def decode_block(block: np.ndarray, transitions: np.ndarray, choice: DecodeChoice,
                 probs: np.ndarray | None, graph: ProcedureGraph | None = None) -> np.ndarray:
    """Plans ``[N, T]`` from action blocks ``[N, T, A]`` decoded under ``choice`` by its decoder;
    ``probs`` ``[N, 2, A]``: the source's scores of every action as the first and the last step
    (unused with ``free``; ``pinned`` takes their argmax, ``topk`` their ``k`` best with their
    log-scores, ``dist`` all of them as probabilities: joint decoding).

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2)])
    >>> block = np.log([[[.1, .1, .8], [.8, .1, .1], [.1, .8, .1]]]) / 10   # argmax plan (c, a, b)
    >>> probs = np.array([[[.7, .2, .1], [.1, .1, .8]]])
    >>> decode_block(block, transition_log_probs(g), DecodeChoice("pinned", 1.0), probs).tolist()
    [[0, 1, 2]]

    Mode ``graph`` needs the ``graph`` whose ``transitions`` these are: the plan is its
    retriever's top path between the argmax endpoints (:func:`~kepp_core.graph.retrieval.top_paths`,
    the ``graph-gt`` / ``graph-pred`` plan: its tie-break, and where no walk connects the
    endpoints its fallback, the first step repeated, then the last); the emissions are unused:

    >>> probs = np.array([[[.1, .1, .8], [.8, .1, .1]]])                   # endpoints c ... a: no walk
    >>> decode_block(block, transition_log_probs(g), DecodeChoice("graph", GRAPH_LAMBDA), probs, g).tolist()
    [[2, 2, 0]]
    """
    ops = DecodeOps(transitions, graph, np.shape(block)[1])
    return choice.decoder.decode(ops, block, probs, choice).plans


# --- history method --------------------------------------------------------------------------
def _log_fraction(x) -> float:
    return math.log(x.numerator) - math.log(x.denominator) if x > 0 else -math.inf


def _history_best(scorer: HistoryScorer, e: np.ndarray, pairs: list[tuple[int, int, float]],
                  viterbi: list[tuple[int, ...] | None], lam: float, band: float) -> tuple[tuple[int, ...], float]:
    """The best plan of one query over its candidate set: for every endpoint pair, the
    training windows between the pair and the pair's P²KG Viterbi plan."""
    t_len = e.shape[0]
    cols = np.arange(t_len)
    cands: dict[tuple[int, ...], float] = {}
    for (s, g, bonus), best in zip(pairs, viterbi):
        paths = set(scorer.windows(s, g, t_len))
        if best is not None:
            paths.add(best)
        for p in paths:
            h = _log_fraction(scorer.exact(p))
            cands[p] = float(e[cols, p].sum()) + bonus + lam * h
    top = max(cands.values())
    plan = min(p for p, v in cands.items() if v >= top - band)
    return plan, cands[plan]


def decode_history(emissions, scorer: HistoryScorer, lam: float = 1.0, endpoints: str = "pinned", start=None,
                   goal=None, start_logp=None, goal_logp=None, tol: float | None = None) -> Decoding:
    """Exact best plans under ``Σ_t e + λ · log h(path)`` with ``h`` the history method's
    window score (``pinned`` or ``topk`` endpoints, as in :func:`decode`; ``λ = 0`` is
    :func:`decode` with ``λ = 0``). Exact over all walks by re-ranking a candidate set
    (module docstring); endpoint pairs without a walk are decoded with ``λ = 0`` and flagged.

    >>> g = ProcedureGraph.from_plans(list("abcd"), [(0, 1, 3), (0, 2, 3), (0, 2, 3)] + [(0, 1)] * 5 + [(1, 3)] * 5)
    >>> e = np.zeros((1, 3, 4))
    >>> decode(e, g, 1.0, "pinned", [0], [3]).plans.tolist()      # P²KG: (0, 1, 3) is more probable
    [[0, 1, 3]]
    >>> decode_history(e, HistoryScorer(g, prior=1), 1.0, "pinned", [0], [3]).plans.tolist()   # the videos
    [[0, 2, 3]]
    """
    e = _check_emissions(emissions)
    lam = check_weight(lam)
    if endpoints in ("free", JOINT_MODE):
        raise KeppError("decode_history needs endpoints 'pinned' or 'topk' (the window scores are per endpoint pair)")
    n, t_len, a = e.shape
    if a != scorer.graph.num_actions or t_len < 2:
        raise KeppError(f"emissions have shape {list(e.shape)} (expected [N, T >= 2, {scorer.graph.num_actions}] "
                        f"for the history scorer's graph)")
    if lam == 0:
        return decode(e, scorer.graph, 0.0, endpoints, start, goal, start_logp, goal_logp, tol)
    first, last = _endpoint_terms(endpoints, n, t_len, a, start, goal, start_logp, goal_logp)
    # one pinned Viterbi row per (query, start candidate, goal candidate)
    rows, pairs = [], []
    for q in range(n):
        ss, gs = np.flatnonzero(np.isfinite(first[q])), np.flatnonzero(np.isfinite(last[q]))
        pairs.append([(int(s), int(g), float(first[q, s] + last[q, g])) for s in ss for g in gs])
        rows.extend([q] * len(pairs[-1]))
    rows = np.asarray(rows, dtype=np.int64)
    flat = [p for ps in pairs for p in ps]
    pin = decode(e[rows], scorer.graph, lam, "pinned", [p[0] for p in flat], [p[1] for p in flat], tol=tol)
    band = _tolerance(e, transition_log_probs(scorer.graph) * lam, tol)
    plans, scores = np.empty((n, t_len), dtype=np.int64), np.empty(n)
    fallback = np.zeros(n, dtype=bool)
    k = 0
    for q in range(n):
        m = len(pairs[q])
        ok = ~pin.fallback[k:k + m]
        if ok.any():
            viterbi = [tuple(int(x) for x in pin.plans[k + i]) if ok[i] else None for i in range(m)]
            live = [i for i in range(m) if ok[i]]
            plan, scores[q] = _history_best(scorer, e[q], [pairs[q][i] for i in live],
                                            [viterbi[i] for i in live], lam, float(band[q]))
            plans[q] = plan
        else:
            fb = decode(e[q:q + 1], scorer.graph, 0.0, endpoints, *_row_endpoints(q, endpoints, start, goal,
                                                                                   start_logp, goal_logp), tol=tol)
            plans[q], scores[q], fallback[q] = fb.plans[0], fb.scores[0], True
        k += m
    return Decoding(plans, scores, fallback)


def _row_endpoints(q: int, mode: str, start, goal, start_logp, goal_logp) -> tuple:
    """The endpoint arguments of query ``q`` alone (shape ``[1, ...]``)."""
    def row(x):
        if x is None:
            return None
        arr = as_numpy(x)
        return arr[q:q + 1] if arr.ndim else arr
    return row(start), row(goal), row(start_logp), row(goal_logp)
