"""LLM plan recommendations (paper Table 6, supplement C.3).

For one ``(â_1, â_T, T)``:

1. ask the planning prompt ``queries`` (3) times;
2. parse each reply into ``T`` steps; per position take the majority step (ties: the
   earliest query's step);
3. ask the model whether the voted sequence is possible (Yes/No);
4. map every voted step to the nearest dataset action (k=1, sentence-embedding cosine).

The mapped plan becomes a ``T × A`` condition row of the planning model. When the model
cannot give a plan (server down, timeouts, refusals, malformed replies, a "No" from the
check) the recommendation uses a *fallback* plan and says which and why, so an evaluation
goes on; ``on_error="raise"`` turns those cases into a KeppError instead.

>>> from kepp_core.llm.recommend import majority_vote
>>> majority_vote([["a", "b", "c"], ["a", "x", "c"], ["y", "x", "c"]])
['a', 'x', 'c']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from kepp_core.data.episodes import Episode
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.llm.client import ChatClient, LLMError
from kepp_core.llm.embedding import Embedder
from kepp_core.llm.mapping import ActionMapper
from kepp_core.llm.prompts import ReplyProblem, normalise_step, parse_steps, parse_yes_no, plan_prompt, verify_prompt

__all__ = [
    "ENDPOINT_FALLBACK", "Fallback", "LLMRecommendation", "LLMRecommender", "graph_fallback", "llm_conditions",
    "llm_recommendations", "majority_vote", "plan_condition",
]

ON_ERROR = ("fallback", "raise")
VOTE_ON = ("text", "action")


# --- fallbacks ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fallback:
    """A named plan used when the LLM gives none: ``plan(start, end, horizon) -> actions``."""

    name: str
    plan: Callable[[int, int, int], Sequence[int]]

    def __call__(self, start: int, end: int, horizon: int) -> tuple[int, ...]:
        out = tuple(int(a) for a in self.plan(start, end, horizon))
        if len(out) != horizon:
            raise KeppError(f"fallback {self.name!r} returned {len(out)} actions for a {horizon}-step plan")
        return out


def _endpoint_variation(start: int, end: int, horizon: int) -> tuple[int, ...]:
    m = horizon // 2
    return (start,) * (horizon - m) + (end,) * m


#: ``[â_1]*(T-M) + [â_T]*M`` with ``M = T // 2`` (the P²KG's own no-path variation).
ENDPOINT_FALLBACK = Fallback("endpoint-variation", _endpoint_variation)


def graph_fallback(retriever: Callable[[int, int, int], Any], name: str = "p2kg") -> Fallback:
    """The top P²KG path as the fallback; ``retriever(start, end, T)`` returns an object
    with ``.top`` (e.g. :class:`kepp_core.graph.retrieval.Retriever`) or a plan."""

    def plan(start: int, end: int, horizon: int) -> Sequence[int]:
        rec = retriever(start, end, horizon)
        return rec.top if hasattr(rec, "top") else rec

    return Fallback(name, plan)


def as_fallback(fallback: Fallback | Callable[[int, int, int], Sequence[int]]) -> Fallback:
    """A :class:`Fallback` from a Fallback or a plain ``plan(start, end, T)`` function."""
    if isinstance(fallback, Fallback):
        return fallback
    if not callable(fallback):
        raise KeppError(f"fallback {fallback!r} is not callable (expected plan(start, end, T) -> actions)")
    return Fallback(getattr(fallback, "__name__", "fallback"), fallback)


# --- the record ---------------------------------------------------------------------------------

@dataclass
class LLMRecommendation:
    """What the LLM said for one ``(start, end, horizon)`` and the plan taken from it.

    ``verified``: the model's answer to the plausibility check (``None``: not asked or no
    usable answer). ``actions`` is the plan used as the condition: ``mapped`` when the LLM
    plan is used, else the fallback's plan (``fallback`` names it, ``fallback_reason``
    says why).
    """

    start: int
    end: int
    horizon: int
    prompt: str
    replies: list[str] = field(default_factory=list)
    voted_steps: list[str] = field(default_factory=list)
    verified: bool | None = None
    verification_reply: str | None = None
    mapped: tuple[int, ...] = ()
    similarities: tuple[float, ...] = ()
    actions: tuple[int, ...] = ()
    fallback: str | None = None
    fallback_reason: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def used_fallback(self) -> bool:
        return self.fallback is not None

    @property
    def source(self) -> str:
        """``llm`` or the name of the fallback that gave ``actions``."""
        return self.fallback or "llm"

    def condition(self, num_actions: int) -> np.ndarray:
        """The ``T × A`` one-hot condition row of ``actions``."""
        return plan_condition(self.actions, num_actions)

    def to_json(self, labels: Sequence[str] | None = None) -> dict:
        """The recommendation as a JSON-ready dict."""
        out = {"start": self.start, "end": self.end, "horizon": self.horizon, "source": self.source,
               "actions": list(self.actions), "replies": self.replies, "voted_steps": self.voted_steps,
               "verified": self.verified, "verification_reply": self.verification_reply,
               "mapped": list(self.mapped), "similarities": [round(s, 4) for s in self.similarities],
               "fallback": self.fallback, "fallback_reason": self.fallback_reason, "problems": self.problems}
        if labels is not None:
            out["labels"] = [labels[a] for a in self.actions]
            out["mapped_labels"] = [labels[a] for a in self.mapped]
        return out


# --- pieces of the procedure ---------------------------------------------------------------------

def majority_vote(candidates: Sequence[Sequence[Hashable]]) -> list:
    """Per position, the most frequent value; ties go to the value of the earliest list.

    >>> majority_vote([[1, 2], [3, 4]])
    [1, 2]
    """
    if not candidates:
        return []
    width = len(candidates[0])
    if any(len(c) != width for c in candidates):
        raise KeppError("majority vote over plans of different lengths")
    out = []
    for t in range(width):
        counts: dict[Hashable, int] = {}
        for c in candidates:
            counts[c[t]] = counts.get(c[t], 0) + 1
        # dicts keep first-seen order, and max() keeps the first of equal counts
        out.append(max(counts, key=counts.__getitem__))
    return out


def plan_condition(plan: Sequence[int], num_actions: int) -> np.ndarray:
    """``T × A`` float32 one-hot of a plan (a condition row of the planning model).

    >>> plan_condition([2, 0], 3).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    plan = [int(a) for a in plan]
    bad = [a for a in plan if not 0 <= a < num_actions]
    if bad:
        raise KeppError(f"action index {bad[0]} is outside the vocabulary of {num_actions} actions")
    out = np.zeros((len(plan), num_actions), np.float32)
    out[np.arange(len(plan)), plan] = 1.0
    return out


