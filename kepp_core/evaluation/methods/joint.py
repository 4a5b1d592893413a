"""Joint decoding with the endpoint model: the ``<method>+jdec`` rows.

A ``+dec`` row commits to endpoints first (the step model's argmax, or its top ``k``).
``<method>+jdec`` takes the exact best plan under

    log p(a_1 | start) + log p(a_T | goal) + Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)

with ``p(a_1 | start)``, ``p(a_T | goal)`` the endpoint model's calibrated hierarchical
distributions over every action (:class:`~kepp_core.models.endpoints.EndpointModel`), the base
planning model's emissions and the P²KG's transitions (:func:`kepp_core.graph.decoding.decode`,
endpoint mode ``dist``). λ is chosen on the planning model's held-out training videos as for the
``+dec`` rows (:func:`~kepp_core.evaluation.methods.decoded.choose`) and stored with the models
under the row's own name.
"""

from __future__ import annotations

import numpy as np

from kepp_core.catalog import METHODS, MethodEntry
from kepp_core.evaluation.methods.base import EvalContext, Method, MethodOutput, register
from kepp_core.evaluation.methods.decoded import Decoded


class _UnderRowName(Method):
    """The base planning method under the joint row's entry: the decoding choice is chosen with
    the base's plans and stored under the row's own name (not the ``+dec`` row's)."""

    def __init__(self, entry: MethodEntry, inner: Method) -> None:
        super().__init__(entry)
        self.inner = inner

    def plan(self, ctx: EvalContext) -> MethodOutput:
        return self.inner.plan(ctx)


class JointDecoded(Decoded):
    """``<base>+jdec``: the base method's action block decoded jointly with the endpoint model's
    distributions of the first and last step (the entry's ``base``; endpoint mode ``dist``)."""

    modes = ("dist",)

    def __init__(self, entry: MethodEntry) -> None:
        super().__init__(entry)
        self.base = _UnderRowName(entry, self.source)  # plans of the source, choices under this row's name

    def probs(self, ctx: EvalContext) -> np.ndarray:
        """The endpoint model's probabilities of every first and last step ``[N, 2, A]`` (hierarchical)."""
        return np.exp(ctx.endpoint_model_log_probs(hierarchical=True, role=self.endpoint_role))


for _entry in METHODS:
    if _entry.joint:
        register(JointDecoded(_entry))
