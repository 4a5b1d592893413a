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
(:func:`~kepp_core.evaluation.methods.choice.emission_block`). The ``+jdec`` rows
(:mod:`kepp_core.evaluation.methods.joint`) are these rows with the endpoint model's distributions.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from kepp_core.catalog import METHODS, TRUTH, MethodEntry
from kepp_core.evaluation.methods import baselines, kepp  # noqa: F401  (the source methods register first)
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput, get_method, register
from kepp_core.evaluation.methods.choice import choose, emission_block
from kepp_core.graph.decoding import GRAPH_MODE, decode_block, transition_log_probs
from kepp_core.graph.retrieval import top_paths


class Decoded(Method):
    """``<base>+dec``: the action block of the entry's ``base`` method (its :attr:`source`) decoded
    with the graph under the row's decoding choice."""

    def __init__(self, entry: MethodEntry) -> None:
        super().__init__(entry)
        self.source = get_method(entry.base)  # the method whose plans are decoded (its outputs are shared with its own row)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        choice = choose(ctx, self)
        k = ctx.options.decode.samples
        record = {**asdict(choice), "samples": k}  # what the records say the row decoded with
        if choice.mode == GRAPH_MODE:  # the graph's own plan between the endpoints: the model is not sampled
            return MethodOutput(top_paths(ctx.graph, self.probs(ctx).argmax(-1), ctx.horizon), decoding=record)
        outputs = ctx.cache.outputs
        out = outputs.get(self.source.name) or self.source.plan(ctx)
        outputs[self.source.name] = out
        plans = decode_block(emission_block(ctx, out, k), transition_log_probs(ctx.graph), choice, self.probs(ctx))
        return MethodOutput(plans, decoding=record)

    def probs(self, ctx: EvalContext) -> np.ndarray:
        """Endpoint scores ``[N, 2, A]``: the step model's, or one-hot ground truth."""
        if self.entry.endpoints_from != TRUTH:
            return ctx.endpoint_probs()
        gt = ctx.gt[:, [0, -1]]
        return (np.arange(ctx.ds.num_actions)[None, None] == gt[:, :, None]).astype(np.float64)


for _entry in METHODS:  # the catalogue's decoded rows (the joint ones: kepp_core.evaluation.methods.joint)
    if _entry.decoded and not _entry.joint:
        register(Decoded(_entry))
