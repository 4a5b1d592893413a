"""Episodes as tensors: observations, actions and task indices for one horizon and split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from kepp_core.data.episodes import Episode, make_episodes, observations
from kepp_core.data.records import Dataset, seeded_split
from kepp_core.errors import KeppError


@dataclass
class EpisodeTensors:
    """``N`` episodes of one horizon: observations ``[N, O]``, actions ``[N, T]``, tasks ``[N]``."""

    episodes: list[Episode]
    obs_start: torch.Tensor
    obs_goal: torch.Tensor
    actions: torch.Tensor
    tasks: torch.Tensor

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def obs_dim(self) -> int:
        return int(self.obs_start.shape[1])

    def subset(self, idx) -> EpisodeTensors:
        idx = torch.as_tensor(idx, dtype=torch.long)
        return EpisodeTensors([self.episodes[i] for i in idx.tolist()], self.obs_start[idx],
                              self.obs_goal[idx], self.actions[idx], self.tasks[idx])


def task_names(dataset: Dataset) -> list[str]:
    """Task ids in a fixed order (the task classifier's classes)."""
    return sorted(dataset.tasks)


def episode_tensors(dataset: Dataset, horizon: int, split: str, setting: str = "conventional",
                    m: int = 3, part: str | None = None, val_fraction: float = 0.1,
                    seed: int = 0) -> EpisodeTensors:
    """Episodes of ``split`` as tensors; ``part`` = ``fit``/``val`` splits the training videos
    further (a seeded ``1 - val_fraction`` / ``val_fraction`` split by video).

    Raises a KeppError if the selection is empty.
    """
    eps = make_episodes(dataset, horizon, split, setting, m)
    if part is not None:
        if split != "train":
            raise KeppError("fit/val parts exist only in the training split")
        ids = sorted({f"{e.video.task}_{e.video.id}" for e in eps})
        sub = seeded_split(ids, seed=10_000 + seed, train_fraction=1 - val_fraction)
        want = "train" if part == "fit" else "test"
        eps = [e for e in eps if sub[f"{e.video.task}_{e.video.id}"] == want]
    if not eps:
        what = f"{split} split" + (f" ({part} part)" if part else "")
        raise KeppError(f"dataset {dataset.name!r} has no episodes of T={horizon} in its {what}")
    starts, goals = observations(eps)
    tidx = {t: i for i, t in enumerate(task_names(dataset))}
    return EpisodeTensors(
        episodes=eps,
        obs_start=torch.from_numpy(np.ascontiguousarray(starts)),
        obs_goal=torch.from_numpy(np.ascontiguousarray(goals)),
        actions=torch.tensor([e.actions for e in eps], dtype=torch.long),
        tasks=torch.tensor([tidx[e.video.task] for e in eps], dtype=torch.long),
    )
