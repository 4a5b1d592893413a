"""The pieces every evaluation method shares: :class:`Method`, its :class:`MethodOutput`, the
per-horizon :class:`EvalContext` (inputs, options, and the :class:`EvalCache` of step-model
endpoints and planners, computed once) and the registry the methods add themselves to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from kepp_core.catalog import ENDPOINTS, STEP, MethodEntry, ModelRole, find_method, model_folder
from kepp_core.data.feature_files import features_manifest
from kepp_core.data.records import Dataset
from kepp_core.devices import chosen
from kepp_core.diffusion.sampling import predict_endpoints, sample_action_blocks, sample_actions, sample_plans
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.evaluation.options import EvalOptions
from kepp_core.evaluation.uncertainty import UncertaintyResult
from kepp_core.graph.build import ProcedureGraph
from kepp_core.models.checkpoint import check_compatible, load_checkpoint
from kepp_core.models.spec import ModelSpec
from kepp_core.planner import KEPPPlanner
from kepp_core.training.data import EpisodeTensors, episode_tensors
from kepp_core.video.grounding import StepTexts, TextEndpoints
from kepp_core.video.s3d import S3D
from kepp_core.video.s3d_spec import S3DSpec, check_text_features

__all__ = [
    "REGISTRY", "BlockSampler", "EvalCache", "EvalContext", "Method", "MethodOutput", "get_method", "register",
    "registered",
]

if TYPE_CHECKING:  # the type of the LLM methods' recommender, for readers and type checkers
    from kepp_core.llm.recommend import LLMRecommender


NO_TEXT = "no S3D text tower given (kepp eval --encoder s3d:PATH, a protocol's encoder = \"s3d:PATH\")"


@dataclass(frozen=True)
class BlockSampler:
    """Where more ``x_0`` action blocks of a planning model come from (mean-of-K decoding): the
    model, its condition and its sampler and steps on the test episodes of one context."""

    model: torch.nn.Module
    cond: dict | None
    sampler: str
    steps: int

    def blocks(self, test: EpisodeTensors, k: int, seed: int) -> np.ndarray:
        """``k`` further action blocks ``[N, k, T, A]`` of the test episodes (batched, seed ``seed``)."""
        return sample_action_blocks(self.model, test.obs_start, test.obs_goal, self.cond, k, self.sampler, self.steps,
                                    seed=seed)


@dataclass
class MethodOutput:
    """One method's plans ``[N, T]`` on the test episodes, with timing, sampled plans and what
    the records and the ``+dec`` rows read from it."""

    plans: np.ndarray  # [N, T]
    seconds: float = 0.0
    samples: np.ndarray | None = None  # [N, K, T] sampled plans (``samples=K``)
    uncertainty: UncertaintyResult | None = None
    endpoints: np.ndarray | None = None  # [N, 2] the endpoints the plans run between (KEPP planner rows)
    paths: list | None = None  # per episode, the recommended graph paths (KEPP planner rows)
    path_scores: list | None = None  # per episode, their scores
    action_block: np.ndarray | None = None  # [N, T, A] the x_0 action block the plans were decoded from
    more_blocks: BlockSampler | None = None  # where further action blocks come from (mean-of-K decoding)
    llm_summary: dict | None = None  # LLM rows: how many plans came from the LLM and the fallback
    llm_plans: list[dict] | None = None  # LLM rows: per episode, the LLM plan and its source
    decoding: dict | None = None  # ``+dec`` rows: the decoding used (mode, λ, k, samples)


@dataclass
class EvalCache:
    """What the methods of one horizon compute once and share: the step model's endpoints, their
    scores and action scores, the loaded planners, the training tensors and each method's output."""

    step_endpoints: np.ndarray | None = None  # [N, 2], the step model's (first computed wins)
    step_scores: np.ndarray | None = None
    step_probs: np.ndarray | None = None  # [N, 2, A] the step model's first/last action scores
    endpoint_model: dict[tuple[ModelRole, bool], np.ndarray] = field(default_factory=dict)  # (role, hierarchical?) -> [N, 2, A] log p
    texts: StepTexts | None = None  # the dataset's step names embedded by the S3D text tower
    text: TextEndpoints | None = None  # the S3D text tower's endpoints, temperature fitted on training
    text_log_probs: np.ndarray | None = None  # [N, 2, A] its log p on the test episodes
    planners: dict[ModelRole, KEPPPlanner] = field(default_factory=dict)  # by planning-model role
    train: EpisodeTensors | None = None
    outputs: dict[str, MethodOutput] = field(default_factory=dict)  # method name -> output (+dec reuse their base's)


