"""What the Plan page shows for an evaluated episode: the record first.

A link that names a record (Open in Plan, a scene, a playlist item, the episode map: the Plan page's
``rec=METHOD`` with ``seed`` beside the episode's ``video``, ``ep`` and ``T``) shows that record of
the prediction records: its plan, the endpoints and graph paths it planned with and its verdict, the
very rows Failure cases and Results show. A live re-plan (the planner run now on the episode's clips)
is a second view, asked for (``live=1``) and labelled with the method the live planner is
(:func:`live_method`: its graph decoding's row, e.g. ``kepp-R2+dec``), never shown in the record's
place. This module makes that decision (:func:`shown`) and the pages ask it; it holds no widget.

>>> import pandas as pd
>>> preds = pd.DataFrame([{"episode": "tea/0287/7:3", "task": "tea", "video": "0287", "horizon": 3, "seed": 0,
...     "method": "kepp-R2", "truth": (1, 2, 3), "plan": (1, 5, 3), "endpoints": (1, 3), "endpoint_scores": [0.9, 0.8],
...     "paths": [(1, 2, 3)], "path_scores": [0.4], "success": False, "patterns": "other", "pattern": "other",
...     "start_time": 2.0, "goal_time": 9.0, "source": "preds.jsonl"}])
>>> view = shown({"video": "0287", "ep": "7", "T": "3", "rec": "kepp-R2", "seed": "0"}, preds, "tea")
>>> view.record.plan, view.record.verdict, view.live
((1, 5, 3), 'failure: other', False)
>>> shown({"video": "0287", "ep": "7", "T": "3"}, preds, "tea").record is None  # no record named: live
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components.ui.names import method_name, method_names
from components.ui.url_schema import PLAN, Expected
from kepp_core import catalog

__all__ = ["Record", "Shown", "display_names", "distinct_paths", "find", "imported_files", "live_method", "record_keys",
           "shown", "whole_key"]


@dataclass(frozen=True, kw_only=True)
class Record:
    """One method's record of one test episode, as the prediction records hold it (a row of
    :func:`kepp_core.api.read_predictions`)."""

    method: str
    episode: str
    task: str
    video: str
    horizon: int
    seed: int | None
    source: str
    truth: tuple[int, ...]
    plan: tuple[int, ...]
    endpoints: tuple[int, int] | None  # the step model's, where the method planned between them
    endpoint_scores: tuple[float, float] | None
    paths: tuple[tuple[int, ...], ...]  # the graph paths it was given, in rank order
    path_scores: tuple[float, ...]
    success: bool
    pattern: str  # the failure pattern it is filed under ('' for a success)
    patterns: tuple[str, ...]  # every pattern that applies
    start_time: float | None
    goal_time: float | None
    imported: str | None = None  # the predictions file an imported method's plans came from (kepp records import)

    @classmethod
    def of_row(cls, row: Mapping) -> Record:
        """The record of one predictions-table row."""
        seed = row.get("seed")
        ends, scores = row.get("endpoints"), row.get("endpoint_scores")
        return cls(method=str(row["method"]), episode=str(row["episode"]), task=str(row.get("task") or ""),
                   video=str(row.get("video") or ""), horizon=int(row["horizon"]),
                   seed=None if seed is None or seed != seed else int(seed), source=str(row.get("source") or ""),
                   truth=tuple(int(a) for a in row["truth"]), plan=tuple(int(a) for a in row["plan"]),
                   endpoints=None if ends is None else (int(ends[0]), int(ends[1])),
                   endpoint_scores=None if scores is None else (float(scores[0]), float(scores[1])),
                   paths=tuple(tuple(int(a) for a in p) for p in row.get("paths") or ()),
                   path_scores=tuple(float(s) for s in row.get("path_scores") or ()), success=bool(row["success"]),
                   pattern=str(row.get("pattern") or ""),
                   patterns=tuple(p.strip() for p in str(row.get("patterns") or "").split(",") if p.strip()),
                   start_time=_number(row.get("start_time")), goal_time=_number(row.get("goal_time")),
                   imported=_text(row.get("imported")))

    @property
    def label(self) -> str:
        """The method's display name (:func:`components.ui.names.method_name`: an imported method's with its file)."""
        return method_name(self.method, self.imported)

    @property
    def verdict(self) -> str:
        """``success``, or ``failure: <pattern>``: the pattern the record is filed under, as the store judged it
        (:func:`kepp_core.catalog.verdict_words`), the one the lists and counts file it under. Every slide, card and
        caption that says a record's verdict asks this one property.

        >>> r = dict(method="vpn", episode="t/v/0:3", task="t", video="v", horizon=3, seed=0, source="", truth=(1, 2, 3),
        ...          plan=(4, 2, 3), endpoint_scores=None, paths=(), path_scores=(), success=False, start_time=None,
        ...          goal_time=None, pattern="wrong_endpoint", patterns=("wrong_endpoint",))
        >>> Record(endpoints=None, **r).verdict, Record(endpoints=(4, 3), **r).verdict
        ('failure: wrong predicted endpoint', 'failure: wrong predicted endpoint')
        """
        return catalog.verdict_words(self.success, self.pattern)

    @property
    def steps_right(self) -> list[bool]:
        """Per step, whether the plan has the true step there."""
        return [a == b for a, b in zip(self.plan, self.truth)]

    @property
    def path_words(self) -> tuple[str, str, str]:
        """What its recorded paths are called, their scores' name and the key of the line that says what they are
        (:data:`components.plan.decision.SYMBOLS`): a row whose decoder keeps several plans
        (:func:`kepp_core.catalog.plans_kept`: a K-best row) has its own plans, best first, scored by its decoding's
        objective (a log score); every other row the graph paths it was given, by probability.

        >>> r = dict(episode="t/v/0:3", task="t", video="v", horizon=3, seed=0, source="", truth=(1, 2, 3), plan=(1, 2, 3),
        ...          endpoints=None, endpoint_scores=None, paths=(), path_scores=(), success=True, start_time=None,
        ...          goal_time=None, pattern="", patterns=())
        >>> Record(method="kepp-R1+kbest", **r).path_words, Record(method="kepp-R2", **r).path_words
        (('K-best plan', 'log score', 'kbest'), ('graph path', 'p', 'paths'))
        """
        kept = catalog.plans_kept((self.method,))
        return ("K-best plan", "log score", "kbest") if kept else ("graph path", "p", "paths")

    def named_paths(self) -> list[tuple[str, tuple[int, ...]]]:
        """The plan graph's named paths: the recorded plan first, then each graph path it was given (a K-best
        row's: its K plans)."""
        kind = self.path_words[0]
        return [("recorded plan", self.plan)] + [(f"{kind} {k + 1}", p) for k, p in enumerate(self.paths)]