def llm_conditions(recommendations: Sequence[LLMRecommendation], num_actions: int) -> np.ndarray:
    """``[N, T, A]`` float32 condition rows of a batch (all of one horizon)."""
    horizons = {r.horizon for r in recommendations}
    if len(horizons) > 1:
        raise KeppError(f"recommendations of different horizons {sorted(horizons)} cannot form one batch")
    if not recommendations:
        return np.zeros((0, 0, num_actions), np.float32)
    return np.stack([r.condition(num_actions) for r in recommendations])


# --- the recommender ------------------------------------------------------------------------------

class LLMRecommender:
    """Runs the procedure for ``(start, end, horizon)`` triples, remembering each result.

    ``give_up_after``: after this many triples in a row whose queries all failed in
    transport (timeouts, HTTP errors), and at once after a refused connection, the server
    is not asked again and every later triple uses the fallback, saying so.
    """

    def __init__(self, client: ChatClient, actions: Sequence[str] | Dataset,
                 mapper: ActionMapper | Embedder | str | None = None, *, queries: int = 3,
                 verify: bool = True, require_verified: bool = True, vote_on: str = "text",
                 fallback: Fallback | Callable[[int, int, int], Sequence[int]] = ENDPOINT_FALLBACK,
                 on_error: str = "fallback", give_up_after: int = 3) -> None:
        labels = list(actions.actions if isinstance(actions, Dataset) else actions)
        if queries < 1:
            raise KeppError(f"number of LLM queries {queries} must be at least 1")
        if on_error not in ON_ERROR:
            raise KeppError(f"unknown on_error {on_error!r} (expected one of {', '.join(ON_ERROR)})")
        if vote_on not in VOTE_ON:
            raise KeppError(f"unknown vote_on {vote_on!r} (expected one of {', '.join(VOTE_ON)})")
        self.client = client
        self.labels = labels
        if isinstance(mapper, ActionMapper):
            self.mapper = mapper
        else:
            self.mapper = ActionMapper(labels, "minilm" if mapper is None else mapper)
        if self.mapper.actions != labels:
            raise KeppError("the action mapper was built for a different action vocabulary")
        self.queries = queries
        self.verify = verify
        self.require_verified = require_verified
        self.vote_on = vote_on
        self.fallback = as_fallback(fallback)
        self.on_error = on_error
        self.give_up_after = give_up_after
        self.down: str | None = None  # why the server is no longer asked
        self._failed_in_row = 0
        self._done: dict[tuple[int, int, int], LLMRecommendation] = {}

    def _label(self, a: int) -> str:
        if not 0 <= a < len(self.labels):
            raise KeppError(f"action index {a} is outside the vocabulary of {len(self.labels)} actions")
        return self.labels[a]

    def __call__(self, start: int, end: int, horizon: int) -> LLMRecommendation:
        key = (int(start), int(end), int(horizon))
        if key not in self._done:
            self._done[key] = self._recommend(*key)
        return self._done[key]

    def _fail(self, rec: LLMRecommendation, kind: str, reason: str) -> LLMRecommendation:
        if self.on_error == "raise":
            raise LLMError(kind, f"LLM plan {self._label(rec.start)!r} -> {self._label(rec.end)!r} "
                                 f"(T={rec.horizon}): {reason}")
        rec.fallback = self.fallback.name
        rec.fallback_reason = reason
        rec.actions = self.fallback(rec.start, rec.end, rec.horizon)
        return rec

    def _recommend(self, start: int, end: int, horizon: int) -> LLMRecommendation:
        if horizon < 2:
            raise KeppError(f"horizon T={horizon} is too short (expected T >= 2)")
        prompt = plan_prompt(self._label(start), self._label(end), horizon)
        rec = LLMRecommendation(start, end, horizon, prompt)
        if self.down is not None:
            return self._fail(rec, "unreachable", f"LLM endpoint not asked: {self.down}")

        plans: list[list[str]] = []
        transport: list[LLMError] = []
        reply_kinds: list[str] = []
        for q in range(self.queries):
            try:
                reply = self.client.ask(prompt, sample=q)
            except LLMError as e:
                transport.append(e)
                rec.replies.append("")
                rec.problems.append(f"query {q + 1}: {e}")
                if e.kind == "unreachable":
                    self.down = str(e)
                    break
                continue
            rec.replies.append(reply)
            try:
                plans.append(parse_steps(reply, horizon))
            except ReplyProblem as p:
                reply_kinds.append(p.kind)
                rec.problems.append(f"query {q + 1}: {p}")

        if not plans:
            if transport and not reply_kinds:
                self._failed_in_row += 1
                if self.down is None and self._failed_in_row >= self.give_up_after:
                    self.down = f"{self._failed_in_row} plans in a row failed, the last with: {transport[-1]}"
                return self._fail(rec, transport[-1].kind, str(transport[-1]))
            self._failed_in_row = 0
            kind = "refusal" if reply_kinds and all(k == "refusal" for k in reply_kinds) else "malformed"
            what = "the model refused" if kind == "refusal" else "no usable plan in the replies"
            return self._fail(rec, kind, f"{what} ({'; '.join(rec.problems)})")
        self._failed_in_row = 0

        if self.vote_on == "action":
            flat = [s for p in plans for s in p]
            idx, _ = self.mapper.map(flat)
            by_query = [idx[k * horizon:(k + 1) * horizon] for k in range(len(plans))]
            voted = majority_vote(by_query)
            rec.voted_steps = [next(flat[k * horizon + t] for k in range(len(plans)) if by_query[k][t] == a)
                               for t, a in enumerate(voted)]
        else:
            keys = [[normalise_step(s) for s in p] for p in plans]
            voted_keys = majority_vote(keys)
            rec.voted_steps = [next(plans[k][t] for k in range(len(plans)) if keys[k][t] == v)
                               for t, v in enumerate(voted_keys)]
        mapped, sims = self.mapper.map(rec.voted_steps)
        rec.mapped, rec.similarities = tuple(mapped), tuple(sims)
        rec.actions = rec.mapped

        if self.verify:
            try:
                rec.verification_reply = self.client.ask(verify_prompt(rec.voted_steps), sample=0)
                rec.verified = parse_yes_no(rec.verification_reply)
                if rec.verified is None:
                    rec.problems.append(f"verification: neither yes nor no in {rec.verification_reply[:120]!r}")
            except LLMError as e:
                rec.problems.append(f"verification: {e}")
                if self.require_verified:
                    return self._fail(rec, e.kind, f"the plausibility check failed: {e}")
            if self.require_verified and rec.verified is not True:
                if rec.verified is False:
                    return self._fail(rec, "implausible", "the model judged its own plan implausible "
                                                          f"({rec.verification_reply.strip()[:60]!r})")
                return self._fail(rec, "malformed", "the plausibility check gave no yes/no answer "
                                                    f"({(rec.verification_reply or '').strip()[:60]!r})")
        return rec

    def batch(self, endpoints: Sequence[tuple[int, int]], horizon: int | Sequence[int],
              progress: bool = True) -> list[LLMRecommendation]:
        """Recommendations for many ``(start, end)`` pairs; each distinct triple is asked once."""
        endpoints = [(int(s), int(e)) for s, e in endpoints]
        if isinstance(horizon, (int, np.integer)):
            horizons = [int(horizon)] * len(endpoints)
        else:
            horizons = [int(h) for h in horizon]
        if len(horizons) != len(endpoints):
            raise KeppError(f"{len(horizons)} horizons for {len(endpoints)} endpoint pairs")
        todo = list(dict.fromkeys((s, e, h) for (s, e), h in zip(endpoints, horizons)))
        if progress and len(todo) > 1:
            todo = tqdm(todo, desc="LLM plans", unit="pair", leave=False)
        for s, e, h in todo:
            self(s, e, h)
        return [self(s, e, h) for (s, e), h in zip(endpoints, horizons)]

    def summary(self, recommendations: Sequence[LLMRecommendation]) -> dict:
        """Counts for a report: how many plans came from the LLM, how many from the fallback and why."""
        reasons: dict[str, int] = {}
        for r in recommendations:
            if r.fallback_reason:
                head = r.fallback_reason.split(": ")[0].split(" (")[0]  # ": ", not the URL's colons
                reasons[head] = reasons.get(head, 0) + 1
        n = len(recommendations)
        llm = sum(1 for r in recommendations if not r.used_fallback)
        return {"episodes": n, "llm": llm, "fallback": n - llm, "fallback_name": self.fallback.name,
                "verified": sum(1 for r in recommendations if r.verified), "fallback_reasons": reasons,
                "requests": self.client.requests, "cache_hits": self.client.cache_hits,
                "server_given_up": self.down}