@dataclass
class EvalContext:
    """The inputs of one horizon's evaluation (dataset, test episodes, graph, models folder, the
    LLM recommender of the LLM methods), its :class:`~kepp_core.evaluation.options.EvalOptions`
    and its :class:`EvalCache`."""

    ds: Dataset
    horizon: int
    test: EpisodeTensors
    graph: ProcedureGraph
    hdir: Path | None  # ROOT/T<h>; None: no models folder
    options: EvalOptions = field(default_factory=EvalOptions)
    llm: LLMRecommender | None = None
    cache: EvalCache = field(default_factory=EvalCache)

    @property
    def gt(self) -> np.ndarray:
        return self.test.actions.numpy()

    def folder(self, role: ModelRole) -> Path:
        return self.hdir / model_folder(role)

    def load(self, role: ModelRole) -> tuple[torch.nn.Module, ModelSpec]:
        """Load the model of ``role`` on the command's device (:func:`kepp_core.devices.chosen`), checked
        against the dataset, horizon and setting."""
        folder = self.folder(role)
        model, cfg = load_checkpoint(folder, role.kind, chosen())
        horizon = None if role.kind == "task-classifier" else self.horizon
        check_compatible(cfg, self.ds, horizon, self.test.obs_dim, where=str(folder), setting=self.options.setting)
        return model, ModelSpec.from_config(cfg, folder)

    def how(self, spec: ModelSpec) -> tuple[str, int]:
        """Sampler and steps: the override, else the model's own."""
        return self.options.sampler or spec.sampler, self.options.sampler_steps or spec.sampler_steps

    def planner(self, role: ModelRole) -> KEPPPlanner:
        """The KEPP planner with the step model and the planning model of ``role``."""
        o, planners = self.options, self.cache.planners
        if role not in planners:
            step, plan = self.folder(STEP), self.folder(role)
            p = KEPPPlanner.from_checkpoints(step, plan, self.graph, sampler=o.sampler,
                                             sampler_steps=o.sampler_steps, seed=o.seed)
            check_compatible(p.plan_config, self.ds, self.horizon, self.test.obs_dim, str(plan), o.setting)
            check_compatible(p.step_config, self.ds, self.horizon, self.test.obs_dim, str(step), o.setting)
            planners[role] = p
        return planners[role]

    def step_endpoints(self) -> np.ndarray:
        """The step model's endpoints ``[N, 2]`` on the test episodes (same sampling as the planner's)."""
        if self.cache.step_endpoints is None:
            model, spec = self.load(STEP)
            ends, scores = predict_endpoints(model, self.test.obs_start, self.test.obs_goal, *self.how(spec),
                                             seed=self.options.seed)
            self.offer_endpoints(ends.numpy(), scores.numpy())
        return self.cache.step_endpoints

    def offer_endpoints(self, endpoints: np.ndarray, scores: np.ndarray) -> None:
        """Keep a method's predicted endpoints as the step model's, unless some are kept already."""
        if self.cache.step_endpoints is None:
            self.cache.step_endpoints, self.cache.step_scores = endpoints, scores

    def train_tensors(self) -> EpisodeTensors:
        if self.cache.train is None:
            o = self.options
            self.cache.train = episode_tensors(self.ds, self.horizon, "train", o.setting, o.m)
        return self.cache.train

    def draw(self, model, spec: ModelSpec, cond: dict | None) -> MethodOutput:
        """A planning model's plans ``[N, T]``, its action block ``[N, T, A]`` (what ``+dec``
        decodes), where more blocks come from (mean-of-K decoding) and, with ``samples=K``,
        ``K`` more plans per episode."""
        s, g, how, o = self.test.obs_start, self.test.obs_goal, self.how(spec), self.options
        x0 = sample_actions(model, s, g, cond, *how, seed=o.seed + 1)
        drawn = sample_plans(model, s, g, cond, o.samples, *how, seed=o.seed + 2) if o.samples else None
        block = x0[:, :, model.layout.action_start:].numpy()
        return MethodOutput(model.decode(x0).numpy(), samples=drawn, action_block=block,
                            more_blocks=BlockSampler(model, cond, *how))

    def more_blocks(self, out: MethodOutput, k: int) -> np.ndarray:
        """``k`` further ``x_0`` action blocks ``[N, k, T, A]`` of the model ``out`` came from on the
        test episodes (batched, seed ``seed + 3``): the extra samples of mean-of-K decoding."""
        if out.more_blocks is None:
            raise KeppError(f"mean-of-{k + 1} decoding needs a method that samples action blocks")
        return out.more_blocks.blocks(self.test, k, self.options.seed + 3)

    def endpoint_probs(self) -> np.ndarray:
        """The step model's action scores at the first and last position ``[N, 2, A]`` (the same
        sampling as :meth:`step_endpoints`, so their argmax is the step model's endpoints)."""
        if self.cache.step_probs is None:
            model, spec = self.load(STEP)
            x0 = sample_actions(model, self.test.obs_start, self.test.obs_goal, None, *self.how(spec),
                                seed=self.options.seed)
            self.cache.step_probs = model.action_scores(x0)[:, [0, -1]].numpy()
        return self.cache.step_probs

    def endpoint_model_log_probs(self, hierarchical: bool = True, role: ModelRole = ENDPOINTS) -> np.ndarray:
        """The endpoint model's calibrated ``log p(a_1 | start)`` and ``log p(a_T | goal)``
        ``[N, 2, A]`` on the test episodes (hierarchical over the tasks, or flat;
        :class:`~kepp_core.models.endpoints.EndpointModel`); ``role``: the default endpoint model or a
        variant (``endpoints-pair``)."""
        cached = self.cache.endpoint_model
        if (role, hierarchical) not in cached:
            model, _ = self.load(role)
            cached[role, hierarchical] = model.endpoint_log_probs(self.test.obs_start, self.test.obs_goal, hierarchical)
        return cached[role, hierarchical]

    def text_endpoints(self) -> TextEndpoints:
        """The S3D text tower's endpoint distributions for the dataset's step names
        (:class:`~kepp_core.video.grounding.TextEndpoints`), the temperature fitted on the training
        episodes (:meth:`train_tensors`; ``options.encoder``: the ``s3d:PATH`` spec; the dataset's
        features must be that network's ``video_embedding``). The names are embedded once
        (``cache.texts``, which a validation context shares)."""
        if self.cache.text is None:
            if self.options.encoder is None:
                raise KeppError(f"text-grounded endpoints need the S3D text tower: {NO_TEXT}")
            if self.cache.texts is None:
                spec = S3DSpec.parse(self.options.encoder)
                check_text_features(spec, features_manifest(self.ds)["encoder"], f"dataset {self.ds.name}")
                self.cache.texts = StepTexts.embed(S3D.load(spec.weights, spec.dictionary, spec.device),
                                                   self.ds.actions)
            train = self.train_tensors()
            text = TextEndpoints(self.cache.texts)
            if len(train.actions):
                text = text.fitted(train.obs_start, train.obs_goal, train.actions[:, 0], train.actions[:, -1])
            self.cache.text = text
        return self.cache.text

    def text_log_probs(self) -> np.ndarray:
        """The text tower's ``log p(a_1 | start)`` and ``log p(a_T | goal)`` ``[N, 2, A]`` on the test episodes."""
        if self.cache.text_log_probs is None:
            self.cache.text_log_probs = self.text_endpoints().endpoint_log_probs(self.test.obs_start,
                                                                                 self.test.obs_goal)
        return self.cache.text_log_probs

    def truth_endpoints(self) -> np.ndarray:
        """The test episodes' own first and last step ``[N, 2]``."""
        return self.gt[:, [0, -1]]

    def truth_probs(self) -> np.ndarray:
        """The test episodes' own first and last step as certain probabilities ``[N, 2, A]`` (one-hot)."""
        return (np.arange(self.ds.num_actions)[None, None] == self.truth_endpoints()[:, :, None]).astype(np.float64)

    def endpoint_model_probs(self, role: ModelRole = ENDPOINTS) -> np.ndarray:
        """The endpoint model's (``role``: the default one or a variant) calibrated hierarchical
        probabilities of every first and last step ``[N, 2, A]`` (:meth:`endpoint_model_log_probs`)."""
        return np.exp(self.endpoint_model_log_probs(hierarchical=True, role=role))

    def text_probs(self) -> np.ndarray:
        """The text tower's probabilities of every first and last step ``[N, 2, A]`` (:meth:`text_log_probs`)."""
        return np.exp(self.text_log_probs())

    def step_accuracy(self) -> dict[str, float] | None:
        """Accuracy (%) of the step model's first and last action (``first_acc``, ``last_acc``) when a
        method used it, of each endpoint model's most probable (hierarchical) first and last action
        (``ce_first_acc``, ``ce_last_acc``; a variant's: :func:`endpoint_accuracy_key`) and of the S3D
        text tower's (``text_first_acc``, ``text_last_acc``) when a method used them; None when none."""
        out, gt = {}, self.gt
        ends = self.cache.step_endpoints
        if ends is not None:
            out.update(first_acc=float((ends[:, 0] == gt[:, 0]).mean() * 100),
                       last_acc=float((ends[:, 1] == gt[:, -1]).mean() * 100))
        for (role, hierarchical), log_p in self.cache.endpoint_model.items():
            if hierarchical:
                best, key = log_p.argmax(-1), endpoint_accuracy_key(role)
                out.update({f"{key}_first_acc": float((best[:, 0] == gt[:, 0]).mean() * 100),
                            f"{key}_last_acc": float((best[:, 1] == gt[:, -1]).mean() * 100)})
        if self.cache.text_log_probs is not None:
            best = self.cache.text_log_probs.argmax(-1)
            out.update(text_first_acc=float((best[:, 0] == gt[:, 0]).mean() * 100),
                       text_last_acc=float((best[:, 1] == gt[:, -1]).mean() * 100))
        return out or None


