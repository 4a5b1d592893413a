"""Where the Graph page's steps sit: left to right by their typical place in the training plans, in
columns of at most as many steps as the canvas has readable rows, the chosen step alone in the
middle column (or at the left edge when nothing comes before it). Plain Python: the drawing's
script (:mod:`components.graph.network`) spreads this grid over its canvas.

>>> pos = typical_positions([(0, 1, 2), (0, 2, 3)], 5)
>>> [round(p, 2) for p in pos]
[0.0, 0.5, 0.75, 1.0, 0.5]
>>> cells, grid = grid_by_position([0, 1, 2, 3], pos, centre=2, max_rows=4)
>>> cells[2], cells[0][0] < 0 < cells[3][0], grid[0]
((0, 0.0), True, (-1, 1))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["grid_by_position", "typical_positions"]


def typical_positions(plans: Iterable[Sequence[int]], num_actions: int) -> list[float]:
    """Each action's mean place in ``plans``, from 0 (a plan's first step) to 1 (its last); 0.5 for an
    action no plan holds (one-step plans count as 0)."""
    total, seen = [0.0] * num_actions, [0] * num_actions
    for plan in plans:
        last = max(len(plan) - 1, 1)
        for k, a in enumerate(plan):
            total[int(a)] += k / last
            seen[int(a)] += 1
    return [t / n if n else 0.5 for t, n in zip(total, seen)]


def _chunks(items: list[int], max_rows: int) -> list[list[int]]:
    """``items`` cut into the fewest consecutive columns of at most ``max_rows``, as even as they go."""
    if not items:
        return []
    n = -(-len(items) // max_rows)
    size, extra = divmod(len(items), n)
    out, at = [], 0
    for k in range(n):
        step = size + (k < extra)
        out.append(items[at:at + step])
        at += step
    return out


def grid_by_position(nodes: Iterable[int], positions: Sequence[float], centre: int | None = None,
                     max_rows: int = 8) -> tuple[dict[int, tuple[int, float]], tuple[tuple[int, int], tuple[float, float]]]:
    """Grid cells ``{node: (column, row)}`` and the grid's ``((first, last) column, (first, last) row)``:
    the steps ordered by their typical place (``positions``, :func:`typical_positions`; ties by id),
    those placed before ``centre``'s on its left and the others on its right, each side cut into
    columns of at most ``max_rows`` (the further from the centre, the further from its place); each
    column's steps centred on row 0. The centre is column 0, in the middle of the grid when steps lie
    on both sides; with no ``centre``, every step from column 0 rightwards."""
    order = sorted({int(a) for a in nodes} - ({int(centre)} if centre is not None else set()),
                   key=lambda a: (positions[a], a))
    max_rows = max(1, int(max_rows))
    if centre is None:
        left, right = [], _chunks(order, max_rows)
        first = 0
    else:
        here = positions[int(centre)]
        left = _chunks([a for a in order if positions[a] < here], max_rows)
        right = _chunks([a for a in order if positions[a] >= here], max_rows)
        first = 1
    cells: dict[int, tuple[int, float]] = {}
    columns = [(-len(left) + k, col) for k, col in enumerate(left)]
    columns += [(first + k, col) for k, col in enumerate(right)]
    if centre is not None:
        columns.append((0, [int(centre)]))
    tallest = 1
    for c, members in columns:
        tallest = max(tallest, len(members))
        for r, a in enumerate(members):
            cells[a] = (c, r - (len(members) - 1) / 2)
    lo = min((c for c, _ in columns), default=0)
    hi = max((c for c, _ in columns), default=0)
    if centre is not None and lo < 0 < hi:  # steps on both sides: the centre in the middle
        lo, hi = -max(-lo, hi), max(-lo, hi)
    half = (tallest - 1) / 2
    return cells, ((lo, hi), (-half, half))
