"""The pieces every evaluation method shares: :class:`Method`, its :class:`MethodOutput`, the
per-horizon :class:`EvalContext` (test tensors, graph, step-model endpoints and planners,
loaded once) and the registry the methods add themselves to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from kepp_core.data.records import Dataset
from kepp_core.diffusion.sampling import predict_endpoints, sample_action_blocks, sample_actions, sample_plans
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.evaluation.labels import METHOD_LABELS
from kepp_core.evaluation.uncertainty import UncertaintyResult
from kepp_core.graph.build import ProcedureGraph
from kepp_core.models.checkpoint import check_compatible, load_checkpoint
from kepp_core.models.spec import ModelRole, ModelSpec, model_folder
from kepp_core.planner import KEPPPlanner
from kepp_core.training.data import EpisodeTensors, episode_tensors

STEP = ModelRole("step")


@dataclass
class MethodOutput:
    """One method's plans ``[N, T]`` on the test episodes, with timing, extras and sampled plans."""

    plans: np.ndarray  # [N, T]
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)  # per-episode extras (endpoints, paths) for the records
    samples: np.ndarray | None = None  # [N, K, T] sampled plans (``samples=K``)
    uncertainty: UncertaintyResult | None = None


@dataclass
class EvalContext:
    """What the methods of one horizon share, each piece computed at most once."""

    ds: Dataset
    horizon: int
    setting: str
    test: EpisodeTensors
    graph: ProcedureGraph
    hdir: Path | None  # ROOT/T<h>; None: no models folder
    m: int = 3
    sampler: str | None = None  # overrides the models' own sampler
    sampler_steps: int | None = None
    seed: int = 0
    samples: int = 0  # K plans per episode from the sampled methods (0: none)
    llm: object = None  # the LLMRecommender of the LLM methods
    step_endpoints: np.ndarray | None = None  # [N, 2], the step model's (first computed wins)
    step_scores: np.ndarray | None = None
    planners: dict[ModelRole, KEPPPlanner] = field(default_factory=dict)  # by planning-model role
    train: EpisodeTensors | None = None
    decode: object = None  # a DecodeOverride (``--decode`` / ``--decode-weight``) for the ``+dec`` methods
    memo: dict = field(default_factory=dict)  # method name -> MethodOutput (the +dec methods reuse their base's)
    step_probs: np.ndarray | None = None  # [N, 2, A] the step model's first/last action scores

    @property
    def gt(self) -> np.ndarray:
        return self.test.actions.numpy()

    def folder(self, role: ModelRole) -> Path:
        return self.hdir / model_folder(role)

    def load(self, role: ModelRole) -> tuple[torch.nn.Module, ModelSpec]:
        """Load the model of ``role``, checked against the dataset, horizon and setting."""
        folder = self.folder(role)
        model, cfg = load_checkpoint(folder, role.kind)
        horizon = None if role.kind == "task-classifier" else self.horizon
        check_compatible(cfg, self.ds, horizon, self.test.obs_dim, where=str(folder), setting=self.setting)
        return model, ModelSpec.from_config(cfg, folder)

    def how(self, spec: ModelSpec) -> tuple[str, int]:
        """Sampler and steps: the override, else the model's own."""
        return self.sampler or spec.sampler, self.sampler_steps or spec.sampler_steps

    def planner(self, R: int, role: ModelRole | None = None) -> KEPPPlanner:
        """The KEPP planner with the planning model trained with ``R`` paths (or of ``role``)."""
        role = role or ModelRole("plan", "graph", R)
        if role not in self.planners:
            step, plan = self.folder(STEP), self.folder(role)
            p = KEPPPlanner.from_checkpoints(step, plan, self.graph, sampler=self.sampler,
                                             sampler_steps=self.sampler_steps, seed=self.seed)
            check_compatible(p.plan_config, self.ds, self.horizon, self.test.obs_dim, str(plan), self.setting)
            check_compatible(p.step_config, self.ds, self.horizon, self.test.obs_dim, str(step), self.setting)
            self.planners[role] = p
        return self.planners[role]

    def endpoints(self) -> np.ndarray:
        """The step model's endpoints ``[N, 2]`` on the test episodes (same sampling as the planner's)."""
        if self.step_endpoints is None:
            model, spec = self.load(STEP)
            ends, scores = predict_endpoints(model, self.test.obs_start, self.test.obs_goal, *self.how(spec),
                                             seed=self.seed)
            self.offer_endpoints(ends.numpy(), scores.numpy())
        return self.step_endpoints

    def offer_endpoints(self, endpoints: np.ndarray, scores: np.ndarray) -> None:
        """Keep a method's predicted endpoints as the step model's, unless some are kept already."""
        if self.step_endpoints is None:
            self.step_endpoints, self.step_scores = endpoints, scores

    def train_tensors(self) -> EpisodeTensors:
        if self.train is None:
            self.train = episode_tensors(self.ds, self.horizon, "train", self.setting, self.m)
        return self.train

    def draw(self, model, spec: ModelSpec, cond: dict | None) -> MethodOutput:
        """A planning model's plans ``[N, T]``, its action block ``extra["action_block"]``
        ``[N, T, A]`` (what ``+dec`` decodes), ``extra["more_blocks"]`` (``k`` → ``k`` more
        sampled blocks ``[N, k, T, A]``: mean-of-K decoding) and, with ``samples=K``, ``K`` more
        plans per episode."""
        s, g, how = self.test.obs_start, self.test.obs_goal, self.how(spec)
        x0 = sample_actions(model, s, g, cond, *how, seed=self.seed + 1)
        drawn = sample_plans(model, s, g, cond, self.samples, *how, seed=self.seed + 2) if self.samples else None
        block = x0[:, :, model.layout.action_start:].numpy()
        return MethodOutput(model.decode(x0).numpy(), extra={"action_block": block,
                                                             "more_blocks": self.block_source(model, cond, how)},
                            samples=drawn)

    def block_source(self, model, cond: dict | None, how: tuple[str, int]):
        """``k`` → ``k`` further ``x_0`` action blocks ``[N, k, T, A]`` of ``model`` on the test
        episodes (batched, seed ``seed + 3``): the extra samples of mean-of-K decoding."""
        s, g = self.test.obs_start, self.test.obs_goal
        return lambda k: sample_action_blocks(model, s, g, cond, k, *how, seed=self.seed + 3)

    def endpoint_probs(self) -> np.ndarray:
        """The step model's action scores at the first and last position ``[N, 2, A]`` (the same
        sampling as :meth:`endpoints`, so their argmax is the step model's endpoints)."""
        if self.step_probs is None:
            model, spec = self.load(STEP)
            x0 = sample_actions(model, self.test.obs_start, self.test.obs_goal, None, *self.how(spec),
                                seed=self.seed)
            self.step_probs = model.action_scores(x0)[:, [0, -1]].numpy()
        return self.step_probs

    def step_accuracy(self) -> dict[str, float] | None:
        """Accuracy (%) of the step model's first and last action, when a method used it."""
        if self.step_endpoints is None:
            return None
        gt = self.gt
        return {"first_acc": float((self.step_endpoints[:, 0] == gt[:, 0]).mean() * 100),
                "last_acc": float((self.step_endpoints[:, 1] == gt[:, -1]).mean() * 100)}