def endpoint_accuracy_key(role: ModelRole) -> str:
    """The prefix of an endpoint model's accuracy keys in a horizon's rows: ``ce`` (``ce_first_acc``,
    ``ce_last_acc``) for the default one, ``ce_<variant>`` for a variant (``ce_pair_first_acc``).

    >>> endpoint_accuracy_key(ENDPOINTS), endpoint_accuracy_key(ModelRole("endpoints", variant="pair"))
    ('ce', 'ce_pair')
    """
    return "ce" + (f"_{role.variant}" if role.variant else "")


class Method:
    """One row of the evaluation table: ``plan(context)`` answers every test episode of a horizon.

    A subclass is one implementation, named once (``impl``, what a catalogue entry's ``impl`` names:
    :data:`kepp_core.evaluation.methods.IMPLEMENTATIONS`), and says whether it can draw ``K`` plans per
    episode (``sampled``). An instance is one row: its name, label and required models come from its
    catalogue entry (:class:`kepp_core.catalog.MethodEntry`): ``requires``, the model roles it loads
    (``ROOT/T<h>/<folder>``); ``needs_llm``: it needs an LLM endpoint (not run by default);
    ``default``: run when no methods are named.
    """

    impl = ""
    sampled = False

    def __init__(self, entry: MethodEntry) -> None:
        if entry.impl != self.impl:
            raise KeppError(f"method {entry.name!r} is implemented by {entry.impl!r}, not by {type(self).__name__} "
                            f"({self.impl!r})")
        self.entry = entry

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def label(self) -> str:
        return self.entry.label

    @property
    def requires(self) -> tuple[ModelRole, ...]:
        return self.entry.roles

    @property
    def needs_llm(self) -> bool:
        return self.entry.llm

    @property
    def default(self) -> bool:
        return self.entry.default

    def plan(self, ctx: EvalContext) -> MethodOutput:
        """Plans for ``ctx.test`` (``samples`` set when ``ctx.options.samples`` and the method is sampled)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


REGISTRY: dict[str, Method] = {}  # name -> method, in registration order (the catalogue's row order)


def register(method: Method) -> Method:
    """Add a method to the registry (its name must be new, its entry the catalogue's)."""
    if find_method(method.name) is not method.entry:
        raise KeppError(f"evaluation method {method.name!r} has no entry in the catalogue (kepp_core.catalog)")
    if method.name in REGISTRY:
        raise KeppError(f"evaluation method {method.name!r} is registered twice")
    REGISTRY[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The registered method called ``name`` (KeppError with the closest names otherwise)."""
    if name not in REGISTRY:
        raise unknown_name_error("method", name, REGISTRY)
    return REGISTRY[name]


@contextmanager
def registered(method: Method) -> Iterator[Method]:
    """``method`` in the registry for the duration of a ``with`` block (tests add a throw-away
    method this way, its entry added with :func:`kepp_core.catalog.extra_method`)."""
    register(method)
    try:
        yield method
    finally:
        del REGISTRY[method.name]
