"""What a checkpoint is, read once: :class:`ModelSpec`, and the names of model folders.

A checkpoint's ``config.json`` records its kind, condition, number of paths ``R``,
recommendation method, sampler, observation setting and dataset fingerprint. Every reader
of those settings takes a :class:`ModelSpec` (``load_spec(folder)`` or
``ModelSpec.from_config(cfg, folder)``), so the defaults for settings an old config lacks
live here and nowhere else.

A models root holds one folder per model and horizon (``ROOT/T<h>/<folder>``); the folder
name says the model's :class:`~kepp_core.catalog.ModelRole` (the codec is
:func:`kepp_core.catalog.model_folder` / :func:`~kepp_core.catalog.parse_model_folder`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.catalog import GRAPH_CONDITIONS, KINDS, LLM_CONDITIONS, PLAN_CONDITIONS, SAMPLERS, ModelRole, model_folder
from kepp_core.errors import KeppError
from kepp_core.models.checkpoint import CONFIG, read_config

# Defaults for settings a config does not record (what the code has always assumed).
DEFAULT_R = 1
DEFAULT_SCORER = "p2kg"
DEFAULT_SAMPLER = "ddpm"
DEFAULT_SAMPLER_STEPS = 10  # DDIM steps; a DDPM sampler runs every diffusion step
DEFAULT_SETTING = "conventional"
DEFAULT_M = 3


@dataclass(frozen=True)
class ModelSpec:
    """One checkpoint's settings, validated once: kind, horizon, condition, ``R``, recommendation
    method, sampler, observation setting and ``M``, and the dataset fingerprint it was trained on.

    >>> spec = ModelSpec.from_config({"kind": "plan", "condition": "graph", "R": 2, "dataset": {
    ...     "vocabulary_hash": "ab12", "num_actions": 5, "obs_dim": 12, "horizon": 3, "m": 3}})
    >>> spec.R, spec.sampler, spec.feature_dim, spec.folder_name
    (2, 'ddpm', 4, 'plan-graph-R2')
    """

    kind: str
    horizon: int
    condition: str = "none"
    R: int = DEFAULT_R
    scorer: str = DEFAULT_SCORER  # the path scorer (stored in a config as "recommend")
    sampler: str = DEFAULT_SAMPLER
    sampler_steps: int = DEFAULT_SAMPLER_STEPS
    setting: str = DEFAULT_SETTING
    m: int = DEFAULT_M
    structured_weight: float = 0.0  # weight of the structured loss in training (0: none)
    structured_learn_scale: bool = False
    vocabulary_hash: str = ""
    num_actions: int = 0
    feature_dim: int = 0
    obs_dim: int = 0
    encoder: str | None = None
    folder: Path | None = None
    config: Mapping = field(default_factory=dict, compare=False, hash=False, repr=False)  # the raw config.json

    @property
    def role(self) -> ModelRole:
        """The role its folder name says (``R`` only for the graph condition)."""
        return ModelRole(self.kind, self.condition, self.R if self.condition == "graph" else 1,
                         self.structured_weight > 0)

    @property
    def folder_name(self) -> str:
        return model_folder(self.role)

    @property
    def uses_graph(self) -> bool:
        return self.condition in GRAPH_CONDITIONS

    @property
    def uses_llm(self) -> bool:
        return self.condition in LLM_CONDITIONS

    def check_feature_width(self, dim: int, source: str) -> None:
        """KeppError naming both widths unless ``dim``-wide per-second features (from ``source``,
        e.g. an encoder) make this model's observations of ``M × D`` values.

        >>> ModelSpec("plan", 3, m=3, obs_dim=1536, feature_dim=512).check_feature_width(1024, "encoder 'x'")
        Traceback (most recent call last):
        ...
        kepp_core.errors.KeppError: the models observe 1536 values per clip (3 s × 512-d features), but encoder 'x' gives 1024-d features (3 s × 1024 = 3072): use the models' own feature encoder, or models trained on 1024-d features
        """
        if dim * self.m != self.obs_dim:
            where = f"{self.folder}: " if self.folder is not None else ""
            raise KeppError(f"{where}the models observe {self.obs_dim} values per clip ({self.m} s × "
                            f"{self.obs_dim // max(self.m, 1)}-d features), but {source} gives {dim}-d features "
                            f"({self.m} s × {dim} = {self.m * dim}): use the models' own feature encoder, or "
                            f"models trained on {dim}-d features")

    @classmethod
    def from_config(cls, cfg: Mapping, folder: str | Path | None = None) -> ModelSpec:
        """Read and validate a checkpoint config (KeppError naming ``folder/config.json`` when a
        field is missing or invalid); settings it does not record take the defaults above."""
        where = f"{Path(folder) / CONFIG}" if folder is not None else "checkpoint config"
        kind = cfg.get("kind")
        if kind not in KINDS:
            raise KeppError(f"{where}: invalid field 'kind' ({kind!r}; expected one of {', '.join(KINDS)})")
        fp = cfg.get("dataset")
        if not isinstance(fp, Mapping):
            raise KeppError(f"{where}: missing field 'dataset' (the dataset fingerprint)")
        m = _field(fp, "m", int, where, DEFAULT_M, "dataset.")
        obs_dim = _field(fp, "obs_dim", int, where, prefix="dataset.")
        settings = _plan_settings(cfg, where) if kind == "plan" else {}
        sampler = cfg.get("sampler") or {}
        return cls(kind=kind, horizon=_field(fp, "horizon", int, where, prefix="dataset."),
                   sampler=_choice(sampler, "name", SAMPLERS, where, DEFAULT_SAMPLER, "sampler."),
                   sampler_steps=_field(sampler, "steps", int, where, DEFAULT_SAMPLER_STEPS, "sampler."),
                   setting=_field(fp, "setting", str, where, DEFAULT_SETTING, "dataset."), m=m,
                   vocabulary_hash=_field(fp, "vocabulary_hash", str, where, prefix="dataset."),
                   num_actions=_field(fp, "num_actions", int, where, prefix="dataset."),
                   feature_dim=_field(fp, "feature_dim", int, where, obs_dim // max(m, 1), "dataset."),
                   obs_dim=obs_dim, encoder=cfg.get("encoder", fp.get("encoder")),
                   folder=Path(folder) if folder is not None else None, config=cfg, **settings)

    @classmethod
    def from_model(cls, model, cfg: Mapping | None = None) -> ModelSpec:
        """The spec of an in-memory diffusion model (no checkpoint): structure from its layout,
        settings from ``cfg`` (a partial config such as ``{"R": 2, "sampler": {...}}``) or the defaults."""
        cfg = dict(cfg or {})
        lay = model.layout
        sampler = cfg.get("sampler") or {}
        return cls(kind=lay.kind, horizon=lay.horizon,
                   condition=("+".join(r.name for r in lay.rows) or "none") if lay.kind == "plan" else "none",
                   R=int(cfg.get("R", DEFAULT_R)), scorer=cfg.get("recommend", DEFAULT_SCORER),
                   sampler=sampler.get("name", DEFAULT_SAMPLER),
                   sampler_steps=sampler.get("steps", DEFAULT_SAMPLER_STEPS),
                   num_actions=lay.num_actions, obs_dim=lay.obs_dim, feature_dim=lay.obs_dim // DEFAULT_M,
                   config=cfg)


def load_spec(folder: str | Path) -> ModelSpec:
    """The validated spec of the checkpoint in ``folder`` (its ``config.json``; weights are not read)."""
    return ModelSpec.from_config(read_config(folder), folder)


def _field(d: Mapping, key: str, typ: type, where: str, default=None, prefix: str = ""):
    value = d.get(key, default)
    if value is None:
        raise KeppError(f"{where}: missing field '{prefix}{key}'")
    if not isinstance(value, typ) or isinstance(value, bool) or (typ is int and value < 1):
        raise KeppError(f"{where}: invalid field '{prefix}{key}' ({value!r}; expected "
                        f"{'a positive integer' if typ is int else 'a string'})")
    return value


def _choice(d: Mapping, key: str, choices: tuple[str, ...], where: str, default: str, prefix: str = "") -> str:
    value = d.get(key, default)
    if value not in choices:
        raise KeppError(f"{where}: invalid field '{prefix}{key}' ({value!r}; expected one of {', '.join(choices)})")
    return value


def _plan_settings(cfg: Mapping, where: str) -> dict:
    """A planning model's condition (recorded, else read from its layout's rows), ``R`` and recommendation."""
    rows = cfg.get("model", {}).get("layout", {}).get("rows", [])
    from_rows = "+".join(r.get("name", "") for r in rows) or "none"
    train = cfg.get("train") if isinstance(cfg.get("train"), Mapping) else {}
    weight = train.get("structured_weight", 0.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
        raise KeppError(f"{where}: invalid field 'train.structured_weight' ({weight!r}; expected a number >= 0)")
    return {"condition": _choice(cfg, "condition", PLAN_CONDITIONS, where, from_rows),
            "R": _field(cfg, "R", int, where, DEFAULT_R),
            "scorer": _field(cfg, "recommend", str, where, DEFAULT_SCORER),
            "structured_weight": float(weight),
            "structured_learn_scale": bool(train.get("structured_learn_scale", False))}


__all__ = ["ModelSpec", "load_spec"]
