"""Episodes for horizon ``T``: every window of ``T`` consecutive steps of a plan, with the
start and goal observation windows (paper supplement C.4).

Observation settings (``M`` per-second features concatenated, default ``M = 3``):

- ``conventional``: ``M``-second windows centred on the start of ``a_1`` and the end of ``a_T``;
- ``pdpp``: ``[start(a_1), start(a_1)+M)`` and ``[end(a_T)-2, end(a_T)+M-2)``.

Windows are clamped to the video: shifted inside it, or edge-padded if it is shorter than ``M``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kepp_core.data.feature_files import FeatureShapes, load_features
from kepp_core.data.records import Dataset, Video
from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING, SETTINGS, episode_id
from kepp_core.errors import KeppError

__all__ = ["Episode", "make_episodes", "observations"]



@dataclass(frozen=True)
class Episode:
    """``T`` consecutive steps of one video, from step ``first`` on."""

    video: Video
    first: int
    actions: tuple[int, ...]
    start_window: tuple[int, ...] | None  # per-second feature indices of the start observation
    goal_window: tuple[int, ...] | None

    @property
    def id(self) -> str:
        return episode_id(self.video.task, self.video.id, self.first, len(self.actions))

    @property
    def horizon(self) -> int:
        return len(self.actions)

    @property
    def start_time(self) -> float | None:
        return self.video.steps[self.first].start

    @property
    def goal_time(self) -> float | None:
        return self.video.steps[self.first + len(self.actions) - 1].end


def observation_window(t: float, n_seconds: int | None, m: int = DEFAULT_M, offset: int = 0,
                       centred: bool = False) -> tuple[int, ...]:
    """Per-second indices of an ``m``-second window at time ``t`` clamped to ``n_seconds``.

    >>> observation_window(10.4, 100, 3, centred=True)
    (9, 10, 11)
    >>> observation_window(0.2, 100, 3, centred=True)
    (0, 1, 2)
    >>> observation_window(5.0, 2, 3)      # a 2-second video: the last second repeated
    (1, 1, 1)
    """
    first = math.floor(t) + offset - ((m - 1) // 2 if centred else 0)
    if n_seconds is None:
        return tuple(max(0, first) + k for k in range(m))
    if n_seconds >= m:
        first = min(max(first, 0), n_seconds - m)
        return tuple(first + k for k in range(m))
    return tuple(min(max(first + k, 0), n_seconds - 1) for k in range(m))


def clip_window(start: float, end: float, n_seconds: int, m: int = DEFAULT_M) -> tuple[int, ...]:
    """Per-second indices of the ``m``-second observation window of a clip ``[start, end)``
    seconds of a video with ``n_seconds`` feature rows: the ``m`` seconds at the clip's centre,
    the last second repeated when the clip is shorter. The one rule for clips (the planner's
    video clips, the app's start and goal clips).

    >>> clip_window(2.0, 7.0, 10, 3)
    (3, 4, 5)
    >>> clip_window(0.0, 2.0, 2, 3)
    (0, 1, 1)
    """
    first = max(0, math.floor(start + 1e-6))
    last = max(first + 1, min(n_seconds, math.ceil(end - 1e-6)))
    lo = first + max(0, (last - first - m) // 2)
    return tuple(min(lo + k, last - 1) for k in range(m))


def windows(video: Video, first: int, horizon: int, setting: str, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The start and goal windows of the episode of ``horizon`` steps from step ``first`` (per-second indices) in an observation setting."""
    s = video.steps[first].start
    e = video.steps[first + horizon - 1].end
    n = int(math.ceil(video.duration)) if video.duration is not None else None
    if setting == DEFAULT_SETTING:
        return observation_window(s, n, m, centred=True), observation_window(e, n, m, centred=True)
    if setting == "pdpp":
        return observation_window(s, n, m), observation_window(e, n, m, offset=-2)
    raise KeppError(f"unknown observation setting {setting!r} (expected one of {', '.join(SETTINGS)})")


def make_episodes(dataset: Dataset, horizon: int, split: str | None = "test",
                  setting: str = DEFAULT_SETTING, m: int = DEFAULT_M) -> list[Episode]:
    """All episodes of ``horizon`` steps in a split (``None``: both splits).

    Raises a KeppError if ``horizon`` is longer than every plan of the dataset.
    """
    if horizon < 2:
        raise KeppError(f"horizon T={horizon} is too short (expected T >= 2)")
    if setting not in SETTINGS:
        raise KeppError(f"unknown observation setting {setting!r} (expected one of {', '.join(SETTINGS)})")
    if m < 1:
        raise KeppError(f"observation length M={m} must be at least 1")
    longest = max((len(v.steps) for v in dataset.videos), default=0)
    if horizon > longest:
        raise KeppError(f"horizon T={horizon} is longer than every plan of {dataset.name} "
                        f"(the longest has {longest} steps)")
    videos = dataset.videos if split is None else dataset.split(split)
    out = []
    for v in videos:
        timed = v.has_segments
        for i in range(len(v.steps) - horizon + 1):
            sw = gw = None
            if timed:
                sw, gw = windows(v, i, horizon, setting, m)
            out.append(Episode(v, i, v.plan[i : i + horizon], sw, gw))
    return out


def step_episodes(dataset: Dataset, split: str | None = "train", setting: str = DEFAULT_SETTING,
                  m: int = DEFAULT_M) -> list[Episode]:
    """Every step of a split's timed videos as a one-step episode: its start window is the one an
    episode beginning with that step has, its goal window the one an episode ending with it has (so
    a model that names a step from one window can learn from every labelled step, not only the
    steps episodes of some horizon begin or end with).

    >>> from kepp_core.data.records import Step, Video
    >>> v = Video("v", "t", [Step(0, 1.0, 4.0), Step(1, 5.0, 9.0)], duration=12)
    >>> ds = Dataset("d", ["a", "b"], {}, [v])
    >>> [(e.actions, e.start_window, e.goal_window) for e in step_episodes(ds)]
    [((0,), (0, 1, 2), (3, 4, 5)), ((1,), (4, 5, 6), (8, 9, 10))]
    """
    if setting not in SETTINGS:
        raise KeppError(f"unknown observation setting {setting!r} (expected one of {', '.join(SETTINGS)})")
    videos = dataset.videos if split is None else dataset.split(split)
    return [Episode(v, i, (v.plan[i],), *windows(v, i, 1, setting, m))
            for v in videos if v.has_segments for i in range(len(v.steps))]


def common_dim(files) -> int | None:
    """The feature size D most of ``files`` have (from their folders' shape index or their headers;
    None if no files)."""
    shapes = FeatureShapes()
    counts = Counter(shapes.shape(f)[1] for f in {f for f in files if f is not None})
    return counts.most_common(1)[0][0] if counts else None


def observations(episodes: Sequence[Episode], dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and goal observations ``[N, M·D]`` (float32) of episodes, read from feature files.

    Every episode needs segments and a feature file; ``dim`` checks the feature size D
    (default: the size most of the episodes' files have, so an odd file is the one named).
    """
    if dim is None:
        dim = common_dim(ep.video.feature_file for ep in episodes)
    starts, goals = [], []
    for ep in episodes:
        v = ep.video
        if ep.start_window is None:
            raise KeppError(f"video {v.id!r} has no step segments, so it has no observations")
        if v.feature_file is None:
            raise KeppError(f"video {v.id!r} has no feature file (run 'kepp features extract' "
                            f"or give a features folder)")
        feats = load_features(v.feature_file, dim)
        if dim is None:
            dim = feats.shape[1]
        n = feats.shape[0]
        sw = np.minimum(ep.start_window, n - 1)
        gw = np.minimum(ep.goal_window, n - 1)
        starts.append(feats[sw].reshape(-1))
        goals.append(feats[gw].reshape(-1))
    if not episodes:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32)
    return np.stack(starts), np.stack(goals)
