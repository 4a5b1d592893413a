"""The calls the app and the commands need, over the layers below: a thin door, not a second core.
Each name is documented where it is defined; drawing, scene curation and URLs live with the app
(``app/components``), the facts every layer shares in :mod:`kepp_core.catalog`.

- :mod:`~kepp_core.api.config`: the app's configuration (:class:`AppConfig`: its TOML file and the
  folders a browser visitor may open are its methods);
- :mod:`~kepp_core.api.workspace`: a configuration opened (dataset, graph, models, prediction
  records, training runs, protocol folders, playlists) and the cache home's remembered views;
- :mod:`~kepp_core.api.planning`: the planner of a models folder, one episode from two clips,
  sampled plans, the LLM recommender;
- :mod:`~kepp_core.api.analysis`: transition matrices, expert trajectories, prediction records as
  one table, metrics per method and horizon and by slice (in any evaluation code's family), the
  failure analysis, two methods episode by episode, published numbers beside them;
- :mod:`~kepp_core.api.protocols`: ``kepp protocol`` results: intervals over seeds, the paired
  test of any two methods, data-efficiency curves;
- :mod:`~kepp_core.api.media`: video facts, thumbnails, uploads and their encoding, zero-shot step
  grounding with the S3D text tower;
- the graph's own queries (:mod:`kepp_core.graph`): the neighbourhood of a step, the top-R paths
  between two steps, where a graph came from.

``import kepp_core.api`` stays light: torch loads only when a planner is first needed.

>>> from kepp_core import api
>>> api.AppConfig().dataset, len(api.__all__) <= 45
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
    metrics_table,
    read_predictions,
    records_version,
    slice_table,
    transitions,
)
from kepp_core.api.config import AppConfig
from kepp_core.api.media import encode_clip_video, encoder_spec, save_upload, text_grounding, thumbnail_png, video_meta
from kepp_core.api.planning import (
    episode_clips,
    llm_defaults,
    llm_recommender,
    load_planner,
    plan_clips,
    playable_videos,
    sampled_plans,
    text_planner,
    video_features,
)
from kepp_core.api.protocols import (
    pair_table,
    pair_verdict,
    protocol_records,
    read_protocol,
)
from kepp_core.api.workspace import (
    Workspace,
    dataset_root,
    demo_world_root,
    episode_map,
    open_dataset,
    read_run_config,
    read_run_log,
    remembered,
)
from kepp_core.graph import capped_subgraph, graph_source, retrieve, scorer_names, subgraph

__all__ = [
    # configuration
    "AppConfig",
    # the workspace
    "Workspace", "dataset_root", "demo_world_root", "episode_map",
    "open_dataset", "read_run_config", "read_run_log", "remembered",
    # planning
    "episode_clips", "llm_defaults", "llm_recommender", "load_planner",
    "plan_clips", "playable_videos", "sampled_plans", "text_planner", "video_features",
    # the graph
    "capped_subgraph", "graph_source", "retrieve", "scorer_names", "subgraph",
    # evaluated plans
    "check_vocabulary", "compare_methods", "expert_view", "failure_analysis", "method_horizon_table", "metrics_table",
    "read_predictions", "records_version", "slice_table", "transitions",
    # the field's evaluation codes and published numbers
    "literature_rows",
    # kepp protocol results
    "pair_table", "pair_verdict", "protocol_records", "read_protocol",
    # media
    "encode_clip_video", "encoder_spec", "save_upload", "text_grounding", "thumbnail_png", "video_meta",
]
