"""What a playlist item's slide shows, decided once in plain Python (no Streamlit): the live slides (the
presenter view's :func:`components.talk.presenter.slide_summary`, the Playlists page's list) and the offline deck
(:mod:`components.talk.deck`) draw the same :class:`Slide`. Each method's part is its record's
:class:`components.records.views.PlanView`, the description the Plan page draws the record from, and the plan
graph's request is made here too: a slide is drawn without the dataset.

A slide shows the record its item names (its method's on its episode, of the seed its query names): the
episode in words, the method, the verdict, the plan against the ground truth, the start and goal frames
(where the dataset has the video file) and the plan graph's paths; an item with no method is planned live
on its slide, one the records do not hold says so. An A/B pair (an item with ``versus``) shows both methods'
verdicts and plans, A first (:data:`SIDES`), beside one ground truth.

>>> import pandas as pd
>>> from types import SimpleNamespace as NS
>>> ds = NS(tasks={"tea": NS(name="make tea")}, videos=[], labels=lambda p: [f"s{a}" for a in p],
...         task_actions=lambda t: [1, 2, 3])
>>> preds = pd.DataFrame([{"episode": "tea/0287/7:3", "task": "tea", "video": "0287", "horizon": 3, "seed": 0,
...     "method": "kepp-R2", "truth": (1, 2, 3), "plan": (1, 5, 3), "endpoints": (1, 3), "success": False,
...     "pattern": "other", "start_time": 2.0, "goal_time": 9.0}])
>>> s = slide({"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3, "query": {"seed": "0"}, "note": "n"}, ds, preds)
>>> s.title, s.verdict, s.plan, s.plan_right, s.truth
('make tea · video 0287 · steps 8–10 · KEPP R=2 · T=3', 'failure: other', ('s1', 's5', 's3'), (True, False, True), ('s1', 's2', 's3'))
>>> s.frames, s.frames_missing  # the world has no such video file
((), 'no video file for this episode (features only): no frames')
>>> s.sides[0].view.ends.steps, s.graph["title"], s.graph["named_paths"]
(('s1', 's3'), 'Recorded plan · KEPP R=2 (T=3)', [('recorded plan', (1, 5, 3))])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from components.ui.names import episode_label, method_name
from components.records.recorded import Record, find
from components.records.views import PlanView, record_view, task_names

__all__ = ["GRAPH_TITLE", "LIVE", "NOT_RECORDED", "NO_FRAMES", "SIDES", "Frame", "Side", "Slide", "drawn_records",
           "graph_request", "item_label", "item_record", "item_records", "record_frames", "slide"]

LIVE = "planned live on its slide (no record)"
NOT_RECORDED = "not in the prediction records"
NO_FRAMES = "no video file for this episode (features only): no frames"
GRAPH_TITLE = "Recorded plan · {label} (T={T})"
PAIR_TITLE = "A · {a} and B · {b} (T={T})"
SIDES = ("A", "B")  # an A/B slide's two methods, as its cards and verdicts name them


@dataclass(frozen=True, kw_only=True)
class Frame:
    """One frame a slide shows: ``start`` or ``goal``, at ``seconds`` of the video file."""

    label: str
    seconds: float

    @property
    def caption(self) -> str:
        return f"{self.label} {self.seconds:.1f} s"


@dataclass(frozen=True, kw_only=True)
class Side:
    """One method's part of a slide: ``name`` (``A`` or ``B`` of an A/B pair, ``''`` for a slide of one
    method), its record (None: planned live, or not in the records), its verdict (the record's
    ``success`` / ``failure: <pattern>``, else :data:`LIVE` or :data:`NOT_RECORDED`; ``success`` None
    without a record) and what its record shows (``view``: :func:`components.records.views.record_view`; its
    plan's step names against the truth: :attr:`plan`, :attr:`plan_right`)."""

    name: str
    method: str
    record: Record | None
    verdict: str
    success: bool | None
    view: PlanView | None = None

    @property
    def plan(self) -> tuple[str, ...]:
        return self.view.plan if self.view is not None else ()

    @property
    def plan_right(self) -> tuple[bool, ...]:
        return self.view.plan_right if self.view is not None else ()


@dataclass(frozen=True, kw_only=True)
class Slide:
    """Everything a playlist item's slide shows (see the module's docstring): one :class:`Side` per method
    (two for an A/B pair, A first); the ground truth, the frames and the graph are the first side's record's
    (:attr:`record`: None when it has none, and the slide is its verdict alone); ``graph``: the plan graph it
    draws (:func:`graph_request`; None without a record)."""

    title: str
    note: str
    sides: tuple[Side, ...]
    truth: tuple[str, ...] = ()
    video_file: Path | None = None
    frames: tuple[Frame, ...] = field(default=())
    frames_missing: str = ""  # why no frames are shown ('' when they are, or without a record)
    graph: dict | None = None

    @property
    def record(self) -> Record | None:
        return self.sides[0].record

    @property
    def verdict(self) -> str:
        """The first (or only) method's verdict."""
        return self.sides[0].verdict

    @property
    def success(self) -> bool | None:
        return self.sides[0].success

    @property
    def plan(self) -> tuple[str, ...]:
        return self.sides[0].plan

    @property
    def plan_right(self) -> tuple[bool, ...]:
        return self.sides[0].plan_right


def item_label(item: Mapping, ds, names: Mapping[str, str] | None = None, note: bool = True) -> str:
    """One line naming an item: its episode in words, the method (or planning model; an A/B pair's two
    methods) and T (and its note); ``names``: the records' display names (an imported method's with its
    predictions file)."""
    label = episode_label(item["episode"], task_names(ds))

    def name(method: str) -> str:
        return (names or {}).get(method) or method_name(method)

    how = (f"A {name(item['method'])} vs B {name(item['versus'])}" if item.get("versus") else name(item["method"])
           if item["method"] else f"model {item['query'].get('model', '—')}")
    return f"{label} · {how} · T={item['T']}" + (f" · {item['note']}" if note and item.get("note") else "")


def item_record(preds, item: Mapping) -> Record | None:
    """The record an item shows (its method's on its episode, of the seed its query names), or None (an
    item planned live, or records that do not hold it)."""
    if preds is None or not item.get("method"):
        return None
    seed = str(item.get("query", {}).get("seed", ""))
    return find(preds, item["episode"], item["method"], int(seed) if seed.lstrip("-").isdigit() else None)


def item_records(preds, item: Mapping) -> list[Record | None]:
    """The records an item's slide shows, A first: its method's (:func:`item_record`), and for an A/B pair
    method B's of the same episode and seed (None where the records lack one)."""
    first = item_record(preds, item)
    if not item.get("versus"):
        return [first]
    seed = first.seed if first is not None else None
    return [first, None if preds is None else find(preds, item["episode"], item["versus"], seed)]


def _side(name: str, method: str, rec: Record | None, ds) -> Side:
    if rec is None:
        return Side(name=name, method=method, record=None, verdict=NOT_RECORDED if method else LIVE, success=None)
    return Side(name=name, method=method, record=rec, verdict=rec.verdict, success=rec.success,
                view=record_view(rec, ds))


def slide(item: Mapping, ds, preds, names: Mapping[str, str] | None = None) -> Slide:
    """The slide of a playlist ``item`` (a dict as the playlist file holds it) on the dataset ``ds`` and the
    prediction records ``preds`` (``names``: the records' display names, else the records' own labels)."""
    recs = item_records(preds, item)
    methods = (item["method"], item.get("versus") or "")[:len(recs)]
    sides = tuple(_side(side, m, r, ds) for side, m, r in zip(SIDES if len(recs) == 2 else ("",), methods, recs))
    own = {r.method: r.label for r in recs if r is not None}  # an imported method's with its file
    title = item_label(item, ds, names or own or None, note=False)
    note = str(item.get("note") or "")
    rec = recs[0]
    if rec is None:
        return Slide(title=title, note=note, sides=sides)
    video_file, frames = record_frames(rec, ds)
    return Slide(title=title, note=note, sides=sides, truth=sides[0].view.truth,
                 video_file=video_file, frames=frames, frames_missing="" if frames else NO_FRAMES,
                 graph=graph_request([r for r in recs if r is not None], ds))


def record_frames(rec: Record, ds) -> tuple[Path | None, tuple[Frame, ...]]:
    """The video file and the start and goal frames a record shows (its slide, the deck, its Gallery tile): the
    first frame of the start clip and the last of the goal clip; ``(None, ())`` where the world has no video file
    of it (features alone)."""
    video = next((v for v in ds.videos if v.id == rec.video), None)
    if video is None or video.video_file is None or rec.start_time is None:
        return None, ()
    return Path(video.video_file), (Frame(label="start", seconds=round(rec.start_time, 2)),
                                    Frame(label="goal", seconds=round(max(0.0, rec.goal_time - 0.01), 2)))


def graph_request(records: Sequence[Record], ds) -> dict:
    """The plan graph a slide draws of its ``records`` (one, or an A/B pair's two, A first; the arguments of
    :func:`components.graph.plangraph.plan_graph` and its title): around the first record's endpoints (its plan's
    ends for a method without), its plan and graph paths (a pair: both plans) against the ground truth, its
    task's steps."""
    rec = records[0]
    own = ds.task_actions(rec.task) if rec.task in ds.tasks else None
    if len(records) == 2:
        named = [(f"{side} · {r.label}", r.plan) for side, r in zip(SIDES, records)]
        title = PAIR_TITLE.format(a=records[0].label, b=records[1].label, T=rec.horizon)
    else:
        named, title = rec.named_paths(), GRAPH_TITLE.format(label=rec.label, T=rec.horizon)
    return {"endpoints": rec.endpoints or (rec.plan[0], rec.plan[-1]), "named_paths": named, "truth": rec.truth,
            "own": own, "title": title}


def drawn_records(shown: Slide) -> list[Record]:
    """The records a slide's graph draws (:func:`graph_request`): its sides' that the records hold, A first."""
    return [s.record for s in shown.sides if s.record is not None]
