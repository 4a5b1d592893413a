"""Evaluation: planning metrics (and, later, baselines, failure analysis and reports)."""

from kepp_core.evaluation.metrics import (
    mean_accuracy,
    miou_per_batch,
    miou_per_episode,
    plan_metrics,
    success_rate,
)

__all__ = ["mean_accuracy", "miou_per_batch", "miou_per_episode", "plan_metrics", "success_rate"]
