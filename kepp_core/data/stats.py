"""Summary statistics of a dataset (``kepp data stats``)."""

from __future__ import annotations

import numpy as np

from kepp_core.catalog import TABLE_HORIZONS
from kepp_core.data.records import SPLITS, Dataset

__all__ = ["dataset_stats"]


def dataset_stats(dataset: Dataset, horizons=TABLE_HORIZONS) -> dict:
    """Videos, tasks, actions, steps per video and episodes per split for each horizon."""
    lengths = np.array([len(v.steps) for v in dataset.videos], dtype=float)
    out = {
        "dataset": dataset.name,
        "videos": len(dataset.videos),
        "videos_per_split": {s: len(dataset.split(s)) for s in SPLITS},
        "tasks": len(dataset.tasks),
        "actions": dataset.num_actions,
        "steps_per_video_mean": float(lengths.mean()) if len(lengths) else 0.0,
        "steps_per_video_std": float(lengths.std()) if len(lengths) else 0.0,
        "with_features": sum(v.feature_file is not None for v in dataset.videos),
        "with_videos": sum(v.video_file is not None for v in dataset.videos),
        "episodes": {},
    }
    for t in horizons:
        out["episodes"][str(t)] = {
            s: int(sum(max(0, len(v.steps) - t + 1) for v in dataset.split(s))) for s in SPLITS}
    return out
