"""Training configuration: presets per dataset (the paper's schedules, supplement C.1) and the
learning-rate schedule (linear warm-up, then step decay).

>>> cfg = preset("crosstask")
>>> cfg.n_steps, cfg.train_steps, lr_at(cfg, 4000), lr_at(cfg, 10000)
(200, 12000, 0.0008, 0.0004)
"""

from __future__ import annotations

from dataclasses import asdict, fields, replace

from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.models.options import TrainConfig
from kepp_core.schema import check_ranges, convert

__all__ = ["DATASET_PRESET", "PRESETS", "apply_overrides", "lr_at", "preset"]


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
    """``cfg`` with ``overrides`` (None values ignored; unknown names refused), validated: every
    option's type and range as :class:`~kepp_core.models.options.TrainConfig` declares it, then the
    rules that span options (:func:`validate`)."""
    known = {f.name for f in fields(TrainConfig)}
    bad = [k for k in overrides if k not in known]
    if bad:
        raise KeppError(f"unknown training option(s) {bad}")
    cfg = replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    check_ranges(cfg, "training option")  # every field's type and range, in words ("x" is not a learning rate)
    cfg = convert(asdict(cfg), TrainConfig, "training options")  # the same schema a checkpoint's config is read with
    validate(cfg)
    return cfg


def validate(cfg: TrainConfig) -> None:
    """KeppError naming the first option outside its range (:func:`~kepp_core.schema.check_ranges`)
    or breaking a rule that spans options."""
    check_ranges(cfg, "training option")
    if cfg.endpoint_windows and cfg.endpoint_arch != "clips":
        raise KeppError(f"training option endpoint_windows=true needs endpoint_arch='clips' (per-clip heads), "
                        f"not {cfg.endpoint_arch!r}")


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Learning rate at optimisation step ``step`` (0-based): linear warm-up to ``lr`` over
    ``warmup`` steps, then multiplied by each decay factor whose step has been reached."""
    lr = cfg.lr * min(1.0, (step + 1) / max(cfg.warmup, 1))
    for at, factor in cfg.decay:
        if step >= at:
            lr *= factor
    return lr
