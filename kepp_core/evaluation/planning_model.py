"""The planning model a models folder plans with by default: one decision, made like the decoding
choice (:mod:`kepp_core.evaluation.methods.choice`) and asked by every planner, page and command
(``kepp plan`` without ``--planning-model``, the Plan page's first planning model, ``kepp demo``:
:func:`kepp_core.api.planning_model`).

**Making it** (:func:`choose_planning_model`, ``kepp plan --choose-planning-model``): every planning
model of ``ROOT/T<h>`` that the KEPP planner runs as an evaluation row (:func:`candidates`: ``graph-R1``,
``graph-R2``, ``graph-R1-struct``, ``none``) is scored as the planner would decode it — its best
graph-decoded row's choice (``+dec``, or ``+jdec`` with the endpoint model;
:func:`~kepp_core.evaluation.methods.choice.planner_choice`), made on the planning models' held-out
validation episodes of the training videos, never the test split — and the highest validation SR wins
(ties keep the earlier: :data:`~kepp_core.catalog.roles.DEFAULT_PLANNING_MODEL` first, then by folder
name). The candidates must have been scored on the same validation videos. The choice and the
decoding choices it rests on are stored beside the models (``ROOT/T<h>/planner.json``,
``decoding.json``).

**Asking it** (:func:`stored_planning_model`, light: JSON and the checkpoints' configs, no torch): the
stored choice where ``ROOT/T<h>/planner.json`` holds one made for these models; otherwise, and for a
folder without the file (the shipped demo models), :data:`~kepp_core.catalog.roles.DEFAULT_PLANNING_MODEL`
(``graph-R1``). A choice made for models that changed since, or whose model is gone, is not used and
says so (:meth:`PlanningModelChoice.describe`); a file that is not a choice is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from kepp_core.catalog import CONFIG_FILE, DEFAULT_M, DEFAULT_SETTING, ModelRole, model_folder, parse_model_folder
from kepp_core.catalog import parse_plan_model_id, plan_model_id, planner_method
from kepp_core.catalog.files import PLANNER_FILE
from kepp_core.catalog.roles import DEFAULT_PLANNING_MODEL
from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_json, read_json
from kepp_core.models.folders import model_stamps, planning_models
from kepp_core.schema import Meta, Positive, Struct, convert

__all__ = ["PLANNER_FORMAT", "PlanningModelChoice", "candidates", "choose_planning_model", "stored_planning_model"]

PLANNER_FORMAT = 1  # how a stored planning-model choice was made; a file of another format is not used
Percent = Annotated[float, Meta(ge=0, le=100)]
PlannerId = Annotated[str, Meta(min_length=1, max_length=64)]


class _Candidate(Struct):
    planning_model: PlannerId
    method: PlannerId
    val_SR: Percent


class _Stored(Struct):
    """What ``ROOT/T<h>/planner.json`` holds (read strictly: it is a user's file)."""

    format: int
    planning_model: PlannerId
    method: PlannerId
    val_SR: Percent
    val_episodes: Positive
    candidates: Annotated[list[_Candidate], Meta(min_length=1, max_length=64)]
    models: Annotated[dict[str, object], Meta(max_length=64)]


@dataclass(frozen=True, kw_only=True)
class PlanningModelChoice:
    """The planning model a models folder plans with by default: ``role`` (its short id: :attr:`id`);
    for a stored choice, the row it decodes as (``method``), its validation SR and episodes and the file
    (``kept_in``); ``unused``: why a stored file was not used (None: it was, or there is none)."""

    role: ModelRole
    method: str | None = None
    val_SR: float | None = None
    val_episodes: int | None = None
    kept_in: str | None = None
    unused: str | None = None

    @property
    def id(self) -> str:
        """The planning model's short id (``kepp plan --planning-model``, the Plan page's ``model=``)."""
        return plan_model_id(self.role)

    @property
    def chosen(self) -> bool:
        """Whether a stored choice made on validation episodes decides (not the default)."""
        return self.kept_in is not None and self.unused is None

    def describe(self) -> str:
        """The choice in words, as ``kepp plan`` and the Plan page show it.

        >>> PlanningModelChoice(role=DEFAULT_PLANNING_MODEL).describe()
        'planning model: graph-R1 (the default: no choice stored beside the models)'
        """
        if self.chosen:
            return (f"planning model: {self.id} (chosen on {self.val_episodes} validation episodes: "
                    f"{self.method}, validation SR {self.val_SR:.1f}%)")
        why = self.unused or "no choice stored beside the models"
        return f"planning model: {self.id} (the default: {why})"

    def to_json(self) -> dict:
        """The choice as ``kepp plan --json`` writes it."""
        return {"planning_model": self.id, "method": self.method, "val_SR": self.val_SR,
                "val_episodes": self.val_episodes, "kept_in": self.kept_in}


def candidates(hdir: str | Path) -> list[ModelRole]:
    """The planning models of ``hdir`` (``ROOT/T<h>``) the KEPP planner runs as an evaluation row, the
    default first, then by folder name."""
    found = [role for role in planning_models(hdir) if planner_method(role) is not None]
    return sorted(found, key=lambda r: r != DEFAULT_PLANNING_MODEL)


def stored_planning_model(hdir: str | Path) -> PlanningModelChoice:
    """The planning model ``hdir`` (``ROOT/T<h>``) plans with by default (see the module docstring):
    its stored choice, else :data:`~kepp_core.catalog.roles.DEFAULT_PLANNING_MODEL`; a ``planner.json``
    that is not a choice is a KeppError naming it.

    >>> stored_planning_model("no/such/folder").id
    'graph-R1'
    """
    path = Path(hdir) / PLANNER_FILE
    if not path.is_file():
        return PlanningModelChoice(role=DEFAULT_PLANNING_MODEL)
    stored = convert(read_json(path, dict), _Stored, str(path))
    try:
        role = parse_plan_model_id(stored.planning_model)
    except KeppError:
        raise KeppError(f"{path}: planning_model {stored.planning_model!r} is not a planning model's id "
                        "(graph-R1, graph-R2, graph-R1-struct, none, ...)") from None
    default = PlanningModelChoice(role=DEFAULT_PLANNING_MODEL, kept_in=str(path))
    if stored.format != PLANNER_FORMAT:
        return _unused(default, f"{path} was made by another version (format {stored.format}): choose again")
    if not (Path(hdir) / model_folder(role) / CONFIG_FILE).is_file():
        return _unused(default, f"{path} names {stored.planning_model}, which {Path(hdir)} does not hold")
    try:
        now = model_stamps(hdir, [parse_model_folder(name) for name in stored.models])
    except KeppError:
        now = None  # a model it was made with is gone or unreadable
    if now != stored.models:
        return _unused(default, f"{path} was chosen for other models: choose again "
                                "(kepp plan --choose-planning-model)")
    return PlanningModelChoice(role=role, method=stored.method, val_SR=stored.val_SR, val_episodes=stored.val_episodes,
                               kept_in=str(path))


def _unused(default: PlanningModelChoice, why: str) -> PlanningModelChoice:
    return PlanningModelChoice(role=default.role, kept_in=default.kept_in, unused=why)


def choose_planning_model(hdir: str | Path, dataset: Callable[[], object], setting: str = DEFAULT_SETTING,
                          m: int = DEFAULT_M) -> PlanningModelChoice:
    """Choose the planning model of ``hdir`` on validation episodes of ``dataset()`` (the dataset the
    models were trained on; read once, only where a decoding choice must be made) and store it, with
    the decoding choices it rests on, beside the models (see the module docstring)."""
    from kepp_core.evaluation.methods.choice import planner_choice

    hdir = Path(hdir)
    roles = candidates(hdir)
    if not roles:
        raise KeppError(f"{hdir}: holds no planning model the KEPP planner runs (plan-graph-R1, ...): nothing to choose")
    read: list = []

    def once():
        if not read:
            read.append(dataset())
        return read[0]

    scored, models, videos = [], {}, None
    for role in roles:
        found = planner_choice(hdir, role, once, setting, m, save=True)
        if found is None:
            raise KeppError(f"{hdir / model_folder(role)}: no decoding choice is stored and none can be made "
                            "without the dataset the models were trained on (--dataset / --root)")
        entry, stored, _ = found
        if videos is not None and stored.get("val_videos") != videos:
            raise KeppError(f"{hdir / model_folder(role)}: its validation videos differ from "
                            f"{model_folder(roles[0])}'s (another val_fraction or seed): the planning models "
                            "cannot be compared on one validation part")
        videos = stored.get("val_videos")
        models.update(stored["models"])
        scored.append((role, entry.name, float(stored["val_SR"]), int(stored["val_episodes"])))
    best = scored[0]
    for s in scored[1:]:  # strictly better only: ties keep the default, then the earlier folder
        if s[2] > best[2]:
            best = s
    role, method, val_sr, episodes = best
    atomic_write_json(hdir / PLANNER_FILE, {
        "format": PLANNER_FORMAT, "planning_model": plan_model_id(role), "method": method, "val_SR": val_sr,
        "val_episodes": episodes,
        "candidates": [{"planning_model": plan_model_id(r), "method": n, "val_SR": sr} for r, n, sr, _ in scored],
        "models": models})
    return stored_planning_model(hdir)
