"""Decoders: how a graph-decoded row turns its base method's action block into a plan under the P²KG.
One object per decoder (:data:`GRAPH_DECODING`, the ``+dec`` rows; :data:`JOINT_DECODING`, the ``+jdec``
rows), each owning what the rest of the package asks about it: the endpoint modes its choice is made
among (:attr:`Decoder.modes`), the sources it can decode with (:meth:`Decoder.accepts`), the key its
choice is stored under in ``decoding.json`` (:meth:`Decoder.choice_key`), the suffix and label tail of
its rows and its words for the app (:attr:`Decoder.words`, the Plan page's note on a live plan decoded
as one of its rows). A row names its decoder (:attr:`kepp_core.catalog.MethodEntry.decoder`); nobody
asks which decoder it is.

>>> GRAPH_DECODING.modes, JOINT_DECODING.modes
(('free', 'pinned', 'topk'), ('dist',))
>>> [d.suffix for d in DECODERS.values()]
['+dec', '+jdec']
"""

from __future__ import annotations

from dataclasses import dataclass

from kepp_core.catalog.sources import EndpointSource

__all__ = ["DECODERS", "GRAPH_DECODING", "JOINT_DECODING", "JOINT_MODE", "MARGINAL_MODES", "Decoder"]

# The endpoint modes of a decoding choice (kepp_core.graph.decoding decodes them): a marginal mode
# commits to the ends first (free, pinned to the source's most probable, or among its top k); the joint
# mode weighs a source's full distributions of the first and last step with the plan.
MARGINAL_MODES = ("free", "pinned", "topk")
JOINT_MODE = "dist"


@dataclass(frozen=True, kw_only=True)
class Decoder:
    """A way of decoding a base method's action block with the graph: its ``name``, the ``suffix`` its
    rows add to their base's name and the ``tail`` to its label, the endpoint ``modes`` its choice is made
    among (and an override may fix), whether it weighs a source's full ``distributions`` of the first and
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
    keyed_by_base: bool = False

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


GRAPH_DECODING = Decoder(
    name="graph", suffix="+dec", tail=" + graph decoding", modes=MARGINAL_MODES, distributions=False,
    keyed_by_base=True,
    words="+ graph decoding (the +dec rows of kepp eval): the planning model's step probabilities decoded "
          "into the most probable plan under the P²KG's transitions.")
JOINT_DECODING = Decoder(
    name="joint", suffix="+jdec", tail=" + joint decoding", modes=(JOINT_MODE,), distributions=True,
    words="+ joint decoding (the +jdec rows): the plan and its two ends decoded together, the ends weighed "
          "with the endpoint model's (or the text tower's) distributions of â₁ and â_T.")
# Every decoder, by name.
DECODERS: dict[str, Decoder] = {d.name: d for d in (GRAPH_DECODING, JOINT_DECODING)}
