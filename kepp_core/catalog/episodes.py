"""Episode ids: ``task/video/first:T``, the one codec."""

from __future__ import annotations

__all__ = ["episode_id", "parse_episode_id"]

def episode_id(task: str, video: str, first: int, horizon: int) -> str:
    """The id of the episode of ``horizon`` steps from step ``first`` (0-based) of a video:
    ``task/video/first:T``. :func:`parse_episode_id` is its inverse, the only code that reads one.

    >>> episode_id("coffee", "0001", 2, 3)
    'coffee/0001/2:3'
    """
    return f"{task}/{video}/{first}:{horizon}"


def parse_episode_id(episode: str) -> tuple[str, str, int, int] | None:
    """``(task, video, first step, T)`` of an episode id (:func:`episode_id`), None for another string.

    >>> parse_episode_id("coffee/0001/2:3"), parse_episode_id("x")
    (('coffee', '0001', 2, 3), None)
    """
    try:
        head, tail = str(episode).rsplit("/", 1)
        task, video = head.split("/", 1) if "/" in head else ("", head)
        first, horizon = tail.split(":")
        return task, video, int(first), int(horizon)
    except ValueError:
        return None

