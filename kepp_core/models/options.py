"""Every model's options, declared once with their ranges (torch-free: a models folder is read
without torch).

**The networks' options** are msgspec Structs: :class:`DiffusionOptions` (the diffusion network's
steps, width and width multipliers), :class:`ClassifierNet` (the task classifier) and
:class:`EndpointNet` (the endpoint model: its architecture, sizes and each head's temperature). A
network is built from its Struct (``TaskClassifier(**options)`` converts them: a size out of its range
is refused), its ``config()`` is the Struct's fields, and a checkpoint config's ``model`` table is read
with the same Struct (:mod:`kepp_core.models.folders`).

**The training options** (:class:`TrainConfig`): every option's name, type, range and default, which
model kinds read it (``readers``) and, for those the command line has a flag for, the flag and its help
(``kepp train``'s flags, the run lists' arguments and ``--set``'s keys are all derived from it:
:func:`train_flags`, :func:`readers`). The diffusion network's options are the same types as
:class:`DiffusionOptions`'s, with its defaults. A value out of range is refused when a config is made
(:func:`kepp_core.training.config.apply_overrides`) or read from a checkpoint; presets and the rules
that span options are in :mod:`kepp_core.training.config`.

>>> TrainConfig.from_dict({"lr": 1e-3, "mults": [1, 2], "colour": "blue"}).mults
(1, 2)
>>> readers("endpoint_arch"), readers("warmup")
(('endpoints',), ('step', 'plan'))
>>> [f.name for f in train_flags("plan") if readers(f.name) == ("plan",)]
['condition', 'R', 'recommend', 'gt_augment', 'endpoint_folds', 'structured_weight', 'structured_learn_scale']
"""

from __future__ import annotations

from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from typing import Annotated, Literal

from kepp_core.catalog import (DEFAULT_M, DEFAULT_SETTING, ENDPOINT_ARCHS, ENDPOINT_HEADS, KINDS, MAX_HORIZON, MAX_SEED,
                               PLAN_CONDITIONS, SAMPLERS, SETTINGS)
from kepp_core.schema import Meta, Positive, Struct

# --- ranges ---------------------------------------------------------------------------------------------------
# Upper bounds that keep a typo from allocating terabytes (a U-Net of width 4096 is already huge).
MAX_STEPS = 10**9  # optimisation steps, intervals between logs and validations
MAX_EPOCHS = 100_000
Horizon = Annotated[int, Meta(ge=2, le=MAX_HORIZON)]
Seconds = Annotated[int, Meta(ge=1, le=64)]  # M: seconds per observation
DiffusionSteps = Annotated[int, Meta(ge=1, le=100_000)]
Width = Annotated[int, Meta(ge=1, le=4096)]  # a network's width (U-Net base width, hidden layers)
Mults = Annotated[tuple[Annotated[int, Meta(ge=1, le=16)], ...], Meta(min_length=1, max_length=6)]
Steps = Annotated[int, Meta(ge=1, le=MAX_STEPS)]
Steps0 = Annotated[int, Meta(ge=0, le=MAX_STEPS)]  # 0 allowed (no warm-up, never stop early)
Rate = Annotated[float, Meta(gt=0, le=1e308)]  # finite and positive
Weight = Annotated[float, Meta(ge=0, le=1e308)]  # finite and not negative
Decay = Annotated[list[tuple[Annotated[int, Meta(ge=0, le=MAX_STEPS)], Annotated[float, Meta(gt=0, le=1e308)]]],
                  Meta(max_length=100)]
Fraction = Annotated[float, Meta(ge=0, lt=1)]  # [0, 1)
Epochs = Annotated[int, Meta(ge=1, le=MAX_EPOCHS)]
Epochs0 = Annotated[int, Meta(ge=0, le=MAX_EPOCHS)]  # 0: another option's epochs
Folds = Annotated[int, Meta(ge=0, le=1000)]
Seed = Annotated[int, Meta(ge=0, le=MAX_SEED)]
Paths = Annotated[int, Meta(ge=1, le=1000)]  # R: graph paths of the condition
Name = Annotated[str, Meta(min_length=1, max_length=200)]
Temperature = Annotated[float, Meta(gt=0, le=1e308)]
WINDOWS = ("memory", "mapped")  # where training reads observation windows from
# Defaults of the options a checkpoint's config records (and a config that does not record one is read with).
DEFAULT_HIDDEN = 256  # the task classifier's and the endpoint model's hidden width
DEFAULT_R = 1
DEFAULT_SCORER = "p2kg"
DEFAULT_SAMPLER = "ddpm"
DEFAULT_SAMPLER_STEPS = 10  # DDIM steps; a DDPM sampler runs every diffusion step


