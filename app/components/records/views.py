"""What a result shows, described once in plain Python (no Streamlit): a :class:`PlanView` holds one method's
result on one episode with every label resolved (the episode in words, its method and verdict, the endpoints
against the truth, the plan against the truth, the distinct graph paths), made by :func:`record_view` (a
record) or :func:`live_view` (a live plan) from the dataset. The Plan page's result
(:mod:`components.plan.result`), the slides (:mod:`components.records.slides`), the presenter view and the deck
draw it; none of them looks a label up in the dataset.

>>> import pandas as pd
>>> from types import SimpleNamespace as NS
>>> from components.records.recorded import find
>>> ds = NS(tasks={"tea": NS(name="make tea")}, labels=lambda p: [f"s{a}" for a in p])
>>> preds = pd.DataFrame([{"episode": "tea/0287/7:3", "task": "tea", "video": "0287", "horizon": 3, "seed": 0,
...     "method": "kepp-R2", "truth": (1, 2, 3), "plan": (1, 5, 3), "endpoints": (1, 3), "success": False,
...     "pattern": "other", "paths": [(1, 2, 3), (1, 2, 3)], "path_scores": [0.5, 0.5]}])
>>> v = record_view(find(preds, "tea/0287/7:3", "kepp-R2", 0), ds)
>>> v.episode, v.verdict, v.plan, v.plan_right, v.truth, v.steps_right
('make tea · video 0287 · steps 8–10', 'failure: other', ('s1', 's5', 's3'), (True, False, True), ('s1', 's2', 's3'), 2)
>>> [(p.ranks, p.steps, p.same) for p in v.paths], v.ends.steps, v.ends.right
([((1, 2), ('s1', 's2', 's3'), 'the ground truth')], ('s1', 's3'), (True, True))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.records.recorded import Record, distinct_paths
from components.ui.names import episode_label
from components.ui.step_links import step_link_html
from components.ui.text import html_text

__all__ = ["Ends", "PathView", "PlanView", "ends_of", "live_view", "record_view", "task_names"]


def task_names(ds) -> dict[str, str]:
    """Task id -> task name."""
    return {t: ds.tasks[t].name for t in ds.tasks}


@dataclass(frozen=True, kw_only=True)
class Ends:
    """The endpoints (â₁, â_T) a plan was made between, named: ``steps`` (None: the method planned without
    them, or its imported plans do not record them: ``imported``, their file), their ``scores``, and against
    the ground truth, each one ``right`` and the true step (``truth``; None where the truth is not known)."""

    steps: tuple[str, str] | None
    scores: tuple[float | None, float | None] = (None, None)
    right: tuple[bool, bool] | None = None
    truth: tuple[str, str] | None = None
    imported: str | None = None
    ids: tuple[int, int] | None = None  # the steps' action ids: each step a link to its graph
    truth_ids: tuple[int, int] | None = None

    def html(self, present: bool = False) -> str:
        """One line of HTML, the same on the Plan page, the records pages and the presenter view: each end
        marked right or wrong (the true step named where it is wrong), with its score; labels escaped, step
        names and marks classed for presentation mode's sizes; where their action ids are known, each step a link
        to the Graph page centred on it (:mod:`components.ui.step_links`; ``present``: in presentation mode).

        >>> Ends(steps=("<b>", "s3"), scores=(0.5, None), right=(False, True), truth=("s1", "s3")).html()
        'â₁ <b class="kepp-step">&lt;b&gt;</b> <span class="kepp-mark">✗</span> (truth: <b class="kepp-step">s1</b>) · 0.50 &emsp; â_T ...'
        """
        if self.steps is None:
            return ("â₁, â_T: — (this method does not predict them)" if not self.imported else
                    f"â₁, â_T: — (not recorded: the imported predictions {html_text(self.imported)} hold plans only)")

        def step(label: str, action: int | None = None) -> str:
            name = f'<b class="kepp-step">{html_text(label)}</b>'
            return name if action is None else step_link_html(action, name, label, present=present)

        parts = []
        for k, (name, label, score) in enumerate(zip(["â₁", "â_T"], self.steps, self.scores)):
            mark = "" if self.right is None else (' <span class="kepp-mark">✓</span>' if self.right[k]
                                                  else f' <span class="kepp-mark">✗</span> (truth: '
                                                  f'{step(self.truth[k], self.truth_ids and self.truth_ids[k])})')
            parts.append(f"{name} {step(label, self.ids and self.ids[k])}{mark}" + (f" · {score:.2f}" if score is not None else ""))
        return (" · " if self.right is None else " &emsp; ").join(parts)


def ends_of(ds, endpoints, scores, truth, imported: str | None = None) -> Ends:
    """The :class:`Ends` of ``endpoints`` (action ids, or None) against ``truth`` (action ids, or None)."""
    if endpoints is None:
        return Ends(steps=None, imported=imported)
    ends = (int(endpoints[0]), int(endpoints[-1]))
    true_ends = None if truth is None else (int(truth[0]), int(truth[-1]))
    return Ends(steps=tuple(ds.labels(ends)), scores=tuple(scores) if scores is not None else (None, None),
                right=None if truth is None else (ends[0] == truth[0], ends[1] == truth[-1]),
                truth=None if truth is None else tuple(ds.labels(true_ends)), ids=ends, truth_ids=true_ends)


@dataclass(frozen=True, kw_only=True)
class PathView:
    """One distinct graph path a plan was given: its ranks (1-based; KEPP repeats a path up to R when the graph
    has fewer), its steps named, its score, and what the view shows with the same steps already (``same``:
    ``the plan``, ``the ground truth``; '' if none)."""

    ranks: tuple[int, ...]
    steps: tuple[str, ...]
    score: float | None
    same: str = ""
    ids: tuple[int, ...] | None = None  # the steps' action ids (each card a link to its graph)


@dataclass(frozen=True, kw_only=True)
class PlanView:
    """One method's result on one episode, as every view of it shows it (see the module's docstring):
    ``view`` (``Recorded``, ``Live``), the method's ``label``, ``success`` and the ``verdict`` (None where the
    truth is not known), the episode in words, the endpoints, the plan and the truth named (None: none), the
    plan's steps right, a live plan's planning model's own plan before graph decoding (``raw_plan``), the
    distinct graph paths; for a record, its seed, its records file and, for imported
    plans, their file."""

    view: str
    label: str
    success: bool
    verdict: str | None
    episode: str
    ends: Ends
    plan: tuple[str, ...] | None
    truth: tuple[str, ...] | None
    plan_right: tuple[bool, ...] | None = None
    raw_plan: tuple[str, ...] | None = None
    # the plan's, the truth's and the raw plan's action ids (each step card a link to its graph)
    plan_ids: tuple[int, ...] | None = None
    truth_ids: tuple[int, ...] | None = None
    raw_plan_ids: tuple[int, ...] | None = None
    paths: tuple[PathView, ...] = ()
    # what ``paths`` are, their scores' name and the SYMBOLS line that says so: the graph paths given, by
    # probability, or a K-best row's own K plans, by log score (Record.path_words)
    paths_words: tuple[str, str, str] = ("graph path", "p", "paths")
    seed: int | None = None
    source: str = ""
    imported: str | None = None

    @property
    def steps_right(self) -> int | None:
        """How many of the plan's steps are the truth's (None: no plan or no truth)."""
        return None if self.plan_right is None else sum(self.plan_right)


def _paths(ds, paths, scores, plan, truth) -> tuple[PathView, ...]:
    shown = {**({} if truth is None else {tuple(truth): "the ground truth"}),
             **({} if plan is None else {tuple(plan): "the plan"})}
    return tuple(PathView(ranks=tuple(ranks), steps=tuple(ds.labels(path)), score=score, same=shown.get(tuple(path), ""),
                          ids=tuple(map(int, path)))
                 for ranks, path, score in distinct_paths(paths, scores))


def _named(ds, plan, truth) -> dict:
    """The plan and the truth named, and the plan's steps right."""
    return {"plan": None if plan is None else tuple(ds.labels(plan)),
            "truth": None if truth is None else tuple(ds.labels(truth)),
            "plan_ids": None if plan is None else tuple(map(int, plan)),
            "truth_ids": None if truth is None else tuple(map(int, truth)),
            "plan_right": None if plan is None or truth is None else tuple(a == b for a, b in zip(plan, truth))}


