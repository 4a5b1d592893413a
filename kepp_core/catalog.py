"""The facts every layer shares, in one place and without torch or numpy (the app's first page,
``kepp --help`` and the command parsers read them): the evaluation methods, the model roles and
the one codec between a model folder name and its role, the metrics and the file names.

**Methods.** :data:`METHODS` is the evaluation table in its row order, one frozen
:class:`MethodEntry` per row, built by keyword; the derived rows (``+dec`` for every planning method,
``+jdec`` for the entries that ask for them) are made from their base entries, never written out. A
method's class in :mod:`kepp_core.evaluation.methods` takes its name, label and required models from
its entry; everything that asks about a method (the failure analysis, the records, the Results page,
the Plan-page link, the demo table, the protocol) asks the entry (:func:`method`, :func:`find_method`,
:func:`methods`). Adding a method is one entry here and one
:class:`~kepp_core.evaluation.methods.Method` class registered with it. What a page shows first
lives with the app (``app/components/names.py``).

**Roles and folders.** A models root holds one folder per horizon (``ROOT/T<h>``:
:func:`horizon_folder` / :func:`parse_horizon_folder`, the only code that names or reads one) and in it
one folder per model; the folder name says the model's :class:`ModelRole`, and :func:`model_folder` /
:func:`parse_model_folder` are the only code that turns one into the other (a planning model's short
id, ``kepp plan --planning-model`` and the Plan page's ``model=``, is its folder name without
``plan-``: :func:`plan_model_id` / :func:`parse_plan_model_id`).

>>> method("kepp-R2").R, method("kepp-R2").label, [r.kind for r in method("kepp-R2").roles]
(2, 'KEPP R=2', ['step', 'plan'])
>>> model_folder(ModelRole("plan", "graph", 2)), parse_model_folder("plan-graph-llm")
('plan-graph-R2', ModelRole(kind='plan', condition='graph+llm', R=1, structured=False))
>>> all(parse_model_folder(model_folder(r)) == r for r in SUITE_ROLES + EXTRA_ROLES)
True
>>> method("kepp-R1+jdec").roles[-1] == ENDPOINTS, method("kepp-R1+jdec").joint, method("graph-ce").endpoints_from
(True, True, 'endpoint-model')
>>> plan_model_id(method("kepp-R2").planner_role), method("kepp-R2+dec").planner_role is None
('graph-R2', True)
>>> [m.name for m in METHODS if m.joint and ENDPOINTS in m.roles]
['kepp-nograph+jdec', 'kepp-R1+jdec', 'kepp-R1-struct+jdec']
>>> model_folder(ENDPOINTS_PAIR), method("kepp-R1+jdec-pair").roles[-1] == ENDPOINTS_PAIR
('endpoints-pair', True)
>>> [m.name for m in METHODS if m.joint and m.endpoints_from == TEXT]
['kepp-nograph+jdec-text', 'kepp-R1+jdec-text', 'kepp-R1-struct+jdec-text']
>>> method("graph-text").endpoints_from, method("graph-text").roles, "graph-text" in DEMO_RECORDED
('text', (), False)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.io import whole_number

# --- model roles and folder names -----------------------------------------------------------------------------
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
STRUCT_SUFFIX = "-struct"  # folder suffix of a planning model trained with the structured loss
_PLAN = "plan-"
_GRAPH_R = "graph-R"


@dataclass(frozen=True)
class ModelRole:
    """What a model is for, as its folder name says: kind, condition, (graph condition) ``R``,
    whether it was trained with the structured loss through the graph (``-struct``) and, for an
    endpoint model, which of its :data:`ENDPOINT_ARCHS` variants it is (``endpoints-pair``; ``""``:
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
    if role.variant and (role.kind != "endpoints" or role.variant not in ENDPOINT_ARCHS):
        raise KeppError(f"model variant {role.variant!r} of kind {role.kind!r}: only the endpoint model has variants "
                        f"({', '.join(ENDPOINT_ARCHS)})")
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
    if kind == "endpoints" and variant in ENDPOINT_ARCHS:
        return ModelRole(kind, variant=variant)
    if name.startswith(_PLAN) and name.endswith(STRUCT_SUFFIX) and len(name) > len(_PLAN + STRUCT_SUFFIX):
        base = parse_model_folder(name[:-len(STRUCT_SUFFIX)])
        return ModelRole(base.kind, base.condition, base.R, True)
    rest = name[len(_PLAN):] if name.startswith(_PLAN) else None
    if rest is not None and rest.startswith(_GRAPH_R) and whole_number(rest[len(_GRAPH_R):], 6) is not None:
        return ModelRole("plan", "graph", whole_number(rest[len(_GRAPH_R):], 6))
    condition = {c.replace("+", "-"): c for c in PLAN_CONDITIONS if c != "graph"}.get(rest or "")
    if condition is None:
        raise KeppError(f"{name!r} is not a model folder name ({', '.join(_SINGLE)}, plan-graph-R<R>, "
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


# --- the models folder's horizon folders (ROOT/T<h>) ---------------------------------------------------------------
_HORIZON = "T"


def horizon_folder(horizon: int) -> str:
    """The folder of one horizon's models in a models root (``T3``); :func:`parse_horizon_folder` is
    its inverse, the only code that reads one.

    >>> horizon_folder(3), parse_horizon_folder("T12"), parse_horizon_folder("T1x"), parse_horizon_folder("step")
    ('T3', 12, None, None)
    """
    return f"{_HORIZON}{int(horizon)}"


def parse_horizon_folder(name: str) -> int | None:
    """The horizon a folder name says (``T4`` → 4), None for another name."""
    digits = str(name)[len(_HORIZON):]
    return whole_number(digits, 6) if str(name).startswith(_HORIZON) and digits == digits.strip() else None


def models_dir(root: str | Path, horizon: int) -> Path:
    """``ROOT/T<horizon>``: the folder of one horizon's models."""
    return Path(root) / horizon_folder(horizon)


def models_horizon(hdir: str | Path) -> int:
    """The horizon of a models folder ``ROOT/T<h>`` (KeppError for a folder not named so)."""
    horizon = parse_horizon_folder(Path(hdir).name)
    if horizon is None:
        raise KeppError(f"{hdir}: not a horizon's models folder (expected ROOT/{_HORIZON}<h>, e.g. {horizon_folder(3)})")
    return horizon


STEP = ModelRole("step")
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


# --- evaluation methods -----------------------------------------------------------------------------------
# Whose endpoints a method plans between (MethodEntry.endpoints_from): the step model's, the ground truth,
# the endpoint model's, or the S3D text tower's (the step names scored against the clips:
# kepp_core.video.grounding).
PREDICTED, TRUTH, ENDPOINT_MODEL, TEXT = "predicted", "truth", "endpoint-model", "text"
# What each of them is called where a plan says whose endpoints (or distributions of them) it used.
ENDPOINTS_WORDS = {PREDICTED: "step model", TRUTH: "ground truth", ENDPOINT_MODEL: "endpoint model",
                   TEXT: "text tower"}
DECODED_SUFFIX = "+dec"
JOINT_SUFFIX = "+jdec"
TEXT_JOINT_SUFFIX = "+jdec-text"  # joint decoding with the S3D text tower's distributions
# The planner with no trained model (the P²KG's plan between the text tower's endpoints): the catalogue's
# row of its plans, and its id where a planning model's id goes (kepp plan --planning-model, the Plan
# page's model=; planner_id).
TEXT_PLANNER = "graph-text"


@dataclass(frozen=True, kw_only=True)
class MethodEntry:
    """One row of the evaluation table, built by keyword.

    ``roles``: the models it loads (``ROOT/T<h>/<folder>``); ``R``: the number of graph paths it
    is given (None: no paths, or set by its model's config); ``graph``: it uses the P²KG;
    ``endpoints_from``: it plans between the step model's :data:`PREDICTED` or the :data:`TRUTH`
    endpoints, the :data:`ENDPOINT_MODEL`'s or the S3D text tower's (:data:`TEXT`) (None: none; a
    ``+jdec`` row: whose distributions it decodes with); ``base``: the name of the method whose action
    block a ``+dec`` or ``+jdec`` row decodes with the graph; ``joint``: a ``+jdec`` or ``+jdec-text``
    row (decoded jointly with the endpoint model's, or the text tower's, distributions of ``a_1`` and
    ``a_T``); ``structured``: its
    planning model was trained with the structured loss; ``sampled``: it can draw ``K`` plans per
    episode; ``llm``: it needs an LLM endpoint (never run by default); ``text``: it needs the S3D text
    tower (``kepp eval --encoder s3d:PATH``) and features of the S3D encoder (never run by default);
    ``default``: ``kepp eval`` runs it when no methods are named; ``joint_rows``: the catalogue adds its
    ``+jdec`` and ``+jdec-text`` rows (the planners whose action blocks decode best with the graph: docs,
    Models).
    """

    name: str
    label: str
    roles: tuple[ModelRole, ...] = ()
    R: int | None = None
    graph: bool = False
    endpoints_from: str | None = None
    base: str | None = None
    structured: bool = False
    joint: bool = False
    sampled: bool = False
    llm: bool = False
    text: bool = False
    default: bool = True
    joint_rows: bool = False

    @property
    def decoded(self) -> bool:
        """A ``<base>+dec`` or ``<base>+jdec`` row (the base's action block decoded exactly under the P²KG)."""
        return self.base is not None

    @property
    def plan_model(self) -> ModelRole | None:
        """The planning model among its roles (None: it has none)."""
        return next((r for r in self.roles if r.kind == "plan"), None)

    @property
    def endpoint_role(self) -> ModelRole | None:
        """The endpoint model among its roles (the default one, or a variant: ``endpoints-pair``), or None."""
        return next((r for r in self.roles if r.kind == ENDPOINTS.kind), None)

    @property
    def planner_role(self) -> ModelRole | None:
        """The planning model the KEPP planner (:class:`kepp_core.planner.KEPPPlanner`: the step
        model's endpoints, ``R`` graph paths, the planning model) runs to make this row's plans — a
        graph-conditioned one, trained with the structured loss or not, or one without a condition —
        or None when the planner is not this row (baselines, ground-truth endpoints, decoded and LLM
        rows)."""
        if self.decoded or self.llm or self.text or self.endpoints_from == TRUTH:
            return None
        plan = self.plan_model
        return plan if plan is not None and plan.condition in ("graph", "none") else None

    @property
    def judged_on_stored_paths(self) -> bool:
        """Its plan follows the step model's endpoints and the graph paths a record stores (the
        zero-shot and KEPP-R rows): the failure analysis judges it on those; other rows are
        judged by their own plan's ends."""
        return (self.graph and self.endpoints_from == PREDICTED and self.R is not None and not self.decoded
                and not self.structured and not self.llm)

    @property
    def stores_paths(self) -> bool:
        """Its output carries the graph paths the records keep (a KEPP-R row with a planning model)."""
        return self.judged_on_stored_paths and self.plan_model is not None


def kepp_r(R: int, structured: bool = False, joint_rows: bool = False) -> MethodEntry:
    """The entry of the KEPP planner with ``R`` graph paths between the step model's endpoints
    (``structured``: its planning model trained with the structured loss)."""
    tail = ", structured training" if structured else ""
    return MethodEntry(name=f"kepp-R{R}" + (STRUCT_SUFFIX if structured else ""), label=f"KEPP R={R}{tail}",
                       roles=(STEP, plan_role("graph", R, structured)), R=R, graph=True, endpoints_from=PREDICTED,
                       structured=structured, sampled=True, default=not structured, joint_rows=joint_rows)


def decoded(base: MethodEntry) -> MethodEntry:
    """The ``<base>+dec`` row of a planning method (it also needs the step model unless it
    plans between ground-truth endpoints)."""
    roles = base.roles if base.endpoints_from == TRUTH or STEP in base.roles else (*base.roles, STEP)
    return MethodEntry(name=base.name + DECODED_SUFFIX, label=base.label + " + graph decoding", roles=roles, R=base.R,
                       graph=True, endpoints_from=base.endpoints_from or PREDICTED, base=base.name,
                       structured=base.structured, default=False)


def joint_decoded(base: MethodEntry) -> MethodEntry:
    """The ``<base>+jdec`` row of a planning method: the exact best plan under the endpoint
    model's distributions of ``a_1`` and ``a_T``, the base's action block and the P²KG."""
    return MethodEntry(name=base.name + JOINT_SUFFIX, label=base.label + " + joint decoding with the endpoint model",
                       roles=(*base.roles, ENDPOINTS), R=base.R, graph=True, endpoints_from=ENDPOINT_MODEL,
                       base=base.name, structured=base.structured, joint=True, default=False)


def text_joint_decoded(base: MethodEntry) -> MethodEntry:
    """The ``<base>+jdec-text`` row of a planning method: its ``+jdec`` row with the S3D text tower's
    distributions of ``a_1`` and ``a_T`` in place of the endpoint model's (no endpoint model; it needs
    the text tower, as ``graph-text`` does)."""
    return MethodEntry(name=base.name + TEXT_JOINT_SUFFIX,
                       label=base.label + " + joint decoding with the text tower's endpoints (S3D)", roles=base.roles,
                       R=base.R, graph=True, endpoints_from=TEXT, base=base.name, structured=base.structured,
                       joint=True, text=True, default=False)


def with_endpoints(entry: MethodEntry, role: ModelRole) -> MethodEntry:
    """The row ``entry`` planning with the endpoint model variant ``role`` instead of the default
    one: ``<name>-<variant>``, run when named (the protocol's comparison of the two on the same
    episodes)."""
    return replace(entry, name=f"{entry.name}-{role.variant}", label=f"{entry.label} (the earlier {role.variant} model)",
                   roles=tuple(role if r == ENDPOINTS else r for r in entry.roles), default=False)


_GRAPH_CE = MethodEntry(name="graph-ce", label="P²KG zero-shot, endpoint model's endpoints", roles=(ENDPOINTS,), R=1,
                        graph=True, endpoints_from=ENDPOINT_MODEL, default=False)
_BASE_METHODS = (
    MethodEntry(name="random", label="Random", sampled=True),
    MethodEntry(name="retrieval", label="Retrieval (nearest training episode)"),
    MethodEntry(name="graph-pred", label="P²KG zero-shot, predicted endpoints", roles=(STEP,), R=1, graph=True,
                endpoints_from=PREDICTED),
    MethodEntry(name="graph-gt", label="P²KG zero-shot, ground-truth endpoints", R=1, graph=True, endpoints_from=TRUTH),
    _GRAPH_CE,
    with_endpoints(_GRAPH_CE, ENDPOINTS_PAIR),
    MethodEntry(name=TEXT_PLANNER, label="P²KG zero-shot, text-grounded endpoints (S3D)", R=1, graph=True,
                endpoints_from=TEXT, text=True, default=False),
    MethodEntry(name="pdpp", label="PDPP (task classifier)", roles=(plan_role("task"), TASK_CLASSIFIER), sampled=True),
    MethodEntry(name="kepp-nograph", label="KEPP without graph condition", roles=(plan_role("none"),), sampled=True,
                joint_rows=True),
    kepp_r(1, joint_rows=True),
    kepp_r(2),
    MethodEntry(name="kepp-gt", label="KEPP with ground-truth endpoints", roles=(STEP, plan_role("graph", 1)), R=1,
                graph=True, endpoints_from=TRUTH, sampled=True),
    kepp_r(1, structured=True, joint_rows=True),
)
# The decoded rows: every planning method (its action block is what is decoded).
_DECODED = tuple(decoded(m) for m in _BASE_METHODS if m.plan_model is not None)
_LLM_METHODS = (
    MethodEntry(name="kepp-llm", label="KEPP with the LLM plan instead of the graph",
                roles=(STEP, plan_role("llm")), endpoints_from=PREDICTED, sampled=True, llm=True, default=False),
    MethodEntry(name="kepp-graph-llm", label="KEPP with the graph and the LLM plan",
                roles=(STEP, plan_role("graph+llm")), graph=True, endpoints_from=PREDICTED, sampled=True, llm=True,
                default=False),
)
# The joint-decoding rows: of the planners whose entry asks for them (joint_rows), with the endpoint
# model's distributions, then with the text tower's.
_JOINT = tuple(joint_decoded(m) for m in _BASE_METHODS if m.joint_rows)
_TEXT_JOINT = tuple(text_joint_decoded(m) for m in _BASE_METHODS if m.joint_rows)
# The earlier endpoint model's +jdec rows (its graph-ce row follows graph-ce among the base methods).
_JOINT_PAIR = tuple(with_endpoints(m, ENDPOINTS_PAIR) for m in _JOINT)
# Every built-in method, in the table's (and the registry's) order; never rebound (extra_method adds to
# _EXTRA, which methods() and find_method() read as well).
METHODS: tuple[MethodEntry, ...] = _BASE_METHODS + _LLM_METHODS + _DECODED + _JOINT + _JOINT_PAIR + _TEXT_JOINT
_BY_NAME = {m.name: m for m in METHODS}
_EXTRA: dict[str, MethodEntry] = {}  # methods added for a with-block (extra_method)
DEMO_METHODS = ("kepp-R1", "kepp-R2", "kepp-nograph")  # the demo table's KEPP rows (the shipped models' claim)
# What the shipped demo records hold: every method the demo models can run (no LLM), the +dec and +jdec
# rows included.
DEMO_RECORDED = tuple(m.name for m in METHODS if not m.llm and not m.text and set(m.roles) <= set(DEMO_ROLES))


def methods() -> tuple[MethodEntry, ...]:
    """Every method, in the table's order: :data:`METHODS` and those :func:`extra_method` added."""
    return METHODS + tuple(_EXTRA.values())


def find_method(name: str) -> MethodEntry | None:
    """The catalogue entry of ``name``, or None for a name the catalogue does not know."""
    return _BY_NAME.get(name) or _EXTRA.get(name)


def planner_method(role: ModelRole) -> MethodEntry | None:
    """The catalogue's method the KEPP planner with the planning model ``role`` is (e.g. ``kepp-R1``;
    :attr:`MethodEntry.planner_role`), None when there is none. Its ``+dec`` and ``+jdec`` rows hold
    the planner's decoding choices (:func:`kepp_core.evaluation.methods.choice.planner_decoding`).

    >>> planner_method(plan_role("graph", 1)).name, planner_method(plan_role("task")) is None
    ('kepp-R1', True)
    """
    return next((e for e in methods() if e.planner_role == role), None)


def planner_id(entry: MethodEntry) -> str | None:
    """The id under which ``kepp plan --planning-model`` and the Plan page's ``model=`` make this row's
    plans on two clips: its planning model's short id (:attr:`MethodEntry.planner_role`,
    :func:`plan_model_id`), :data:`TEXT_PLANNER` for the ``graph-text`` row (graph + text endpoints, no
    model), None when neither can (:func:`parse_planner_id` is its inverse).

    >>> planner_id(method("kepp-R2")), planner_id(method("graph-text")), planner_id(method("kepp-R1+jdec-text"))
    ('graph-R2', 'graph-text', None)
    """
    if entry.planner_role is not None:
        return plan_model_id(entry.planner_role)
    return TEXT_PLANNER if entry.name == TEXT_PLANNER else None


def parse_planner_id(text: str) -> ModelRole | None:
    """The planning model a planner id names (:func:`planner_id`): a :class:`ModelRole`, or None for
    :data:`TEXT_PLANNER` (no trained model); KeppError for another text.

    >>> parse_planner_id("graph-R1").R, parse_planner_id("graph-text") is None
    (1, True)
    """
    return None if str(text) == TEXT_PLANNER else parse_plan_model_id(text)


def method(name: str) -> MethodEntry:
    """The catalogue entry of method ``name`` (KeppError listing the known names otherwise)."""
    entry = find_method(name)
    if entry is None:
        raise KeppError(f"unknown method {name!r} (expected one of {', '.join(m.name for m in methods())})")
    return entry


def method_label(name: str) -> str:
    """A method's readable name (the name itself when the catalogue does not know it)."""
    m = find_method(name)
    return m.label if m is not None else name


def method_names() -> tuple[str, ...]:
    """Every method name, in the table's order."""
    return tuple(m.name for m in methods())


def paths_source(names) -> str | None:
    """Of the methods ``names``, the one whose graph paths the records keep: the KEPP-R row with
    the most paths (None when none of them stores paths)."""
    rows = [m for m in methods() if m.name in set(names) and m.stores_paths]
    return max(rows, key=lambda m: m.R).name if rows else None


@contextmanager
def extra_method(entry: MethodEntry) -> Iterator[MethodEntry]:
    """Add ``entry`` to the catalogue for the duration of a ``with`` block (tests register a
    throw-away method this way; its class is registered with
    :func:`kepp_core.evaluation.methods.registered`)."""
    if find_method(entry.name) is not None:
        raise KeppError(f"method {entry.name!r} is already in the catalogue")
    _EXTRA[entry.name] = entry
    try:
        yield entry
    finally:
        del _EXTRA[entry.name]


# --- metrics --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    """A metric of the evaluation tables: its key in rows and records, its name in a table's
    header and what it measures."""

    key: str
    name: str
    description: str = field(default="", compare=False)


METRICS = (
    Metric("SR", "SR", "success rate: the whole plan right (%)"),
    Metric("mAcc", "mAcc", "mean accuracy: steps right (%)"),
    Metric("mIoU", "mIoU", "IoU of the predicted and true action sets, per episode (%)"),
    Metric("mIoU_b256", "mIoU (batch 256)", "IoU of the predicted and true action sets per batch of 256 "
                                           "episodes, the batches' plain mean (PDPP's code weights each batch by "
                                           "its episodes: the pdpp metric family, kepp_core.benchmark) (%)"),
    Metric("ends", "ends right", "both the first and the last step right (%)"),
    Metric("SR_ends", "SR if ends right", "plans right among the episodes whose first and last steps are right (%)"),
)
METRIC_KEYS = tuple(m.key for m in METRICS)
METRIC_NAMES = {m.key: m.name for m in METRICS}


# The paired test of two methods (kepp protocol, the Results page) and the per-episode record field
# it compares for each metric that has one.
PAIRED_TEST = "two-sided paired sign-flip permutation test on per-episode success over (seed, test episode) units"
PAIR_METRICS = {"SR": "success", "mAcc": "acc"}
SIGNIFICANCE = 0.05  # the level a paired difference is called significant at
CONFIDENCE = 0.9  # the two-sided level of an interval (the field's unified benchmark reports 90%)

# Two methods episode by episode (kepp_core.evaluation.compare): the four cells of the 2x2 table
# (their names in URLs and the API, their readable labels), the test of the discordant cells, and
# the paired bootstrap of the SR difference (resamples drawn unless told otherwise).
AB_CELLS = {"both": "both right", "a-only": "A right, B wrong", "b-only": "B right, A wrong",
            "neither": "both wrong"}
AB_TEST = "McNemar's exact test (two-sided, binomial on the discordant episodes)"
BOOTSTRAP_RESAMPLES = 10_000


# --- failure patterns (the paper's failure analysis) ---------------------------------------------------------
PATTERNS = ("wrong_endpoint", "same_start_end", "repeated_subsequence", "other")
# "wrong_endpoint" is judged on the predicted endpoints â₁, â_T (the step model's; a method without one:
# its plan's own ends), so its label names them; the ends slice below is judged on the plan's own ends.
PATTERN_LABELS = {
    "wrong_endpoint": "wrong predicted endpoint",
    "same_start_end": "same start and end step",
    "repeated_subsequence": "repeated sub-sequence",
    "other": "other",
}


def pattern_label(pattern: str | None) -> str:
    """A failure pattern's readable name; a comma-separated list of patterns is named one by one.

    >>> pattern_label("wrong_endpoint, repeated_subsequence")
    'wrong predicted endpoint, repeated sub-sequence'
    >>> pattern_label("")
    '—'
    """
    names = [p.strip() for p in str(pattern or "").split(",") if p.strip()]
    return ", ".join(PATTERN_LABELS.get(p, p.replace("_", " ")) for p in names) or "—"


# --- slices (metrics by slice: kepp_core.evaluation.slices holds each cut's rule) -------------------------------
SLICE_SUCCESS = "success"  # the pattern slice of the episodes planned right
SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG = "right", "wrong"  # the ends slice's values


@dataclass(frozen=True)
class SliceCut:
    """One way to cut a method's evaluated episodes: its ``name`` (a URL's ``by=``, the API's ``by``),
    its readable ``label``, the readable names of the values that are not data (``value_labels``, in
    reading order), how a value reads otherwise (``value_format``) and whether the cut spans every
    horizon (the horizon cut: its table counts every T and its values are horizons, ``int``)."""

    name: str
    label: str
    value_labels: dict[str, str] = field(default_factory=dict)
    value_format: str = "{}"
    every_horizon: bool = False

    def value_label(self, value: str, names: dict[str, str] | None = None) -> str:
        """A value's readable name (``names``: readable names of data values, e.g. the task names).

        >>> SLICE_CUTS["horizon"].value_label("4"), SLICE_CUTS["ends"].value_label("wrong")
        ('T=4', "the plan's first or last step wrong")
        """
        if value in self.value_labels:
            return self.value_labels[value]
        return self.value_format.format((names or {}).get(value, value))


# Every cut, in the order a page offers them.
SLICE_CUTS = {c.name: c for c in (
    SliceCut("task", "task"),
    SliceCut("pattern", "failure pattern", {SLICE_SUCCESS: "success (no failure)", **PATTERN_LABELS}),
    SliceCut("horizon", "horizon (T)", value_format="T={}", every_horizon=True),
    SliceCut("ends", "the plan's ends", {SLICE_ENDS_RIGHT: "the plan's first and last step right",
                                         SLICE_ENDS_WRONG: "the plan's first or last step wrong"}),
)}
SLICE_BY = {name: cut.label for name, cut in SLICE_CUTS.items()}  # each cut's readable name


# --- path scorers (how the graph ranks the paths between two steps) -------------------------------------------
# The readable name of each path scorer of kepp_core.graph (its registry lists the names).
SCORER_LABELS = {"p2kg": "P²KG (probabilistic)", "pkg": "frequency graph (PKG)"}
EDGE_SCORERS = ("p2kg", "pkg")  # the scorers that weigh a single arrow (the history scorer weighs whole paths)


def scorer_label(name: str) -> str:
    """A path scorer's readable name (the name itself for one without a label).

    >>> scorer_label("p2kg"), scorer_label("history")
    ('P²KG (probabilistic)', 'history')
    """
    return SCORER_LABELS.get(name, name)


# --- episode ids ----------------------------------------------------------------------------------------------
def episode_id(task: str, video: str, first: int, horizon: int) -> str:
    """The id of the episode of ``horizon`` steps from step ``first`` (0-based) of a video:
    ``task/video/first:T``. :func:`parse_episode_id` is its inverse, the only code that reads one.

    >>> episode_id("coffee", "0001", 2, 3)
    'coffee/0001/2:3'
    """
    return f"{task}/{video}/{first}:{horizon}"


def parse_episode_id(episode: str) -> tuple[str, str, int, int] | None:
    """``(task, video, first step, T)`` of an episode id (:func:`episode_id`), None for another string.

    >>> parse_episode_id("coffee/0001/2:3"), parse_episode_id("x")
    (('coffee', '0001', 2, 3), None)
    """
    try:
        head, tail = str(episode).rsplit("/", 1)
        task, video = head.split("/", 1) if "/" in head else ("", head)
        first, horizon = tail.split(":")
        return task, video, int(first), int(horizon)
    except ValueError:
        return None


MAX_SEED = 2**32 - 1  # seeds seed numpy's and torch's generators: 0 .. 2³² − 1
MAX_HORIZON = 64  # planning horizons T: the longest plan of any dataset here has 23 steps
MAX_TOP = 100  # paths or choices a query returns (graph paths --top, plan -R and --top)
DEMO_HORIZONS = (3, 4, 5, 6)  # the horizons of the demo models and the demo table


# --- samplers -----------------------------------------------------------------------------------------------
SAMPLERS = ("ddpm", "ddim")  # how a diffusion model draws a plan: the full chain, or DDIM's shortcut


# --- file names -------------------------------------------------------------------------------------------
RESULTS_FILE = "results.json"  # a protocol folder's summary (kepp protocol)
RECORDS_FILE = "records.jsonl"  # a protocol folder's per-episode records
DECODING_FILE = "decoding.json"  # ROOT/T<h>/decoding.json: the +dec rows' choices of λ and endpoint mode
LOG_FILE = "metrics.jsonl"  # a training run's log
CONFIG_FILE = "config.json"  # a checkpoint's config
WEIGHTS_FILE = "model.safetensors"  # a checkpoint's weights
GRAPH_FILE = "graph.json"  # the P²KG a planning model was trained with, saved beside it
GRAPH_PAIR = (".json", ".safetensors")  # a graph file's two forms, JSON and compact, written together by --compact
MANIFEST_FILE = "manifest.json"  # the demo models' manifest
DEMO_MODELS_DIR = "assets/demo"  # the shipped demo checkpoints, relative to the repository