# --- the networks' options --------------------------------------------------------------------------------------
class DiffusionOptions(Struct, kw_only=True):
    """The diffusion network's options (:class:`kepp_core.diffusion.ProjectedDiffusion`): diffusion
    steps, the U-Net's base width and its width multipliers (one per level)."""

    n_steps: DiffusionSteps = 200
    dim: Width = 128
    mults: Mults = (1, 2, 4)


class ClassifierNet(Struct):
    """The task classifier's network (:class:`kepp_core.models.classifier.TaskClassifier`): a
    checkpoint's ``model`` table."""

    obs_dim: Positive
    n_tasks: Positive
    hidden: Width = DEFAULT_HIDDEN


class EndpointNet(Struct, kw_only=True):
    """The endpoint model's network (:mod:`kepp_core.models.endpoints`): its architecture (``arch``;
    None: written before there were two, the ``pair`` model), the classifier's sizes, the actions and
    each head's calibration temperature (fields in the order its config writes them)."""

    arch: Literal[ENDPOINT_ARCHS] | None = None
    obs_dim: Positive
    n_tasks: Positive
    num_actions: Positive
    hidden: Width = DEFAULT_HIDDEN
    temperature: dict[Literal[ENDPOINT_HEADS], Temperature] = {}

    @property
    def architecture(self) -> str:
        """The architecture it is (``pair`` for a config written before there were two)."""
        return self.arch or "pair"


# --- the training options ---------------------------------------------------------------------------------------
DIFFUSION = ("step", "plan")  # the diffusion models: their schedule, network and sampler options
CROSS_ENTROPY = ("task-classifier", "endpoints")  # the models that set their own schedule (epochs)
PLAN = ("plan",)


def option(default, readers: tuple[str, ...] = KINDS, flag: str | None = None, help: str = "",
           choices: tuple | None = None) -> Field:
    """A training option's field: its default, the model kinds that read it and, for an option with a
    command-line flag, the flag (its first spelling is the one run lists write), help and choices."""
    meta = {"readers": readers, "flag": flag, "help": help, "choices": choices}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


_NET = DiffusionOptions()


