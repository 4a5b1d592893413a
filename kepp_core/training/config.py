"""Training configuration: presets per dataset (the paper's schedules, supplement C.1) and the
learning-rate schedule (linear warm-up, then step decay).

>>> cfg = preset("crosstask")
>>> cfg.n_steps, cfg.train_steps, lr_at(cfg, 4000), lr_at(cfg, 10000)
(200, 12000, 0.0008, 0.0004)
"""

from __future__ import annotations

import math
from dataclasses import asdict, fields, replace

from kepp_core.catalog import ENDPOINT_ARCHS, MAX_HORIZON, MAX_SEED, PLAN_CONDITIONS, SAMPLERS
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.models.options import TrainConfig
from kepp_core.schema import convert


# The paper's schedules (batch 256; warm-up then step decay), plus a small one for the demo world.
PRESETS: dict[str, dict] = {
    "crosstask": dict(n_steps=200, train_steps=12000, lr=8e-4, warmup=4000, decay=[(10000, 0.5)]),
    "crosstask-s3d": dict(n_steps=200, train_steps=24000, lr=5e-4, warmup=4000,
                          decay=[(10000, 0.5), (16000, 0.5), (22000, 0.5)]),
    "niv": dict(n_steps=50, train_steps=6500, lr=3e-4, warmup=4500, decay=[(6000, 0.5)]),
    "coin": dict(n_steps=200, train_steps=160000, lr=1e-5, warmup=4000, decay=[(14000, 0.5), (24000, 0.5)]),
    # Demo world: small network, few diffusion steps, short schedule (minutes on 2 CPU cores).
    "demo": dict(n_steps=20, dim=32, mults=(1, 2), batch_size=64, train_steps=300, lr=2e-3, warmup=50,
                 decay=[(240, 0.5)], log_every=20, val_every=100, patience=0, classifier_epochs=40),
    # Demo world, 5x longer: the no-graph planner's validation score has stopped improving
    # (docs, How to use the graph: the longer preset).
    "demo-long": dict(n_steps=20, dim=32, mults=(1, 2), batch_size=64, train_steps=1500, lr=2e-3, warmup=50,
                      decay=[(1200, 0.5)], log_every=50, val_every=100, patience=0, classifier_epochs=40),
    # The COIN-scale world (10,070 rendered COIN videos, 768 actions; docs, At scale): the demo network
    # at batch 256 for ~20 epochs of T=3 episodes, windows memory-mapped (README, At scale); the endpoint
    # model for 60 (its validation accuracy still rose from 20 to 40 to 60 epochs: docs, Models).
    "coin-world": dict(n_steps=20, dim=32, mults=(1, 2), batch_size=256, train_steps=1000, lr=2e-3, warmup=50,
                       decay=[(800, 0.5)], log_every=50, val_every=250, patience=0, classifier_epochs=20,
                       endpoint_epochs=60, windows="mapped"),
}
# The COIN-scale world's preset with the auxiliary cross-entropy on the diffusion models' x_0 action
# block (docs, Models: the endpoint model); coin-world itself stays as its documented results were made.
PRESETS["coin-world-ce"] = {**PRESETS["coin-world"], "aux_ce_weight": 0.5}
# Which preset a dataset name picks by default.
DATASET_PRESET = {"crosstask": "crosstask", "coin": "coin", "plans": "niv", "demo": "demo"}


def preset(name: str, **overrides) -> TrainConfig:
    """The preset ``name`` with ``overrides`` (None values are ignored)."""
    if name not in PRESETS:
        raise unknown_name_error("preset", name, PRESETS)
    cfg = replace(TrainConfig(), **PRESETS[name])
    return apply_overrides(cfg, **overrides)


def apply_overrides(cfg: TrainConfig, **overrides) -> TrainConfig:
    """``cfg`` with ``overrides`` (None values ignored; unknown names refused), validated."""
    known = {f.name for f in fields(TrainConfig)}
    bad = [k for k in overrides if k not in known]
    if bad:
        raise KeppError(f"unknown training option(s) {bad}")
    cfg = replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    # every field's type, as the command line's own options have them ("x" is not a learning rate)
    cfg = convert(asdict(cfg), TrainConfig, "training options")
    validate(cfg)
    return cfg


WINDOWS = ("memory", "mapped")  # where training reads observation windows from
# Upper bounds that keep a typo from allocating terabytes (a U-Net of width 4096 is already huge).
LIMITS = {"dim": 4096, "n_steps": 100_000, "horizon": MAX_HORIZON, "m": 64, "R": 1000, "sampler_steps": 100_000,
          "endpoint_epochs": 100_000}
