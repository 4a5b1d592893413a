"""A models folder read without torch: a checkpoint folder's ``config.json`` and the horizons
that have a trained step model (``ROOT/T<h>/step``). The app's first page asks which horizons
are trained; answering must not wait for torch to load (2 s).

A checkpoint config is untrusted input (a models folder from elsewhere, opened in the app): it is
read by one schema, :data:`CheckpointConfig` (one :class:`~msgspec.Struct` per kind, told apart
by ``kind``), with its size and nesting bounded before it is parsed, so every reader (the
network's builder, :class:`~kepp_core.models.spec.ModelSpec`, the app's pages) takes values of
the types written here. Keys this version does not know are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, ClassVar, Literal, Union

from kepp_core.catalog import (CONDITION_ROW_KINDS, CONFIG_FILE, DEFAULT_M, DEFAULT_SETTING, DIFFUSION_KINDS,
                               ENDPOINT_VARIANTS, ENDPOINTS, KINDS, OFFICIAL_ARCHITECTURE, PLAN_CONDITIONS, SAMPLERS,
                               STEP, WEIGHTS_FILE, ModelRole, model_folder, parse_horizon_folder,
                               parse_model_folder)
from kepp_core.errors import KeppError
from kepp_core.io import parse_json, read_bytes, utf8_text
from kepp_core.models.options import (DEFAULT_R, DEFAULT_SAMPLER, DEFAULT_SAMPLER_STEPS, DEFAULT_SCORER, ClassifierNet,
                                      DiffusionSteps, EndpointNet, Mults, TrainConfig, Width)
from kepp_core.schema import Count, Finite, Meta, Positive, Struct, TaskKey, check_nesting, convert

FORMAT = "kepp-checkpoint"
VERSION = 1
MAX_CONFIG_BYTES = 2**22  # a config is a few kilobytes (COIN's 180 task ids and an LLM run's summary included)
MAX_CONFIG_DEPTH = 8  # configs nest 4 levels (model.layout.rows[k])


Text = Annotated[str, Meta(max_length=4096)]
Key = Annotated[str, Meta(min_length=1, max_length=200)]
Metrics = Annotated[dict[Key, Finite], Meta(max_length=100)]  # a validation record: score, sr, episodes, ...
Levels = Annotated[list[Annotated[int, Meta(ge=1, le=64)]], Meta(min_length=1, max_length=16)]
TaskIds = Annotated[list[TaskKey], Meta(max_length=1_000_000)]


class Fingerprint(Struct):
    """The dataset a checkpoint was trained on (``dataset``)."""

    vocabulary_hash: Key
    num_actions: Positive
    obs_dim: Positive
    horizon: Positive
    m: Positive = DEFAULT_M
    feature_dim: Positive | None = None
    setting: Key = DEFAULT_SETTING
    name: Text | None = None
    tasks: TaskIds | None = None
    encoder: Text | None = None


class ConditionRow(Struct):
    """One condition block of a diffusion network's layout."""

    name: Key
    width: Positive
    kind: Literal[CONDITION_ROW_KINDS] = "extra"


class Layout(Struct):
    """How observations, condition rows and actions stack in a sample of this package's network."""

    kind: Literal[DIFFUSION_KINDS]
    horizon: Positive
    obs_dim: Positive
    num_actions: Positive
    rows: Annotated[list[ConditionRow], Meta(max_length=16)] = []


class DiffusionNet(Struct):
    """``model`` of a step or planning model: this package's network (``layout`` and the network's
    options, :class:`~kepp_core.models.options.DiffusionOptions`: ``n_steps``, ``dim``, ``mults``) or,
    with ``architecture = "official"``, the official one (its sizes and ``dim_mults``)."""

    n_steps: DiffusionSteps
    dim: Width
    layout: Layout | None = None
    mults: Mults | None = None
    architecture: Literal[OFFICIAL_ARCHITECTURE] | None = None
    kind: Literal[DIFFUSION_KINDS] | None = None
    horizon: Positive | None = None
    obs_dim: Positive | None = None
    num_actions: Positive | None = None
    dim_mults: Levels | None = None
    graph_dim: Count = 0
    llm_dim: Count = 0
    llm_rows: Key | None = None

    def __post_init__(self) -> None:
        need = (("kind", "horizon", "obs_dim", "num_actions", "dim_mults") if self.architecture is not None
                else ("layout", "mults"))
        for key in need:
            if getattr(self, key) is None:
                raise ValueError(f"missing key '{key}'")


class SamplerRecord(Struct):
    name: Literal[SAMPLERS] = DEFAULT_SAMPLER
    steps: Positive = DEFAULT_SAMPLER_STEPS


