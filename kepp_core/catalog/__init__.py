"""The facts every layer shares, in one place and without torch or numpy (the app's first page,
``kepp --help`` and the command parsers read them), one module per concern:

- :mod:`~kepp_core.catalog.roles`: the model roles and the one codec between a model folder's name
  and its role (``step``, ``plan-graph-R2``, ``endpoints-pair``, ...);
- :mod:`~kepp_core.catalog.files`: a models root's horizon folders (``ROOT/T<h>``) and the file names;
- :mod:`~kepp_core.catalog.sources`: the endpoint sources (step model, truth, endpoint model and its
  variants, text tower): each one's role and words, and what it gives evaluation and the planner;
- :mod:`~kepp_core.catalog.decoders`: the decoders of the graph-decoded rows (graph, joint): each one's
  modes, stored choice key and words;
- :mod:`~kepp_core.catalog.rows`: the evaluation methods, one :class:`MethodEntry` per row of the table,
  built from named parts (a kind, an implementation, an endpoint source, a decoder), and which planner
  re-plans a row (:func:`live_planner`);
- :mod:`~kepp_core.catalog.metrics`: the metric names, the paired test and the failure patterns;
- :mod:`~kepp_core.catalog.slices`: the named cuts of a method's episodes;
- :mod:`~kepp_core.catalog.scorers`: the path scorers' readable names;
- :mod:`~kepp_core.catalog.episodes`: the episode-id codec;
- :mod:`~kepp_core.catalog.limits`: limits and fixed vocabularies of the option parsers;
- :mod:`~kepp_core.catalog.defaults`: the named defaults (observation setting, ``M``, the table's
  horizons, the logit scale, the confidence level).

Every public name is read from this package (``from kepp_core.catalog import NAME``); the modules are
where each one is written. The app imports only this package of them (with ``kepp_core.api`` and
``kepp_core.errors``).

>>> method("kepp-R2").R, model_folder(ENDPOINTS_PAIR), horizon_folder(3), METRIC_NAMES["SR"]
(2, 'endpoints-pair', 'T3', 'SR')
"""

from kepp_core.catalog.defaults import CONFIDENCE, DEFAULT_M, DEFAULT_SETTING, LOGIT_SCALE, SETTINGS, TABLE_HORIZONS
from kepp_core.catalog.episodes import episode_id, parse_episode_id
from kepp_core.catalog.files import (CONFIG_FILE, DECODING_FILE, DEMO_MODELS_DIR, GRAPH_FILE, GRAPH_PAIR, LOG_FILE,
                                     MANIFEST_FILE,
                                     RECORDS_FILE, RESULTS_FILE, WEIGHTS_FILE, horizon_folder, models_dir,
                                     models_horizon, parse_horizon_folder)
from kepp_core.catalog.limits import DEMO_HORIZONS, MAX_HORIZON, MAX_SEED, MAX_TOP, SAMPLERS
from kepp_core.catalog.metrics import (AB_CELLS, AB_TEST, BOOTSTRAP_RESAMPLES, METRIC_KEYS, METRIC_NAMES, METRICS, PAIR_METRICS, PAIRED_TEST, PATTERN_LABELS,
                                       P_FLOOR, PATTERNS, SIGNIFICANCE, Metric, p_text, pattern_label)
from kepp_core.catalog.roles import (CONDITION_ROW_KINDS, DEMO_ROLES, DIFFUSION_KINDS, ENDPOINT_ARCHS, ENDPOINT_HEADS,
                                     ENDPOINT_VARIANTS,
                                     ENDPOINTS, ENDPOINTS_PAIR, EXTRA_ROLES, GRAPH_CONDITIONS, KINDS, LLM_CONDITIONS,
                                     OFFICIAL_ARCHITECTURE, PLAN_CONDITIONS, STEP, STRUCT_SUFFIX, SUITE_ROLES,
                                     TASK_CLASSIFIER, ModelRole, model_folder, parse_model_folder, parse_plan_model_id,
                                     plan_model_id, plan_role)
from kepp_core.catalog.decoders import (DECODERS, GRAPH_DECODING, JOINT_DECODING, JOINT_MODE, MARGINAL_MODES,
                                        Decoder)