def llm_recommendations(episodes: Sequence[Episode], endpoints: Sequence[tuple[int, int]] | np.ndarray | None,
                        dataset: Dataset | Sequence[str], client: ChatClient, *,
                        mapper: ActionMapper | Embedder | str | None = None,
                        fallback: Fallback | Callable[[int, int, int], Sequence[int]] = ENDPOINT_FALLBACK,
                        queries: int = 3, verify: bool = True, require_verified: bool = True,
                        vote_on: str = "text", on_error: str = "fallback",
                        progress: bool = True) -> list[LLMRecommendation]:
    """One LLM recommendation per episode, for the endpoints ``(â_1, â_T)`` (e.g. the step
    model's predictions; ``None``: the episodes' ground-truth first and last actions).

    Episodes with the same ``(â_1, â_T, T)`` share one recommendation (asked once).
    """
    if endpoints is None:
        pairs = [(ep.actions[0], ep.actions[-1]) for ep in episodes]
    else:
        pairs = [(int(p[0]), int(p[1])) for p in np.asarray(endpoints).reshape(-1, 2)] if len(endpoints) else []
        if len(pairs) != len(episodes):
            raise KeppError(f"{len(pairs)} endpoint pairs for {len(episodes)} episodes (expected one per episode)")
    recommender = LLMRecommender(client, dataset, mapper, queries=queries, verify=verify,
                                 require_verified=require_verified, vote_on=vote_on, fallback=fallback,
                                 on_error=on_error)
    return recommender.batch(pairs, [ep.horizon for ep in episodes], progress=progress)