@dataclass
class TrainConfig:
    """Everything one training run needs; every field can be overridden from the CLI (its flag, or
    ``--set KEY=VALUE`` for the model kinds that read it)."""

    horizon: Horizon = option(3, flag="-T --horizon", help="planning horizon T")
    setting: Literal[SETTINGS] = option(DEFAULT_SETTING, flag="--setting", help="observation setting")  # supplement C.4
    m: Seconds = option(DEFAULT_M)  # seconds per observation
    n_steps: DiffusionSteps = option(_NET.n_steps, DIFFUSION, "--diffusion-steps")  # diffusion steps
    dim: Width = option(_NET.dim, DIFFUSION, "--dim", "U-Net base width")
    mults: Mults = option(_NET.mults, DIFFUSION)
    batch_size: Steps = option(256, flag="--batch-size")
    train_steps: Steps = option(12000, DIFFUSION, "--train-steps")
    lr: Rate = option(8e-4, DIFFUSION, "--lr", "peak learning rate")
    warmup: Steps0 = option(4000, DIFFUSION, "--warmup")
    decay: Decay = option([(10000, 0.5)], DIFFUSION, "--decay", "step decays of the learning rate, e.g. 10000:0.5 "
                          "(none: no decay)")  # (step, factor)
    weight_decay: Weight = option(0.0)
    log_every: Steps = option(50, flag="--log-every")
    val_every: Steps = option(500, DIFFUSION, "--val-every")
    # validations without improvement before stopping (0: never stop early)
    patience: Steps0 = option(0, flag="--patience", help="early stopping after N validations without gain")
    val_fraction: Fraction = option(0.1)  # of training videos held out for validation
    sampler: Literal[SAMPLERS] = option(DEFAULT_SAMPLER, DIFFUSION, "--sampler", "the model's default sampler")
    sampler_steps: DiffusionSteps = option(DEFAULT_SAMPLER_STEPS, DIFFUSION, "--sampler-steps", "DDIM steps")  # sampler ddim
    val_sampler: Literal[SAMPLERS] = option("ddim", DIFFUSION)  # sampler used for validation during training (fast)
    seed: Seed = option(0, flag="--seed")
    windows: Literal[WINDOWS] = option("memory")  # mapped: observation windows memory-mapped from <models>/T<h>/windows
    # planning models only
    condition: Literal[PLAN_CONDITIONS] = option(
        "graph", PLAN, "--condition", "condition row: P²KG recommendation, nothing, task class (PDPP), the LLM's plan, "
        "or the P²KG and the LLM rows", choices=("graph", "none", "task", "llm", "graph+llm"))
    R: Paths = option(DEFAULT_R, PLAN, "--R", "number of graph paths aggregated into the condition")
    recommend: Name = option(DEFAULT_SCORER, PLAN, "--scorer", "path scorer of the graph condition (p2kg, pkg, ...; stored "
                             "as \"recommend\")")
    gt_augment: bool = option(False, PLAN, "--gt-augment", "also train on recommendations from ground-truth endpoints")
    endpoint_folds: Folds = option(0, PLAN, "--endpoint-folds", ">= 2: recommendations for training from "
                                   "out-of-fold step models (0: --step-model's)")
    structured_weight: Weight = option(0.0, PLAN, "--structured-weight", "add W x the chain NLL of the true plan "
                                       "through the graph (structured training; save to MODELS/T<h>/"
                                       "plan-graph-R1-struct for the kepp-R1-struct row)")
    structured_learn_scale: bool = option(False, PLAN, "--structured-learn-scale", "learn the scale of the graph's "
                                          "transition log-probabilities")
    # step and planning models: > 0 adds this weight x the cross-entropy of the x_0 action block (docs, Models)
    aux_ce_weight: Weight = option(0.0, DIFFUSION, "--aux-ce-weight", "step and planning models: add W x the "
                                   "cross-entropy of the predicted x_0 action block (default: the preset's, 0 except "
                                   "coin-world)")
    # task classifier and endpoint model
    classifier_epochs: Epochs = option(60, CROSS_ENTROPY)
    # endpoint model only (docs, Models: the endpoint model)
    # clips: one encoder per clip | pair: one MLP over both clips (the earlier model)
    endpoint_arch: Literal[ENDPOINT_ARCHS] = option("clips", ("endpoints",))
    # clips: its per-clip heads also learn from every labelled window of the fit videos
    endpoint_windows: bool = option(True, ("endpoints",))
    endpoint_smoothing: Fraction = option(0.1, ("endpoints",))  # label smoothing of its cross-entropies
    endpoint_epochs: Epochs0 = option(0, ("endpoints",))  # > 0: its epochs (0: classifier_epochs)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["mults"] = list(self.mults)
        d["decay"] = [list(x) for x in self.decay]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """A config from a stored dict (unknown keys ignored, lists back to tuples)."""
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        if "mults" in d:
            d["mults"] = tuple(d["mults"])
        if "decay" in d:
            d["decay"] = [tuple(x) for x in d["decay"]]
        return cls(**d)


def diffusion_options(cfg: TrainConfig) -> dict:
    """The diffusion network's options (:class:`DiffusionOptions`) a training config gives.

    >>> diffusion_options(TrainConfig(dim=32))
    {'n_steps': 200, 'dim': 32, 'mults': (1, 2, 4)}
    """
    return {name: getattr(cfg, name) for name in DiffusionOptions.__struct_fields__}


def readers(name: str) -> tuple[str, ...]:
    """The model kinds that read the training option ``name``."""
    return _FIELDS[name].metadata["readers"]


def read_by(kinds) -> tuple[str, ...]:
    """The training options any of the model ``kinds`` reads."""
    return tuple(f.name for f in fields(TrainConfig) if set(f.metadata["readers"]) & set(kinds))


def train_flags(kind: str | None = None) -> tuple[Field, ...]:
    """The options with a flag on ``kepp train`` (``kind`` None: those on every sub-command; ``kind``:
    also the ones on that model's sub-command alone, e.g. ``plan``'s)."""
    out = []
    for f in fields(TrainConfig):
        meta = f.metadata
        if meta["flag"] is None:
            continue
        own = meta["readers"] == PLAN
        if not own or (kind is not None and kind in meta["readers"]):
            out.append(f)
    return tuple(out)


def default_of(f: Field):
    """The default value of a training option's field."""
    return f.default_factory() if f.default is MISSING else f.default


_FIELDS = {f.name: f for f in fields(TrainConfig)}

__all__ = ["CROSS_ENTROPY", "DEFAULT_HIDDEN", "DEFAULT_R", "DEFAULT_SAMPLER", "DEFAULT_SAMPLER_STEPS", "DEFAULT_SCORER",
           "DIFFUSION", "WINDOWS", "ClassifierNet", "DiffusionOptions",
           "EndpointNet", "TrainConfig", "default_of", "diffusion_options", "read_by", "readers", "train_flags"]
