"""The KEPP pipeline: step model → endpoints → P²KG recommendation → planning model → plan.

``KEPPPlanner.plan`` answers one query with a :class:`PlanResult`; ``plan_batch`` answers
many with the same code (``plan`` is ``plan_batch`` on a batch of one), which is what
evaluation uses. The planner is a pipeline that wires parts and calls them (as a diffusers pipeline
does): its models loaded once (:func:`load_checkpoints`, :func:`horizon_checkpoints`), its queries'
observations (:class:`ClipObservations`, which :class:`TextGraphPlanner` has too), the graph's
recommended paths (its retriever), the graph decoding with what it weighs the ends with
(:class:`EndsDecoding`: the choice's decoder decodes, :meth:`kepp_core.catalog.Decoder.decode`) and the
"why" rows of every planner's plan (:func:`why_rows`, the one place they are made).

**Graph decoding.** With a :class:`PlannerDecoding` in use (:meth:`KEPPPlanner.use_decoding`: the
choice evaluation's ``+dec`` or ``+jdec`` row made for the planning model on validation videos,
:func:`kepp_core.evaluation.methods.choice.planner_decoding`; ``kepp_core.api.load_planner`` asks
for it), ``plan`` returns the exact best plan under the planning model's per-position emissions,
λ·log P²KG transitions and the probabilities of every first and last step
(the choice's decoder, :class:`EndsDecoding`): the step model's, or for a joint choice (mode
``dist``) the planner's own endpoint model's calibrated distributions (or the S3D text tower's, given to
:meth:`KEPPPlanner.use_decoding`). A :class:`PlanResult` keeps each model's numbers under that model's
name (``step_*``, ``endpoint_model_probs``, ``text_*``); the model's own argmax plan stays in
:attr:`PlanResult.raw_plan`, and :attr:`PlanResult.why` says per step the model's
emission probability, the graph's transition probability from the previous step and the endpoint
probabilities the plan was decoded with.

>>> planner = KEPPPlanner.from_models("assets/demo", horizon=4)   # doctest: +SKIP
>>> result = planner.plan(v_start, v_goal)                              # doctest: +SKIP
>>> result.plan_labels                                                  # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from kepp_core.data.episodes import clip_window
from kepp_core.devices import chosen
from kepp_core.diffusion import ProjectedDiffusion
from kepp_core.diffusion.sampling import endpoint_distributions, sample_actions, sample_plans
from kepp_core.errors import KeppError
from kepp_core.graph.build import ProcedureGraph, load_graph
from kepp_core.graph.decoding import DecodeChoice, DecodeOps, emission_log_probs, transition_log_probs
from kepp_core.graph.retrieval import Recommendation, Retriever, aggregate, make_retriever, top_paths
from kepp_core.models.checkpoint import check_compatible, load_checkpoint
from kepp_core.catalog import (DEFAULT_M, DEFAULT_SETTING, ENDPOINT_MODEL, GRAPH_FILE, PREDICTED, STEP, TEXT, TOPK,
                               EndpointSource, ModelRole, endpoint_source, model_folder, models_dir,
                               parse_horizon_folder, plan_role)
from kepp_core.models.spec import ModelSpec
from kepp_core.video.encode import encode_video
from kepp_core.video.encoders import encoder_dim


# --- results ---------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class PlannerDecoding:
    """The graph decoding a planner uses: the ``choice`` evaluation's row ``method`` made for its
    planning model (``kepp-R1+dec``, ``kepp-R1+jdec``, ...), the file it is kept in (``kept_in``), the
    name of the endpoint source whose probabilities of every first and last step it decodes with
    (``endpoints_from``, the row's: the step model's, :data:`~kepp_core.catalog.PREDICTED`; for a joint
    choice, mode ``dist``, the endpoint model's, :data:`~kepp_core.catalog.ENDPOINT_MODEL`, or the S3D
    text tower's, :data:`~kepp_core.catalog.TEXT`; :attr:`ends` is the source, which gives the plan its
    probabilities of the ends: :meth:`~kepp_core.catalog.sources.EndpointSource.live_probs`) and, with
    an endpoint model's, that model's folder (the planner loads it: :meth:`KEPPPlanner.use_decoding`)."""

    choice: DecodeChoice
    method: str
    kept_in: str
    endpoints_from: str = PREDICTED
    endpoint_model: Path | None = None

    def __post_init__(self) -> None:
        ends = self.ends
        joint = self.choice.decoder.distributions
        if joint != ends.distributions or (ends.endpoint_role is not None) != (self.endpoint_model is not None):
            raise KeppError(f"decoding {self.method}: a joint choice (a joint decoder's mode) decodes with the endpoint "
                            f"model's or the text tower's distributions, an endpoint model and its folder go together "
                            f"(mode {self.choice.mode!r}, distributions of the {ends.words}, endpoint model "
                            f"{self.endpoint_model})")

    @property
    def ends(self) -> EndpointSource:
        """The endpoint source it decodes with (its role, its words)."""
        return endpoint_source(self.endpoints_from)

    def record(self) -> dict:
        """What a plan says it was decoded with (:attr:`PlanResult.decoding`, ``kepp plan --json``):
        the choice, the file it is kept in (``source``) and whose probabilities of the ends it weighed
        (``endpoints``, the source's words)."""
        c = self.choice
        return {"mode": c.mode, "lam": c.lam, "k": c.k, "source": self.kept_in, "endpoints": self.ends.words}


def describe_decoding(decoding: dict | None) -> str:
    """A plan's decoding (:meth:`PlannerDecoding.record`, or None) in one sentence of plain text, naming
    whose probabilities of the first and last step it decoded with (the record's ``endpoints``).

    >>> describe_decoding(None)
    "No graph decoding: the planning model's own plan (argmax per step)."
    >>> describe_decoding({"mode": "dist", "lam": 1.0, "k": 3, "endpoints": "text tower"})[:150]
    "Decoded with the graph: the exact best plan under the planning model's scores and λ = 1 × log graph transitions, endpoints weighed by the text tower's"
    """
    if not decoding:
        return "No graph decoding: the planning model's own plan (argmax per step)."
    choice = DecodeChoice(decoding["mode"], decoding["lam"], decoding.get("k", TOPK))
    ends = str(decoding.get("endpoints") or endpoint_source(PREDICTED).words)
    return f"Decoded with the graph: {choice.describe(ends)} (λ and the endpoint mode chosen on validation videos)."


@dataclass(kw_only=True)
class PlanResult:
    """One answered query, built by keyword; every field of endpoints names whose they are.

    A KEPP planner's: the step model's endpoints (the graph paths run between them), their scores and
    its probabilities of every first and last step (``step_*``), and the endpoint model's
    probabilities when the plan was decoded jointly with them (``endpoint_model_probs``). The plan
    with no trained model (:class:`TextGraphPlanner`): the S3D text tower's endpoints, scores and
    probabilities (``text_*``) and no ``step_*``. A KEPP planner decoded jointly with the text tower's
    distributions keeps them in ``text_probs``. Then graph paths, condition, plan and timings (ms)."""

    horizon: int
    R: int
    step_endpoints: tuple[int, int] | None = None  # the step model's most probable first and last step
    step_scores: tuple[float, float] | None = None  # their probabilities
    step_probs: np.ndarray | None = field(default=None, repr=False)  # [2, A] the step model's, every action
    endpoint_model_probs: np.ndarray | None = field(default=None, repr=False)  # [2, A] the endpoint model's (joint)
    text_endpoints: tuple[int, int] | None = None  # the S3D text tower's most probable first and last step
    text_scores: tuple[float, float] | None = None  # their probabilities
    text_probs: np.ndarray | None = field(default=None, repr=False)  # [2, A] the text tower's, every action
    paths: list[tuple[int, ...]]
    path_scores: list[float]
    fallback: bool
    condition: np.ndarray  # [T, A] aggregated recommendation given to the planning model
    plan: tuple[int, ...]
    timings: dict[str, float]
    actions: list[str] = field(default_factory=list, repr=False)
    raw_plan: tuple[int, ...] = ()  # the planning model's own argmax plan (``plan`` when not decoded)
    decoding: dict | None = None  # the graph decoding used (PlannerDecoding.record), None: the argmax plan
    why: list[dict] = field(default_factory=list, repr=False)  # per step: scores behind the plan (KEPPPlanner._why)
    # no plan: the graph has no path of this length between the endpoints and no model planned
    # (graph + text endpoints); ``plan`` then holds the graph's fallback variation, which is not a plan
    no_path: bool = False

    def __post_init__(self) -> None:
        if (self.step_endpoints is None) == (self.text_endpoints is None):
            raise KeppError("a plan result holds the endpoints its graph paths run between: the step model's "
                            "(step_endpoints) or the text tower's (text_endpoints), one of them")

    @property
    def plan_labels(self) -> list[str]:
        return [self.actions[a] for a in self.plan]

    @property
    def changed(self) -> list[bool]:
        """Per step, whether graph decoding changed the model's own argmax step."""
        raw = self.raw_plan or self.plan
        return [a != b for a, b in zip(self.plan, raw)]

    @property
    def path_ends(self) -> tuple[str, tuple[int, int], tuple[float, float]]:
        """Whose first and last step the graph paths run between (a catalogue constant:
        :data:`~kepp_core.catalog.PREDICTED`, the step model's ``step_*``, or
        :data:`~kepp_core.catalog.TEXT`, the text tower's ``text_*``), the pair and their probabilities."""
        if self.step_endpoints is not None:
            return PREDICTED, self.step_endpoints, self.step_scores
        return TEXT, self.text_endpoints, self.text_scores

    @property
    def decoded_ends_from(self) -> str:
        """Whose probabilities of every first and last step the plan's ends were weighed with (a catalogue
        constant): the endpoint model's or the text tower's under joint decoding, else the step model's;
        the text tower's for a plan with no trained model."""
        kept = (n for n in (ENDPOINT_MODEL, TEXT) if getattr(self, endpoint_source(n).result_field) is not None)
        return next(kept, PREDICTED)

    @property
    def decoded_ends_probs(self) -> np.ndarray | None:
        """``[2, A]``: the probabilities of every first and last step the plan's ends were weighed
        with (:attr:`decoded_ends_from`)."""
        return getattr(self, endpoint_source(self.decoded_ends_from).result_field)

    @property
    def decoding_text(self) -> str:
        """How the plan was decoded, in words (plain text: :func:`describe_decoding`)."""
        return describe_decoding(self.decoding)

    def endpoint_top(self, k: int = 5) -> dict[str, list[dict]]:
        """The ``k`` most probable first and last steps (:attr:`decoded_ends_probs`): action, label, probability."""
        probs = self.decoded_ends_probs
        if probs is None:
            return {}
        out = {}
        for name, row in zip(("first", "last"), probs):
            top = np.argsort(-row, kind="stable")[:k]
            out[name] = [{"action": int(a), "label": self.actions[a] if self.actions else None,
                          "probability": round(float(row[a]), 4)} for a in top]
        return out

    @property
    def endpoint_labels(self) -> list[str]:
        """The first and last step the graph paths run between (:attr:`path_ends`), as labels."""
        return [self.actions[a] for a in self.path_ends[1]]

    def to_json(self) -> dict:
        """The result as JSON-ready values (labels when the action names are known, timings in ms):
        ``endpoints``, ``endpoint_labels``, ``endpoint_scores``: the step model's; a plan with no
        trained model has ``text_endpoints``, ``text_endpoint_labels``, ``text_endpoint_scores`` (the text
        tower's) in their place."""
        lab = (lambda seq: [self.actions[a] for a in seq]) if self.actions else (lambda seq: None)
        source, ends, scores = self.path_ends
        keys = (("text_endpoints", "text_endpoint_labels", "text_endpoint_scores") if source == TEXT
                else ("endpoints", "endpoint_labels", "endpoint_scores"))
        return {"horizon": self.horizon, "R": self.R,
                keys[0]: list(ends), keys[1]: lab(ends), keys[2]: [round(s, 4) for s in scores],
                "paths": [{"actions": list(p), "labels": lab(p), "probability": s}
                          for p, s in zip(self.paths, self.path_scores)],
                "fallback": self.fallback, "no_path": self.no_path, "plan": list(self.plan), "plan_labels": lab(self.plan),
                "raw_plan": list(self.raw_plan or self.plan), "raw_plan_labels": lab(self.raw_plan or self.plan),
                "changed": self.changed, "decoding": self.decoding, "endpoint_top": self.endpoint_top(),
                "why": self.why, "timings_ms": {k: round(v, 2) for k, v in self.timings.items()}}


@dataclass
class BatchPlans:
    """Answers to ``N`` queries: endpoints ``[N, 2]``, recommendations, plans ``[N, T]``, timings (ms)."""

    endpoints: np.ndarray
    endpoint_scores: np.ndarray
    recommendations: list[Recommendation]
    conditions: np.ndarray
    plans: np.ndarray
    timings: dict[str, float]
    action_block: np.ndarray | None = None  # [N, T, A] the planning model's x_0 action block
    endpoint_probs: np.ndarray | None = None  # [N, 2, A] the step model's scores of every first / last action


# --- the parts -------------------------------------------------------------------------------
def load_checkpoints(step_dir: str | Path, plan_dir: str | Path, graph: ProcedureGraph | str | Path | None = None,
                     device: str | None = None) -> tuple:
    """The step and planning models of two checkpoints on ``device`` (default: the command's, else the GPU
    where there is one: :func:`kepp_core.devices.chosen`), the graph (default: the copy saved beside the
    planning model) and the two specs, checked to share one action vocabulary: what a
    :class:`KEPPPlanner` is made of, loaded once."""
    device = chosen(device)
    step, scfg = load_checkpoint(step_dir, "step", device)
    plan, pcfg = load_checkpoint(plan_dir, "plan", device)
    step_spec, plan_spec = ModelSpec.from_config(scfg, step_dir), ModelSpec.from_config(pcfg, plan_dir)
    if step_spec.vocabulary_hash != plan_spec.vocabulary_hash:
        raise KeppError(f"{step_dir} and {plan_dir} were trained on different action vocabularies")
    if not isinstance(graph, ProcedureGraph):
        graph = load_graph(Path(graph) if graph is not None else Path(plan_dir) / GRAPH_FILE)
    if graph.vocabulary_hash() != plan_spec.vocabulary_hash:
        same = " (same size, other labels)" if graph.num_actions == plan_spec.num_actions else ""
        raise KeppError(f"graph vocabulary ({graph.num_actions} actions) does not match {plan_dir} "
                        f"(trained on {plan_spec.num_actions} actions){same}")
    return step, plan, graph, step_spec, plan_spec


def horizon_checkpoints(root: str | Path, horizon: int, role: ModelRole) -> tuple[Path, Path]:
    """The folders of ``ROOT/T<horizon>/step`` and of the planning model ``role`` (a KeppError naming the
    trained horizons when ``ROOT`` has none for ``horizon``)."""
    root = Path(root)
    hdir = models_dir(root, horizon)
    if not hdir.is_dir():
        have = sorted(h for h in (parse_horizon_folder(p.name) for p in (root.iterdir() if root.is_dir() else ()))
                      if h is not None)
        raise KeppError(f"{root}: no models for horizon T={horizon} "
                        f"(trained horizons: {', '.join(map(str, have)) or 'none'})")
    return hdir / model_folder(STEP), hdir / model_folder(role)


def check_models(step_model: ProjectedDiffusion, plan_model: ProjectedDiffusion, graph: ProcedureGraph) -> None:
    """Refuse a step model, planning model and graph that cannot plan together (a KeppError saying why)."""
    if step_model.layout.kind != "step" or plan_model.layout.kind != "plan":
        raise KeppError("KEPPPlanner needs a step model and a planning model")
    if step_model.layout.horizon != plan_model.layout.horizon:
        raise KeppError(f"step model (T={step_model.layout.horizon}) and planning model "
                        f"(T={plan_model.layout.horizon}) were trained for different horizons")
    if step_model.layout.obs_dim != plan_model.layout.obs_dim:
        raise KeppError("step and planning models expect different observation sizes")
    if graph.num_actions != plan_model.layout.num_actions:
        raise KeppError(f"graph has {graph.num_actions} actions, the planning model "
                        f"{plan_model.layout.num_actions}")
    rows = [r.name for r in plan_model.layout.rows]
    if rows not in (["graph"], []):
        raise KeppError(f"planning model has condition rows {rows}; KEPPPlanner needs 'graph' or none")


class ClipObservations:
    """A planner's observations: ``M·D`` values of a query from its per-second features, or from a video
    clip encoded with ``encoder`` (the demo world's built-in one by default), for models whose ``spec``
    (:class:`~kepp_core.models.spec.ModelSpec`) says what they must be."""

    def __init__(self, spec: ModelSpec, encoder: str = "builtin") -> None:
        self.spec, self.encoder = spec, encoder

    def check_encoder(self, spec: str, note: str = "") -> None:
        """Refuse, before any video is decoded, an encoder whose features cannot make these models'
        observations (``M × D`` values): a KeppError naming both widths. An encoder whose width is
        not known without running it (a callable, a TorchScript file) passes; its first features
        are checked (:meth:`clip`). ``note`` follows the encoder's name in the error."""
        dim = encoder_dim(spec)
        if dim is not None:
            self.spec.check_feature_width(dim, f"encoder {spec!r}{note}")

    def clip(self, path: str | Path) -> np.ndarray:
        """The ``M·D`` observation of a video clip: its per-second features, the ``M`` seconds at its
        centre (edge-padded when the clip is shorter)."""
        if not Path(path).is_file():
            raise KeppError(f"{path}: video clip not found")
        feats = encode_video(path, self.encoder)
        d, obs_dim = feats.shape[1], self.spec.obs_dim
        if obs_dim % d:
            raise KeppError(f"{path}: encoder {self.encoder!r} gives {d}-D features, but the models expect "
                            f"observations of {obs_dim} values (M × D)")
        return feats[list(clip_window(0, len(feats), len(feats), obs_dim // d))].reshape(-1)

    def tensor(self, v) -> torch.Tensor:
        """Observations ``[N, M·D]`` from one query's values, ``[M, D]`` features, a clip's path or ``N`` rows."""
        if isinstance(v, (str, Path)):
            v = self.clip(v)
        obs_dim = self.spec.obs_dim
        t = torch.as_tensor(np.asarray(v, dtype=np.float32))
        t = t.reshape(1, -1) if t.ndim <= 2 and t.numel() == obs_dim else t
        if t.ndim != 2 or t.shape[1] != obs_dim:
            raise KeppError(f"observation has shape {tuple(np.shape(v))}, expected {obs_dim} values "
                            f"(M × D per-second features) or [N, {obs_dim}]")
        return t


class EndsDecoding:
    """A planner's graph decoding (:class:`PlannerDecoding`, None: the argmax plan) with what it weighs the
    ends with: the endpoint model it loads for a joint choice, the S3D text tower it is given for one with
    the text tower's distributions; and the graph's transitions, computed once."""

    def __init__(self, graph: ProcedureGraph, decoding: PlannerDecoding | None = None, text=None,
                 device: torch.device | None = None) -> None:
        self.graph, self.decoding, self.endpoint_model, self.text_endpoints = graph, decoding, None, None
        self._transitions: np.ndarray | None = None
        if decoding is not None and decoding.endpoint_model is not None:
            self.endpoint_model, _ = load_checkpoint(decoding.endpoint_model, "endpoints", device)
        if decoding is not None and decoding.ends.text:
            if text is None or list(text.texts.names) != list(graph.actions):
                raise KeppError(f"decoding {decoding.method} weighs the ends with the S3D text tower's distributions: "
                                "give its text endpoints for the graph's step names (use_decoding(decoding, text=...))")
            self.text_endpoints = text

    def transitions(self) -> np.ndarray:
        """The graph's ``log P(v | u)`` ``[A, A]`` (computed once)."""
        if self._transitions is None:
            self._transitions = transition_log_probs(self.graph)
        return self._transitions

    def endpoint_model_probs(self, obs_start, obs_goal) -> np.ndarray:
        """The endpoint model's probabilities of every first and last step ``[n, 2, A]`` of the queries."""
        return np.exp(self.endpoint_model.endpoint_log_probs(obs_start, obs_goal))

    def text_probs(self, obs_start, obs_goal) -> np.ndarray:
        """The S3D text tower's probabilities of every first and last step ``[n, 2, A]`` of the queries."""
        return np.exp(self.text_endpoints.endpoint_log_probs(obs_start, obs_goal))

    def decode(self, s, g, b: BatchPlans) -> tuple[tuple[int, ...], np.ndarray, dict[str, np.ndarray]]:
        """The plan of the query ``b`` answered, decoded under the choice by its decoder, the probabilities
        of the ends it weighed ``[1, 2, A]`` (its source's) and them under their model's field of a
        :class:`PlanResult`; the decoding's time added to ``b.timings``."""
        d = self.decoding
        if d is None:
            raise KeppError("this planner has no graph decoding choice (planner.decoding): load it with "
                            "kepp_core.api.load_planner, or plan with decode=False")
        t0 = time.perf_counter()
        ends = d.ends.live_probs(self, s, g, b)  # the decoding's source's probabilities of the ends
        ops = DecodeOps(self.transitions(), self.graph, b.action_block.shape[1])
        plan = tuple(int(x) for x in d.choice.decoder.decode(ops, b.action_block, ends, d.choice).plans[0])
        b.timings["decode"] = (time.perf_counter() - t0) * 1e3
        b.timings["total"] += b.timings["decode"]
        return plan, ends, {d.ends.result_field: ends[0]}


def why_rows(plan: tuple[int, ...], raw: tuple[int, ...], emissions: np.ndarray | None, transitions: np.ndarray,
             ends: np.ndarray, names: list[str]) -> list[dict]:
    """Per step of ``plan`` (the one place a plan's "why" rows are made, for every planner): the planning
    model's emission probability of the step and of its own argmax step ``raw`` (``emissions`` ``[T, A]``;
    None: no model planned, no scores), the graph's transition probability from the previous step
    (``transitions``: ``log P``), and for the first and last step its probability in ``ends`` ``[2, A]``
    (the step model's scores, the endpoint model's or the text tower's distributions).

    >>> why_rows((0, 1), (0, 0), None, np.log([[.5, .5], [.9, .1]]), np.eye(2), ["a", "b"])[1]["transition"]
    0.5
    """
    trans = np.exp(transitions)
    score = (lambda t, a: None) if emissions is None else (lambda t, a: round(float(emissions[t, a]), 4))
    rows = []
    for t, (a, r) in enumerate(zip(plan, raw)):
        end = ends[0, a] if t == 0 else ends[1, a] if t == len(plan) - 1 else None
        rows.append({"step": t + 1, "action": a, "label": names[a], "score": score(t, a),
                     "transition": None if t == 0 else round(float(trans[plan[t - 1], a]), 4),
                     "endpoint": None if end is None else round(float(end), 4),
                     "raw_action": r, "raw_label": names[r], "raw_score": score(t, r), "changed": a != r})
    return rows


def counted(drawn: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """The distinct plans of ``drawn`` ``[K, T]`` with their counts, most frequent first (ties: first drawn first)."""
    counts: dict[tuple[int, ...], int] = {}
    for plan in drawn.tolist():
        counts[tuple(plan)] = counts.get(tuple(plan), 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


# --- the planner -----------------------------------------------------------------------------
class KEPPPlanner:
    """Step model + P²KG + planning model for one horizon, a pipeline that wires its parts and plans by calling
    them: models loaded once (:func:`load_checkpoints`), observations (:class:`ClipObservations`), the graph's
    paths (:meth:`retriever`), its decoding (:class:`EndsDecoding`), the "why" rows (:func:`why_rows`)."""

    def __init__(self, step_model: ProjectedDiffusion, plan_model: ProjectedDiffusion, graph: ProcedureGraph,
                 step_spec: ModelSpec | dict | None = None, plan_spec: ModelSpec | dict | None = None,
                 sampler: str | None = None, sampler_steps: int | None = None, seed: int = 0) -> None:
        """``*_spec``: the checkpoints' specs (else read with :meth:`ModelSpec.from_model`); ``sampler*``: overrides."""
        check_models(step_model, plan_model, graph)
        self.step_model, self.plan_model, self.graph = step_model, plan_model, graph
        self.step_spec = step_spec if isinstance(step_spec, ModelSpec) else ModelSpec.from_model(step_model, step_spec)
        self.plan_spec = plan_spec if isinstance(plan_spec, ModelSpec) else ModelSpec.from_model(plan_model, plan_spec)
        self.sampler = sampler or self.plan_spec.sampler
        self.sampler_steps = sampler_steps or self.plan_spec.sampler_steps
        self.R, self.scorer, self.seed = self.plan_spec.R, self.plan_spec.scorer, seed  # the app may switch the scorer
        self.clips = ClipObservations(self.plan_spec)  # video-clip queries: encoder "builtin" (kepp_core.video)
        self.ends = EndsDecoding(graph)  # graph decoding of plan(): none, the argmax plan, until use_decoding
        self._retrievers: dict[int, Retriever] = {}

    step_config = property(lambda self: dict(self.step_spec.config), doc="The step model's raw ``config.json``.")
    plan_config = property(lambda self: dict(self.plan_spec.config), doc="The planning model's raw ``config.json``.")
    horizon = property(lambda self: self.plan_model.layout.horizon)
    obs_dim = property(lambda self: self.plan_model.layout.obs_dim)
    device = property(lambda self: self.plan_model.obs_mean.device, doc="Where the planner's networks are.")
    uses_graph = property(lambda self: bool(self.plan_model.layout.rows))
    decoding = property(lambda self: self.ends.decoding, doc="The graph decoding of plan() (None: the argmax plan).")
    endpoint_model = property(lambda self: self.ends.endpoint_model)
    text_endpoints = property(lambda self: self.ends.text_endpoints)
    encoder = property(lambda self: self.clips.encoder, lambda self, spec: setattr(self.clips, "encoder", spec))

    @classmethod
    def from_checkpoints(cls, step_dir, plan_dir, graph=None, device: str | None = None, **kw) -> KEPPPlanner:
        """The planner of two checkpoints (:func:`load_checkpoints`)."""
        return cls(*load_checkpoints(step_dir, plan_dir, graph, device), **kw)

    @classmethod
    def from_models(cls, root: str | Path, horizon: int, R: int = 1, condition: str = "graph",
                    structured: bool = False, *, role: ModelRole | None = None, **kw) -> KEPPPlanner:
        """Load ``ROOT/T<horizon>/step`` and the planning model ``role`` (default: the one for ``condition``,
        ``R`` and ``structured``: :func:`~kepp_core.catalog.plan_role`)."""
        return cls.from_checkpoints(*horizon_checkpoints(root, horizon, role or plan_role(condition, R, structured)),
                                    **kw)

    def use_decoding(self, decoding: PlannerDecoding | None, text=None) -> None:
        """Decode ``plan()``'s plans under ``decoding`` (None: the argmax plan), ``text``: :class:`EndsDecoding`."""
        self.ends = EndsDecoding(self.graph, decoding, text, self.device)

    def retriever(self, R: int) -> Retriever:
        """The graph's recommender of ``R`` paths (``self.scorer``), cached per ``R``."""
        if R not in self._retrievers:
            self._retrievers[R] = make_retriever(self.graph, self.scorer, R)
        return self._retrievers[R]

    def check_dataset(self, ds, where: str) -> None:
        """KeppError (naming ``where``) unless these models were trained on ``ds``'s vocabulary and features."""
        check_compatible(self.plan_config, ds, self.horizon, where=where)

    check_encoder = property(lambda self: self.clips.check_encoder, doc=":meth:`ClipObservations.check_encoder`.")

    def plan_batch(self, obs_start, obs_goal, R: int | None = None, endpoints: np.ndarray | None = None,
                   seed: int | None = None, batch_size: int = 1024) -> BatchPlans:
        """Plan for ``N`` queries ``[N, O]``: the step model's endpoints (or ``endpoints`` ``[N, 2]``, certain:
        the "flawless step model" row), the graph's ``R`` paths between them, the planning model's plans."""
        R, seed = R or self.R, self.seed if seed is None else seed
        s, g = self.clips.tensor(obs_start), self.clips.tensor(obs_goal)
        if len(s) != len(g):
            raise KeppError(f"{len(s)} start observations but {len(g)} goal observations")
        t0 = time.perf_counter()
        ends, scores, probs = given_endpoints(endpoints, self.graph.num_actions) if endpoints is not None else (
            x.numpy() for x in endpoint_distributions(self.step_model, s, g, self.sampler, self.sampler_steps, seed,
                                                      batch_size))
        t1 = time.perf_counter()
        recs = self.retriever(R).batch([tuple(e) for e in ends.tolist()], self.horizon)
        conds = np.stack([aggregate(r.paths, self.graph.num_actions) for r in recs]) if recs else \
            np.zeros((0, self.horizon, self.graph.num_actions), np.float32)
        t2 = time.perf_counter()
        cond = {"graph": torch.from_numpy(conds)} if self.uses_graph else None
        x0 = sample_actions(self.plan_model, s, g, cond, self.sampler, self.sampler_steps, batch_size, seed + 1)
        t3 = time.perf_counter()
        timings = {"endpoints": (t1 - t0) * 1e3, "graph": (t2 - t1) * 1e3, "plan": (t3 - t2) * 1e3, "total": (t3 - t0) * 1e3}
        return BatchPlans(ends, scores, recs, conds, self.plan_model.decode(x0).numpy(), timings,
                          x0[:, :, self.plan_model.layout.action_start:].numpy(), probs)

    def sample(self, v_start, v_goal, k: int, R: int | None = None, seed: int | None = None) -> list:
        """``k`` plans for one query drawn with different noise given the point plan's endpoints and condition:
        the distinct plans with their counts (:func:`counted`)."""
        if k < 1:
            raise KeppError(f"number of sampled plans {k} must be at least 1")
        seed = self.seed if seed is None else seed
        s, g = self.clips.tensor(v_start), self.clips.tensor(v_goal)
        if len(s) != 1 or len(g) != 1:
            raise KeppError("sample() answers one query")
        b = self.plan_batch(s, g, R, seed=seed)
        cond = {"graph": torch.from_numpy(b.conditions)} if self.uses_graph else None
        return counted(sample_plans(self.plan_model, s, g, cond, k, self.sampler, self.sampler_steps, seed=seed + 2)[0])

    def plan(self, v_start, v_goal, horizon: int | None = None, R: int | None = None,
             seed: int | None = None, *, decode: bool | None = None) -> PlanResult:
        """Plan ``horizon`` steps from one start to one goal observation (``M·D`` values, ``[M, D]`` features or
        a video clip's path); ``decode``: with the graph under ``self.decoding`` (default: when it is set),
        the model's own argmax plan kept in ``raw_plan`` either way."""
        if horizon is not None and horizon != self.horizon:
            raise KeppError(f"these models were trained for horizon T={self.horizon}, not T={horizon}")
        decode = self.decoding is not None if decode is None else decode
        R, s, g = R or self.R, self.clips.tensor(v_start), self.clips.tensor(v_goal)
        b = self.plan_batch(s, g, R, seed=seed)
        if len(b.plans) != 1:
            raise KeppError("plan() answers one query; use plan_batch for several")
        raw = tuple(int(x) for x in b.plans[0])
        plan, ends, kept = self.ends.decode(s, g, b) if decode else (raw, b.endpoint_probs, {})
        rec, emissions = b.recommendations[0], np.exp(emission_log_probs(b.action_block))[0]
        return PlanResult(horizon=self.horizon, R=R, step_endpoints=tuple(int(x) for x in b.endpoints[0]),
                          step_scores=tuple(float(x) for x in b.endpoint_scores[0]),
                          **{"step_probs": b.endpoint_probs[0], **kept}, paths=list(rec.paths),
                          path_scores=list(rec.scores), fallback=rec.fallback, condition=b.conditions[0], plan=plan,
                          timings=b.timings, actions=list(self.graph.actions), raw_plan=raw,
                          decoding=self.decoding.record() if decode else None,
                          why=why_rows(plan, raw, emissions, self.ends.transitions(), ends[0], self.graph.actions))


def given_endpoints(endpoints, num_actions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Given endpoints ``[N, 2]`` as a step model's answer: certain (scores 1, one-hot probabilities)."""
    ends = np.asarray(endpoints, dtype=np.int64).reshape(-1, 2)
    probs = (np.arange(num_actions)[None, None] == ends[:, :, None]).astype(np.float32)
    return ends, np.ones(ends.shape, dtype=np.float32), probs


class TextGraphPlanner:
    """Graph + text endpoints, with no trained model: the first and last step are the steps the S3D
    text tower grounds in the start and goal clips (:class:`~kepp_core.video.grounding.TextEndpoints`),
    the plan the P²KG's zero-shot path between them (:func:`~kepp_core.graph.retrieval.top_paths`:
    the ``graph-text`` row of evaluation, on two clips); its :class:`PlanResult` holds the text tower's
    endpoints and probabilities (``text_*``) where a KEPP planner's holds the step model's (``step_*``).
    Its observations are ``m`` seconds of the text tower's network's ``video_embedding`` features
    (``plan_spec``: what they must be, so :meth:`check_encoder` refuses another encoder as for a trained
    planner: its own :class:`ClipObservations`).

    >>> from kepp_core.video.grounding import StepTexts, TextEndpoints
    >>> g = ProcedureGraph.from_plans(["crack egg", "whisk", "fry"], [(0, 1, 2)])
    >>> text = TextEndpoints(StepTexts(("crack egg", "whisk", "fry"), np.eye(3)))
    >>> p = TextGraphPlanner(g, text, m=1)
    >>> p.plan([1.0, 0.0, 0.0], [0.0, 0.0, 1.0], horizon=3).plan_labels
    ['crack egg', 'whisk', 'fry']
    """

    sampler, sampler_steps, decoding, scorer = "none", 0, None, "p2kg"

    def __init__(self, graph: ProcedureGraph, text, m: int = DEFAULT_M, setting: str = DEFAULT_SETTING,
                 encoder: str | None = None) -> None:
        if text.num_actions != graph.num_actions or list(text.texts.names) != list(graph.actions):
            raise KeppError(f"the text tower grounds {text.num_actions} steps, the graph has {graph.num_actions} "
                            "actions: ground the graph's own step names")
        self.graph, self.text, self.R = graph, text, 1
        dim = text.texts.dim
        self.plan_spec = ModelSpec(kind="plan", horizon=0, condition="graph", m=m, setting=setting,
                                   num_actions=graph.num_actions, feature_dim=dim, obs_dim=m * dim, encoder=encoder)
        self.clips = ClipObservations(self.plan_spec)

    check_encoder = property(lambda self: self.clips.check_encoder, doc=":meth:`ClipObservations.check_encoder`.")
    obs_dim = property(lambda self: self.plan_spec.obs_dim)

    def plan(self, v_start, v_goal, horizon: int | None = None, R: int | None = None, seed: int | None = None,
             **_) -> PlanResult:
        """The zero-shot plan of ``horizon`` steps between the text tower's endpoints of one start and
        one goal observation (``m × 512`` values), with the top ``R`` graph paths."""
        if horizon is None or horizon < 2:
            raise KeppError(f"horizon T={horizon}: graph + text endpoints plans T >= 2 steps")
        R = R or 1
        t0 = time.perf_counter()
        probs = np.exp(self.text.endpoint_log_probs(np.asarray(v_start, np.float32).reshape(1, -1),
                                                    np.asarray(v_goal, np.float32).reshape(1, -1)))[0]
        ends = (int(probs[0].argmax()), int(probs[1].argmax()))
        t1 = time.perf_counter()
        rec = make_retriever(self.graph, self.scorer, R).batch([ends], horizon)[0]
        plan = tuple(int(a) for a in top_paths(self.graph, np.array([ends]), horizon, R)[0])
        t2 = time.perf_counter()
        why = why_rows(plan, plan, None, transition_log_probs(self.graph), probs, self.graph.actions)
        timings = {"endpoints": (t1 - t0) * 1e3, "graph": (t2 - t1) * 1e3, "plan": 0.0, "total": (t2 - t0) * 1e3}
        return PlanResult(horizon=horizon, R=R, text_endpoints=ends,
                          text_scores=(float(probs[0, ends[0]]), float(probs[1, ends[1]])), text_probs=probs,
                          paths=list(rec.paths), path_scores=list(rec.scores), fallback=rec.fallback,
                          condition=aggregate(rec.paths, self.graph.num_actions), plan=plan, timings=timings,
                          actions=list(self.graph.actions), raw_plan=plan, decoding=None, why=why,
                          no_path=rec.fallback)


__all__ = ["BatchPlans", "ClipObservations", "EndsDecoding", "KEPPPlanner", "PlanResult", "PlannerDecoding",
           "TextGraphPlanner", "check_models", "counted", "describe_decoding", "given_endpoints", "horizon_checkpoints",
           "load_checkpoints", "why_rows"]