class TrainingSummary(Struct):
    """``training``: what the finished run recorded."""

    steps: Count
    stopped_early: bool = False
    best: Metrics | None = None
    seconds: Annotated[float, Meta(ge=0, le=1e308)] | None = None
    peak_rss_mb: Annotated[float, Meta(ge=0, le=1e308)] | None = None
    world_size: Positive = 1
    device: Key | None = None
    rank_digests: Annotated[list[Key], Meta(max_length=1_000_000)] = []


class _Checkpoint(Struct, tag_field="kind"):
    """What every checkpoint config holds; the subclasses add each kind's own keys."""

    HINTS: ClassVar[dict[str, str]] = {
        "kind": f"one of {', '.join(KINDS)}", "model": "the network's settings",
        "dataset": "the dataset fingerprint", "train": "the training options", "sampler": "a sampler and its steps",
        "R": "a number of paths", "condition": f"one of {', '.join(PLAN_CONDITIONS)}",
        "training": "the run's summary", "val": "a validation record (numbers)", "tasks": "a list of task ids",
        "version": f"{VERSION}", "format": repr(FORMAT)}
    format: Literal[FORMAT]
    version: Literal[VERSION]
    dataset: Fingerprint
    train: TrainConfig | None = None
    sampler: SamplerRecord | None = None
    weights_id: Key | None = None
    train_step: Count | None = None
    val: Metrics | None = None
    training: TrainingSummary | None = None
    encoder: Text | None = None

    @property
    def kind(self) -> str:
        return type(self).__struct_config__.tag


class StepConfig(_Checkpoint, tag="step", kw_only=True):
    """A step model's config; ``architecture``, ``feature_layout`` and ``source`` for an imported
    official one."""

    model: DiffusionNet
    architecture: Literal[OFFICIAL_ARCHITECTURE] | None = None
    feature_layout: Text | None = None
    source: dict[Key, Text | Count] | None = None  # where imported weights came from (file, weights, epoch)

    def __post_init__(self) -> None:
        if self.architecture != self.model.architecture:
            raise ValueError(f"'architecture' ({self.architecture}) and 'model.architecture' "
                             f"({self.model.architecture}) differ")


class PlanConfig(StepConfig, tag="plan"):
    """A planning model's config: its condition, ``R``, path scorer and what its training recorded."""

    condition: Literal[PLAN_CONDITIONS] | None = None
    R: Positive = DEFAULT_R
    recommend: Key = DEFAULT_SCORER
    step_model: Text | None = None
    endpoint_folds: Count = 0
    train_endpoint_acc: Metrics | None = None
    structured: dict[Key, Finite | bool] | None = None
    llm: dict[Key, Text | Finite | bool | dict[Text, Count] | None] | None = None  # what the LLM answered (reasons: free text)
    tasks: TaskIds | None = None  # the task condition's one-hot order


class ClassifierConfig(_Checkpoint, tag="task-classifier", kw_only=True):
    """A task classifier's config: its classes are ``tasks``."""

    model: ClassifierNet
    tasks: TaskIds | None = None


class EndpointsConfig(_Checkpoint, tag="endpoints", kw_only=True):
    """An endpoint model's config."""

    model: EndpointNet
    tasks: TaskIds | None = None


CheckpointConfig = Union[StepConfig, PlanConfig, ClassifierConfig, EndpointsConfig]
assert tuple(c.__struct_config__.tag for c in CheckpointConfig.__args__) == KINDS


def check_config(cfg: Mapping, where: str) -> StepConfig | PlanConfig | ClassifierConfig | EndpointsConfig:
    """``cfg`` (a parsed checkpoint config) checked by :data:`CheckpointConfig`: a KeppError naming
    ``where`` and the key otherwise. Every reader of a config's values asks this first."""
    return convert(cfg, CheckpointConfig, where)


def read_config(folder: str | Path) -> dict:
    """A checkpoint folder's config, checked for the kepp format and version and then by its
    schema (:func:`check_config`); its size and nesting are bounded before it is parsed."""
    folder = Path(folder)
    path = folder / CONFIG_FILE
    if not folder.is_dir():
        raise KeppError(f"{folder}: checkpoint folder not found")
    if not path.is_file():
        raise KeppError(f"{path}: not found (a checkpoint folder holds {WEIGHTS_FILE} and {CONFIG_FILE})")
    data = read_bytes(path, MAX_CONFIG_BYTES)
    check_nesting(data, str(path), MAX_CONFIG_DEPTH)
    cfg = parse_json(utf8_text(data, str(path)), f"{path}: corrupt checkpoint config", lines=False)
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        raise KeppError(f"{path}: not a kepp checkpoint config (expected format {FORMAT!r})")
    if cfg.get("version") != VERSION:
        raise KeppError(f"{path}: checkpoint version {cfg.get('version')} is not supported (expected {VERSION})")
    check_config(cfg, str(path))
    if cfg.get("kind") == "endpoints":
        check_endpoint_agreement(cfg, folder)
    return cfg



