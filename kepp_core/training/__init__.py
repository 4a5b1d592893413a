"""Training loops, presets and distributed launch for the step, planning, task-classifier and endpoint models."""

from kepp_core.models.options import TrainConfig
from kepp_core.training.config import DATASET_PRESET, PRESETS, apply_overrides, lr_at, preset
from kepp_core.training.data import EpisodeTensors, episode_tensors, task_names
from kepp_core.training.loop import fit, runtime, set_cpu_threads, weights_digest
from kepp_core.training.trainers import (train_endpoint_model, train_plan_model, train_step_model,
                                         train_task_classifier)

__all__ = [
    "DATASET_PRESET", "PRESETS", "EpisodeTensors", "TrainConfig", "apply_overrides", "episode_tensors", "fit",
    "lr_at", "preset", "runtime", "set_cpu_threads", "task_names", "train_endpoint_model", "train_plan_model",
    "train_step_model", "train_task_classifier", "weights_digest",
]
