"""Graph-aware decoding of the planning methods: the ``<method>+dec`` rows (docs, How to use the graph).

A planning model decodes its plan by an argmax per position. ``<method>+dec`` instead takes
the exact best plan (:func:`kepp_core.graph.decoding.decode`, batched Viterbi) under

    Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)   (+ the endpoint terms)

with ``p_model`` from the model's ``x_0`` action block (``softmax(x_0 / 0.1)``, the
planner's own confidence scaling), ``P`` the P²KG's transition probabilities and the
endpoints ``free``, ``pinned`` to the step model's ``â_1`` / ``â_T``, or ``topk`` (its ``k``
most confident first and last actions, scored by their log-confidences). Methods given
ground-truth endpoints (``kepp-gt``) pin to those. λ and the endpoint mode are the row's decoding
choice: made on validation videos, stored and found by :mod:`kepp_core.evaluation.methods.choice`
(:func:`~kepp_core.evaluation.methods.choice.choose`), which also applies ``kepp eval --decode``.

With ``kepp eval --decode-samples K`` the emissions are the mean of ``K`` sampled action blocks
(:func:`~kepp_core.evaluation.methods.choice.emission_block`).

**Joint decoding** (the ``+jdec`` rows, the endpoint model's or a variant's distributions, and the
``+jdec-text`` rows, the S3D text tower's): the same class, for a row whose source gives full
distributions of the first and last step. A ``+dec`` row commits to endpoints first (the step model's
argmax, or its top ``k``); a joint row takes the exact best plan under

    log p(a_1 | start) + log p(a_T | goal) + Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)

with ``p(a_1 | start)``, ``p(a_T | goal)`` its source's distributions over every action (the endpoint
model's calibrated hierarchical ones: :class:`~kepp_core.models.endpoints.EndpointModel`; the text
tower's: :class:`~kepp_core.video.grounding.TextEndpoints`, the temperature fitted on the training
episodes; it needs ``kepp eval --encoder s3d:PATH`` and the network's features, as ``graph-text``
does), endpoint mode ``dist``. Whose distributions a row uses is its catalogue entry's source, asked in
one place (:func:`~kepp_core.evaluation.methods.choice.row_endpoint_probs`); which modes it chooses among
and the key its choice is kept under are its decoder's (:mod:`kepp_core.catalog.decoders`); λ is the
row's decoding choice, made on the planning model's held-out training videos.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from kepp_core.catalog import MethodEntry
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput, get_method
from kepp_core.evaluation.methods.choice import choose, emission_block, row_endpoint_probs
from kepp_core.graph.decoding import DecodeOps, transition_log_probs

__all__ = ["Decoded"]


class Decoded(Method):
    """``<base>+dec``, ``<base>+jdec``, ``<base>+jdec-text``: the action block of the entry's ``base``
    method (its :attr:`base_method`, registered before it) decoded with the graph under the row's decoding
    choice and its source's probabilities of every first and last step."""

    impl = "decoded"

    def __init__(self, entry: MethodEntry) -> None:
        super().__init__(entry)
        self.base_method = get_method(entry.base)  # the method whose plans are decoded (its outputs are shared with its own row)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        choice = choose(ctx, self)
        k = ctx.options.decode.samples
        record = {**asdict(choice), "samples": k}  # what the records say the row decoded with
        decoder = self.entry.decoder
        block = None
        if decoder.uses_model(choice):  # the graph's own plan between the endpoints does not sample the model
            outputs = ctx.cache.outputs
            out = outputs.get(self.base_method.name) or self.base_method.plan(ctx)
            outputs[self.base_method.name] = out
            block = emission_block(ctx, out, k)
        ops = DecodeOps(transition_log_probs(ctx.graph), ctx.graph, ctx.horizon)
        d = decoder.decode(ops, block, self.probs(ctx), choice)
        paths = getattr(d, "paths", None)  # a decoder that keeps several plans per episode (K-best)
        if paths is None:
            return MethodOutput(d.plans, decoding=record)
        kept = [np.isfinite(s) for s in d.path_scores]
        return MethodOutput(d.plans, decoding=record, paths=[[tuple(int(a) for a in p) for p in ps[f]]
                                                             for ps, f in zip(paths, kept)],
                            path_scores=[[float(x) for x in s[f]] for s, f in zip(d.path_scores, kept)])

    def probs(self, ctx: EvalContext) -> np.ndarray:
        """Endpoint probabilities ``[N, 2, A]`` of the row's source (the step model's, one-hot ground
        truth, or for a joint row the endpoint model's or the text tower's distributions:
        :func:`~kepp_core.evaluation.methods.choice.row_endpoint_probs`)."""
        return row_endpoint_probs(ctx, self.entry)

