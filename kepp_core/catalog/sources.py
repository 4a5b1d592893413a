"""Endpoint sources: whose first and last step a method row plans between, or whose distributions of
them a graph-decoded row weighs its plan's ends with. One small registry, :data:`ENDPOINT_SOURCES`:
the step model's (:data:`PREDICTED`), the ground truth (:data:`TRUTH`), the endpoint model's
(:data:`ENDPOINT_MODEL`, and one source per variant of it: ``endpoint-model-pair``) and the S3D text
tower's (:data:`TEXT`: the step names scored against the clips, :mod:`kepp_core.video.grounding`).

A source is a part that acts: one class per way of having endpoints, each giving, when asked,

- on test episodes (an evaluation context, :class:`~kepp_core.evaluation.methods.base.EvalContext`):
  its endpoints (:meth:`EndpointSource.endpoints`), its probabilities of every first and last step
  (:meth:`EndpointSource.probs`) and the endpoints a KEPP planner is given (:meth:`EndpointSource.given`:
  None where the planner's own step model predicts them);
- on two clips (the live planner, :class:`~kepp_core.planner.KEPPPlanner`): its probabilities of the ends
  a decoding weighs (:meth:`EndpointSource.live_probs`) and the plan result's field that keeps them
  (:attr:`EndpointSource.result_field`);
- and its facts: the model it reads (``role``), its words and heading, whether it gives full
  distributions, needs the text tower, is the episode's own (``exact``), is predicted by the planner
  itself, and runs in the default table.

The context and the planner compute each model's numbers (the step model's, the endpoint model's, the
text tower's); the source says which of them it is. A method row names its source
(:attr:`kepp_core.catalog.MethodEntry.endpoints_from`) and everything above asks the row's source; none
asks which source it is.

>>> [s.name for s in ENDPOINT_SOURCES.values()]
['predicted', 'truth', 'endpoint-model', 'endpoint-model-pair', 'text']
>>> endpoint_source("endpoint-model-pair").role, endpoint_source(TEXT).words
(ModelRole(kind='endpoints', condition='none', R=1, structured=False, variant='pair'), 'text tower')
>>> endpoint_source(TRUTH).distributions, endpoint_source(TEXT).distributions, endpoint_source(TEXT).heading
(False, True, 'Text tower (S3D)')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kepp_core.catalog.roles import ENDPOINT_VARIANTS, ENDPOINTS, STEP, ModelRole
from kepp_core.errors import KeppError

__all__ = [
    "ENDPOINT_MODEL", "ENDPOINT_SOURCES", "PREDICTED", "TEXT", "TRUTH", "EndpointSource", "endpoint_source",
    "model_source", "StepModelSource", "TruthSource", "EndpointModelSource", "TextSource",
]

# The names of the default sources (a row's ``endpoints_from``).
PREDICTED, TRUTH, ENDPOINT_MODEL, TEXT = "predicted", "truth", "endpoint-model", "text"


@dataclass(frozen=True, kw_only=True)
class EndpointSource:
    """Whose endpoints: its ``name`` (a row's ``endpoints_from``), its ``words`` and the model it reads
    (``role``; None: the ground truth, the text tower). A subclass per way of having them says what it
    gives (the methods) and what it is (the class facts below)."""

    name: str
    words: str
    role: ModelRole | None = None

    # full distributions of the first and last step that a joint decoding weighs (mode ``dist``)
    distributions: ClassVar[bool] = False
    # it needs the S3D text tower (``kepp eval --encoder s3d:PATH``)
    text: ClassVar[bool] = False
    # the episode's own endpoints (a decoding with them starts from the graph's plan between them)
    exact: ClassVar[bool] = False
    # the KEPP planner's own step model predicts them, on test episodes and on two clips alike
    planner_predicts: ClassVar[bool] = False
    # a baseline, zero-shot or planner row with it is in the table ``kepp eval`` runs by default
    runs_by_default: ClassVar[bool] = False
    # the field of a plan result (kepp_core.planner.PlanResult) that keeps its probabilities on two clips
    result_field: ClassVar[str | None] = None

    @property
    def heading(self) -> str:
        """What a page's heading calls the endpoints it gives."""
        return self.words[0].upper() + self.words[1:]

    @property
    def endpoint_role(self) -> ModelRole | None:
        """The endpoint model it reads (the default one or a variant), or None."""
        return None

    @property
    def live(self) -> bool:
        """The KEPP planner has what it reads on two clips by itself (its step model, the models folder's
        default endpoint model): a planner may decode as a row with this source."""
        return False

    def endpoints(self, ctx):
        """Its first and last step ``[N, 2]`` of ``ctx``'s episodes."""
        return self.probs(ctx).argmax(-1)

    def probs(self, ctx):
        """Its probabilities of every first and last step ``[N, 2, A]`` of ``ctx``'s episodes (what a
        graph-decoded row weighs its plan's ends with)."""
        raise NotImplementedError

    def given(self, ctx):
        """The endpoints ``[N, 2]`` a KEPP planner plans between on ``ctx``'s episodes, None where its own
        step model predicts them."""
        return None if self.planner_predicts else self.endpoints(ctx)

    def live_probs(self, planner, obs_start, obs_goal, batch):
        """Its probabilities of every first and last step ``[n, 2, A]`` of a live query (``planner``: the KEPP
        planner's decoding, :class:`~kepp_core.planner.EndsDecoding`, which computes each model's; ``batch``
        the planner's answer :class:`~kepp_core.planner.BatchPlans` to the query)."""
        raise KeppError(f"the {self.words}'s endpoints are not known on two clips")


@dataclass(frozen=True, kw_only=True)
class StepModelSource(EndpointSource):
    """The step model's endpoints (its most probable first and last step) and its scores of every one."""

    planner_predicts: ClassVar[bool] = True
    runs_by_default: ClassVar[bool] = True
    result_field: ClassVar[str | None] = "step_probs"

    @property
    def live(self) -> bool:
        return True

    def endpoints(self, ctx):
        return ctx.step_endpoints()

    def probs(self, ctx):
        return ctx.endpoint_probs()

    def live_probs(self, planner, obs_start, obs_goal, batch):
        return batch.endpoint_probs


@dataclass(frozen=True, kw_only=True)
class TruthSource(EndpointSource):
    """The episode's own first and last step (a flawless step model), certain."""

    exact: ClassVar[bool] = True
    runs_by_default: ClassVar[bool] = True

    def endpoints(self, ctx):
        return ctx.truth_endpoints()

    def probs(self, ctx):
        return ctx.truth_probs()


@dataclass(frozen=True, kw_only=True)
class EndpointModelSource(EndpointSource):
    """The endpoint model's calibrated hierarchical distributions of the first and last step (the
    default model or a variant: its ``role``) and their most probable steps."""

    distributions: ClassVar[bool] = True
    result_field: ClassVar[str | None] = "endpoint_model_probs"

    @property
    def endpoint_role(self) -> ModelRole | None:
        return self.role

    @property
    def live(self) -> bool:
        return self.role == ENDPOINTS

    def endpoints(self, ctx):
        return ctx.endpoint_model_log_probs(role=self.role).argmax(-1)

    def probs(self, ctx):
        return ctx.endpoint_model_probs(self.role)

    def live_probs(self, planner, obs_start, obs_goal, batch):
        return planner.endpoint_model_probs(obs_start, obs_goal)


@dataclass(frozen=True, kw_only=True)
class TextSource(EndpointSource):
    """The S3D text tower's distributions of the first and last step (the step names scored against
    the clips, its temperature fitted on the training episodes) and their most probable steps."""

    distributions: ClassVar[bool] = True
    text: ClassVar[bool] = True
    result_field: ClassVar[str | None] = "text_probs"

    @property
    def heading(self) -> str:
        return super().heading + " (S3D)"

    def endpoints(self, ctx):
        return ctx.text_log_probs().argmax(-1)

    def probs(self, ctx):
        return ctx.text_probs()

    def live_probs(self, planner, obs_start, obs_goal, batch):
        return planner.text_probs(obs_start, obs_goal)


def _variant_source(variant: str) -> EndpointSource:
    return EndpointModelSource(name=f"{ENDPOINT_MODEL}-{variant}", words=f"{variant} endpoint model",
                               role=ModelRole(ENDPOINTS.kind, variant=variant))


# Every source, by name.
ENDPOINT_SOURCES: dict[str, EndpointSource] = {s.name: s for s in (
    StepModelSource(name=PREDICTED, words="step model", role=STEP),
    TruthSource(name=TRUTH, words="ground truth"),
    EndpointModelSource(name=ENDPOINT_MODEL, words="endpoint model", role=ENDPOINTS),
    *(_variant_source(v) for v in ENDPOINT_VARIANTS),
    TextSource(name=TEXT, words="text tower"),
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
    return next(s for s in ENDPOINT_SOURCES.values() if s.endpoint_role == role)
