"""The Plan page's URL for an evaluated episode (Open in Plan, scenes, playlists, the episode map):
which planning model a method ran and the query that reopens the episode's record (and the model
a live re-plan runs), in the keys of :mod:`components.plan_state`."""

from __future__ import annotations

from components import plan_state, recorded
from kepp_core import catalog

__all__ = ["method_model", "method_planner", "plan_model_id", "plan_query"]


def method_planner(method: str) -> str | None:
    """The Plan page's ``model=`` id of the planner that makes the evaluation ``method``'s plans on two
    clips, when the page can run it (:func:`kepp_core.catalog.planner_id`: a planning model's short id,
    or ``graph-text``, graph + text endpoints), or None (a baseline, a decoded row, an unknown name).

    >>> [method_planner(m) for m in ("kepp-R2", "kepp-nograph", "kepp-R1-struct", "graph-text", "random")]
    ['graph-R2', 'none', 'graph-R1-struct', 'graph-text', None]
    """
    entry = catalog.find_method(method)
    return catalog.planner_id(entry) if entry is not None else None


def method_model(method: str) -> catalog.ModelRole | None:
    """The planning model the evaluation ``method`` ran, when the Plan page can run it
    (:attr:`kepp_core.catalog.MethodEntry.planner_role`), or None (a baseline, a decoded row, graph +
    text endpoints).

    >>> method_model("kepp-R2").R, method_model("graph-text") is None
    (2, True)
    """
    entry = catalog.find_method(method)
    return entry.planner_role if entry is not None else None


def plan_model_id(role: catalog.ModelRole) -> str:
    """The Plan page's ``model=`` id of a planning model: :func:`kepp_core.catalog.plan_model_id`.

    >>> plan_model_id(catalog.ModelRole("plan", "graph", 3)), plan_model_id(catalog.ModelRole("plan", "none"))
    ('graph-R3', 'none')
    """
    return catalog.plan_model_id(role)


def plan_query(row) -> dict[str, str]:
    """The Plan page's URL query that opens a predictions-table row's record (:mod:`components.recorded`:
    its plan, endpoints and verdict, as the records hold them): video, first step, T, the record's
    method and seed, and for a live re-plan beside it the planner that makes the row's plans (the
    planning model the row ran or decodes, or graph + text endpoints for a ``graph-text`` row:
    :func:`method_planner`) with its R where it takes graph paths.

    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2", "seed": 0})
    {'T': '3', 'R': '2', 'model': 'graph-R2', 'video': '0287', 'ep': '7', 'rec': 'kepp-R2', 'seed': '0'}
    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "graph-text", "seed": None})["model"]
    'graph-text'
    """
    parts = catalog.parse_episode_id(row["episode"])
    video = str(row["video"]) if row.get("video") is not None else (parts[1] if parts else "")
    method = str(row["method"])
    model = recorded.live_role(method)
    if model is not None:
        planner, R = plan_model_id(model), model.R if model.condition == "graph" else None
    else:  # a baseline (the page's chosen model re-plans), or graph + text endpoints with the row's R
        planner = method_planner(method)
        R = catalog.find_method(method).R if planner is not None else None
    return plan_state.query(T=int(row["horizon"]), R=R, model=planner, video=video,
                            ep=parts[2] if parts else 0, **recorded.record_keys(row))