from kepp_core.catalog.rows import (BASELINE, DECODED, DEMO_METHODS, DEMO_RECORDED, JOINT_BASES, METHODS, PLANNER,
                                    ROW_KINDS, TEXT_PLANNER, ZERO_SHOT, LivePlanner, MethodEntry, check_choice_keys,
                                    decoded, extra_method, find_method, joint_decoded, kepp_r, live_planner, method,
                                    method_label, method_names, methods, parse_planner_id, paths_source,
                                    planner_method, text_joint_decoded, with_endpoints)
from kepp_core.catalog.sources import (ENDPOINT_MODEL, ENDPOINT_SOURCES, PREDICTED, TEXT, TRUTH, EndpointSource,
                                       endpoint_source, model_source)
from kepp_core.catalog.scorers import EDGE_SCORERS, SCORER_LABELS, scorer_label
from kepp_core.catalog.slices import SLICE_BY, SLICE_CUTS, SLICE_ENDS_RIGHT, SLICE_ENDS_WRONG, SLICE_SUCCESS, SliceCut

__all__ = [
    # roles and folders
    "CONDITION_ROW_KINDS", "DEMO_ROLES", "DIFFUSION_KINDS", "ENDPOINT_ARCHS", "ENDPOINT_HEADS", "ENDPOINTS",
    "ENDPOINTS_PAIR", "EXTRA_ROLES", "GRAPH_CONDITIONS", "KINDS", "LLM_CONDITIONS", "OFFICIAL_ARCHITECTURE",
    "ENDPOINT_VARIANTS", "PLAN_CONDITIONS", "STEP", "STRUCT_SUFFIX", "SUITE_ROLES", "TASK_CLASSIFIER", "ModelRole", "model_folder",
    "parse_model_folder", "parse_plan_model_id", "plan_model_id", "plan_role",
    "horizon_folder", "models_dir", "models_horizon", "parse_horizon_folder",
    "CONFIG_FILE", "DECODING_FILE", "DEMO_MODELS_DIR", "GRAPH_FILE", "GRAPH_PAIR", "LOG_FILE", "MANIFEST_FILE", "RECORDS_FILE",
    "RESULTS_FILE", "WEIGHTS_FILE",
    # method rows
    "BASELINE", "DECODED", "DEMO_METHODS", "DEMO_RECORDED", "JOINT_BASES",
    "METHODS", "PLANNER", "ROW_KINDS", "TEXT_PLANNER", "ZERO_SHOT", "LivePlanner", "MethodEntry",
    "check_choice_keys", "decoded", "extra_method", "find_method", "joint_decoded", "kepp_r", "live_planner", "method", "method_label",
    "method_names", "methods", "parse_planner_id", "paths_source", "planner_method", "text_joint_decoded",
    "with_endpoints",
    # decoders
    "DECODERS", "GRAPH_DECODING", "JOINT_DECODING", "JOINT_MODE", "MARGINAL_MODES", "Decoder",
    # endpoint sources
    "ENDPOINT_MODEL", "ENDPOINT_SOURCES", "PREDICTED", "TEXT", "TRUTH", "EndpointSource", "endpoint_source",
    "model_source",
    # metrics, patterns, slices, scorers, episodes, limits
    "METRIC_KEYS", "METRIC_NAMES", "METRICS", "PAIR_METRICS", "PAIRED_TEST", "PATTERN_LABELS", "PATTERNS",
    "SIGNIFICANCE", "Metric", "pattern_label", "AB_CELLS", "AB_TEST", "BOOTSTRAP_RESAMPLES", "P_FLOOR", "p_text",
    "SLICE_BY", "SLICE_CUTS", "SLICE_ENDS_RIGHT", "SLICE_ENDS_WRONG", "SLICE_SUCCESS", "SliceCut",
    "EDGE_SCORERS", "SCORER_LABELS", "scorer_label", "episode_id", "parse_episode_id",
    "DEMO_HORIZONS", "MAX_HORIZON", "MAX_SEED", "MAX_TOP", "SAMPLERS",
    # named defaults
    "CONFIDENCE", "DEFAULT_M", "DEFAULT_SETTING", "LOGIT_SCALE", "SETTINGS", "TABLE_HORIZONS",
]
