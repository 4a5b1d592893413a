"""Model roles and the one codec between a model folder's name and its role.

A models root holds one folder per horizon (:mod:`kepp_core.catalog.files`) and in it one folder per
model; the folder name says the model's :class:`ModelRole`, and :func:`model_folder` /
:func:`parse_model_folder` are the only code that turns one into the other (a planning model's short
id, ``kepp plan --planning-model`` and the Plan page's ``model=``, is its folder name without
``plan-``: :func:`plan_model_id` / :func:`parse_plan_model_id`).

>>> model_folder(ModelRole("plan", "graph", 2)), parse_model_folder("plan-graph-llm")
('plan-graph-R2', ModelRole(kind='plan', condition='graph+llm', R=1, structured=False))
>>> all(parse_model_folder(model_folder(r)) == r for r in SUITE_ROLES + EXTRA_ROLES)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from kepp_core.errors import KeppError
from kepp_core.io import whole_number

__all__ = [
    "CONDITION_ROW_KINDS", "DEMO_ROLES", "DIFFUSION_KINDS", "ENDPOINT_ARCHS", "ENDPOINT_HEADS", "ENDPOINT_VARIANTS",
    "ENDPOINTS", "ENDPOINTS_PAIR", "EXTRA_ROLES", "GRAPH_CONDITIONS", "KINDS", "LLM_CONDITIONS",
    "OFFICIAL_ARCHITECTURE", "PLAN_CONDITIONS", "STEP", "STRUCT_SUFFIX", "SUITE_ROLES", "TASK_CLASSIFIER", "ModelRole",
    "model_folder", "parse_model_folder", "parse_plan_model_id", "plan_model_id", "plan_role", "DEFAULT_PLANNING_MODEL",
]

KINDS = ("step", "plan", "task-classifier", "endpoints")
_SINGLE = ("step", "task-classifier", "endpoints")  # kinds whose folder name is the kind itself
PLAN_CONDITIONS = ("graph", "none", "task", "extra", "llm", "graph+llm")  # the planning model's condition rows
LLM_CONDITIONS = ("llm", "graph+llm")
GRAPH_CONDITIONS = ("graph", "graph+llm")
DIFFUSION_KINDS = ("step", "plan")  # the kinds that are diffusion models (a condition layout's kinds)
CONDITION_ROW_KINDS = ("graph", "task", "extra")  # condition blocks a layout may hold ("task": one row repeated)
ENDPOINT_HEADS = ("task", "first", "last")  # the endpoint model's heads (each with a temperature)
OFFICIAL_ARCHITECTURE = "official"  # a checkpoint config's "architecture" naming the official KEPP network
# The endpoint model's architectures (kepp_core.models.endpoints.ARCHS; training option endpoint_arch): one
# encoder per clip (the default), or one MLP over both clips (the earlier model).
ENDPOINT_ARCHS = ("clips", "pair")
# The endpoint model's variants: each a named preset of its training options, trained beside the default
# into its own folder (``endpoints-<variant>``) so that a protocol compares the two on the same episodes;
# the only variants a folder name may say. ``pair``: the earlier endpoint model exactly (one MLP over both
# clips, the episodes only, no label smoothing, the task classifier's schedule).
ENDPOINT_VARIANTS: dict[str, dict[str, object]] = {
    "pair": {"endpoint_arch": "pair", "endpoint_windows": False, "endpoint_smoothing": 0.0, "endpoint_epochs": 0},
}
STRUCT_SUFFIX = "-struct"  # folder suffix of a planning model trained with the structured loss
_PLAN = "plan-"
_GRAPH_R = "graph-R"


@dataclass(frozen=True)
class ModelRole:
    """What a model is for, as its folder name says: kind, condition, (graph condition) ``R``,
    whether it was trained with the structured loss through the graph (``-struct``) and, for an
    endpoint model, which of its :data:`ENDPOINT_VARIANTS` it is (``endpoints-pair``; ``""``:
    the default, as the training preset says)."""

    kind: str
    condition: str = "none"
    R: int = 1
    structured: bool = False
    variant: str = ""  # an endpoint model trained another way, kept beside the default (folder endpoints-<variant>)

    def __repr__(self) -> str:  # the variant only where there is one
        tail = f", variant={self.variant!r}" if self.variant else ""
        return (f"ModelRole(kind={self.kind!r}, condition={self.condition!r}, R={self.R!r}, "
                f"structured={self.structured!r}{tail})")


def model_folder(role: ModelRole) -> str:
    """The folder name of a model role (``step``, ``task-classifier``, ``endpoints``, ``plan-graph-R2``,
    ``plan-none``, ...).

    >>> model_folder(ModelRole("plan", "none")), model_folder(ModelRole("step"))
    ('plan-none', 'step')
    >>> model_folder(ModelRole("plan", "graph", 1, structured=True))
    'plan-graph-R1-struct'
    """
    if role.variant and (role.kind != "endpoints" or role.variant not in ENDPOINT_VARIANTS):
        raise KeppError(f"model variant {role.variant!r} of kind {role.kind!r}: only the endpoint model has variants "
                        f"({', '.join(ENDPOINT_VARIANTS)})")
    if role.kind in _SINGLE:
        return role.kind + (f"-{role.variant}" if role.variant else "")
    if role.kind != "plan":
        raise KeppError(f"unknown model kind {role.kind!r} (expected one of {', '.join(KINDS)})")
    tail = STRUCT_SUFFIX if role.structured else ""
    if role.condition == "graph":
        return f"{_PLAN}{_GRAPH_R}{role.R}{tail}"
    return _PLAN + role.condition.replace("+", "-") + tail


def parse_model_folder(name: str) -> ModelRole:
    """The model role a folder name says (the inverse of :func:`model_folder`).

    >>> parse_model_folder("plan-graph-R2")
    ModelRole(kind='plan', condition='graph', R=2, structured=False)
    """
    if name in _SINGLE:
        return ModelRole(name)
    kind, _, variant = name.partition("-")
    if kind == "endpoints" and variant in ENDPOINT_VARIANTS:
        return ModelRole(kind, variant=variant)
    if name.startswith(_PLAN) and name.endswith(STRUCT_SUFFIX) and len(name) > len(_PLAN + STRUCT_SUFFIX):
        base = parse_model_folder(name[:-len(STRUCT_SUFFIX)])
        return ModelRole(base.kind, base.condition, base.R, True)
    rest = name[len(_PLAN):] if name.startswith(_PLAN) else None
    if rest is not None and rest.startswith(_GRAPH_R) and whole_number(rest[len(_GRAPH_R):], 6) is not None:
        return ModelRole("plan", "graph", whole_number(rest[len(_GRAPH_R):], 6))
    condition = {c.replace("+", "-"): c for c in PLAN_CONDITIONS if c != "graph"}.get(rest or "")
    if condition is None:
        raise KeppError(f"{name!r} is not a model folder name ({', '.join(_SINGLE)}, "
                        f"{', '.join(f'endpoints-{v}' for v in ENDPOINT_VARIANTS)}, plan-graph-R<R>, "
                        f"{', '.join(_PLAN + c.replace('+', '-') for c in PLAN_CONDITIONS if c != 'graph')})")
    return ModelRole("plan", condition)


def plan_model_id(role: ModelRole) -> str:
    """The short id of a planning model: its folder name without ``plan-`` (``kepp plan
    --planning-model ID`` and the Plan page's ``model=`` read it).

    >>> plan_model_id(ModelRole("plan", "graph", 3)), plan_model_id(ModelRole("plan", "none"))
    ('graph-R3', 'none')
    """
    return model_folder(role)[len(_PLAN):]


def parse_plan_model_id(text: str) -> ModelRole:
    """The planning model a short id names (the inverse of :func:`plan_model_id`)."""
    return parse_model_folder(_PLAN + str(text))


def plan_role(condition: str = "graph", R: int = 1, structured: bool = False) -> ModelRole:
    """The role of a planning model: ``R`` counts only for the graph condition (1 otherwise).

    >>> plan_role("none", 2) == ModelRole("plan", "none"), plan_role(R=2)
    (True, ModelRole(kind='plan', condition='graph', R=2, structured=False))
    """
    return ModelRole("plan", condition, R if condition == "graph" else 1, structured)



STEP = ModelRole("step")
# The planning model a models folder plans with where it stores no choice of its own
# (kepp_core.evaluation.planning_model: ROOT/T<h>/planner.json): KEPP R=1.
DEFAULT_PLANNING_MODEL = plan_role("graph", 1)
TASK_CLASSIFIER = ModelRole("task-classifier")
# The discriminative endpoint model: the task, a_1 and a_T from the observation windows (cross-entropy).
ENDPOINTS = ModelRole("endpoints")
# The earlier endpoint model, trained beside the default in its own folder (endpoints-pair) so that a protocol
# compares the two on the same episodes (its rows: graph-ce-pair, <method>+jdec-pair).
ENDPOINTS_PAIR = ModelRole("endpoints", variant="pair")
# Every model one horizon's evaluation table needs, in training order (``kepp train all``).
SUITE_ROLES = (STEP, plan_role("graph", 1), plan_role("graph", 2), plan_role("none"), plan_role("task"),
               TASK_CLASSIFIER, ENDPOINTS)
# Models trained only when asked for (``kepp train all --only``, ``kepp protocol``): KEPP R=1
# trained with the structured loss through the graph, and the earlier endpoint model.
EXTRA_ROLES = (plan_role("graph", 1, structured=True), ENDPOINTS_PAIR)
# What the demo ships for each horizon: every model of the suite and the extras (KEPP R=1/R=2, the no-graph
# ablation, PDPP's planning model and task classifier, the endpoint model, KEPP R=1 structured) but the
# earlier endpoint model.
DEMO_ROLES = SUITE_ROLES + tuple(r for r in EXTRA_ROLES if r != ENDPOINTS_PAIR)
