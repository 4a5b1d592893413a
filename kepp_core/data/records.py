"""Records that cross module borders: steps, videos, tasks and the dataset holding them.

Actions are string labels; identical labels across tasks are one action (one node of the
P²KG). Inside the package an action is referred to by its index in ``Dataset.actions``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.errors import KeppError, unknown_name_error

__all__ = ["Dataset", "Step", "Task", "Video"]

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


def restrict_train(ds: Dataset, keep: set[str]) -> Dataset:
    """``ds`` with only the training videos whose ``task_id`` key is in ``keep`` left in the
    training split (the others move to the split ``unused``; vocabulary and test split unchanged)."""
    videos = [v if v.split != "train" or f"{v.task}_{v.id}" in keep else
              Video(v.id, v.task, v.steps, "unused", v.duration, v.feature_file, v.video_file) for v in ds.videos]
    return Dataset(ds.name, ds.actions, ds.tasks, videos, ds.root, ds.meta)


SEGMENT_SLACK = 1.0  # seconds an annotation may run past the video (rounding in the releases)


MAX_VIDEO_SECONDS = 86_400.0  # a day: longer "videos" are unit mistakes, and per-second arrays would not fit
MAX_LABEL_CHARS = 1_000  # a step label or task name; longer is not a label
MAX_STEPS = 10_000  # steps of one video's plan: the longest of any dataset here has 23


def parse_duration(value, where: str) -> float | None:
    """A video duration in seconds: a finite number > 0 and at most :data:`MAX_VIDEO_SECONDS`
    (``None`` stays ``None``)."""
    if value is None:
        return None
    try:
        d = float(value)
    except (TypeError, ValueError):
        raise KeppError(f"{where}: duration {value!r} is not a number (expected seconds > 0)") from None
    except OverflowError:
        d = math.inf
    if not math.isfinite(d) or d <= 0:
        raise KeppError(f"{where}: duration {value!r} is invalid (expected a finite number of seconds > 0)")
    if d > MAX_VIDEO_SECONDS:
        raise KeppError(f"{where}: duration {value!r} is too long (at most {MAX_VIDEO_SECONDS:g} s)")
    return d


def check_segments(segments: Sequence[tuple[float, float]], where: str, duration: float | None = None,
                   what: str = "segment") -> None:
    """KeppError unless every ``(start, end)`` is finite with ``0 <= start <= end``, ends within the
    video (``duration`` + 1 s) and no two segments overlap.

    >>> check_segments([(0, 2), (2, 5)], "v.csv", duration=5)
    >>> check_segments([(0, 3), (2, 5)], "v.csv")
    Traceback (most recent call last):
    kepp_core.errors.KeppError: v.csv: segments [0, 3] and [2, 5] overlap (expected one step at a time)
    """
    for s, e in segments:
        if not (math.isfinite(s) and math.isfinite(e)):
            raise KeppError(f"{where}: {what} [{s}, {e}] is not finite (expected seconds)")
        if s < 0 or e < s:
            raise KeppError(f"{where}: {what} [{s}, {e}] is invalid (expected 0 <= start <= end)")
        if e > MAX_VIDEO_SECONDS:
            raise KeppError(f"{where}: {what} [{s:g}, {e:g}] ends after {MAX_VIDEO_SECONDS:g} s "
                            f"(the longest video accepted)")
        if duration is not None and e > duration + SEGMENT_SLACK:
            raise KeppError(f"{where}: {what} [{s:g}, {e:g}] ends after the video's duration {duration:g}s")
    ordered = sorted(segments)
    for (s1, e1), (s2, e2) in zip(ordered, ordered[1:]):
        if s2 < e1:
            raise KeppError(f"{where}: {what}s [{s1:g}, {e1:g}] and [{s2:g}, {e2:g}] overlap "
                            f"(expected one step at a time)")


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
