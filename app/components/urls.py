"""The Plan page's URL for an evaluated episode (Open in Plan, scenes, playlists): which planning
model a method ran and the query that reopens the episode with it, in the keys of
:mod:`components.plan_state`."""

from __future__ import annotations

from components import plan_state
from kepp_core import catalog

__all__ = ["method_model", "plan_model_id", "plan_query"]


def method_model(method: str) -> catalog.ModelRole | None:
    """The planning model the evaluation ``method`` ran, when the Plan page can run it
    (the planning model the KEPP planner runs as that row: :attr:`kepp_core.catalog.MethodEntry.planner_role`),
    or None (a baseline, a decoded row).

    >>> [plan_model_id(method_model(m)) for m in ("kepp-R2", "kepp-nograph", "kepp-R1-struct")]
    ['graph-R2', 'none', 'graph-R1-struct']
    >>> method_model("random") is None
    True
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
    """The Plan page's URL query that opens a predictions-table row's episode (and plans it):
    video, first step, T, and the row's planning model (:func:`plan_model_id`) and R when the
    method is KEPP's.

    >>> plan_query({"episode": "tea/0287/7:3", "video": "0287", "horizon": 3, "method": "kepp-R2"})
    {'T': '3', 'R': '2', 'model': 'graph-R2', 'video': '0287', 'ep': '7', 'plan': '1'}
    """
    parts = catalog.parse_episode_id(row["episode"])
    video = str(row["video"]) if row.get("video") is not None else (parts[1] if parts else "")
    model = method_model(str(row["method"]))
    return plan_state.query(T=int(row["horizon"]), R=model.R if model is not None and model.condition == "graph" else None,
                            model=None if model is None else plan_model_id(model), video=video,
                            ep=parts[2] if parts else 0, plan=True)
