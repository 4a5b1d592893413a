"""Trained models on disk: checkpoints (safetensors + JSON config), the task classifier's
network, model specs and the folder layout of a models root.

``import kepp_core.models`` does not load torch: each name loads its module on first use, so
reading a models folder (:func:`trained_horizons`, :func:`read_config`, from
:mod:`~kepp_core.models.folders`) stays light, and the rest loads torch as before.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the names are, for readers and type checkers
    from kepp_core.models.checkpoint import (build_model, check_compatible, dataset_fingerprint, load_checkpoint,
                                             save_checkpoint)
    from kepp_core.models.classifier import TaskClassifier
    from kepp_core.models.folders import CONFIG, GRAPH_FILE, WEIGHTS, read_config, trained_horizons
    from kepp_core.models.spec import (SUITE_ROLES, ModelRole, ModelSpec, load_spec, model_folder,
                                       parse_model_folder)

_MODULE_OF = {
    **dict.fromkeys(("CONFIG", "GRAPH_FILE", "WEIGHTS", "read_config", "trained_horizons"), "folders"),
    **dict.fromkeys(("build_model", "check_compatible", "dataset_fingerprint", "load_checkpoint", "save_checkpoint"),
                    "checkpoint"),
    "TaskClassifier": "classifier",
    **dict.fromkeys(("SUITE_ROLES", "ModelRole", "ModelSpec", "load_spec", "model_folder", "parse_model_folder"), "spec"),
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = value  # found once; later look-ups do not come here
    return value
