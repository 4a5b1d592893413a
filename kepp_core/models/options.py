"""The training options a run takes and its checkpoint records (:class:`TrainConfig`): every
option's name, type and default, in one place. The checkpoint config's ``train`` table is read
with this type (:mod:`kepp_core.models.folders`); presets, ranges and the learning-rate schedule
are in :mod:`kepp_core.training.config`.

>>> TrainConfig.from_dict({"lr": 1e-3, "mults": [1, 2], "colour": "blue"}).mults
(1, 2)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass
class TrainConfig:
    """Everything one training run needs; every field can be overridden from the CLI."""

    horizon: int = 3
    setting: str = "conventional"  # observation setting (paper supplement C.4)
    m: int = 3  # seconds per observation
    n_steps: int = 200  # diffusion steps
    dim: int = 128  # U-Net base width
    mults: tuple[int, ...] = (1, 2, 4)
    batch_size: int = 256
    train_steps: int = 12000
    lr: float = 8e-4  # peak learning rate
    warmup: int = 4000
    decay: list[tuple[int, float]] = field(default_factory=lambda: [(10000, 0.5)])  # (step, factor)
    weight_decay: float = 0.0
    log_every: int = 50
    val_every: int = 500
    patience: int = 0  # validations without improvement before stopping (0: never stop early)
    val_fraction: float = 0.1  # of training videos held out for validation
    sampler: str = "ddpm"  # default sampler of the trained model
    sampler_steps: int = 10  # DDIM steps when sampler == "ddim"
    val_sampler: str = "ddim"  # sampler used for validation during training (fast)
    seed: int = 0
    windows: str = "memory"  # memory | mapped: observation windows memory-mapped from <models>/T<h>/windows
    # planning models only
    condition: str = "graph"  # graph | none | task | extra | llm | graph+llm
    R: int = 1
    recommend: str = "p2kg"  # p2kg (probabilistic) | pkg (frequency graph)
    gt_augment: bool = False  # add copies of the episodes conditioned on ground-truth endpoints
    endpoint_folds: int = 0  # >= 2: training recommendations from out-of-fold step models (0: the given one)
    structured_weight: float = 0.0  # > 0: add the chain NLL of the true plan through the graph (docs, How to use the graph)
    structured_learn_scale: bool = False  # learn the scale of the graph's transition log-probabilities
    # step and planning models: > 0 adds this weight x the cross-entropy of the x_0 action block (docs, Models)
    aux_ce_weight: float = 0.0
    # task classifier and endpoint model
    classifier_epochs: int = 60
    # endpoint model only (docs, Models: the endpoint model)
    endpoint_arch: str = "clips"  # clips: one encoder per clip | pair: one MLP over both clips (the earlier model)
    endpoint_windows: bool = True  # clips: its per-clip heads also learn from every labelled window of the fit videos
    endpoint_smoothing: float = 0.1  # label smoothing of its cross-entropies
    endpoint_epochs: int = 0  # > 0: its epochs (0: classifier_epochs)

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


__all__ = ["TrainConfig"]
