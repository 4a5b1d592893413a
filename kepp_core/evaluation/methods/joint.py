"""Joint decoding with distributions of the first and last step: the ``<method>+jdec`` rows (the
endpoint model's) and the ``<method>+jdec-text`` rows (the S3D text tower's).

A ``+dec`` row commits to endpoints first (the step model's argmax, or its top ``k``).
``<method>+jdec`` takes the exact best plan under

    log p(a_1 | start) + log p(a_T | goal) + Σ_t log p_model(a_t | t) + λ · Σ_t log P(a_t+1 | a_t)

with ``p(a_1 | start)``, ``p(a_T | goal)`` the endpoint model's calibrated hierarchical
distributions over every action (:class:`~kepp_core.models.endpoints.EndpointModel`), the base
planning model's emissions and the P²KG's transitions (:func:`kepp_core.graph.decoding.decode`,
endpoint mode ``dist``). ``<method>+jdec-text`` does the same with the text tower's distributions
(:class:`~kepp_core.video.grounding.TextEndpoints`: the step names scored against the start and goal
clips, the temperature fitted on the training episodes; it needs ``kepp eval --encoder s3d:PATH`` and
the network's features, as ``graph-text`` does). Whose distributions a row uses is its catalogue
entry's ``endpoints_from``, read in one place
(:func:`~kepp_core.evaluation.methods.choice.row_endpoint_probs`). λ is the row's decoding choice,
made on the planning model's held-out training videos as for the ``+dec`` rows and kept under the
row's own name (:mod:`kepp_core.evaluation.methods.choice`).
"""

from __future__ import annotations

from kepp_core.catalog import METHODS
from kepp_core.evaluation.methods.base import register
from kepp_core.evaluation.methods.decoded import Decoded


class JointDecoded(Decoded):
    """``<base>+jdec`` / ``<base>+jdec-text``: the base method's action block decoded jointly with the
    endpoint model's or the text tower's distributions of the first and last step (the entry's
    ``base`` and ``endpoints_from``; endpoint mode ``dist``)."""


for _entry in METHODS:
    if _entry.joint:
        register(JointDecoded(_entry))
