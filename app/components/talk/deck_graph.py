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
>>> nodes = [PlanNode(a, f"step {a}", "path", column=c) for a, c in ((0, 0), (1, 2), (2, 5))]
>>> edges = [PlanEdge(0, 2, "path", 1, .5, .5, "", "#000", 5.0, group=0),
...          PlanEdge(0, 1, "path", 1, .5, .5, "", "#111", 5.0, group=1),
...          PlanEdge(1, 2, "path", 1, .5, .5, "", "#111", 5.0, group=1)]
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

NODE_PX, LINE_PX, LINE_CHARS = 20, 24, 12  # a step name's size and line height (drawing units), characters a line
NODE_W, PAD_Y = 132, 14  # a step's box: its width, and its height over its lines
GAP_X, GAP_Y = 72, 40  # between boxes: across the flow (lanes, self-loops) and along it (an arrow and its head)
LANE = 13  # between two arrows of one pair of steps
BENDS = (0, 36, 72, 110, 150, 200, 260, 330, 420, 520)  # the control point's offsets tried, least first (both sides)
SAMPLES = 40  # points along an arrow when it is checked against the boxes and the arrows placed
MARGIN = 16  # the drawing's edge around what it draws


def lines(label: str, most: int = 3) -> list[str]:
    """A step's name in lines of about :data:`LINE_CHARS` characters, broken at spaces only (a last line
    that would be cut ends with an ellipsis; the full name is the node's hover text).

    >>> lines("remove the tea bag"), lines("boil water and pour it into the cup slowly please")
    (['remove the', 'tea bag'], ['boil water', 'and pour it', 'into the cup…'])
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
        return min(700 / (across * NODE_W + (across - 1) * GAP_X + 90), 600 / (along * h + (along - 1) * GAP_Y + 90))

    turned = scale(nr, nc) > scale(nc, nr)
    return ({a: ((r, c) if turned else (c, r)) for a, (c, r) in cells.items()}, turned, h)


def _quad(p0, c, p1, n: int = SAMPLES) -> list[tuple[float, float]]:
    return [((1 - t) ** 2 * p0[0] + 2 * (1 - t) * t * c[0] + t * t * p1[0],
             (1 - t) ** 2 * p0[1] + 2 * (1 - t) * t * c[1] + t * t * p1[1]) for t in (i / n for i in range(n + 1))]


def _free(mid: tuple[float, float], boxes, labels: Sequence[_Box]) -> bool:
    """Whether a weight written at ``mid`` covers no step and no weight written before it."""
    here = _Box(mid[0], mid[1], 2.4 * NODE_PX, 1.2 * NODE_PX)
    return not any(abs(here.x - b.x) < (here.w + b.w) / 2 + 4 and abs(here.y - b.y) < (here.h + b.h) / 2 + 2
                   for b in [*boxes, *labels])


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


def _route(a: _Box, b: _Box, offset: float, boxes: Sequence[_Box], placed, width: float):
    """An arrow from box ``a`` to box ``b`` in the lane ``offset`` (across the pair's line), bent the least
    that keeps it off every other box and the arrows ``placed`` (else the bend that covers and is covered
    least): its start, control point, end and points, and whether it is clear."""
    dx, dy = b.x - a.x, b.y - a.y
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    nx, ny = -uy, ux
    start = a.exit(a.x + nx * offset, a.y + ny * offset, ux, uy)
    end = b.exit(b.x + nx * offset, b.y + ny * offset, -ux, -uy)
    mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
    straight = start, end
    side = 1 if offset >= 0 else -1
    others = [q for q in boxes if q is not a and q is not b]
    best, least = None, math.inf
    tries = [(bend, sign, shift) for bend in BENDS for sign in ((side, -side) if bend else (1,))
             for shift in ((0.0, 0.3, -0.3, 0.7, -0.7) if bend else (0.0,))]
    for bend, sign, shift in tries:
        if True:
            c = (mx + nx * sign * bend + ux * shift * length, my + ny * sign * bend + uy * shift * length)
            start, end = straight
            if bend:  # a bent arrow leaves and enters its boxes on the side it bends to, clear of the lanes
                start = _towards(a, offset, nx, ny, c)
                end = _towards(b, offset, nx, ny, c)
            pts = _quad(start, c, end)
            inner = np.asarray(pts[1:-1])
            cost = sum(_under(inner, q, 6) + 100 * _under(inner, q, 0) for q in others) + _overlap(inner, placed, width)
            if cost < least:
                best, least = (start, c, end, pts), cost
            if cost <= 0.15:
                return best, True
    return best, False


def _loop(box: _Box, k: int, turned: bool) -> tuple[str, list[tuple[float, float]]]:
    """The ``k``-th self-loop of a step: an arc over its top (beside its left side when turned), larger with
    ``k`` so that each path's loop shows."""
    reach, spread = 18 + 11 * k, 22 + 14 * k
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


def _arrows(pg: plangraph.PlanGraph, at: dict[int, _Box], turned: bool):
    """Each drawn arrow as (edge, path data, its points, the label's place or None), in drawing order."""
    edges = [e for e in pg.edges if e.source in at and e.target in at]
    lanes = _lanes(edges)
    boxes = list(at.values())
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
        (start, c, end, pts), clear = _route(at[e.source], at[e.target], lanes[i], boxes, placed, w)
        if not clear and e.kind != "path":
            continue  # a graph arrow with no course of its own is left out (hover text and legend stay true)
        placed.append((np.asarray(pts[1:-1]), w))
        d = f"M{start[0]:.1f},{start[1]:.1f} Q{c[0]:.1f},{c[1]:.1f} {end[0]:.1f},{end[1]:.1f}"
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
    arrows = _arrows(pg, at, turned)
    colours = sorted({e.colour for e in pg.edges})
    marker = {c: f"a{k}" for k, c in enumerate(colours)}
    defs = "".join(f'<marker id="{marker[c]}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="14" markerHeight="14" '
                   f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
                   f'fill="{esc(c)}"/></marker>' for c in colours)
    xs = [b.x + s * b.w / 2 for b in at.values() for s in (-1, 1)] + [p[0] for *_, pts, _ in arrows for p in pts]
    ys = [b.y + s * b.h / 2 for b in at.values() for s in (-1, 1)] + [p[1] for *_, pts, _ in arrows for p in pts]
    x0, y0 = min(xs) - MARGIN, min(ys) - MARGIN - NODE_PX / 2
    w, hh = max(xs) - x0 + MARGIN, max(ys) - y0 + MARGIN + NODE_PX / 2
    paths, labels, taken = [], [], []
    for e, d, pts, mid in arrows:
        dash = ' stroke-dasharray="8 6"' if e.kind == "path" and e.dashed else ' stroke-dasharray="2 5"' if e.kind == "outside" else ""
        group = f' data-group="{e.group}"' if e.group is not None else ""
        paths.append(f'<path class="edge" data-kind="{esc(e.kind)}"{group} data-source="{e.source}" data-target="{e.target}" '
                     f'd="{d}" fill="none" stroke="{esc(e.colour)}" stroke-width="{max(1.0, float(e.width)):.1f}"{dash} '
                     f'marker-end="url(#{marker[e.colour]})"><title>{esc(e.title)}</title></path>')
        if e.labelled and mid is not None and _free(mid, at.values(), taken):
            taken.append(_Box(mid[0], mid[1], 2.4 * NODE_PX, 1.2 * NODE_PX))
            labels.append(f'<text class="weight" x="{mid[0]:.1f}" y="{mid[1]:.1f}">{e.probability:.2f}</text>')
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
