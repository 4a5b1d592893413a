"""Endpoint sources: whose first and last step a method row plans between, or whose distributions of
them a graph-decoded row weighs its plan's ends with. One small registry, :data:`ENDPOINT_SOURCES`:
the step model's (:data:`PREDICTED`), the ground truth (:data:`TRUTH`), the endpoint model's
(:data:`ENDPOINT_MODEL`, and one source per variant of it: ``endpoint-model-pair``) and the S3D text
tower's (:data:`TEXT`: the step names scored against the clips, :mod:`kepp_core.video.grounding`).

A source owns its role (the model it reads: :attr:`EndpointSource.role`), its words (what a plan,
a page, a heading or a decoding's description calls it: :attr:`EndpointSource.words`) and its distributions, computed in one place per layer from its
``kind``: :meth:`kepp_core.evaluation.methods.base.EvalContext.source_probs` on test episodes, the
planner's :meth:`kepp_core.planner.KEPPPlanner.use_decoding` on two clips. A method row names its
source (:attr:`kepp_core.catalog.MethodEntry.endpoints_from`) and everything above asks the row.

>>> [s.name for s in ENDPOINT_SOURCES.values()]
['predicted', 'truth', 'endpoint-model', 'endpoint-model-pair', 'text']
>>> endpoint_source("endpoint-model-pair").role, endpoint_source(TEXT).words
(ModelRole(kind='endpoints', condition='none', R=1, structured=False, variant='pair'), 'text tower')
>>> endpoint_source(TRUTH).distributions, endpoint_source(TEXT).distributions
(False, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from kepp_core.catalog.roles import ENDPOINT_VARIANTS, ENDPOINTS, STEP, ModelRole
from kepp_core.errors import KeppError

# The kinds of source (how its endpoints and distributions are had); the default source of each kind is
# named by its kind.
PREDICTED, TRUTH, ENDPOINT_MODEL, TEXT = "predicted", "truth", "endpoint-model", "text"


@dataclass(frozen=True, kw_only=True)
class EndpointSource:
    """Whose endpoints: its ``name`` (a row's ``endpoints_from``), its ``kind`` (one of
    :data:`PREDICTED`, :data:`TRUTH`, :data:`ENDPOINT_MODEL`, :data:`TEXT`), its ``words`` and the
    model it reads (``role``; None: the ground truth, the text tower)."""

    name: str
    kind: str
    words: str
    role: ModelRole | None = None

    @property
    def distributions(self) -> bool:
        """It gives full distributions of the first and last step that a joint decoding weighs (mode
        ``dist``): the endpoint model's and the text tower's."""
        return self.kind in (ENDPOINT_MODEL, TEXT)

    @property
    def text(self) -> bool:
        """It is the S3D text tower (a row with it needs ``kepp eval --encoder s3d:PATH``)."""
        return self.kind == TEXT


def _variant_source(variant: str) -> EndpointSource:
    return EndpointSource(name=f"{ENDPOINT_MODEL}-{variant}", kind=ENDPOINT_MODEL, words=f"{variant} endpoint model",
                          role=ModelRole(ENDPOINTS.kind, variant=variant))


# Every source, by name.
ENDPOINT_SOURCES: dict[str, EndpointSource] = {s.name: s for s in (
    EndpointSource(name=PREDICTED, kind=PREDICTED, words="step model", role=STEP),
    EndpointSource(name=TRUTH, kind=TRUTH, words="ground truth"),
    EndpointSource(name=ENDPOINT_MODEL, kind=ENDPOINT_MODEL, words="endpoint model", role=ENDPOINTS),
    *(_variant_source(v) for v in ENDPOINT_VARIANTS),
    EndpointSource(name=TEXT, kind=TEXT, words="text tower"),
)}


def endpoint_source(name: str) -> EndpointSource:
    """The source called ``name`` (KeppError naming the known ones otherwise)."""
    if name not in ENDPOINT_SOURCES:
        raise KeppError(f"unknown endpoint source {name!r} (expected one of {', '.join(ENDPOINT_SOURCES)})")
    return ENDPOINT_SOURCES[name]


def model_source(role: ModelRole) -> EndpointSource:
    """The source of the endpoint model ``role`` (the default one or a variant).

    >>> model_source(ENDPOINTS).name
    'endpoint-model'
    """
    return next(s for s in ENDPOINT_SOURCES.values() if s.kind == ENDPOINT_MODEL and s.role == role)
