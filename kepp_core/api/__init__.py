"""The calls the app and the commands need, over the layers below: a thin door, not a second core.
Each name is documented where it is defined; drawing, scene curation and URLs live with the app
(``app/components``), the facts every layer shares in :mod:`kepp_core.catalog`.

- :mod:`~kepp_core.api.config`: the app's configuration (:class:`AppConfig`, the TOML file, the
  folders a browser visitor may open);
- :mod:`~kepp_core.api.workspace`: a configuration opened (dataset, graph, models, prediction
  records, training runs, protocol folders, playlists) and the cache home's remembered views;
- :mod:`~kepp_core.api.planning`: the planner of a models folder, one episode from two clips,
  sampled plans, the LLM recommender;
- :mod:`~kepp_core.api.analysis`: transition matrices, expert trajectories, prediction records as
  one table, metrics per method and horizon and by slice (in any evaluation code's family), the
  failure analysis, two methods episode by episode, published numbers beside them;
- :mod:`~kepp_core.api.protocols`: ``kepp protocol`` results: intervals over seeds, the paired
  test of any two methods, data-efficiency curves;
- :mod:`~kepp_core.api.media`: video facts, thumbnails, uploads and their encoding, the S3D
  text-video network and zero-shot step grounding with its text tower;
- the graph's own queries (:mod:`kepp_core.graph`): the neighbourhood of a step, the top-R paths
  between two steps, where a graph came from.

``import kepp_core.api`` stays light: torch loads only when a planner is first needed.

>>> from kepp_core import api
>>> api.AppConfig().dataset, len(api.__all__) <= 59
('demo', True)
"""

from __future__ import annotations

from kepp_core.api.analysis import (
    check_vocabulary,
    compare_methods,
    expert_view,
    failure_analysis,
    literature_rows,
    method_horizon_table,
    metric_family,
    metrics_table,
    protocol_metrics,
    read_predictions,
    records_version,
    slice_table,
    transitions,
)
from kepp_core.api.config import AppConfig, allowed_folders, check_allowed, read_app_config
from kepp_core.api.media import (encode_clip_video, encoder_spec, s3d_model, save_upload, text_grounding, thumbnail_png,
                                 video_meta)
from kepp_core.api.planning import (
    check_planner,
    episode_clips,
    llm_defaults,
    llm_recommender,
    load_planner,
    observation_settings,
    plan_clips,
    playable_videos,
    sampled_plans,
    text_planner,
    video_features,
)
from kepp_core.api.protocols import (
    efficiency_table,
    interval_table,
    pair_table,
    pair_verdict,
    protocol_records,
    read_protocol,
)
from kepp_core.api.workspace import (
    Workspace,
    dataset_root,
    demo_world_ready,
    demo_world_root,
    episode_map,
    feature_encoder,
    find_runs,
    open_dataset,
    plan_variants,
    read_run_config,
    read_run_log,
    remembered,
    trained_horizons,
)
from kepp_core.graph import capped_subgraph, graph_source, retrieve, scorer_names, subgraph

__all__ = [
    # configuration
    "AppConfig", "allowed_folders", "check_allowed", "read_app_config",
    # the workspace
    "Workspace", "dataset_root", "demo_world_ready", "demo_world_root", "episode_map", "feature_encoder", "find_runs",
    "open_dataset", "plan_variants", "read_run_config", "read_run_log", "remembered", "trained_horizons",
    # planning
    "check_planner", "episode_clips", "llm_defaults", "llm_recommender", "load_planner", "observation_settings",
    "plan_clips", "playable_videos", "sampled_plans", "text_planner", "video_features",
    # the graph
    "capped_subgraph", "graph_source", "retrieve", "scorer_names", "subgraph",
    # evaluated plans
    "check_vocabulary", "compare_methods", "expert_view", "failure_analysis", "method_horizon_table", "metrics_table",
    "read_predictions", "records_version", "slice_table", "transitions",
    # the field's evaluation codes and published numbers
    "literature_rows", "metric_family", "protocol_metrics",
    # kepp protocol results
    "efficiency_table", "interval_table", "pair_table", "pair_verdict", "protocol_records", "read_protocol",
    # media
    "encode_clip_video", "encoder_spec", "s3d_model", "save_upload", "text_grounding", "thumbnail_png", "video_meta",
]
