"""What the Heatmaps page puts in its matrices: the order of the actions and the actions that lie
outside the task; and, for a clicked cell (:func:`components.ui.charts.show_heatmap` says which), the episodes
whose plan or truth holds that transition (plain Python, no Streamlit)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["episodes_with", "heatmap_order", "out_of_task"]


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


def _holds(plan, a: int, b: int) -> bool:
    return any(x == a and y == b for x, y in zip(plan, plan[1:]))


def episodes_with(rows, a: int, b: int):
    """The rows (a predictions table's, one method and T) whose plan (``predicted``) or ground truth
    (``true``) has step ``b`` right after step ``a``, with those two columns added.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"plan": [(0, 1, 2), (2, 0, 1), (1, 2, 0)], "truth": [(0, 1, 2), (0, 1, 0), (1, 2, 0)]})
    >>> episodes_with(rows, 0, 1)[["predicted", "true"]].values.tolist()
    [[True, True], [True, True]]
    >>> len(episodes_with(rows, 2, 1))
    0
    """
    predicted = [_holds(tuple(p), a, b) for p in rows["plan"]]
    true = [_holds(tuple(t), a, b) for t in rows["truth"]]
    out = rows.assign(predicted=predicted, true=true)
    return out[out["predicted"] | out["true"]]