class Method:
    """One row of the evaluation table: ``plan(context)`` answers every test episode of a horizon.

    ``requires``: the model roles it loads (``ROOT/T<h>/<folder>``); ``sampled``: it can draw
    ``K`` plans per episode; ``needs_llm``: it needs an LLM endpoint (not run by default);
    ``default``: run when no methods are named (the ``+dec`` and ``-struct`` rows are not).
    """

    name: str = ""
    requires: tuple[ModelRole, ...] = ()
    sampled: bool = False
    needs_llm: bool = False
    default: bool = True  # run by ``kepp eval`` when no --methods are given

    @property
    def label(self) -> str:
        """The readable name (:data:`~kepp_core.evaluation.labels.METHOD_LABELS`, which the app reads
        without loading the methods; the name itself for a method not listed there)."""
        return METHOD_LABELS.get(self.name, self.name)

    def plan(self, ctx: EvalContext) -> MethodOutput:
        """Plans for ``ctx.test`` (``samples`` set when ``ctx.samples`` and the method is sampled)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


REGISTRY: dict[str, Method] = {}  # name -> method, in registration order (the table's row order)


def register(method: Method) -> Method:
    """Add a method to the registry (its name must be new)."""
    if method.name in REGISTRY:
        raise KeppError(f"evaluation method {method.name!r} is registered twice")
    REGISTRY[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The registered method called ``name`` (KeppError with the closest names otherwise)."""
    if name not in REGISTRY:
        raise unknown_name_error("method", name, REGISTRY)
    return REGISTRY[name]
