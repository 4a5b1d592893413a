"""What a checkpoint is, read once: :class:`ModelSpec`, and the names of model folders.

A checkpoint's ``config.json`` records its kind, condition, number of paths ``R``,
recommendation method, sampler, observation setting and dataset fingerprint. Every reader
of those settings takes a :class:`ModelSpec` (``load_spec(folder)`` or
``ModelSpec.from_config(cfg, folder)``); the config's schema and the defaults for settings an
old config lacks are in :mod:`kepp_core.models.folders`, and nowhere else.

A models root holds one folder per model and horizon (``ROOT/T<h>/<folder>``); the folder
name says the model's :class:`~kepp_core.catalog.ModelRole` (the codec is
:func:`kepp_core.catalog.model_folder` / :func:`~kepp_core.catalog.parse_model_folder`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.models.folders import read_config
from kepp_core.catalog import (CONFIG_FILE, DEFAULT_M, DEFAULT_SETTING, GRAPH_CONDITIONS, LLM_CONDITIONS, ModelRole,
                               model_folder)
from kepp_core.models.folders import PlanConfig, SamplerRecord, check_config
from kepp_core.models.options import DEFAULT_R, DEFAULT_SAMPLER, DEFAULT_SAMPLER_STEPS, DEFAULT_SCORER


@dataclass(frozen=True)
class ModelSpec:
    """One checkpoint's settings, validated once: kind, horizon, condition, ``R``, recommendation
    method, sampler, observation setting and ``M``, and the dataset fingerprint it was trained on.

    >>> from kepp_core.paths import DEMO_ASSETS
    >>> spec = load_spec(DEMO_ASSETS / "T3" / "plan-graph-R2")
    >>> spec.R, spec.sampler, spec.feature_dim, spec.folder_name
    (2, 'ddpm', 256, 'plan-graph-R2')
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
        """Read a checkpoint config (checked by its schema,
        :func:`~kepp_core.models.folders.check_config`: a KeppError naming ``folder/config.json``
        and the key when a field is missing or invalid); settings it does not record take the
        defaults of :mod:`kepp_core.models.folders`."""
        where = f"{Path(folder) / CONFIG_FILE}" if folder is not None else "checkpoint config"
        c = check_config(cfg, where)
        fp, sampler = c.dataset, c.sampler or SamplerRecord()
        settings = {}
        if isinstance(c, PlanConfig):
            rows = c.model.layout.rows if c.model.layout is not None else []
            train = c.train
            settings = {"condition": c.condition or "+".join(r.name for r in rows) or "none", "R": c.R,
                        "scorer": c.recommend, "structured_weight": train.structured_weight if train else 0.0,
                        "structured_learn_scale": train.structured_learn_scale if train else False}
        return cls(kind=c.kind, horizon=fp.horizon, sampler=sampler.name, sampler_steps=sampler.steps,
                   setting=fp.setting, m=fp.m, vocabulary_hash=fp.vocabulary_hash, num_actions=fp.num_actions,
                   feature_dim=fp.feature_dim or fp.obs_dim // fp.m, obs_dim=fp.obs_dim,
                   encoder=c.encoder if c.encoder is not None else fp.encoder,
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


__all__ = ["ModelSpec", "load_spec"]