def planning_models(hdir: str | Path) -> list[ModelRole]:
    """The trained planning models of the horizon folder ``hdir`` (``ROOT/T<h>/plan-*`` holding a
    config), by folder name; folders whose name is no model's are passed over."""
    found = []
    for folder in sorted(Path(hdir).glob("plan-*")):
        if not (folder / CONFIG_FILE).is_file():
            continue
        try:
            found.append(parse_model_folder(folder.name))
        except KeppError:
            continue  # not a model folder
    return found


def config_stamp(cfg: dict) -> list:
    """What a choice made with a checkpoint depends on in its config: its last training step and weights
    digest (a stored decoding or planning-model choice is made again when it changes)."""
    return [cfg.get("train_step"), (cfg.get("training") or {}).get("rank_digests")]


def model_stamps(hdir: Path, roles) -> dict[str, object]:
    """What a choice depends on: each model of ``roles`` under ``hdir`` (``ROOT/T<h>``) by folder name
    (:func:`config_stamp`)."""
    return {model_folder(role): config_stamp(read_config(Path(hdir) / model_folder(role))) for role in roles}

def folder_endpoint_arch(folder: str | Path) -> str | None:
    """The endpoint model architecture the name of ``folder`` says: a variant's folder of a models root
    (``ROOT/T<h>/endpoints-<variant>``) holds that variant's (its preset's ``endpoint_arch``:
    :data:`~kepp_core.catalog.ENDPOINT_VARIANTS`); None for the default ``endpoints`` folder and any
    folder outside a models root. A folder of a models root named ``endpoints-...`` that names no
    variant (``endpoints-clips``: the default architecture is no variant) is a KeppError.

    >>> folder_endpoint_arch("models/T3/endpoints-pair"), folder_endpoint_arch("models/T3/endpoints")
    ('pair', None)
    """
    folder = Path(folder)
    if not folder.name.startswith(f"{ENDPOINTS.kind}-") or parse_horizon_folder(folder.parent.name) is None:
        return None
    try:
        role = parse_model_folder(folder.name)
    except KeppError as e:
        raise KeppError(f"{folder}: {e}") from None
    return str(ENDPOINT_VARIANTS[role.variant]["endpoint_arch"])


def check_endpoint_folder(folder: str | Path, endpoint_arch: str) -> None:
    """Refuse, before any work, to train an endpoint model of architecture ``endpoint_arch`` into
    ``folder`` when the folder's name says another (:func:`folder_endpoint_arch`)."""
    named = folder_endpoint_arch(folder)
    if named is not None and named != endpoint_arch:
        name = Path(folder).name
        raise KeppError(f"{folder}: the folder of the {named!r} endpoint model, but the training options say "
                        f"endpoint_arch={endpoint_arch!r} (train it with its variant's options: kepp train all "
                        f"--only {name}, or --set endpoint_arch={named} ...)")


def check_endpoint_agreement(cfg: Mapping, folder: str | Path) -> None:
    """An endpoint model's config agrees with itself and with its folder: the network's architecture
    (``model.arch``), the training option that chose it (``train.endpoint_arch``, where recorded) and
    the architecture its folder's name says (:func:`folder_endpoint_arch`) are one; a KeppError naming
    the file and all three otherwise (an ``endpoints-pair`` folder holding a per-clip model is refused)."""
    where = Path(folder) / CONFIG_FILE
    model = cfg.get("model") or {}
    arch = model.get("arch") or "pair"  # a config written before there were two architectures: the pair model
    trained = (cfg.get("train") or {}).get("endpoint_arch")
    named = folder_endpoint_arch(folder)
    if trained is not None and trained != arch:
        raise KeppError(f"{where}: the endpoint model's architecture is {arch!r} but its training options say "
                        f"endpoint_arch={trained!r}: the checkpoint does not agree with itself")
    if named is not None and named != arch:
        raise KeppError(f"{where}: the folder {Path(folder).name} holds the {named!r} endpoint model, but this "
                        f"checkpoint's architecture is {arch!r} (train it with the variant's options: "
                        f"kepp train all --only {Path(folder).name})")


def trained_horizons(root: str | Path) -> list[int]:
    """Horizons with a step model under a models folder (``ROOT/T<h>/step``)."""
    root = Path(root)
    out = []
    for p in sorted(root.glob(f"*/{model_folder(STEP)}")):
        horizon = parse_horizon_folder(p.parent.name)
        if horizon is None:
            continue
        try:
            read_config(p)
        except KeppError:
            continue
        out.append(horizon)
    return sorted(out)
