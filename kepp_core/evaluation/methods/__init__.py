"""The methods of the evaluation table, a registry of them, and the code that runs them on one horizon.

Methods (the paper's evaluation table; their entries are in :data:`kepp_core.catalog.METHODS`), in the table's order:

- ``random``: uniformly random actions;
- ``retrieval`` (:class:`NearestEpisode`): the plan of the nearest training episode in
  (standardised) feature space;
- ``graph-pred`` / ``graph-gt`` / ``graph-ce``: zero-shot planning, the top P²KG path between the
  step model's predicted / the ground-truth / the endpoint model's endpoints;
- ``graph-text``: the same between the endpoints the S3D text tower scores highest for the start
  and goal clips (:class:`~kepp_core.video.grounding.TextEndpoints`, its temperature fitted on the
  training episodes); it needs S3D features and the ``s3d:PATH`` spec (``EvalOptions.encoder``)
  and runs only when named;
- ``pdpp``: planning model with a task-class row, the task predicted by the classifier;
- ``kepp-nograph``: planning model without the graph condition;
- ``kepp-R1`` / ``kepp-R2``: the KEPP planner with R = 1 / 2 paths;
- ``kepp-gt``: the KEPP planner (R = 1) with ground-truth endpoints (a flawless step model);
- ``kepp-R1-struct``: KEPP R = 1 trained with the structured loss through the graph;
- ``<method>+dec`` (:class:`~kepp_core.evaluation.methods.decoded.Decoded`) for every planning
  method: the model's action block decoded exactly under the P²KG (λ and endpoint mode: the row's
  decoding choice, :mod:`~kepp_core.evaluation.methods.choice`); these rows run only when named
  (``EXTRA_METHODS``);
- ``<method>+jdec`` (the same class) for the planners the catalogue names (``JOINT_BASES``): the
  action block decoded jointly with the endpoint model's distributions of the first and last step (run
  only when named), ``<method>+jdec-pair`` with the earlier endpoint model's, and ``<method>+jdec-text``
  jointly with the S3D text tower's distributions (it needs ``EvalOptions.encoder``, as ``graph-text``
  does);
- ``kepp-llm`` / ``kepp-graph-llm`` (``LLM_METHODS``, run only when asked for and given an
  :class:`~kepp_core.llm.LLMRecommender`): planning models conditioned on the LLM's plan for
  the step model's predicted endpoints, alone / after the P²KG row (paper Table 6). Their
  rows say how many plans came from the LLM and how many from the fallback (and which).

Every learned method reads ``ROOT/T<h>/<model>`` (its ``requires``; see
:mod:`kepp_core.training.suite`). Every row of :data:`kepp_core.catalog.METHODS` is registered here
with the implementation its entry names (:data:`IMPLEMENTATIONS`: a :class:`Method` subclass's
``impl``). Adding a method is one entry in the catalogue (name, label, kind, implementation, models, R,
endpoint source) and, for a new way of planning, one :class:`Method` subclass (with its ``impl``) in
:mod:`~kepp_core.evaluation.methods.baselines` or :mod:`~kepp_core.evaluation.methods.kepp`, listed in
:data:`IMPLEMENTATIONS`.

With ``samples=K`` every sampled method (``random`` and the planning models: ``pdpp``,
``kepp-*``) also draws ``K`` plans per test episode (one batched DDPM/DDIM pass over the
episodes repeated ``K`` times, different noise per copy; the step model's endpoints and the
graph condition stay the point prediction's) and
:func:`~kepp_core.evaluation.uncertainty.episode_uncertainty` scores them (NLL, KL, mode
precision and recall).

>>> DEFAULT_METHODS[:3], LABELS["retrieval"]
(('random', 'retrieval', 'graph-pred'), 'Retrieval (nearest training episode)')
>>> [r.kind for r in get_method("kepp-R2").requires], get_method("kepp-R2").sampled
(['step', 'plan'], True)
>>> type(get_method("kepp-R1+jdec-text")).__name__, IMPLEMENTATIONS[get_method("graph-ce").entry.impl].__name__
('Decoded', 'GraphZeroShot')
"""

from kepp_core.catalog import METHODS, MethodEntry
from kepp_core.evaluation.methods.base import *  # noqa: F403
from kepp_core.evaluation.options import *  # noqa: F403
from kepp_core.evaluation.methods.baselines import *  # noqa: F403
from kepp_core.evaluation.methods.decoded import *  # noqa: F403
from kepp_core.evaluation.methods.kepp import *  # noqa: F403
from kepp_core.evaluation.methods.run import *  # noqa: F403
from kepp_core.evaluation import options
from kepp_core.evaluation.methods import base, baselines, decoded, kepp, run

# Every implementation by the name a catalogue entry's ``impl`` gives it.
IMPLEMENTATIONS: dict[str, type[Method]] = {cls.impl: cls for cls in (
    RandomPlans, NearestEpisode, GraphZeroShot, PDPP, KeppNoGraph, KeppGraph, KeppLLM, Decoded)}


def implementation(entry: MethodEntry) -> Method:
    """The method of the catalogue entry ``entry``: its implementation (:data:`IMPLEMENTATIONS`) made
    for it (a graph-decoded row's base must be registered first)."""
    return IMPLEMENTATIONS[entry.impl](entry)


for _entry in METHODS:  # the table's order: a graph-decoded row's base comes before it
    register(implementation(_entry))

UNCERTAINTY_COLUMNS = ("NLL", "KL", "ModePrec", "ModeRec")
# Derived from the registry (the CLI, the app and the tests use these names; the entries themselves are
# kepp_core.catalog.METHODS).
DEFAULT_METHODS = default_methods()  # run by default
LLM_METHODS = tuple(name for name, m in REGISTRY.items() if m.needs_llm)  # need an LLM endpoint; only when asked
EXTRA_METHODS = tuple(name for name, m in REGISTRY.items() if not m.default and not m.needs_llm)  # +dec, -struct, text
ALL_METHODS = tuple(REGISTRY)  # registration order: DEFAULT_METHODS, EXTRA_METHODS and LLM_METHODS
SAMPLED = tuple(name for name, m in REGISTRY.items() if m.sampled)  # can draw K plans per episode
LABELS = {name: m.label for name, m in REGISTRY.items()}

# this module's own names, then each part's __all__ (the names it shows through this package, written once,
# beside their code)
__all__ = [
    "ALL_METHODS", "DEFAULT_METHODS", "EXTRA_METHODS", "IMPLEMENTATIONS", "LABELS", "LLM_METHODS", "SAMPLED",
    "UNCERTAINTY_COLUMNS", "implementation",
    *base.__all__,
    *options.__all__,
    *baselines.__all__,
    *decoded.__all__,
    *kepp.__all__,
    *run.__all__,
]
