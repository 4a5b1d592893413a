"""The Plan page's URL for an evaluated episode (Open in Plan, scenes, playlists, the episode map):
the query that reopens the episode's record and names the planner a live re-plan runs
(:func:`kepp_core.catalog.live_planner`), in the keys of :mod:`components.ui.plan_link`."""

from __future__ import annotations

from components.ui import plan_link
from components.records import recorded
from kepp_core import catalog

__all__ = ["plan_query"]


def plan_query(row) -> dict[str, str]:
    """The Plan page's URL query that opens a predictions-table row's record (:mod:`components.records.recorded`:
    its plan, endpoints and verdict, as the records hold them): video, first step, T, the record's
    method and seed, and for a live re-plan beside it the planner that re-plans the row
    (:func:`kepp_core.catalog.live_planner`, the one place that decides: the planning model the row
    runs or decodes, or graph + text endpoints for a ``graph-text`` row) with its R where it takes graph
    paths.

    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2", "seed": 0})
    {'T': '3', 'R': '2', 'model': 'graph-R2', 'video': '0287', 'ep': '7', 'rec': 'kepp-R2', 'seed': '0'}
    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "graph-text", "seed": None})["model"]
    'graph-text'
    """
    parts = catalog.parse_episode_id(row["episode"])
    video = str(row["video"]) if row.get("video") is not None else (parts[1] if parts else "")
    live = catalog.live_planner(str(row["method"]))  # None: a baseline (the page's chosen model re-plans)
    return plan_link.query(T=int(row["horizon"]), R=live.R if live else None, model=live.id if live else None,
                            video=video, ep=parts[2] if parts else 0, **recorded.record_keys(row))
