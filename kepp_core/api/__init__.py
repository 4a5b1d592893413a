"""The few calls the app and the commands need, over the layers below.

- :mod:`~kepp_core.api.config`: the app's configuration schema (``AppConfig``, ``AppOptions``,
  ``ENV``, the TOML file);
- :mod:`~kepp_core.api.workspace`: a configuration opened (dataset, graph, models and their
  specs, prediction records, training runs);
- :mod:`~kepp_core.api.planning`: observation windows of clips, the planner, one episode or a
  batch, sampled plans, the LLM recommender, CPU threads;
- :mod:`~kepp_core.api.analysis`: sub-graphs, expert trajectories, transition matrices, metrics
  per method and horizon, failure analysis;
- :mod:`~kepp_core.api.media`: video facts, thumbnails, uploads and their encoding.

``import kepp_core.api`` stays light: torch loads only when a planner or model spec is
first needed.

>>> from kepp_core import api
>>> api.AppConfig().dataset, api.default_clips(8.0, 3)
('demo', ((0.0, 3.0), (5.0, 8.0)))
"""

from __future__ import annotations

from kepp_core.api.config import (
    AppConfig,
    AppOptions,
    DATASET_FORMATS,
    ENV,
    PATH_KEYS,
    config_environment,
    config_from_env,
    config_from_mapping,
    read_app_config,
    resolve_encoder,
)
from kepp_core.api.workspace import (
    DEMO_MODELS,
    LOG_NAME,
    Workspace,
    dataset_key,
    dataset_root,
    demo_model_folders,
    demo_world_root,
    feature_encoder,
    find_runs,
    model_specs,
    open_dataset,
    open_workspace,
    plan_variants,
    read_run_config,
    read_run_log,
    trained_horizons,
)
from kepp_core.api.planning import (
    LLM_MAPPERS,
    METHOD_LABELS,
    SAMPLERS,
    check_planner,
    default_clips,
    episode_clips,
    llm_defaults,
    llm_recommender,
    load_planner,
    observation,
    observation_settings,
    plan_batch,
    plan_clips,
    playable_videos,
    recommendation_methods,
    sampled_plans,
    set_cpu_threads,
    video_features,
)
from kepp_core.api.analysis import (
    PATTERNS,
    PATTERN_LABELS,
    RECORD_COLUMNS,
    classify_failures,
    default_method,
    expert_view,
    failure_analysis,
    failure_stats,
    heatmap_order,
    metrics_table,
    neighbourhood,
    outcomes,
    read_predictions,
    subgraph_view,
    transitions,
)
from kepp_core.api.media import (
    encode_clip_video,
    encoder_spec,
    save_upload,
    thumbnail_png,
    video_meta,
)
from kepp_core.api.plangraph import (
    LegendEntry,
    PathGroup,
    PlanGraph,
    ZeroShotPlans,
    edge_text,
    graph_paths,
    node_text,
    plan_episodes,
    plan_graph,
    zero_shot_plans,
)

__all__ = [
    "AppConfig",
    "AppOptions",
    "DATASET_FORMATS",
    "DEMO_MODELS",
    "ENV",
    "LLM_MAPPERS",
    "LOG_NAME",
    "METHOD_LABELS",
    "PATH_KEYS",
    "PATTERNS",
    "PATTERN_LABELS",
    "RECORD_COLUMNS",
    "SAMPLERS",
    "Workspace",
    "check_planner",
    "classify_failures",
    "config_environment",
    "config_from_env",
    "config_from_mapping",
    "dataset_key",
    "dataset_root",
    "default_clips",
    "default_method",
    "demo_model_folders",
    "demo_world_root",
    "encode_clip_video",
    "encoder_spec",
    "episode_clips",
    "expert_view",
    "failure_analysis",
    "failure_stats",
    "feature_encoder",
    "find_runs",
    "heatmap_order",
    "llm_defaults",
    "llm_recommender",
    "load_planner",
    "metrics_table",
    "model_specs",
    "neighbourhood",
    "observation",
    "observation_settings",
    "open_dataset",
    "open_workspace",
    "outcomes",
    "plan_batch",
    "plan_clips",
    "plan_variants",
    "playable_videos",
    "read_app_config",
    "read_predictions",
    "read_run_config",
    "read_run_log",
    "recommendation_methods",
    "resolve_encoder",
    "sampled_plans",
    "save_upload",
    "set_cpu_threads",
    "subgraph_view",
    "thumbnail_png",
    "trained_horizons",
    "transitions",
    "video_features",
    "video_meta",
    # the plan graph and zero-shot planning (plangraph)
    "LegendEntry",
    "PathGroup",
    "PlanGraph",
    "ZeroShotPlans",
    "edge_text",
    "graph_paths",
    "node_text",
    "plan_episodes",
    "plan_graph",
    "zero_shot_plans",
]
