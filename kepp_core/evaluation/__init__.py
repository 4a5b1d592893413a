"""Evaluation: the methods of the evaluation table, zero-shot graph planning, failure analysis,
multi-plan uncertainty and reports (the metrics themselves live in :mod:`kepp_core.metrics`)."""

from kepp_core.evaluation.zeroshot import ZeroShotResult, read_endpoints, zero_shot
from kepp_core.metrics import mean_accuracy, miou_per_batch, miou_per_episode, plan_metrics, success_rate

__all__ = ["ZeroShotResult", "mean_accuracy", "miou_per_batch", "miou_per_episode", "plan_metrics", "read_endpoints",
           "success_rate", "zero_shot"]
