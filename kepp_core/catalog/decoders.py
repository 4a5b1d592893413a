"""Decoders: how a graph-decoded row turns its base method's action block into a plan under the P²KG.
One object per decoder, in one registry (:data:`DECODERS`): :data:`GRAPH_DECODING` (the ``+dec`` rows),
:data:`JOINT_DECODING` (the ``+jdec`` rows), :data:`KBEST_DECODING` (the ``+kbest`` rows). Each owns what
the rest of the package asks about it: its algorithm (:meth:`Decoder.decode`), the endpoint modes its
choice is made among (:attr:`Decoder.modes`) and the words of each (:meth:`Decoder.describe`), the
choices its validation grid tries (:meth:`Decoder.grid`), the sources it can decode with
(:meth:`Decoder.accepts`), the key its choice is stored under in ``decoding.json``
(:meth:`Decoder.choice_key`), the suffix and label tail of its rows and its words for the app
(:attr:`Decoder.words`). A row names its decoder (:attr:`kepp_core.catalog.MethodEntry.decoder`); a
stored choice names its mode, whose decoder :func:`mode_decoder` finds. Nobody else compares mode strings.

A decoder decodes with the graph's operations (:class:`kepp_core.graph.decoding.DecodeOps`: the
emissions of an action block, the exact best plans, the K best, the graph's own top path), handed to
:meth:`Decoder.decode`: the catalogue stays free of numpy, the math stays in ``kepp_core.graph``.

>>> GRAPH_DECODING.modes, JOINT_DECODING.modes, KBEST_DECODING.modes
(('free', 'pinned', 'topk'), ('dist',), ('kbest',))
>>> [d.suffix for d in DECODERS.values()]
['+dec', '+jdec', '+kbest']
>>> mode_decoder("graph") is GRAPH_DECODING, mode_decoder("dist").name
(True, 'joint')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kepp_core.catalog.sources import EndpointSource
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.io import whole_number

__all__ = ["DECODERS", "GRAPH_DECODING", "GRAPH_LAMBDA", "GRAPH_MODE", "JOINT_DECODING", "JOINT_MODE", "KBEST",
           "KBEST_DECODING", "KBEST_MODE", "MARGINAL_MODES", "TOPK", "Decoder", "GraphDecoder", "JointDecoder",
           "KBestDecoder", "all_modes", "mode_decoder", "parse_override"]

# The endpoint modes of a decoding choice: a marginal mode commits to the ends first (free, pinned to the
# source's most probable, or among its top k); the joint mode weighs a source's full distributions of the
# first and last step with the plan; the K-best mode keeps the K most probable plans.
MARGINAL_MODES = ("free", "pinned", "topk")
JOINT_MODE = "dist"
KBEST_MODE = "kbest"
GRAPH_MODE = "graph"  # a choice that is the graph's own plan between the pinned endpoints (zero-shot planning's)
TOPK = 3  # endpoint candidates of the ``topk`` mode
KBEST = 5  # plans a K-best decoding keeps (CEFITO's top-5)
GRAPH_LAMBDA = 1e4  # the graph decides; the model's emissions only break its ties
_EXACT = "the exact best plan under the planning model's scores and λ = {lam} × log graph transitions, "


@dataclass(frozen=True, kw_only=True)
class Decoder:
    """A way of decoding a base method's action block with the graph: its ``name``, the ``suffix`` its
    rows add to their base's name and the ``tail`` to its label, the endpoint ``modes`` its choice is made
    among (and an override may fix) with the words of each (``mode_words``; ``{ends}``: the source's
    words, ``{k}``: the choice's k), whether it weighs a source's full ``distributions`` of the first and
    last step (a joint decoder) or its most probable ends and scores, its one line of ``words`` for the
    app, and whether its choices are stored under the base's name (``keyed_by_base``: the first layout of
    ``decoding.json``, kept for the graph decoder so that stored files stay valid; any other decoder's
    rows are keyed by their own names, so two decoders of one base never share an entry)."""

    name: str
    suffix: str
    tail: str
    modes: tuple[str, ...]
    distributions: bool
    words: str
    mode_words: dict[str, str] = field(default_factory=dict)
    keyed_by_base: bool = False
    k: int = TOPK  # the k of its choices (topk's candidates; the K-best decoder's plans)
    keeps_plans: bool = False  # its decoding keeps several plans per episode, which the records keep
    replans: bool = True  # the live planner may decode as its rows (choice.planner_rows)

    def accepts(self, source: EndpointSource | None) -> bool:
        """Whether it can decode with ``source``'s probabilities of the ends: a joint decoder needs full
        distributions (:attr:`EndpointSource.distributions`), a marginal one a source without them."""
        return source is not None and source.distributions == self.distributions

    def choice_key(self, name: str, base: str, samples: int = 1) -> str:
        """The key of the choice of its row ``name`` (of ``base``) in a choices file; ``@K<K>`` appended
        for mean-of-K emissions.

        >>> GRAPH_DECODING.choice_key("kepp-R1+dec", "kepp-R1"), JOINT_DECODING.choice_key("kepp-R1+jdec", "kepp-R1", 4)
        ('kepp-R1', 'kepp-R1+jdec@K4')
        """
        key = base if self.keyed_by_base else name
        return key if samples == 1 else f"{key}@K{samples}"

    def grid(self, lambdas: tuple[float, ...]) -> Iterator[tuple[str, float, int]]:
        """The choices ``(mode, λ, k)`` its validation tries, in order (ties keep the earlier): every mode
        of it × ``lambdas`` (its :meth:`prior` is tried after them)."""
        for mode in self.modes:
            for lam in lambdas:
                yield mode, lam, self.k

    def prior(self, exact_ends: bool) -> tuple[str, float, int] | None:
        """The choice a row keeps unless validation shows a clear gain over it (None: none)."""
        return None

    def uses_model(self, choice) -> bool:
        """Whether decoding under ``choice`` reads the base method's action block (the graph's own plan
        does not: the base model is then not sampled)."""
        return True

    def describe(self, choice, ends: str) -> str:
        """``choice`` in words (plain text: a page escapes it for its context), ``ends`` the words of the
        endpoint source it decodes with (:attr:`kepp_core.catalog.EndpointSource.words`); a mode none of its
        own (a record's) is said as it is."""
        what = self.mode_words[choice.mode].format(k=choice.k, ends=ends) if choice.mode in self.mode_words \
            else str(choice.mode)
        lam = f"{choice.lam:g}" if isinstance(choice.lam, (int, float)) else str(choice.lam)
        return _EXACT.format(lam=lam) + what

    def decode(self, ops, block, probs, choice) -> Any:
        """Plans from action blocks ``block`` ``[N, T, A]`` under ``choice``, with ``probs`` ``[N, 2, A]``
        (the source's probabilities of every action as the first and the last step) and the graph's
        operations ``ops`` (:class:`kepp_core.graph.decoding.DecodeOps`): a
        :class:`~kepp_core.graph.decoding.Decoding`."""
        raise NotImplementedError


class GraphDecoder(Decoder):
    """The ``+dec`` rows' decoder: the ends committed to first (``free``, ``pinned`` to the source's most
    probable, ``topk``: among its ``k`` most probable, scored by their log-probabilities), then the
    exact best plan; for a row given the true ends, the graph's own top path between them
    (:data:`GRAPH_MODE`) is the prior its validation must beat clearly."""

    def prior(self, exact_ends: bool) -> tuple[str, float, int] | None:
        return (GRAPH_MODE, GRAPH_LAMBDA, self.k) if exact_ends else None

    def uses_model(self, choice) -> bool:
        return choice.mode != GRAPH_MODE

    def describe(self, choice, ends: str) -> str:
        if choice.mode == GRAPH_MODE:
            return self.mode_words[GRAPH_MODE].format(ends=ends, k=choice.k)
        return super().describe(choice, ends)

    def decode(self, ops, block, probs, choice):
        if choice.mode == GRAPH_MODE:
            return ops.graph_paths(probs)
        e = ops.emissions(block)
        if choice.mode == "free":
            return ops.best(e, choice.lam)
        if choice.mode == "pinned":
            return ops.best(e, choice.lam, "pinned", probs[:, 0].argmax(-1), probs[:, 1].argmax(-1))
        top, logp = ops.candidates(probs, choice.k)
        return ops.best(e, choice.lam, "topk", top[:, 0], top[:, 1], logp[:, 0], logp[:, 1])


class JointDecoder(Decoder):
    """The ``+jdec`` rows' decoder: the plan and its two ends decoded together (mode ``dist``), the ends
    weighed by the source's full distributions of the first and last step."""

    def decode(self, ops, block, probs, choice):
        logp = ops.log(probs)
        return ops.best(ops.emissions(block), choice.lam, JOINT_MODE, start_logp=logp[:, 0], goal_logp=logp[:, 1])


class KBestDecoder(Decoder):
    """The ``+kbest`` rows' decoder: the ``k`` most probable plans under the planning model's scores,
    λ × log graph transitions and the source's log-probabilities of every first and last step (an exact
    list Viterbi: :func:`kepp_core.graph.kbest.k_best`), most probable first; the row's plan is the
    first, the records keep all ``k`` with their scores (``paths``, ``path_scores``)."""

    def decode(self, ops, block, probs, choice):
        logp = ops.log(probs)
        return ops.k_best(ops.emissions(block), choice.lam, choice.k, logp[:, 0], logp[:, 1])


GRAPH_DECODING = GraphDecoder(
    name="graph", suffix="+dec", tail=" + graph decoding", modes=MARGINAL_MODES, distributions=False,
    keyed_by_base=True,
    mode_words={"free": "endpoints free", "pinned": "endpoints pinned to the {ends}'s",
                "topk": "endpoints among the {ends}'s {k} most probable",
                GRAPH_MODE: "the graph's own top path between the {ends}'s endpoints (the model's scores unused)"},
    words="+ graph decoding (the +dec rows of kepp eval): the planning model's step probabilities decoded "
          "into the most probable plan under the P²KG's transitions.")
JOINT_DECODING = JointDecoder(
    name="joint", suffix="+jdec", tail=" + joint decoding", modes=(JOINT_MODE,), distributions=True,
    mode_words={JOINT_MODE: "endpoints weighed by the {ends}'s probabilities of every first and last step"},
    words="+ joint decoding (the +jdec rows): the plan and its two ends decoded together, the ends weighed "
          "with the endpoint model's (or the text tower's) distributions of â₁ and â_T.")
KBEST_DECODING = KBestDecoder(
    name="kbest", suffix="+kbest", tail=" + K-best decoding", modes=(KBEST_MODE,), distributions=False, k=KBEST,
    keeps_plans=True, replans=False,
    mode_words={KBEST_MODE: "the {k} most probable plans kept, the ends weighed by the {ends}'s probabilities "
                            "of every first and last step"},
    words="+ K-best decoding (the +kbest rows): the K most probable plans under the planning model's scores and "
          "the P²KG's transitions, the ends weighed by the step model's probabilities; the plan is the first.")
# Every decoder, by name.
DECODERS: dict[str, Decoder] = {d.name: d for d in (GRAPH_DECODING, JOINT_DECODING, KBEST_DECODING)}


def mode_decoder(mode: str, strict: bool = True) -> Decoder:
    """The decoder whose choices have the endpoint mode ``mode`` (each mode is one decoder's); a mode no
    decoder has is a KeppError, or with ``strict=False`` the graph decoder's (to say a record's choice in
    words as it is)."""
    for d in DECODERS.values():
        if mode in d.mode_words:
            return d
    if not strict:
        return GRAPH_DECODING
    raise unknown_name_error("decode mode", str(mode)[:40], all_modes())


def all_modes() -> tuple[str, ...]:
    """Every mode a stored choice may have (each decoder's modes and its prior's), in registry order.

    >>> all_modes()
    ('free', 'pinned', 'topk', 'graph', 'dist', 'kbest')
    """
    return tuple(m for d in DECODERS.values() for m in d.mode_words)


def parse_override(text: str) -> tuple[str, int]:
    """A ``--decode`` value → ``(mode, k)``: a mode of the graph decoder (the one an override names), its
    ``topk`` with ``:K`` (KeppError naming the value otherwise).

    >>> parse_override("topk:5"), parse_override("pinned")
    (('topk', 5), ('pinned', 3))
    """
    modes = GRAPH_DECODING.modes
    mode, _, k = str(text).partition(":")
    if mode not in modes or (k and mode != "topk"):
        raise KeppError(f"decode mode {text!r}: expected one of {', '.join(modes)} or topk:K (K >= 1)")
    if not k:
        return mode, GRAPH_DECODING.k
    if not (whole_number(k, 6) or 0) >= 1 or k != k.strip():
        raise KeppError(f"decode mode {str(text)[:40]!r}: K must be a whole number >= 1")
    return mode, whole_number(k, 6)
