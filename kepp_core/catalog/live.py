"""Which planner re-plans a row of the catalogue on two clips (``kepp plan --planning-model``, the Plan page's
``model=``, every Open-in-Plan link): :func:`live_planner`, the one place this is decided, read from the rows
(:mod:`kepp_core.catalog.rows`), and the planner ids it gives (:func:`parse_planner_id`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kepp_core.catalog.roles import ModelRole, parse_plan_model_id, plan_model_id, plan_role  # noqa: F401  (doctests)
from kepp_core.catalog.rows import TEXT_PLANNER, ZERO_SHOT, MethodEntry, find_method, methods

__all__ = ["LivePlanner", "live_planner", "parse_planner_id", "planner_method"]


def planner_method(role: ModelRole) -> MethodEntry | None:
    """The catalogue's method the KEPP planner with the planning model ``role`` is (e.g. ``kepp-R1``;
    :attr:`MethodEntry.planner_role`), None when there is none. Its ``+dec`` and ``+jdec`` rows hold
    the planner's decoding choices (:func:`kepp_core.evaluation.methods.choice.planner_decoding`).

    >>> planner_method(plan_role("graph", 1)).name, planner_method(plan_role("task")) is None
    ('kepp-R1', True)
    """
    return next((e for e in methods() if e.planner_role == role), None)


@dataclass(frozen=True)
class LivePlanner:
    """The planner that re-plans a row's episode on two clips: its ``id`` (``kepp plan
    --planning-model ID``, the Plan page's ``model=``; :func:`parse_planner_id` reads it), its planning
    model (``role``; None: graph + text endpoints, no trained model) and the graph paths it takes
    (``R``; None: a planning model without the graph condition, whose own config says)."""

    id: str
    role: ModelRole | None
    R: int | None


def live_planner(name: str | None) -> LivePlanner | None:
    """Which planner re-plans the row ``name`` on two clips (``kepp plan``, the Plan page's live
    re-plan, every Open-in-Plan link): the KEPP planner with the planning model the row runs
    (:attr:`MethodEntry.planner_role`) or, for a graph-decoded row, the one its base runs (the live
    planner then decodes with the graph as its own choice says, and is labelled with that row); graph +
    text endpoints for the ``graph-text`` row; None where no live planner makes the row's plans
    (baselines, PDPP, ground-truth endpoints, LLM rows, an unknown name). The one place this is decided.

    >>> [live_planner(m).id for m in ("kepp-R2", "kepp-R1+dec", "kepp-nograph+jdec", "kepp-R1+jdec-text", "graph-text")]
    ['graph-R2', 'graph-R1', 'none', 'graph-R1', 'graph-text']
    >>> live_planner("kepp-R2").R, live_planner("kepp-nograph").R, live_planner("graph-text").R
    (2, None, 1)
    >>> [live_planner(m) for m in ("random", "graph-pred", "pdpp", "kepp-gt+dec", "kepp-llm", "nonsense")]
    [None, None, None, None, None, None]
    """
    entry = find_method(name) if name else None
    if entry is not None and entry.base is not None:
        entry = find_method(entry.base)
    if entry is None:
        return None
    role = entry.planner_role
    if role is not None:
        return LivePlanner(plan_model_id(role), role, role.R if role.condition == "graph" else None)
    if entry.kind == ZERO_SHOT and entry.text:
        return LivePlanner(TEXT_PLANNER, None, entry.R)
    return None


def parse_planner_id(text: str) -> ModelRole | None:
    """The planning model a planner id names (:attr:`LivePlanner.id`): a :class:`ModelRole`, or None for
    :data:`TEXT_PLANNER` (no trained model); KeppError for another text.

    >>> parse_planner_id("graph-R1").R, parse_planner_id("graph-text") is None
    (1, True)
    """
    return None if str(text) == TEXT_PLANNER else parse_plan_model_id(text)
