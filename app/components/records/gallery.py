"""The Gallery's grid of episode tiles, decided in plain Python (no Streamlit): the records table's columns a grid
is filtered and sorted by (:data:`COLUMNS`), each as codes per row made once per version of the records
(:class:`Browse`: numpy arrays, never a row at a time), the rows a filter and a sort select (:meth:`Browse.rows`),
and what one tile shows (:class:`Tile`: the record's :class:`~components.records.views.PlanView`, its frames, the
Plan page's query) drawn as one block of HTML (:func:`tile_html`). Only the page's tiles are ever built.

>>> import pandas as pd
>>> preds = pd.DataFrame({"method": ["b", "a", "a"], "horizon": [3, 4, 3], "seed": [0, 0, None], "task": ["t"] * 3,
...     "pattern": ["", "other", "other"], "success": [True, False, False], "source": ["r.jsonl"] * 3,
...     "imported": [None] * 3})
>>> extra = pd.DataFrame({"steps right": [3, 1, 2], "first right": [True, False, True],
...     "last right": [True, True, False], "ends right": [True, False, False]})
>>> b = Browse.of(preds, extra)
>>> b.options("method"), b.options("seed"), b.rows({"method": ["a"]}).tolist(), b.rows({}, "T", True).tolist()
(['a', 'b'], ['none', '0'], [1, 2], [1, 0, 2])
>>> b.rows({"outcome": ["failure"], "last": ["wrong"]}).tolist(), b.rows({}, "steps").tolist()
([2], [1, 2, 0])
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from components.records.recorded import Record
from components.records.slides import Frame, record_frames
from components.records.urls import plan_query
from components.records.views import PlanView, record_view
from components.ui import colours
from components.ui.step_links import step_chip_html
from components.ui.text import html_text
from kepp_core.catalog import SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG, SLICE_SUCCESS

__all__ = ["COLUMNS", "NO_SEED", "SORTS", "TILE_CSS", "Browse", "Column", "Tile", "tile_html", "tile_of"]

NO_SEED = "none"  # the seed column's value for records without one (an imported run)


def _right(name: str) -> Callable[[pd.DataFrame, pd.DataFrame], np.ndarray]:
    return lambda preds, extra: np.where(extra[name].to_numpy(dtype=bool), SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG)


@dataclass(frozen=True, kw_only=True)
class Column:
    """A column of the records table the grid is filtered and sorted by: its URL key (``key``, the Gallery's
    table in :mod:`components.ui.url_schema`), its ``label`` and its value per row (``values(preds, extra)``:
    a whole array; ``extra``: :func:`kepp_core.api.row_columns` of ``preds``). Values sort as they are (numbers
    as numbers), and are shown and written in the URL as text."""

    key: str
    label: str
    values: Callable[[pd.DataFrame, pd.DataFrame], np.ndarray]


# Every column a grid is filtered and sorted by, in the page's order.
COLUMNS: dict[str, Column] = {c.key: c for c in (
    Column(key="method", label="Method", values=lambda p, e: p["method"].astype(str).to_numpy(dtype=object)),
    Column(key="T", label="T", values=lambda p, e: p["horizon"].to_numpy(dtype=np.int64)),
    Column(key="seed", label="Seed", values=lambda p, e: p["seed"].fillna(-1).to_numpy().astype(np.int64)),
    Column(key="task", label="Task", values=lambda p, e: p["task"].astype(str).to_numpy(dtype=object)),
    Column(key="pattern", label="Failure pattern",
           values=lambda p, e: p["pattern"].fillna("").replace("", SLICE_SUCCESS).astype(str).to_numpy(dtype=object)),
    Column(key="outcome", label="Outcome",
           values=lambda p, e: np.where(p["success"].to_numpy(dtype=bool), "success", "failure")),
    Column(key="first", label="First step", values=_right("first right")),
    Column(key="last", label="Last step", values=_right("last right")),
    Column(key="ends", label="Both ends", values=_right("ends right")),
    Column(key="file", label="Records file",
           values=lambda p, e: p["imported"].where(p["imported"].notna(), p["source"]).astype(str).to_numpy(dtype=object)),
)}
# What a grid can be sorted by: every column, and the steps its plan has right.
SORTS: dict[str, str] = {**{k: c.label for k, c in COLUMNS.items()}, "steps": "Steps right"}


def _text(key: str, value) -> str:
    return NO_SEED if key == "seed" and value == -1 else str(value)


@dataclass(frozen=True)
class Browse:
    """The records table's :data:`COLUMNS` as codes per row (``codes[key]``: int32, the index of the row's value
    among ``values[key]``, which are sorted), and the steps right per row: what the grid filters and sorts on."""

    codes: dict[str, np.ndarray]
    values: dict[str, list[str]]
    steps: np.ndarray

    @classmethod
    def of(cls, preds: pd.DataFrame, extra: pd.DataFrame) -> Browse:
        """The codes of a predictions table (``extra``: :func:`kepp_core.api.row_columns` of it)."""
        codes, values = {}, {}
        for key, column in COLUMNS.items():
            code, uniques = pd.factorize(column.values(preds, extra), sort=True)
            codes[key], values[key] = code.astype(np.int32), [_text(key, v) for v in uniques]
        return cls(codes, values, extra["steps right"].to_numpy(dtype=np.int64))

    def __len__(self) -> int:
        return len(self.steps)

    def options(self, key: str) -> list[str]:
        """The values of column ``key`` the records hold, in order."""
        return list(self.values[key])

    def mask(self, filters: Mapping[str, Sequence[str]]) -> np.ndarray:
        """Per row: whether it holds one of the values of each filtered column (``filters``: key -> values; an
        empty list or a value the records lack filters nothing in / everything out as a person reads it)."""
        keep = np.ones(len(self), dtype=bool)
        for key, wanted in filters.items():
            if wanted:
                index = {v: i for i, v in enumerate(self.values[key])}
                keep &= np.isin(self.codes[key], [index[v] for v in wanted if v in index])
        return keep

    def order(self, sort: str | None = None, descending: bool = False) -> np.ndarray:
        """Every row's position, sorted by ``sort`` (a key of :data:`SORTS`; None: the records' own order), ties in
        the records' order."""
        if sort is None:
            return np.arange(len(self))[::-1].copy() if descending else np.arange(len(self))
        key = self.steps if sort == "steps" else self.codes[sort]
        return np.argsort(-key if descending else key, kind="stable")

    def rows(self, filters: Mapping[str, Sequence[str]], sort: str | None = None, descending: bool = False,
             order: np.ndarray | None = None) -> np.ndarray:
        """The positions of the rows ``filters`` keeps, in the order of ``sort`` (``order``: that order made
        before, :meth:`order`)."""
        order = self.order(sort, descending) if order is None else order
        return order[self.mask(filters)[order]]


