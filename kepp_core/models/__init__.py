"""Trained models on disk: checkpoints (safetensors + JSON config), the task classifier's
network, model specs and the folder layout of a models root."""

from kepp_core.models.checkpoint import (CONFIG, GRAPH_FILE, WEIGHTS, build_model, check_compatible, dataset_fingerprint,
                                         load_checkpoint, read_config, save_checkpoint, trained_horizons)
from kepp_core.models.classifier import TaskClassifier
from kepp_core.models.spec import (SUITE_ROLES, ModelRole, ModelSpec, load_spec, model_folder,
                                   parse_model_folder)

__all__ = [
    "CONFIG", "GRAPH_FILE", "SUITE_ROLES", "WEIGHTS", "ModelRole", "ModelSpec", "TaskClassifier", "build_model",
    "check_compatible", "dataset_fingerprint", "load_checkpoint", "load_spec", "model_folder", "parse_model_folder",
    "read_config", "save_checkpoint", "trained_horizons",
]
