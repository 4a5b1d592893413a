"""The evaluation methods: :data:`METHODS` is the evaluation table in its row order, one frozen
:class:`MethodEntry` per row, built by keyword; the derived rows (``+dec`` for every planning method,
``+jdec`` for the entries that ask for them) are made from their base entries, never written out. A
method's class in :mod:`kepp_core.evaluation.methods` takes its name, label and required models from
its entry; everything that asks about a method (the failure analysis, the records, the Results page,
the Plan-page link, the demo table, the protocol) asks the entry (:func:`method`, :func:`find_method`,
:func:`methods`). What a page shows first lives with the app (``app/components/names.py``).

>>> method("kepp-R2").R, method("kepp-R2").label, [r.kind for r in method("kepp-R2").roles]
(2, 'KEPP R=2', ['step', 'plan'])
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
from dataclasses import dataclass, replace

from kepp_core.catalog.roles import (DEMO_ROLES, ENDPOINTS, ENDPOINTS_PAIR, STEP, STRUCT_SUFFIX, TASK_CLASSIFIER,
                                     ModelRole, model_folder, parse_plan_model_id, plan_model_id, plan_role)
from kepp_core.errors import KeppError

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

