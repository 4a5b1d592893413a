"""The deck's plan graph as a static SVG a room can read: step names at :data:`NODE_PX` units, laid out so that
the drawing is at least as large as its units on the slide's graph box (20 px names at 1280x720 and 1024x768,
growing with the screen), and every named path's arrows visible.

The steps sit on the plan graph's grid with its empty columns and rows closed up, left to right (turned top to
bottom where that draws them larger), so a path reads in its order. Arrows between one pair of steps (two
paths that share a pair, a pair and its reverse) run in lanes side by side, each from its own point of the
box's side; an arrow whose straight course would pass under a step or over another path's arrow bends out
(the least bend, tried on both sides, that clears them). A path's self-loops are nested arcs, one per path.
Arrows are drawn context first, then the paths, the ground truth last: a grey arrow never covers a path.

>>> from components.graph.plangraph import PlanEdge, PlanGraph, PlanNode
>>> from components.ui.colours import PATH_COLOURS
>>> nodes = [PlanNode(a, f"step {a}", "path", column=c) for a, c in ((0, 0), (1, 2), (2, 5))]
>>> edges = [PlanEdge(0, 2, "path", 1, .5, .5, "", PATH_COLOURS[0], 5.0, group=0),
...          PlanEdge(0, 1, "path", 1, .5, .5, "", PATH_COLOURS[1], 5.0, group=1),
...          PlanEdge(1, 2, "path", 1, .5, .5, "", PATH_COLOURS[1], 5.0, group=1)]
>>> svg = graph_svg(PlanGraph(nodes, edges, [], []))
>>> svg.count('class="step"'), svg.count('data-kind="path"')  # 0 → 2 bends round step 1
(3, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from components.graph import plangraph
from components.ui.colours import NODE_STROKE
from components.ui.text import page_text as esc

__all__ = ["NODE_PX", "graph_svg", "lines"]

NODE_PX, LINE_PX, LINE_CHARS = 20, 24, 11  # a step name's size and line height (drawing units), characters a line
NODE_W, PAD_Y = 122, 14  # a step's box: its width, and its height over its lines
GAP_X, GAP_Y = 62, 34  # between boxes: across the flow (lanes, self-loops) and along it (an arrow and its head)
LANE = 13  # between two arrows of one pair of steps
BENDS = (0, 14, 28, 48, 72, 110, 150, 200, 260, 330, 420, 520)  # the control point's offsets tried, least first (both sides)
SAMPLES = 40  # points along an arrow when it is checked against the boxes and the arrows placed
MARGIN = 8  # the drawing's edge around what it draws
# The drawing's box at the smallest screens (in units: px where the root type is 20 px; the graph's column at
# 1024x768 and 1280x720, kepp-deck.css): a drawing this size or smaller draws its step names at 20 px or more
FIT = (520, 510)


def lines(label: str, most: int = 3) -> list[str]:
    """A step's name in lines of about :data:`LINE_CHARS` characters, broken at spaces only (a last line
    that would be cut ends with an ellipsis; the full name is the node's hover text).

    >>> lines("remove the tea bag"), lines("boil water and pour it into the cup slowly please")
    (['remove the', 'tea bag'], ['boil water', 'and pour it', 'into the…'])
    """
    out: list[str] = []
    for word in str(label).split():
        if out and len(out[-1]) + 1 + len(word) <= LINE_CHARS:
            out[-1] += " " + word
        else:
            out.append(word)
    if len(out) > most:
        out = out[:most]
        out[-1] += "…"
    return out or [""]


@dataclass(frozen=True)
class _Box:
    x: float  # centre
    y: float
    w: float
    h: float

    def holds(self, px: float, py: float, margin: float = 0.0) -> bool:
        return abs(px - self.x) < self.w / 2 + margin and abs(py - self.y) < self.h / 2 + margin

    def exit(self, x: float, y: float, dx: float, dy: float) -> tuple[float, float]:
        """Where the ray from (x, y) inside the box, along (dx, dy), leaves it."""
        tx = (self.w / 2 - math.copysign(1, dx) * (x - self.x)) / abs(dx) if dx else math.inf
        ty = (self.h / 2 - math.copysign(1, dy) * (y - self.y)) / abs(dy) if dy else math.inf
        t = min(tx, ty)
        return x + t * dx, y + t * dy


def _grid(pg: plangraph.PlanGraph) -> tuple[dict[int, tuple[int, int]], bool, float]:
    """Each step's (column, row) with the empty ones closed up, turned where that draws the steps larger in
    a 16:9 graph box; whether turned; the boxes' height."""
    cols = {c: k for k, c in enumerate(sorted({n.column for n in pg.nodes}))}
    rows = {r: k for k, r in enumerate(sorted({n.row for n in pg.nodes}))}
    cells = {n.id: (cols[n.column], rows[n.row]) for n in pg.nodes}
    h = PAD_Y + LINE_PX * max(len(lines(n.label)) for n in pg.nodes)
    nc, nr = len(cols), len(rows)

    def scale(across: int, along: int) -> float:  # across: boxes side by side; along: boxes stacked
        return min(FIT[0] / (across * NODE_W + (across - 1) * GAP_X + 2 * MARGIN),
                   FIT[1] / (along * h + (along - 1) * GAP_Y + 2 * MARGIN))

    turned = scale(nr, nc) > scale(nc, nr)
    return ({a: ((r, c) if turned else (c, r)) for a, (c, r) in cells.items()}, turned, h)


