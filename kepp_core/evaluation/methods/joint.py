"""Joint decoding with the endpoint model: the ``<method>+jdec`` rows.

A ``+dec`` row commits to endpoints first (the step model's argmax, or its top ``k``).
``<method>+jdec`` takes the exact best plan under

    log p(a_1 | start) + log p(a_T | goal) + Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)

with ``p(a_1 | start)``, ``p(a_T | goal)`` the endpoint model's calibrated hierarchical
distributions over every action (:class:`~kepp_core.models.endpoints.EndpointModel`), the base
planning model's emissions and the P²KG's transitions (:func:`kepp_core.graph.decoding.decode`,
endpoint mode ``dist``). λ is the row's decoding choice, made on the planning model's held-out
training videos as for the ``+dec`` rows and kept under the row's own name
(:mod:`kepp_core.evaluation.methods.choice`).
"""

from __future__ import annotations

import numpy as np

from kepp_core.catalog import METHODS
from kepp_core.evaluation.methods.base import EvalContext, register
from kepp_core.evaluation.methods.decoded import Decoded


class JointDecoded(Decoded):
    """``<base>+jdec``: the base method's action block decoded jointly with the endpoint model's
    distributions of the first and last step (the entry's ``base``; endpoint mode ``dist``)."""

    def probs(self, ctx: EvalContext) -> np.ndarray:
        """The endpoint model's probabilities of every first and last step ``[N, 2, A]`` (hierarchical)."""
        return np.exp(ctx.endpoint_model_log_probs(hierarchical=True, role=self.endpoint_role))


for _entry in METHODS:
    if _entry.joint:
        register(JointDecoded(_entry))
