"""Training every model one horizon needs for planning and for the evaluation table.

Layout of a models folder (what :class:`kepp_core.planner.KEPPPlanner.from_models` and
``kepp eval`` read)::

    ROOT/T<h>/step/              step model
    ROOT/T<h>/plan-graph-R1/     KEPP planning model, R = 1 (+ graph.json)
    ROOT/T<h>/plan-graph-R2/     KEPP planning model, R = 2
    ROOT/T<h>/plan-none/         planning model without the graph condition
    ROOT/T<h>/plan-task/         PDPP: task-class condition
    ROOT/T<h>/task-classifier/   PDPP's task classifier
    ROOT/T<h>/endpoints/         the endpoint model (task, a_1, a_T by cross-entropy; graph-ce, +jdec)
    ROOT/T<h>/plan-graph-R1-struct/  KEPP R = 1 with the structured loss (only when named)
    ROOT/T<h>/endpoints-pair/    the earlier endpoint model (only when named: its rows graph-ce-pair, +jdec-pair)
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.catalog import ENDPOINT_VARIANTS, EXTRA_ROLES, SUITE_ROLES, ModelRole, model_folder, models_dir
from kepp_core.models.options import TrainConfig
from kepp_core.training.trainers import (train_endpoint_model, train_plan_model, train_step_model,
                                         train_task_classifier)

MEMBERS = tuple(model_folder(r) for r in SUITE_ROLES)
EXTRA_MEMBERS = tuple(model_folder(r) for r in EXTRA_ROLES)  # trained only when named (plan-graph-R1-struct)
DEFAULT_STRUCTURED_WEIGHT = 0.1  # a -struct model trained from a config without a weight (0.05-0.3 alike on the demo world)
# What the KEPP planner alone needs (``kepp demo`` trains these when no checkpoints are shipped).
PLANNER_MEMBERS = (model_folder(ModelRole("step")), model_folder(ModelRole("plan", "graph", 1)))


def train_horizon(ds: Dataset, cfg: TrainConfig, root: str | Path, members=MEMBERS, progress: bool = True,
                  log=print) -> dict[str, dict]:
    """Train ``members`` (model folder names) for horizon ``cfg.horizon`` into ``ROOT/T<h>/``;
    returns their summaries."""
    bad = [m for m in members if m not in MEMBERS + EXTRA_MEMBERS]
    if bad:
        raise KeppError(f"unknown model(s) {bad} (expected some of {', '.join(MEMBERS + EXTRA_MEMBERS)})")
    hdir = models_dir(root, cfg.horizon)
    out: dict[str, dict] = {}
    for role in SUITE_ROLES + EXTRA_ROLES:
        name = model_folder(role)
        if name not in members:
            continue
        t0 = time.time()
        out[name] = train_role(ds, cfg, role, hdir, progress)
        log(f"T={cfg.horizon} {name}: {time.time() - t0:.1f}s, best validation {out[name].get('best')}")
    return out


def train_role(ds: Dataset, cfg: TrainConfig, role: ModelRole, hdir: Path, progress: bool = True,
               resume: bool = False) -> dict:
    """Train the model of ``role`` into ``HDIR/<its folder>`` (graph-conditioned planning models
    use the step model in ``HDIR/step``; ``resume``: continue from the folder's saved state)."""
    out = hdir / model_folder(role)
    cfg = role_config(cfg, role)
    if role.kind == "step":
        return train_step_model(ds, cfg, out, resume=resume, progress=progress)
    if role.kind == "task-classifier":
        return train_task_classifier(ds, cfg, out, resume=resume, progress=progress)
    if role.kind == "endpoints":
        return train_endpoint_model(ds, cfg, out, resume=resume, progress=progress)
    if needs_step_model(role):
        return train_plan_model(ds, cfg, out, step_dir=hdir / model_folder(ModelRole("step")), resume=resume,
                                progress=progress)
    return train_plan_model(ds, cfg, out, resume=resume, progress=progress)


def role_config(cfg: TrainConfig, role: ModelRole) -> TrainConfig:
    """The config a model of ``role`` is trained with: planning models take the role's condition,
    ``R`` (graph condition) and structured-loss weight; an endpoint model variant its named preset
    (:data:`kepp_core.catalog.ENDPOINT_VARIANTS`; a role that is no model folder, e.g. the variant
    ``clips``, is a KeppError); step models, the classifier and the default endpoint model take ``cfg``.

    >>> role_config(TrainConfig(R=3), ModelRole("plan", "none")).condition
    'none'
    >>> role_config(TrainConfig(), ModelRole("endpoints", variant="pair")).endpoint_arch
    'pair'
    """
    model_folder(role)  # the role is one the catalogue names (its variant one of ENDPOINT_VARIANTS)
    if role.kind == "endpoints" and role.variant:
        return replace(cfg, **ENDPOINT_VARIANTS[role.variant])
    if role.kind != "plan":
        return cfg
    weight = (cfg.structured_weight or DEFAULT_STRUCTURED_WEIGHT) if role.structured else 0.0
    cfg = replace(cfg, condition=role.condition, structured_weight=weight)
    return replace(cfg, R=role.R) if role.condition == "graph" else cfg


def needs_step_model(role: ModelRole) -> bool:
    """Whether training a model of ``role`` reads the horizon's step model (graph-conditioned
    planning models: their recommendations come from its predicted endpoints)."""
    return role.kind == "plan" and role.condition == "graph"