def _quad(p0, c, p1, n: int = SAMPLES) -> list[tuple[float, float]]:
    return [((1 - t) ** 2 * p0[0] + 2 * (1 - t) * t * c[0] + t * t * p1[0],
             (1 - t) ** 2 * p0[1] + 2 * (1 - t) * t * c[1] + t * t * p1[1]) for t in (i / n for i in range(n + 1))]


def _label_spot(pts, boxes, labels: Sequence[_Box], lines_at: np.ndarray, bounds) -> tuple[float, float] | None:
    """Where an arrow's weight is written: beside its middle, inside ``bounds``, covering no step, no weight
    written before it and no path's arrow (None: nowhere near; its hover text has it)."""
    (ax, ay), (mx, my), (bx, by) = pts[len(pts) // 2 - 2], pts[len(pts) // 2], pts[len(pts) // 2 + 2]
    n = math.hypot(bx - ax, by - ay) or 1.0
    nx, ny = -(by - ay) / n, (bx - ax) / n
    for d in (1.6, -1.6, 2.6, -2.6):
        here = _Box(mx + nx * d * NODE_PX, my + ny * d * NODE_PX, 2.4 * NODE_PX, 1.2 * NODE_PX)
        if any(abs(here.x - b.x) < (here.w + b.w) / 2 + 4 and abs(here.y - b.y) < (here.h + b.h) / 2 + 2
               for b in [*boxes, *labels]):
            continue
        if len(lines_at) and _under(lines_at, here, 4):
            continue
        if not (bounds[0] + here.w / 2 <= here.x <= bounds[2] - here.w / 2
                and bounds[1] + here.h / 2 <= here.y <= bounds[3] - here.h / 2):
            continue
        return here.x, here.y
    return None


def _under(points: np.ndarray, box: _Box, margin: float) -> int:
    """How many of ``points`` lie under ``box`` (grown by ``margin``)."""
    return int(((abs(points[:, 0] - box.x) < box.w / 2 + margin) & (abs(points[:, 1] - box.y) < box.h / 2 + margin)).sum())


def _overlap(points: np.ndarray, others: Sequence[tuple[np.ndarray, float]], width: float) -> float:
    """The largest share of an arrow's points under another (either way round: ``points``, the inner points of
    the arrow being placed, against each arrow placed: its inner points and width)."""
    most = 0.0
    for pts, w in others:
        near = np.hypot(points[:, None, 0] - pts[None, :, 0], points[:, None, 1] - pts[None, :, 1]) < (w + width) / 2 + 4
        most = max(most, near.any(axis=1).mean(), near.any(axis=0).mean())
    return float(most)


def _towards(box: _Box, offset: float, nx: float, ny: float, c: tuple[float, float]) -> tuple[float, float]:
    """Where the ray from the lane's point of ``box`` towards the control point ``c`` leaves the box."""
    x, y = box.x + nx * offset, box.y + ny * offset
    dx, dy = c[0] - x, c[1] - y
    n = math.hypot(dx, dy) or 1.0
    return box.exit(x, y, dx / n, dy / n)


def _cubic(p0, c1, c2, p1, n: int = SAMPLES) -> list[tuple[float, float]]:
    return [tuple((1 - t) ** 3 * p0[i] + 3 * (1 - t) ** 2 * t * c1[i] + 3 * (1 - t) * t * t * c2[i] + t ** 3 * p1[i]
                  for i in (0, 1)) for t in (k / n for k in range(n + 1))]


def _shapes(a: _Box, b: _Box, offset: float, channels: Sequence[float], turned: bool):
    """The courses tried for an arrow from ``a`` to ``b`` in the lane ``offset``, least bent first: as path data
    and points. The straight one; quadratic curves bent to either side (a bent arrow leaves and enters its boxes
    on the side it bends to, clear of the lanes); then courses along a gap between the boxes' columns (rows when
    not turned), ``channels``, leaving and entering the boxes from the side that faces it."""
    dx, dy = b.x - a.x, b.y - a.y
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    nx, ny = -uy, ux
    start = a.exit(a.x + nx * offset, a.y + ny * offset, ux, uy)
    end = b.exit(b.x + nx * offset, b.y + ny * offset, -ux, -uy)
    mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
    yield f"M{start[0]:.1f},{start[1]:.1f} L{end[0]:.1f},{end[1]:.1f}", _quad(start, (mx, my), end)
    side = 1 if offset >= 0 else -1
    for bend in BENDS[1:]:
        for sign in (side, -side):
            for shift in (0.0, 0.3, -0.3, 0.7, -0.7):
                c = (mx + nx * sign * bend + ux * shift * length, my + ny * sign * bend + uy * shift * length)
                p0, p1 = _towards(a, offset, nx, ny, c), _towards(b, offset, nx, ny, c)
                yield f"M{p0[0]:.1f},{p0[1]:.1f} Q{c[0]:.1f},{c[1]:.1f} {p1[0]:.1f},{p1[1]:.1f}", _quad(p0, c, p1)
    for g, k in ((g, k) for k in (0, 1, -1, 2, -2) for g in channels):
        lane = offset * 0.8 + k * LANE
        if turned:  # the gap is a column: out sideways, along it, in sideways
            p0 = a.exit(a.x, a.y + lane, math.copysign(1, g - a.x), 0)
            p1 = b.exit(b.x, b.y + lane, math.copysign(1, g - b.x), 0)
            c1, c2 = (g + lane, p0[1]), (g + lane, p1[1])
        else:
            p0 = a.exit(a.x + lane, a.y, 0, math.copysign(1, g - a.y))
            p1 = b.exit(b.x + lane, b.y, 0, math.copysign(1, g - b.y))
            c1, c2 = (p0[0], g + lane), (p1[0], g + lane)
        yield (f"M{p0[0]:.1f},{p0[1]:.1f} C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} {p1[0]:.1f},{p1[1]:.1f}",
               _cubic(p0, c1, c2, p1))


def _route(a: _Box, b: _Box, offset: float, boxes: Sequence[_Box], placed, width: float, bounds, channels, turned):
    """An arrow from box ``a`` to box ``b`` in the lane ``offset`` (across the pair's line): the first course
    (:func:`_shapes`) that keeps it off every other box and the arrows ``placed`` and inside ``bounds``, else
    the one that covers and is covered least (a box's cover counting most, then leaving the bounds): its path
    data and points, and whether it is clear."""
    others = [q for q in boxes if q is not a and q is not b]
    best, least = None, math.inf
    for d, pts in _shapes(a, b, offset, channels, turned):
        inner = np.asarray(pts[1:-1])
        outside = int(((inner[:, 0] < bounds[0]) | (inner[:, 0] > bounds[2]) | (inner[:, 1] < bounds[1])
                       | (inner[:, 1] > bounds[3])).sum())
        cost = (sum(_under(inner, q, 6) + 100 * _under(inner, q, 0) for q in others) + 4 * outside
                + _overlap(inner, placed, width))
        if cost < least:
            best, least = (d, pts), cost
        if cost <= 0.1:
            return best, True
    return best, False


def _loop(box: _Box, k: int, turned: bool) -> tuple[str, list[tuple[float, float]]]:
    """The ``k``-th self-loop of a step: an arc over its top (beside its left side when turned), larger with
    ``k`` so that each path's loop shows."""
    reach, spread = 12 + 8 * k, 18 + 10 * k
    if turned:
        sx, sy = box.x - box.w / 2, box.y
        p0, c1, c2, p1 = (sx, sy - spread / 2), (sx - 1.4 * reach, sy - spread), (sx - 1.4 * reach, sy + spread), (sx, sy + spread / 2)
    else:
        sx, sy = box.x, box.y - box.h / 2
        p0, c1, c2, p1 = (sx - spread / 2, sy), (sx - spread, sy - 1.4 * reach), (sx + spread, sy - 1.4 * reach), (sx + spread / 2, sy)
    d = f"M{p0[0]:.1f},{p0[1]:.1f} C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} {p1[0]:.1f},{p1[1]:.1f}"
    return d, [p0, c1, c2, p1]


def _order(edges: Sequence[plangraph.PlanEdge]) -> list[int]:
    """The arrows' indices in drawing order: the graph's first, then the paths by group, the ground truth (group
    0) last."""
    return sorted(range(len(edges)), key=lambda i: (1, -(edges[i].group or 0)) if edges[i].kind == "path" else (0, 0))


def _lanes(edges: Sequence[plangraph.PlanEdge]) -> dict[int, float]:
    """Each arrow's lane offset among the arrows of its pair of steps (either direction), paths first."""
    pairs: dict[tuple[int, int], list[int]] = {}
    for i, e in enumerate(edges):
        if e.source != e.target:
            pairs.setdefault((min(e.source, e.target), max(e.source, e.target)), []).append(i)
    out: dict[int, float] = {}
    for (lo, _), members in pairs.items():
        members.sort(key=lambda i: (edges[i].kind != "path", edges[i].group or 0))
        for k, i in enumerate(members):
            off = (k - (len(members) - 1) / 2) * LANE
            out[i] = off if edges[i].source == lo else -off  # one frame for the pair: the reverse's sides swap
    return out


def _bounds(boxes) -> tuple[float, float, float, float]:
    """Where arrows may run without shrinking the drawing below :data:`FIT`: the boxes' extent, grown evenly to
    that size where it is smaller (left, top, right, bottom)."""
    boxes = list(boxes)
    x0, x1 = min(b.x - b.w / 2 for b in boxes), max(b.x + b.w / 2 for b in boxes)
    y0, y1 = min(b.y - b.h / 2 for b in boxes), max(b.y + b.h / 2 for b in boxes)
    rx, ry = max(0.0, (FIT[0] - 2 * MARGIN - (x1 - x0)) / 2), max(0.0, (FIT[1] - 2 * MARGIN - (y1 - y0)) / 2)
    return x0 - rx, y0 - ry, x1 + rx, y1 + ry


def _arrows(pg: plangraph.PlanGraph, at: dict[int, _Box], turned: bool, bounds):
    """Each drawn arrow as (edge, path data, its points, the label's place or None), in drawing order; arrows
    run inside ``bounds`` where they can."""
    edges = [e for e in pg.edges if e.source in at and e.target in at]
    lanes = _lanes(edges)
    boxes = list(at.values())
    across = sorted({q.x if turned else q.y for q in boxes})
    step = (NODE_W + GAP_X) if turned else (boxes[0].h + GAP_Y)
    channels = [(u + v) / 2 for u, v in zip(across, across[1:])] + [across[0] - step / 2, across[-1] + step / 2]
    placed: list[tuple[list, float]] = []
    loops: dict[int, int] = {}
    routed: dict[int, tuple] = {}
    for i in sorted(range(len(edges)), key=lambda i: (edges[i].kind != "path", edges[i].group or 0)):  # paths first
        e, w = edges[i], max(1.0, float(edges[i].width))
        if e.source == e.target:
            k = loops[e.source] = loops.get(e.source, -1) + 1
            d, pts = _loop(at[e.source], k, turned)
            routed[i] = (d, pts, None)
            continue
        (d, pts), clear = _route(at[e.source], at[e.target], lanes[i], boxes, placed, w, bounds, channels, turned)
        if not clear and e.kind != "path":
            continue  # a graph arrow with no course of its own is left out (hover text and legend stay true)
        placed.append((np.asarray(pts[1:-1]), w))
        routed[i] = (d, pts, pts[len(pts) // 2])
    return [(edges[i], *routed[i]) for i in _order(edges) if i in routed]


def graph_svg(pg: plangraph.PlanGraph) -> str:
    """A :class:`~components.graph.plangraph.PlanGraph` as a static SVG that scales to its box: the steps on the
    closed-up grid (see the module's docstring), the arrows in their colours, styles and lanes, the weights it
    labels where they cover no step, every hover text as a ``<title>``."""
    if not pg.nodes:
        return ""
    cells, turned, h = _grid(pg)
    at = {a: _Box(c * (NODE_W + GAP_X), r * (h + GAP_Y), NODE_W, h) for a, (c, r) in cells.items()}
    bounds = _bounds(at.values())
    arrows = _arrows(pg, at, turned, bounds)
    colours = sorted({e.colour for e in pg.edges})
    marker = {c: f"a{k}" for k, c in enumerate(colours)}
    defs = "".join(f'<marker id="{marker[c]}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="14" markerHeight="14" '
                   f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
                   f'fill="{esc(c)}"/></marker>' for c in colours)
    paths, labels, taken = [], [], []
    lines_at = np.asarray([p for e, _, pts, _ in arrows if e.kind == "path" for p in pts])
    for e, d, pts, mid in arrows:
        dash = ' stroke-dasharray="8 6"' if e.kind == "path" and e.dashed else ' stroke-dasharray="2 5"' if e.kind == "outside" else ""
        group = f' data-group="{e.group}"' if e.group is not None else ""
        paths.append(f'<path class="edge" data-kind="{esc(e.kind)}"{group} data-source="{e.source}" data-target="{e.target}" '
                     f'd="{d}" fill="none" stroke="{esc(e.colour)}" stroke-width="{max(1.0, float(e.width)):.1f}"{dash} '
                     f'marker-end="url(#{marker[e.colour]})"><title>{esc(e.title)}</title></path>')
        spot = _label_spot(pts, at.values(), taken, lines_at, bounds) if e.labelled and mid is not None else None
        if spot is not None:
            taken.append(_Box(spot[0], spot[1], 2.4 * NODE_PX, 1.2 * NODE_PX))
            labels.append(f'<text class="weight" x="{spot[0]:.1f}" y="{spot[1]:.1f}" dominant-baseline="middle">'
                          f'{e.probability:.2f}</text>')
    drawn = [*at.values(), *taken]  # the boxes and the weights written, and every arrow's points
    xs = [b.x + s * b.w / 2 for b in drawn for s in (-1, 1)] + [p[0] for *_, pts, _ in arrows for p in pts]
    ys = [b.y + s * b.h / 2 for b in drawn for s in (-1, 1)] + [p[1] for *_, pts, _ in arrows for p in pts]
    x0, y0 = min(xs) - MARGIN, min(ys) - MARGIN
    w, hh = max(xs) - x0 + MARGIN, max(ys) - y0 + MARGIN
    nodes = []
    for n in pg.nodes:
        b, text = at[n.id], lines(n.label)
        spans = "".join(f'<tspan x="{b.x:.1f}" dy="{(-(len(text) - 1) * LINE_PX / 2) if k == 0 else LINE_PX}">'
                        f'{esc(line)}</tspan>' for k, line in enumerate(text))
        nodes.append(f'<g class="step" data-id="{n.id}" data-role="{esc(n.role)}"><title>{esc(n.title or n.label)}</title>'
                     f'<rect x="{b.x - b.w / 2:.1f}" y="{b.y - b.h / 2:.1f}" width="{b.w}" height="{b.h}" rx="12" '
                     f'fill="{esc(n.colour)}" stroke="{NODE_STROKE}" stroke-width="1.5"/>'
                     f'<text x="{b.x:.1f}" y="{b.y:.1f}" fill="{esc(n.font_colour)}" font-size="{NODE_PX}" '
                     f'dominant-baseline="middle" text-anchor="middle">{spans}</text></g>')
    return (f'<svg class="graph-svg" viewBox="{x0:.1f} {y0:.1f} {w:.1f} {hh:.1f}" preserveAspectRatio="xMidYMid meet" '
            f'data-turned="{int(turned)}" role="img" aria-label="plan graph"><defs>{defs}</defs>{"".join(paths)}'
            f'{"".join(nodes)}<g class="weights">{"".join(labels)}</g></svg>')
