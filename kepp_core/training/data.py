"""Episodes as tensors: observations, actions and task indices for one horizon and split.

Observations are tensors, or (``store`` given) memory-mapped rows read per batch
(:mod:`kepp_core.training.windows`): the same training code runs on a corpus whose windows do
not fit in memory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING
from kepp_core.data.episodes import Episode, make_episodes, observations, step_episodes
from kepp_core.data.records import Dataset, seeded_split
from kepp_core.errors import KeppError
from kepp_core.training.windows import MappedRows, mapped_observations

__all__ = ["EpisodeTensors", "episode_tensors", "task_names"]


@dataclass
class EpisodeTensors:
    """``N`` episodes of one horizon: observations ``[N, O]`` (tensors or memory-mapped rows),
    actions ``[N, T]``, tasks ``[N]``."""

    episodes: list[Episode]
    obs_start: torch.Tensor | MappedRows
    obs_goal: torch.Tensor | MappedRows
    actions: torch.Tensor
    tasks: torch.Tensor

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def obs_dim(self) -> int:
        return int(self.obs_start.shape[1])

    @property
    def mapped(self) -> bool:
        return isinstance(self.obs_start, MappedRows)

    def subset(self, idx) -> EpisodeTensors:
        """The episodes ``idx`` (in that order, repeats allowed); mapped rows stay mapped."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        pick = (lambda rows: rows.subset(idx)) if self.mapped else (lambda rows: rows[idx])
        return EpisodeTensors([self.episodes[i] for i in idx.tolist()], pick(self.obs_start),
                              pick(self.obs_goal), self.actions[idx], self.tasks[idx])

    def in_memory(self) -> EpisodeTensors:
        """The same episodes with their observations read into tensors."""
        if not self.mapped:
            return self
        every = torch.arange(len(self))
        return EpisodeTensors(self.episodes, self.obs_start[every], self.obs_goal[every], self.actions, self.tasks)


def task_names(dataset: Dataset) -> list[str]:
    """Task ids in a fixed order (the task classifier's classes)."""
    return sorted(dataset.tasks)


def part_indices(episodes: list[Episode], part: str, val_fraction: float, seed: int) -> list[int]:
    """Positions of the episodes in the ``fit`` or ``val`` part of training videos (a seeded
    ``1 - val_fraction`` / ``val_fraction`` split by video)."""
    ids = sorted({f"{e.video.task}_{e.video.id}" for e in episodes})
    sub = seeded_split(ids, seed=10_000 + seed, train_fraction=1 - val_fraction)
    want = "train" if part == "fit" else "test"
    return [i for i, e in enumerate(episodes) if sub[f"{e.video.task}_{e.video.id}"] == want]


def episode_tensors(dataset: Dataset, horizon: int, split: str, setting: str = DEFAULT_SETTING,
                    m: int = DEFAULT_M, part: str | None = None, val_fraction: float = 0.1,
                    seed: int = 0, store: str | Path | None = None, progress: bool = False) -> EpisodeTensors:
    """Episodes of ``split`` as tensors; ``part`` = ``fit``/``val`` splits the training videos
    further (a seeded ``1 - val_fraction`` / ``val_fraction`` split by video). ``store``: a
    folder where the observation windows are written once and memory-mapped from.

    Raises a KeppError if the selection is empty.
    """
    eps = make_episodes(dataset, horizon, split, setting, m)
    if part is not None:
        if split != "train":
            raise KeppError("fit/val parts exist only in the training split")
        eps = [eps[i] for i in part_indices(eps, part, val_fraction, seed)]
    if not eps:
        what = f"{split} split" + (f" ({part} part)" if part else "")
        raise KeppError(f"dataset {dataset.name!r} has no episodes of T={horizon} in its {what}")
    return _tensors(dataset, eps, store, progress)


def step_tensors(dataset: Dataset, split: str = "train", setting: str = DEFAULT_SETTING, m: int = DEFAULT_M,
                 part: str | None = None, val_fraction: float = 0.1, seed: int = 0, store: str | Path | None = None,
                 progress: bool = False) -> EpisodeTensors:
    """Every step of the split's videos (``part``: of its ``fit`` or ``val`` videos, as
    :func:`episode_tensors` cuts them) as a one-step episode
    (:func:`~kepp_core.data.episodes.step_episodes`): the window at each step's start and at its
    end, ``actions`` ``[N, 1]``. Raises a KeppError if there is none."""
    eps = step_episodes(dataset, split, setting, m)
    if part is not None:
        eps = [eps[i] for i in part_indices(eps, part, val_fraction, seed)]
    if not eps:
        raise KeppError(f"dataset {dataset.name!r} has no timed steps in its {split} split")
    return _tensors(dataset, eps, store, progress)


def _tensors(dataset: Dataset, eps: list[Episode], store: str | Path | None, progress: bool) -> EpisodeTensors:
    tidx = {t: i for i, t in enumerate(task_names(dataset))}
    if store is not None:
        starts, goals = mapped_observations(eps, store, progress)
    else:
        s, g = observations(eps)
        starts, goals = torch.from_numpy(np.ascontiguousarray(s)), torch.from_numpy(np.ascontiguousarray(g))
    return EpisodeTensors(
        episodes=eps,
        obs_start=starts,
        obs_goal=goals,
        actions=torch.tensor([e.actions for e in eps], dtype=torch.long),
        tasks=torch.tensor([tidx[e.video.task] for e in eps], dtype=torch.long),
    )
