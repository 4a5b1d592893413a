"""The evaluation methods: :data:`METHODS` is the evaluation table in its row order, one frozen
:class:`MethodEntry` per row, built by keyword from named parts: a kind (:data:`ROW_KINDS`), the
implementation that makes its plans (named once, on its class in :mod:`kepp_core.evaluation.methods`),
its models, its R, its endpoint source (:mod:`kepp_core.catalog.sources`) and, for a graph-decoded row, its
decoder (:mod:`kepp_core.catalog.decoders`). A row whose parts do not fit (a planner given a source it
cannot plan from, a decoder given a source it cannot decode with, two rows whose decoding choices would
share one stored entry) is refused when the catalogue is built. The derived rows
(``+dec`` for every planning method, ``+jdec``, ``+jdec-<variant>`` and ``+jdec-text`` for
:data:`JOINT_BASES`, ``-<variant>`` twins of the endpoint model's rows) are made from their base
entries, never written out. Everything that asks about a method (the failure analysis, the records,
the Results page, the Plan-page link, the demo table, the protocol, the planner's decoding) asks the
entry (:func:`method`, :func:`find_method`, :func:`methods`) or its source (:attr:`MethodEntry.ends`);
which planner re-plans a row on two clips is :func:`kepp_core.catalog.live.live_planner`. What a page shows first lives with
the app (``app/components/ui/names.py``).

>>> method("kepp-R2").R, method("kepp-R2").label, [r.kind for r in method("kepp-R2").roles]
(2, 'KEPP R=2', ['step', 'plan'])
>>> method("kepp-R1+jdec").roles[-1] == ENDPOINTS, method("kepp-R1+jdec").decoder.name, method("graph-ce").ends.words
(True, 'joint', 'endpoint model')
>>> plan_model_id(method("kepp-R2").planner_role), method("kepp-R2+dec").planner_role is None
('graph-R2', True)
>>> [m.name for m in METHODS if m.decoder is JOINT_DECODING and m.ends.role == ENDPOINTS]
['kepp-nograph+jdec', 'kepp-R1+jdec', 'kepp-R1-struct+jdec']
>>> method("kepp-R1+jdec-pair").ends.name, method("graph-ce-pair").endpoint_role.variant
('endpoint-model-pair', 'pair')
>>> [m.name for m in METHODS if m.decoder is JOINT_DECODING and m.ends.text]
['kepp-nograph+jdec-text', 'kepp-R1+jdec-text', 'kepp-R1-struct+jdec-text']
>>> method("graph-text").endpoints_from, method("graph-text").roles, "graph-text" in DEMO_RECORDED
('text', (), False)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from kepp_core.catalog.roles import (DEMO_ROLES, ENDPOINT_VARIANTS, ENDPOINTS, GRAPH_CONDITIONS, LLM_CONDITIONS, STEP,
                                     STRUCT_SUFFIX, SUITE_ROLES, TASK_CLASSIFIER, ModelRole, model_folder,
                                     parse_plan_model_id, plan_model_id, plan_role)
from kepp_core.catalog.decoders import GRAPH_DECODING, JOINT_DECODING, KBEST_DECODING, Decoder
from kepp_core.catalog.sources import (ENDPOINT_MODEL, PREDICTED, TEXT, TRUTH, EndpointSource, endpoint_source,
                                       model_source)
from kepp_core.errors import KeppError

__all__ = [
    "BASELINE", "DECODED", "DEMO_METHODS", "DEMO_RECORDED", "JOINT_BASES", "METHODS", "PLANNER", "ROW_KINDS",
    "TEXT_PLANNER", "ZERO_SHOT", "MethodEntry", "check_choice_keys", "decoded", "extra_method",
    "find_method", "joint_decoded", "kepp_r", "method", "method_label", "method_names", "methods",
    "paths_source", "plans_kept", "text_joint_decoded", "with_endpoints",
]

# The planner with no trained model (the P²KG's plan between the text tower's endpoints): the catalogue's
# row of its plans, and its id where a planning model's id goes (kepp plan --planning-model, the Plan
# page's model=; live_planner).
TEXT_PLANNER = "graph-text"
# What a row is: a baseline, zero-shot planning on the graph, a planner (a planning model, with or
# without the KEPP pipeline around it), or a planner's action block decoded with the graph by a decoder
# (``+dec``; ``+jdec``, ``+jdec-text``: jointly with a source's distributions of the first and last step).
BASELINE, ZERO_SHOT, PLANNER, DECODED = "baseline", "zero-shot", "planner", "decoded"
ROW_KINDS = (BASELINE, ZERO_SHOT, PLANNER, DECODED)
# Planning models that plan without endpoints (no condition; PDPP's task row): a row of theirs takes no source.
_NO_ENDPOINTS = ("none", "task")
# The planners whose action blocks decode best with the graph (docs, Models): the catalogue adds their
# ``+jdec`` rows (the endpoint model's distributions, and each variant's) and ``+jdec-text`` rows.
JOINT_BASES = ("kepp-nograph", "kepp-R1", "kepp-R1-struct")


@dataclass(frozen=True, kw_only=True)
class MethodEntry:
    """One row of the evaluation table, built by keyword from named parts.

    ``kind``: one of :data:`ROW_KINDS`; ``impl``: the name of the implementation that makes its plans
    (:data:`kepp_core.evaluation.methods.IMPLEMENTATIONS`); ``roles``: the models it loads
    (``ROOT/T<h>/<folder>``); ``R``: the number of graph paths it is given (None: no paths, or set by
    its model's config); ``endpoints_from``: the name of its endpoint source
    (:data:`~kepp_core.catalog.sources.ENDPOINT_SOURCES`: whose endpoints it plans between, or for a
    graph-decoded row whose probabilities of every first and last step it decodes with; None: none;
    :attr:`ends` is the source itself); ``base`` and ``decoder``: the method whose action block a
    graph-decoded row decodes, and how (:mod:`~kepp_core.catalog.decoders`). Everything else is asked of
    these parts: whether it uses the graph (:attr:`graph`), needs an LLM (:attr:`llm`) or the S3D text
    tower (:attr:`text`), was trained with the structured loss (:attr:`structured`), runs by default
    (:attr:`default`), which planning model the KEPP planner runs as this row (:attr:`planner_role`) and
    which planner re-plans it on two clips (:func:`live_planner`). Parts that do not fit are refused here
    (:meth:`refusal`), in one line.
    """

    name: str
    label: str
    kind: str
    impl: str
    roles: tuple[ModelRole, ...] = ()
    R: int | None = None
    endpoints_from: str | None = None
    base: str | None = None
    decoder: Decoder | None = None

    def __post_init__(self) -> None:
        refused = self.refusal()
        if refused is not None:
            raise KeppError(f"method {self.name!r}: {refused}")

    def refusal(self) -> str | None:
        """Why its parts do not fit (None: they do): an unknown kind; a graph-decoded row without its base
        and decoder; a source whose model is not among its models; a decoder that cannot decode with its
        source; a row given a source its planner cannot plan from (baselines and planning models that plan
        without endpoints take none; zero-shot rows and planners between endpoints need one)."""
        if self.kind not in ROW_KINDS:
            return f"kind {self.kind!r} is not one of {', '.join(ROW_KINDS)}"
        if not (self.base is not None) == (self.decoder is not None) == (self.kind == DECODED):
            return f"a graph-decoded row ({DECODED}), its base and its decoder go together"
        ends = self.ends
        if ends is not None and ends.role is not None and ends.role not in self.roles:
            return f"its endpoint source {ends.name!r} reads {model_folder(ends.role)}, which is not among its models"
        if self.decoder is not None:
            if self.decoder.accepts(ends):
                return None
            need = "with" if self.decoder.distributions else "without"
            return (f"its decoder ({self.decoder.name}) cannot decode with the endpoint source {self.endpoints_from!r} "
                    f"(it needs a source {need} full distributions of the first and last step)")
        plan = self.plan_model
        takes = self.kind == ZERO_SHOT or (self.kind == PLANNER and plan is not None and plan.condition not in _NO_ENDPOINTS)
        if takes and ends is None:
            return "it plans between endpoints: name its endpoint source (endpoints_from)"
        if ends is not None and not takes:
            who = f"its planning model ({model_folder(plan)})" if plan is not None else f"a {self.kind} row"
            return f"{who} plans without endpoints: it cannot plan from the endpoint source {ends.name!r}"
        return None

    @property
    def ends(self) -> EndpointSource | None:
        """Its endpoint source (None: it plans without given endpoints)."""
        return None if self.endpoints_from is None else endpoint_source(self.endpoints_from)

    @property
    def decoded(self) -> bool:
        """A graph-decoded row (``<base>+dec``, ``+jdec``, ``+jdec-text``: the base's action block decoded
        exactly under the P²KG by its :attr:`decoder`)."""
        return self.decoder is not None

    @property
    def choice_key(self) -> str | None:
        """The key its decoding choice is stored under (its decoder's :meth:`~Decoder.choice_key`; mean-of-K
        emissions append ``@K<K>``); None for a row that is not graph-decoded."""
        return None if self.decoder is None else self.decoder.choice_key(self.name, self.base)

    @property
    def plan_model(self) -> ModelRole | None:
        """The planning model among its roles (None: it has none)."""
        return next((r for r in self.roles if r.kind == "plan"), None)

    @property
    def graph(self) -> bool:
        """It uses the P²KG: zero-shot and graph-decoded rows, planners with a graph condition."""
        plan = self.plan_model
        return self.kind in (ZERO_SHOT, DECODED) or (plan is not None and plan.condition in GRAPH_CONDITIONS)

    @property
    def structured(self) -> bool:
        """Its planning model was trained with the structured loss through the graph."""
        plan = self.plan_model
        return plan is not None and plan.structured

    @property
    def llm(self) -> bool:
        """It needs an LLM endpoint (its planning model is conditioned on the LLM's plan; never run by
        default)."""
        plan = self.plan_model
        return plan is not None and plan.condition in LLM_CONDITIONS

    @property
    def text(self) -> bool:
        """It needs the S3D text tower (``kepp eval --encoder s3d:PATH``) and the S3D encoder's features."""
        return self.ends is not None and self.ends.text

    @property
    def default(self) -> bool:
        """``kepp eval`` runs it when no methods are named: the paper's table, i.e. a baseline, zero-shot
        or planner row between no given endpoints or those of a source the table runs with (the step
        model's, the true ones: :attr:`~kepp_core.catalog.sources.EndpointSource.runs_by_default`), whose
        models ``kepp train all`` trains by default (:data:`~kepp_core.catalog.roles.SUITE_ROLES`)."""
        return (self.kind in (BASELINE, ZERO_SHOT, PLANNER) and (self.ends is None or self.ends.runs_by_default)
                and set(self.roles) <= set(SUITE_ROLES))

    @property
    def endpoint_role(self) -> ModelRole | None:
        """The endpoint model its source reads (the default one, or a variant: ``endpoints-pair``), or None."""
        return None if self.ends is None else self.ends.endpoint_role

    @property
    def planner_role(self) -> ModelRole | None:
        """The planning model the KEPP planner (:class:`kepp_core.planner.KEPPPlanner`: its step model's
        endpoints, ``R`` graph paths, the planning model) runs to make this row's plans — a
        graph-conditioned one, trained with the structured loss or not, or one without a condition —
        or None when the planner is not this row (baselines, decoded and LLM rows, and rows whose source
        the planner's own step model does not predict: ground-truth or endpoint-model endpoints)."""
        if self.kind != PLANNER or self.llm or (self.ends is not None and not self.ends.planner_predicts):
            return None
        plan = self.plan_model
        return plan if plan is not None and plan.condition in ("graph", "none") else None

    @property
    def judged_on_stored_paths(self) -> bool:
        """Its plan follows the step model's endpoints and the graph paths a record stores (the
        zero-shot and KEPP-R rows): the failure analysis judges it on those; other rows are
        judged by their own plan's ends."""
        return (self.graph and self.ends is not None and self.ends.planner_predicts and self.R is not None
                and not self.decoded and not self.structured and not self.llm)

    @property
    def stores_paths(self) -> bool:
        """Its output carries the graph paths the records keep (a KEPP-R row with a planning model)."""
        return self.judged_on_stored_paths and self.plan_model is not None



def kepp_r(R: int, structured: bool = False) -> MethodEntry:
    """The entry of the KEPP planner with ``R`` graph paths between the step model's endpoints
    (``structured``: its planning model trained with the structured loss)."""
    tail = ", structured training" if structured else ""
    return MethodEntry(name=f"kepp-R{R}" + (STRUCT_SUFFIX if structured else ""), label=f"KEPP R={R}{tail}",
                       kind=PLANNER, impl="kepp", roles=(STEP, plan_role("graph", R, structured)), R=R,
                       endpoints_from=PREDICTED)


def decoded(base: MethodEntry, decoder: Decoder = GRAPH_DECODING, source: str | None = None, *, suffix: str = "",
            with_words: str = "") -> MethodEntry:
    """The row of ``base``'s action block decoded by ``decoder`` (default: graph decoding, ``<base>+dec``)
    with the endpoint ``source`` (a name; default: the base's own, else the step model's): named
    ``<base><decoder's suffix><suffix>``, labelled ``<base's label><decoder's tail><with_words>``, with
    the base's models and the one its source reads.

    >>> decoded(method("kepp-nograph")).roles[-1] == STEP, decoded(method("kepp-gt")).roles == method("kepp-gt").roles
    (True, True)
    """
    source = source or base.endpoints_from or PREDICTED
    role = endpoint_source(source).role
    roles = base.roles if role is None or role in base.roles else (*base.roles, role)
    return MethodEntry(name=base.name + decoder.suffix + suffix, label=base.label + decoder.tail + with_words,
                       kind=DECODED, impl="decoded", roles=roles, R=base.R, endpoints_from=source, base=base.name,
                       decoder=decoder)


def joint_decoded(base: MethodEntry) -> MethodEntry:
    """The ``<base>+jdec`` row of a planning method: the exact best plan under the endpoint
    model's distributions of ``a_1`` and ``a_T``, the base's action block and the P²KG."""
    return decoded(base, JOINT_DECODING, ENDPOINT_MODEL, with_words=" with the endpoint model")


def text_joint_decoded(base: MethodEntry) -> MethodEntry:
    """The ``<base>+jdec-text`` row of a planning method: its ``+jdec`` row with the S3D text tower's
    distributions of ``a_1`` and ``a_T`` in place of the endpoint model's (no endpoint model; it needs
    the text tower, as ``graph-text`` does)."""
    return decoded(base, JOINT_DECODING, TEXT, suffix="-text", with_words=" with the text tower's endpoints (S3D)")


def with_endpoints(entry: MethodEntry, role: ModelRole) -> MethodEntry:
    """The row ``entry`` planning with the endpoint model variant ``role`` instead of the default
    one: ``<name>-<variant>``, with that variant's source, run when named (the protocol's comparison
    of the two on the same episodes)."""
    return replace(entry, name=f"{entry.name}-{role.variant}", label=f"{entry.label} (the earlier {role.variant} model)",
                   roles=tuple(role if r == ENDPOINTS else r for r in entry.roles),
                   endpoints_from=model_source(role).name)


_GRAPH_CE = MethodEntry(name="graph-ce", label="P²KG zero-shot, endpoint model's endpoints", kind=ZERO_SHOT,
                        impl="zero-shot", roles=(ENDPOINTS,), R=1, endpoints_from=ENDPOINT_MODEL)
_BASE_METHODS = (
    MethodEntry(name="random", label="Random", kind=BASELINE, impl="random"),
    MethodEntry(name="retrieval", label="Retrieval (nearest training episode)", kind=BASELINE, impl="retrieval"),
    MethodEntry(name="graph-pred", label="P²KG zero-shot, predicted endpoints", kind=ZERO_SHOT, impl="zero-shot",
                roles=(STEP,), R=1, endpoints_from=PREDICTED),
    MethodEntry(name="graph-gt", label="P²KG zero-shot, ground-truth endpoints", kind=ZERO_SHOT, impl="zero-shot",
                R=1, endpoints_from=TRUTH),
    _GRAPH_CE,
    *(with_endpoints(_GRAPH_CE, ModelRole(ENDPOINTS.kind, variant=v)) for v in ENDPOINT_VARIANTS),
    MethodEntry(name=TEXT_PLANNER, label="P²KG zero-shot, text-grounded endpoints (S3D)", kind=ZERO_SHOT,
                impl="zero-shot", R=1, endpoints_from=TEXT),
    MethodEntry(name="pdpp", label="PDPP (task classifier)", kind=PLANNER, impl="pdpp",
                roles=(plan_role("task"), TASK_CLASSIFIER)),
    MethodEntry(name="kepp-nograph", label="KEPP without graph condition", kind=PLANNER, impl="planning-model",
                roles=(plan_role("none"),)),
    kepp_r(1),
    kepp_r(2),
    MethodEntry(name="kepp-gt", label="KEPP with ground-truth endpoints", kind=PLANNER, impl="kepp",
                roles=(STEP, plan_role("graph", 1)), R=1, endpoints_from=TRUTH),
    kepp_r(1, structured=True),
)
# The decoded rows: every planning method (its action block is what is decoded).
_DECODED = tuple(decoded(m) for m in _BASE_METHODS if m.plan_model is not None)
_LLM_METHODS = (
    MethodEntry(name="kepp-llm", label="KEPP with the LLM plan instead of the graph", kind=PLANNER, impl="kepp-llm",
                roles=(STEP, plan_role("llm")), endpoints_from=PREDICTED),
    MethodEntry(name="kepp-graph-llm", label="KEPP with the graph and the LLM plan", kind=PLANNER, impl="kepp-llm",
                roles=(STEP, plan_role("graph+llm")), endpoints_from=PREDICTED),
)
# The joint-decoding rows of the planners named in JOINT_BASES: with the endpoint model's distributions,
# then (after the decoded rows) with each variant's, then with the text tower's.
_JOINT = tuple(joint_decoded(m) for m in _BASE_METHODS if m.name in JOINT_BASES)
_JOINT_VARIANTS = tuple(with_endpoints(m, ModelRole(ENDPOINTS.kind, variant=v)) for v in ENDPOINT_VARIANTS
                        for m in _JOINT)
_TEXT_JOINT = tuple(text_joint_decoded(m) for m in _BASE_METHODS if m.name in JOINT_BASES)
_KBEST = (decoded(kepp_r(1), KBEST_DECODING),)  # KEPP R=1's K most probable plans (CEFITO's top-5)
# Every built-in method, in the table's (and the registry's) order; never rebound (extra_method adds to
# _EXTRA, which methods() and find_method() read as well).
METHODS: tuple[MethodEntry, ...] = (_BASE_METHODS + _LLM_METHODS + _DECODED + _JOINT + _JOINT_VARIANTS + _TEXT_JOINT
                                    + _KBEST)
_BY_NAME = {m.name: m for m in METHODS}
_EXTRA: dict[str, MethodEntry] = {}  # methods added for a with-block (extra_method)


def check_choice_keys(rows) -> None:
    """Refuse rows whose decoding choices would share one stored entry (a KeppError naming both): every
    graph-decoded row's choice is kept under its own key (:attr:`MethodEntry.choice_key`)."""
    seen: dict[str, str] = {}
    for m in rows:
        key = m.choice_key
        if key is not None and seen.setdefault(key, m.name) != m.name:
            raise KeppError(f"method {m.name!r}: its decoding choice would be stored under {key!r}, "
                            f"as method {seen[key]!r}'s is")


check_choice_keys(METHODS)
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
    """Of the methods ``names``, the one whose paths the records keep (``paths``, ``path_scores``): the
    KEPP-R row with the most graph paths; where none ran, the first graph-decoded row whose decoder keeps
    several plans per episode (:attr:`~kepp_core.catalog.decoders.Decoder.keeps_plans`: the K-best
    decoder's K plans); None when none of them stores paths."""
    ran = [m for m in methods() if m.name in set(names)]
    rows = [m for m in ran if m.stores_paths]
    if rows:
        return max(rows, key=lambda m: m.R).name
    return next(iter(plans_kept(names)), None)


def plans_kept(names) -> tuple[str, ...]:
    """Of the methods ``names``, the graph-decoded rows whose decoder keeps several plans per episode (the
    K-best decoder's K plans), in the table's order: the records keep each one's own (``method_paths``)."""
    wanted = set(names)
    return tuple(m.name for m in methods() if m.name in wanted and m.decoder is not None and m.decoder.keeps_plans)


@contextmanager
def extra_method(entry: MethodEntry) -> Iterator[MethodEntry]:
    """Add ``entry`` to the catalogue for the duration of a ``with`` block (tests register a
    throw-away method this way; its class is registered with
    :func:`kepp_core.evaluation.methods.registered`)."""
    if find_method(entry.name) is not None:
        raise KeppError(f"method {entry.name!r} is already in the catalogue")
    check_choice_keys((*methods(), entry))
    _EXTRA[entry.name] = entry
    try:
        yield entry
    finally:
        del _EXTRA[entry.name]