@dataclass(frozen=True, kw_only=True)
class Tile:
    """What one tile shows: the record's view (:func:`~components.records.views.record_view`: the episode, the
    method, the verdict the store judged, plan and truth named), its method, T and seed, its start and goal
    frames (``video_file`` None: the world has no video of it, a placeholder says so) and the Plan page's query
    that opens it (:func:`~components.records.urls.plan_query`)."""

    view: PlanView
    method: str
    episode: str
    horizon: int
    seed: int | None
    query: dict[str, str]
    video_file: Path | None = None
    frames: tuple[Frame, ...] = ()

    @property
    def row(self) -> dict:
        """The tile's row as a playlist item's source (:func:`components.talk.playlists.item_of_row`)."""
        return {"episode": self.episode, "video": self.query.get("video"), "horizon": self.horizon,
                "method": self.method, "seed": self.seed}


def tile_of(row: Mapping, ds) -> Tile:
    """The tile of one predictions-table row on the dataset ``ds``."""
    rec = Record.of_row(row)
    video_file, frames = record_frames(rec, ds)
    return Tile(view=record_view(rec, ds), method=rec.method, episode=rec.episode, horizon=rec.horizon,
                seed=rec.seed, query=plan_query(dict(row)), video_file=video_file, frames=frames)


def _frames_html(frames: Sequence[tuple[str, bytes | None]], missing: str) -> str:
    """The start and goal thumbnails (PNG bytes; None: not decoded) side by side, or the placeholder."""
    if not frames:
        return (f'<div class="kepp-tile-noframe" style="height:60px;display:flex;align-items:center;justify-content:'
                f'center;background:{colours.RAW_TINT};color:{colours.MUTED};font-size:0.75em;border-radius:4px">'
                f'{html_text(missing)}</div>')
    cells = []
    for label, png in frames:
        body = (f'<img alt="{html_text(label)} frame" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}"'
                f' style="width:100%;border-radius:4px">' if png else html_text(f"{label}: no frame"))
        cells.append(f'<div style="flex:1;text-align:center;font-size:0.7em;color:{colours.MUTED}">{body}'
                     f'<div>{html_text(label)}</div></div>')
    return f'<div class="kepp-tile-frames" style="display:flex;gap:4px">{"".join(cells)}</div>'


