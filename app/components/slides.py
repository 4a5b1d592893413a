"""What a playlist item's slide shows, decided once in plain Python (no Streamlit): the live slides (the
presenter view's :func:`components.presenter.slide_summary`, the Playlists page's list) and the offline deck
(:mod:`components.deck`) draw the same :class:`Slide`.

A slide shows the record its item names (its method's on its episode, of the seed its query names): the
episode in words, the method, the verdict, the plan against the ground truth, the start and goal frames
(where the dataset has the video file) and the plan graph's paths; an item with no method is planned live
on its slide, one the records do not hold says so.

>>> import pandas as pd
>>> from types import SimpleNamespace as NS
>>> ds = NS(tasks={"tea": NS(name="make tea")}, videos=[], labels=lambda p: [f"s{a}" for a in p])
>>> preds = pd.DataFrame([{"episode": "tea/0287/7:3", "task": "tea", "video": "0287", "horizon": 3, "seed": 0,
...     "method": "kepp-R2", "truth": (1, 2, 3), "plan": (1, 5, 3), "endpoints": (1, 3), "success": False,
...     "pattern": "other", "start_time": 2.0, "goal_time": 9.0}])
>>> s = slide({"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3, "query": {"seed": "0"}, "note": "n"}, ds, preds)
>>> s.title, s.verdict, s.plan, s.plan_right, s.truth
('make tea · video 0287 · steps 8–10 · KEPP R=2 · T=3', 'failure: other', ('s1', 's5', 's3'), (True, False, True), ('s1', 's2', 's3'))
>>> s.frames, s.frames_missing  # the world has no such video file
((), 'no video file for this episode (features only): no frames')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from components.names import episode_label, method_name
from components.recorded import Record, find

__all__ = ["GRAPH_TITLE", "LIVE", "NOT_RECORDED", "NO_FRAMES", "Frame", "Slide", "graph_request", "item_label",
           "item_record", "slide"]

LIVE = "planned live on its slide (no record)"
NOT_RECORDED = "not in the prediction records"
NO_FRAMES = "no video file for this episode (features only): no frames"
GRAPH_TITLE = "Recorded plan · {label} (T={T})"


@dataclass(frozen=True, kw_only=True)
class Frame:
    """One frame a slide shows: ``start`` or ``goal``, at ``seconds`` of the video file."""

    label: str
    seconds: float

    @property
    def caption(self) -> str:
        return f"{self.label} {self.seconds:.1f} s"


@dataclass(frozen=True, kw_only=True)
class Slide:
    """Everything a playlist item's slide shows (see the module's docstring). ``verdict`` is the record's
    (``success`` / ``failure: <pattern>``), else why there is none (:data:`LIVE`, :data:`NOT_RECORDED`);
    ``success`` is None without a record."""

    title: str
    note: str
    verdict: str
    success: bool | None
    record: Record | None = None
    plan: tuple[str, ...] = ()
    plan_right: tuple[bool, ...] = ()
    truth: tuple[str, ...] = ()
    video_file: Path | None = None
    frames: tuple[Frame, ...] = field(default=())
    frames_missing: str = ""  # why no frames are shown ('' when they are, or without a record)


def item_label(item: Mapping, ds, names: Mapping[str, str] | None = None, note: bool = True) -> str:
    """One line naming an item: its episode in words, the method (or planning model) and T (and its note);
    ``names``: the records' display names (an imported method's with its predictions file)."""
    label = episode_label(item["episode"], {t: ds.tasks[t].name for t in ds.tasks})
    how = ((names or {}).get(item["method"]) or method_name(item["method"]) if item["method"]
           else f"model {item['query'].get('model', '—')}")
    return f"{label} · {how} · T={item['T']}" + (f" · {item['note']}" if note and item.get("note") else "")


def item_record(preds, item: Mapping) -> Record | None:
    """The record an item shows (its method's on its episode, of the seed its query names), or None (an
    item planned live, or records that do not hold it)."""
    if preds is None or not item.get("method"):
        return None
    seed = str(item.get("query", {}).get("seed", ""))
    return find(preds, item["episode"], item["method"], int(seed) if seed.lstrip("-").isdigit() else None)


def slide(item: Mapping, ds, preds, names: Mapping[str, str] | None = None) -> Slide:
    """The slide of a playlist ``item`` (a dict as the playlist file holds it) on the dataset ``ds`` and the
    prediction records ``preds`` (``names``: the records' display names, else the record's own label)."""
    rec = item_record(preds, item)
    note = str(item.get("note") or "")
    if rec is None:
        title = item_label(item, ds, names, note=False)
        return Slide(title=title, note=note, verdict=LIVE if not item.get("method") else NOT_RECORDED, success=None)
    title = item_label(item, ds, names or {rec.method: rec.label}, note=False)
    video = next((v for v in ds.videos if v.id == rec.video), None)
    has_file = video is not None and video.video_file is not None and rec.start_time is not None
    frames = ((Frame(label="start", seconds=round(rec.start_time, 2)),
               Frame(label="goal", seconds=round(max(0.0, rec.goal_time - 0.01), 2))) if has_file else ())
    return Slide(title=title, note=note, verdict=rec.verdict, success=rec.success, record=rec,
                 plan=tuple(ds.labels(rec.plan)), plan_right=tuple(rec.steps_right), truth=tuple(ds.labels(rec.truth)),
                 video_file=Path(video.video_file) if has_file else None, frames=frames,
                 frames_missing="" if has_file else NO_FRAMES)


def graph_request(rec: Record, ds) -> dict:
    """The plan graph a record's slide draws (the arguments of :func:`components.plangraph.plan_graph` and its
    title): around its endpoints (its plan's ends for a method without), its plan and graph paths against the
    ground truth, its task's steps."""
    own = ds.task_actions(rec.task) if rec.task in ds.tasks else None
    return {"endpoints": rec.endpoints or (rec.plan[0], rec.plan[-1]), "named_paths": rec.named_paths(),
            "truth": rec.truth, "own": own, "title": GRAPH_TITLE.format(label=rec.label, T=rec.horizon)}
