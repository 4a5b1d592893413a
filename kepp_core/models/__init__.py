"""Trained models on disk: checkpoints (:mod:`~kepp_core.models.checkpoint`: safetensors + JSON
config), the task classifier's network (:mod:`~kepp_core.models.classifier`), model specs
(:mod:`~kepp_core.models.spec`) and a models folder read without torch
(:mod:`~kepp_core.models.folders`). Import from the module you need: this package imports none
of them, so reading a models folder stays light. Model roles and folder names are in
:mod:`kepp_core.catalog`.
"""
