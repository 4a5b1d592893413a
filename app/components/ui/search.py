"""Finding videos and episodes by what a user types, and the clips a video starts with (plain
Python, no Streamlit)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["default_clips", "find_matches", "find_videos"]


def find_matches(texts: Sequence[str], query: str, limit: int | None = None) -> tuple[list[int], int]:
    """Positions of the ``texts`` that hold every word of ``query`` (any case; an empty query
    matches all), the first ``limit`` of them, and how many match in all.

    >>> find_matches(["make tea · a1", "make coffee · a2", "make tea · b3"], "TEA", limit=1)
    ([0], 2)
    >>> find_matches(["make tea · a1", "make coffee · a2"], "make a2")
    ([1], 1)
    """
    words = query.lower().split()
    hits = [i for i, t in enumerate(texts) if all(w in t.lower() for w in words)] if words else range(len(texts))
    return list(hits[:limit] if limit is not None else hits), len(hits)


def find_videos(videos: Sequence, task_names: dict[str, str], task: str | None = None, query: str = "",
                limit: int | None = 200) -> tuple[list, int]:
    """The first ``limit`` of ``videos`` (in their order) of ``task`` (None: every task) whose id,
    task id or task name holds every word of ``query`` (:func:`find_matches`), and how many match.

    >>> from types import SimpleNamespace as V
    >>> vs = [V(id="a1", task="tea"), V(id="b2", task="tea"), V(id="a3", task="coffee")]
    >>> names = {"tea": "make tea", "coffee": "make coffee"}
    >>> [v.id for v in find_videos(vs, names, query="COFFEE")[0]], [v.id for v in find_videos(vs, names, "tea", "B2")[0]]
    (['a3'], ['b2'])
    >>> [v.id for v in find_videos(vs, names, "tea", "make", limit=1)[0]], find_videos(vs, names, "tea", "make")[1]
    (['a1'], 2)
    """
    pool = [v for v in videos if task is None or v.task == task]
    hits, total = find_matches([f"{v.id} {v.task} {task_names.get(v.task, '')}" for v in pool], query, limit)
    return [pool[i] for i in hits], total


def default_clips(duration: float, m: int, start: tuple[float, float] | None = None,
                  goal: tuple[float, float] | None = None) -> tuple[tuple[float, float], tuple[float, float]]:
    """Start and goal clips inside a video of ``duration`` seconds (default: its first and last ``m`` s).

    >>> default_clips(10.0, 3)
    ((0.0, 3.0), (7.0, 10.0))
    """
    start = start or (0.0, min(duration, float(m)))
    goal = goal or (max(0.0, duration - m), duration)
    # annotations may run a fraction of a second past the decoded video: keep the clips inside it
    return (min(start[0], duration), min(start[1], duration)), (min(goal[0], duration), min(goal[1], duration))
