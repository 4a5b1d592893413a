"""Records that cross module borders: steps, videos, tasks and the dataset holding them.

Actions are string labels; identical labels across tasks are one action (one node of the
P²KG). Inside the package an action is referred to by its index in ``Dataset.actions``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.errors import unknown_name_error

SPLITS = ("train", "test")


@dataclass(frozen=True)
class Step:
    """One annotated step of a video: an action index and its segment in seconds.

    ``start``/``end`` are ``None`` for plans given without segments.
    """

    action: int
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class Task:
    id: str
    name: str
    steps: tuple[str, ...] = ()  # the task's step labels in its canonical order, when known


@dataclass
class Video:
    """One video: its task, ordered steps (sorted by segment start), split and files."""

    id: str
    task: str
    steps: list[Step]
    split: str = "train"
    duration: float | None = None
    feature_file: Path | None = None
    video_file: Path | None = None

    @property
    def plan(self) -> tuple[int, ...]:
        """The ordered action indices of the video."""
        return tuple(s.action for s in self.steps)

    @property
    def has_segments(self) -> bool:
        return all(s.start is not None and s.end is not None for s in self.steps)


@dataclass
class Dataset:
    """Videos of one domain with their tasks and action vocabulary."""

    name: str
    actions: list[str]
    tasks: dict[str, Task]
    videos: list[Video]
    root: Path | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._action_index = {a: i for i, a in enumerate(self.actions)}

    # --- vocabulary -------------------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return len(self.actions)

    def action_index(self, label: str) -> int:
        """Index of an action label; unknown labels raise a KeppError naming close matches."""
        try:
            return self._action_index[label]
        except KeyError:
            raise unknown_name_error("action", label, self.actions) from None

    def vocabulary_hash(self) -> str:
        """A short fingerprint of the action vocabulary (to match graphs and checkpoints)."""
        return hashlib.sha1("\n".join(self.actions).encode()).hexdigest()[:12]

    # --- views --------------------------------------------------------------------------
    def split(self, name: str) -> list[Video]:
        if name not in SPLITS:
            raise unknown_name_error("split", name, SPLITS)
        return [v for v in self.videos if v.split == name]

    def plans(self, split: str = "train") -> list[tuple[int, ...]]:
        return [v.plan for v in self.split(split)]

    def video(self, video_id: str) -> Video:
        for v in self.videos:
            if v.id == video_id:
                return v
        raise unknown_name_error("video", video_id, [v.id for v in self.videos])

    def task_actions(self, task: str) -> list[int]:
        """Action indices of a task: its canonical steps, then any others its videos use."""
        if task not in self.tasks:
            raise unknown_name_error("task", task, self.tasks)
        order = [self._action_index[s] for s in self.tasks[task].steps if s in self._action_index]
        seen = set(order)
        for v in self.videos:
            if v.task == task:
                for a in v.plan:
                    if a not in seen:
                        seen.add(a)
                        order.append(a)
        return order

    def labels(self, plan: Iterable[int]) -> list[str]:
        return [self.actions[a] for a in plan]


def vocabulary_from(labels_in_order: Iterable[str]) -> list[str]:
    """Deduplicate labels keeping their first appearance (the vocabulary's order)."""
    return list(dict.fromkeys(labels_in_order))


def seeded_split(video_ids: Sequence[str], seed: int = 0, train_fraction: float = 0.7) -> dict[str, str]:
    """A reproducible 70/30 split by video, independent of input order.

    Each video's split is decided by a hash of (seed, id), so adding videos never moves
    existing ones between splits.
    """
    out = {}
    for vid in video_ids:
        h = int(hashlib.sha1(f"{seed}:{vid}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        out[vid] = "train" if h < train_fraction else "test"
    return out
