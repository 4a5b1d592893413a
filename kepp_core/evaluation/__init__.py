"""Evaluation: the methods of the evaluation table, zero-shot graph planning
(:mod:`~kepp_core.evaluation.zeroshot`), failure analysis, multi-plan uncertainty and reports, and the
metrics themselves (:mod:`kepp_core.metrics`).

The package shows the metrics only: they are what the layers below evaluation read (training scores its
validation episodes with them), so importing them loads nothing of evaluation's own."""

from kepp_core.metrics import *  # noqa: F403
from kepp_core import metrics

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *metrics.__all__,
]
