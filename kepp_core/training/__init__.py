"""Training loops, presets, checkpoints and distributed launch for the step and planning models."""

from kepp_core.training.checkpoint import check_compatible, load_checkpoint, read_config, save_checkpoint
from kepp_core.training.config import DATASET_PRESET, PRESETS, TrainConfig, apply_overrides, lr_at, preset
from kepp_core.training.data import EpisodeTensors, episode_tensors, task_names
from kepp_core.training.loop import fit, runtime, weights_digest

_TRAINERS = ("train_plan_model", "train_step_model", "train_task_classifier")


def __getattr__(name: str):
    # The trainers import the planner, which imports checkpoints from here: load them lazily.
    if name in _TRAINERS:
        from kepp_core.training import trainers

        return getattr(trainers, name)
    raise AttributeError(f"module 'kepp_core.training' has no attribute {name!r}")


__all__ = [
    "DATASET_PRESET", "PRESETS", "EpisodeTensors", "TrainConfig", "apply_overrides", "check_compatible",
    "episode_tensors", "fit", "load_checkpoint", "lr_at", "preset", "read_config", "runtime",
    "save_checkpoint", "task_names", "train_plan_model", "train_step_model", "train_task_classifier",
    "weights_digest",
]