MAX_MULT, MAX_LEVELS = 16, 6  # the U-Net's width multipliers: each 1..16, at most 6 levels


def validate(cfg: TrainConfig) -> None:
    """KeppError naming the first option outside its range."""
    for name in ("n_steps", "dim", "batch_size", "train_steps", "log_every", "val_every", "R", "m", "sampler_steps"):
        if getattr(cfg, name) < 1:
            raise KeppError(f"training option {name}={getattr(cfg, name)} must be at least 1")
    for name, top in LIMITS.items():
        if getattr(cfg, name) > top:
            raise KeppError(f"training option {name}={getattr(cfg, name)} is too large (at most {top})")
    for name in ("structured_weight", "aux_ce_weight"):
        if not (math.isfinite(getattr(cfg, name)) and getattr(cfg, name) >= 0):
            raise KeppError(f"training option {name}={getattr(cfg, name)} must be a finite number >= 0")
    for name in ("lr", "weight_decay", "val_fraction"):
        if not math.isfinite(getattr(cfg, name)):
            raise KeppError(f"training option {name}={getattr(cfg, name)} must be a finite number")
    if cfg.patience < 0:
        raise KeppError(f"training option patience={cfg.patience} must not be negative")
    if cfg.weight_decay < 0:
        raise KeppError(f"weight decay {cfg.weight_decay} must not be negative")
    for at, factor in cfg.decay:
        if not (math.isfinite(factor) and factor > 0) or at < 0:
            raise KeppError(f"learning-rate decay {at}:{factor} is invalid (expected STEP >= 0 and FACTOR > 0)")
    if not cfg.mults or len(cfg.mults) > MAX_LEVELS or any(not 1 <= m <= MAX_MULT for m in cfg.mults):
        raise KeppError(f"training option mults={list(cfg.mults)}: expected 1 to {MAX_LEVELS} width multipliers, "
                        f"each from 1 to {MAX_MULT}")
    for name in ("sampler", "val_sampler"):
        if getattr(cfg, name) not in SAMPLERS:
            raise KeppError(f"training option {name}={getattr(cfg, name)!r} is not one of {', '.join(SAMPLERS)}")
    if not 0 <= cfg.seed <= MAX_SEED:
        raise KeppError(f"training option seed={cfg.seed} must be a whole number from 0 to {MAX_SEED}")
    if cfg.condition not in PLAN_CONDITIONS:
        raise KeppError(f"training option condition={cfg.condition!r} is not one of {', '.join(PLAN_CONDITIONS)}")
    if cfg.endpoint_arch not in ENDPOINT_ARCHS:
        raise KeppError(f"training option endpoint_arch={cfg.endpoint_arch!r} is not one of {', '.join(ENDPOINT_ARCHS)}")
    if cfg.endpoint_windows and cfg.endpoint_arch != "clips":
        raise KeppError(f"training option endpoint_windows=true needs endpoint_arch='clips' (per-clip heads), "
                        f"not {cfg.endpoint_arch!r}")
    if not (math.isfinite(cfg.endpoint_smoothing) and 0 <= cfg.endpoint_smoothing < 1):
        raise KeppError(f"training option endpoint_smoothing={cfg.endpoint_smoothing} must be in [0, 1)")
    if not 0 <= cfg.endpoint_epochs <= LIMITS["endpoint_epochs"]:
        raise KeppError(f"training option endpoint_epochs={cfg.endpoint_epochs} must be from 0 (classifier_epochs) "
                        f"to {LIMITS['endpoint_epochs']}")
    if cfg.windows not in WINDOWS:
        raise KeppError(f"training option windows={cfg.windows!r} is not one of {', '.join(WINDOWS)}")
    if cfg.horizon < 2:
        raise KeppError(f"horizon T={cfg.horizon} is too short (expected T >= 2)")
    if cfg.lr <= 0:
        raise KeppError(f"learning rate {cfg.lr} must be positive")
    if not 0 <= cfg.val_fraction < 1:
        raise KeppError(f"val_fraction {cfg.val_fraction} must be in [0, 1)")


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Learning rate at optimisation step ``step`` (0-based): linear warm-up to ``lr`` over
    ``warmup`` steps, then multiplied by each decay factor whose step has been reached."""
    lr = cfg.lr * min(1.0, (step + 1) / max(cfg.warmup, 1))
    for at, factor in cfg.decay:
        if step >= at:
            lr *= factor
    return lr
