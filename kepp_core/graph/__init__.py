"""The procedure knowledge graph (P²KG): build/save/load, top-R path retrieval, the
history-backed recommendation method, views (sub-graph, expert trajectories, transition
matrices) and zero-shot planning."""

from kepp_core.graph.build import ProcedureGraph, TaskStats, build_graph, load_graph
from kepp_core.graph.history import HistoryScorer, fit_prior
from kepp_core.graph.retrieval import (
    FrequencyScorer,
    P2KGScorer,
    PathScorer,
    Recommendation,
    Retriever,
    aggregate,
    fallback_paths,
    k_best,
    make_scorer,
    method_names,
    path_weights,
    retrieve,
)
from kepp_core.graph.views import (
    Edge,
    SubGraph,
    expert_trajectories,
    subgraph,
    task_transition_matrix,
    transition_matrix,
)
from kepp_core.graph.zeroshot import ZeroShotResult, read_endpoints, zero_shot

__all__ = [
    "Edge", "FrequencyScorer", "HistoryScorer", "P2KGScorer", "PathScorer", "ProcedureGraph",
    "Recommendation", "Retriever", "SubGraph", "TaskStats", "ZeroShotResult", "aggregate",
    "build_graph", "expert_trajectories", "fallback_paths", "fit_prior", "k_best", "load_graph",
    "make_scorer", "method_names", "path_weights", "read_endpoints", "retrieve", "subgraph",
    "task_transition_matrix", "transition_matrix", "zero_shot",
]