def tile_html(tile: Tile, thumbnails: Sequence[bytes | None] = (), present: bool = False) -> str:
    """One tile as HTML for Streamlit's Markdown: the frames (``thumbnails``: the PNG of each of ``tile.frames``)
    or a placeholder, the episode, method, T, seed (and an imported method's file), the verdict in its colour (the
    tile's border too), the plan's steps as chips with ✓/✗ over the truth's, each a link to the Graph page centred on
    it (:func:`components.ui.step_links.step_chip_html`; ``present``: in presentation mode); every dataset string
    escaped, the tile's method, seed, episode and verdict in its ``data-`` attributes."""
    v = tile.view
    colour = colours.RIGHT if v.success else colours.WRONG
    frames = [(f.label, png) for f, png in zip(tile.frames, thumbnails)] if tile.video_file is not None else []
    meta = " · ".join([v.label, f"T={tile.horizon}", "no seed" if tile.seed is None else f"seed {tile.seed}"]
                      + ([f"file {v.imported}"] if v.imported else []))
    plan = "".join(step_chip_html(a, s, mark=r, present=present)
                   for a, s, r in zip(v.plan_ids or (), v.plan or (), v.plan_right or ()))
    truth = "".join(step_chip_html(a, s, present=present) for a, s in zip(v.truth_ids or (), v.truth or ()))
    attrs = {"episode": tile.episode, "method": tile.method, "seed": "" if tile.seed is None else tile.seed,
             "horizon": tile.horizon, "success": str(v.success).lower(), "verdict": v.verdict}
    data = " ".join(f'data-{k}="{html_text(x)}"' for k, x in attrs.items())
    return (f'<div class="kepp-tile" {data} style="border:3px solid {colour};border-radius:8px;padding:6px;'
            f'line-height:1.3">{_frames_html(frames, "no video file: features only")}'
            f'<div class="kepp-tile-episode" style="font-weight:600;font-size:0.85em;margin-top:4px">'
            f'{html_text(v.episode)}</div>'
            f'<div class="kepp-tile-meta" style="font-size:0.75em;color:{colours.MUTED}">{html_text(meta)}</div>'
            f'<div class="kepp-tile-verdict" style="color:{colour};font-weight:600;font-size:0.8em">'
            f'{html_text(v.verdict)}</div>'
            f'<div class="kepp-tile-plan" style="font-size:0.7em;color:{colours.SUBTLE}">plan {plan}</div>'
            f'<div class="kepp-tile-truth" style="font-size:0.7em;color:{colours.SUBTLE}">truth {truth}</div></div>')


# The grid's stylesheet (drawn once): a long step name is cut with "…" inside its tile (the link's hover text holds it).
TILE_CSS = ("<style>.kepp-tile .kepp-chip { max-width: 100%; overflow: hidden; text-overflow: ellipsis; "
            "vertical-align: top; }</style>")
