"""Evaluation: the methods of the evaluation table, zero-shot graph planning, failure analysis,
multi-plan uncertainty and reports (the metrics themselves live in :mod:`kepp_core.metrics`)."""

from kepp_core.evaluation.zeroshot import *  # noqa: F403
from kepp_core.metrics import *  # noqa: F403
from kepp_core import metrics
from kepp_core.evaluation import zeroshot

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *zeroshot.__all__,
    *metrics.__all__,
]
