"""What the Heatmaps page puts in its matrices: the order of the actions and the actions that lie
outside the task (plain Python, no Streamlit)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["heatmap_order", "out_of_task"]


def heatmap_order(ds, task: str, plans: Iterable[Sequence[int]]) -> list[int]:
    """The task's own actions first, then any other action the plans use (first appearance)."""
    order = list(ds.task_actions(task))
    seen = set(order)
    for p in plans:
        for a in p:
            if a not in seen:
                seen.add(a)
                order.append(int(a))
    return order


def out_of_task(ds, task: str, actions: Sequence[int]) -> set[int]:
    """The ``actions`` that are not in ``task``'s step list (e.g. predicted from another task)."""
    own = set(ds.task_actions(task)) if not ds.tasks[task].steps else \
        {ds.actions.index(s) for s in ds.tasks[task].steps if s in ds.actions}
    return {int(a) for a in actions if int(a) not in own}