def record_view(rec: Record, ds) -> PlanView:
    """What a record shows: its episode, method, verdict (the record's), endpoints, plan, truth and graph paths
    (a K-best row's: its own K plans and their scores, :attr:`~components.records.recorded.Record.path_words`)."""
    return PlanView(view="Recorded", label=rec.label, success=bool(rec.success), verdict=rec.verdict,
                    episode=episode_label(rec.episode, task_names(ds)),
                    ends=ends_of(ds, rec.endpoints, rec.endpoint_scores, rec.truth, rec.imported),
                    paths=_paths(ds, rec.paths, rec.path_scores, rec.plan, rec.truth),
                    paths_words=rec.path_words,
                    seed=rec.seed, source=rec.source, imported=rec.imported, **_named(ds, rec.plan, rec.truth))


def live_view(ds, result, truth: Sequence[int] | None, *, label: str, episode: str | None, what: str,
              no_plan: bool = False, graph_paths: bool = True) -> PlanView:
    """What a live plan shows (``result``: the planner's, ``truth``: the episode's, or None for an upload;
    ``episode``: its id, else ``what`` the input is): its verdict where the truth is known (``no plan`` when
    ``no_plan``), the endpoints its graph paths run between (the step model's, or the text tower's), the plan
    (none when ``no_plan``) and, when ``graph_paths`` (a model with the graph condition, a plan made), the top-R
    paths it was given."""
    plan = None if no_plan else result.plan
    right = truth is not None and not no_plan and tuple(result.plan) == tuple(truth)
    _, ends, scores = result.path_ends
    paths = _paths(ds, result.paths[:result.R], result.path_scores[:result.R], plan, truth) if graph_paths else ()
    return PlanView(view="Live", label=label, success=right,
                    verdict=None if truth is None and not no_plan else "no plan" if no_plan else
                    "success" if right else "failure",
                    episode=episode_label(episode, task_names(ds)) if episode else what,
                    ends=ends_of(ds, ends, scores, truth), paths=paths, **_named(ds, plan, truth),
                    raw_plan=None if no_plan else tuple(ds.labels(result.raw_plan or result.plan)),
                    raw_plan_ids=None if no_plan else tuple(map(int, result.raw_plan or result.plan)))