def _number(x) -> float | None:
    return None if x is None or x != x else float(x)


def _text(x) -> str | None:
    return None if x is None or x != x or not str(x) else str(x)


def imported_files(preds) -> dict[str, str]:
    """The methods of a predictions table whose plans were imported, each with the predictions file(s)
    they came from (``kepp records import``; the table's ``imported`` column).

    >>> import pandas as pd
    >>> imported_files(pd.DataFrame({"method": ["kepp-R2", "vpn", "vpn"], "imported": [None, "T3.json", "T3.json"]}))
    {'vpn': 'T3.json'}
    """
    if preds is None or "imported" not in preds or not preds["imported"].notna().any():
        return {}
    rows = preds[preds["imported"].notna()]
    return {str(m): ", ".join(sorted(map(str, g.unique()))) for m, g in rows.groupby("method")["imported"]}


def display_names(preds) -> dict[str, str]:
    """Every method of a predictions table with its display name (:func:`components.ui.names.method_name`,
    an imported method's with its predictions file)."""
    methods = [] if preds is None else [str(m) for m in preds["method"].unique()]
    return method_names(methods, imported_files(preds))


@dataclass(frozen=True)
class Shown:
    """What the Plan page shows: ``record`` (None: no record is named, or none matches: the live
    planner's result is the page's one view) and whether the live re-plan is shown too (``live``)."""

    record: Record | None
    live: bool


def record_keys(row: Mapping) -> dict:
    """The Plan page's keys that name a predictions-table row's record: its method and seed.

    >>> record_keys({"method": "kepp-R2", "seed": 0}), record_keys({"method": "random", "seed": None})
    ({'rec': 'kepp-R2', 'seed': 0}, {'rec': 'random', 'seed': None})
    """
    seed = row.get("seed")
    return {"rec": str(row["method"]), "seed": None if seed is None or seed != seed else int(seed)}


def find(preds, episode: str, method: str, seed: int | None = None) -> Record | None:
    """The record of ``method`` on ``episode`` (of ``seed``; its first seed when None), or None."""
    if preds is None or not len(preds):
        return None
    hit = preds[(preds["episode"] == episode) & (preds["method"] == method)]
    if seed is not None and len(hit):
        hit = hit[hit["seed"] == seed]
    return Record.of_row(hit.iloc[0].to_dict()) if len(hit) else None


def shown(query: Mapping[str, str], preds, task: str | None) -> Shown:
    """The decision: the record the Plan page's state names (``query``: the keys of
    :mod:`components.ui.plan_link` as the page keeps them; ``task``: the shown video's task) when the
    records hold it for the shown episode, with the live view only where asked (``live=1``); else
    the live view alone."""
    method, video = query.get("rec"), query.get("video")
    ep, horizon, seed = (whole_key(query, k) for k in ("ep", "T", "seed"))
    record = None
    if method and video and task is not None and ep is not None and horizon is not None:
        record = find(preds, catalog.episode_id(task, video, ep, horizon), method, seed)
    return Shown(record, live=record is None or query.get("live") == "1")


def whole_key(query: Mapping[str, str], name: str) -> int | None:
    """A whole-number key of the Plan page's state as its table reads it (None: absent or not taken).

    >>> whole_key({"ep": "7"}, "ep"), whole_key({"ep": "²"}, "ep"), whole_key({}, "seed")
    (7, None, None)
    """
    try:
        return None if query.get(name) is None else PLAN[name].parse(str(query[name]))
    except Expected:
        return None


def live_method(planner, role: catalog.ModelRole) -> str | None:
    """The evaluation row the live planner is: its graph decoding's row (``kepp-R2+dec``,
    ``kepp-R1+jdec``), else the row of its planning model (``kepp-R2``: the argmax plan)."""
    decoding = getattr(planner, "decoding", None)
    if decoding is not None:
        return decoding.method
    entry = catalog.planner_method(role)
    return entry.name if entry is not None else None


def distinct_paths(paths: Sequence[Sequence[int]], scores: Sequence[float]) -> list[tuple[list[int], tuple, float | None]]:
    """The graph paths with identical ones merged (KEPP repeats the paths in rank order up to R when
    the graph has fewer): ``(ranks (1-based), path, score)`` per distinct path.

    >>> distinct_paths([(1, 2), (1, 2), (1, 3)], [0.5, 0.5, 0.2])
    [([1, 2], (1, 2), 0.5), ([3], (1, 3), 0.2)]
    """
    out: dict[tuple, list] = {}
    for k, p in enumerate(paths):
        key = tuple(int(a) for a in p)
        if key in out:
            out[key][0].append(k + 1)
        else:
            out[key] = [[k + 1], key, float(scores[k]) if k < len(scores) else None]
    return [tuple(v) for v in out.values()]
