"""The procedure knowledge graph (P²KG): build/save/load, path scorers and exact top-R
retrieval, the history-backed recommendation method, exploration (sub-graph, expert
trajectories, transition matrices) and import of the official repository's pickled graphs
(:mod:`kepp_core.graph.official`)."""

from kepp_core.graph.build import ProcedureGraph, TaskStats, build_graph, graph_source, load_graph
from kepp_core.graph.explore import (
    Edge,
    SubGraph,
    capped_subgraph,
    edge_weight,
    expert_trajectories,
    strongest_subgraph,
    subgraph,
    task_transition_matrix,
    transition_matrix,
)
from kepp_core.graph.history import HistoryScorer, fit_prior
from kepp_core.graph.retrieval import (
    SCORERS,
    Recommendation,
    Retriever,
    aggregate,
    fallback_paths,
    make_retriever,
    make_scorer,
    scorer_names,
    path_weights,
    retrieve,
)
from kepp_core.graph.scorers import FrequencyScorer, MarkovScorer, P2KGScorer, PathScorer

__all__ = [
    "SCORERS", "Edge", "FrequencyScorer", "HistoryScorer", "MarkovScorer", "P2KGScorer", "PathScorer",
    "ProcedureGraph", "Recommendation", "Retriever", "SubGraph", "TaskStats", "aggregate", "build_graph", "capped_subgraph",
    "edge_weight", "expert_trajectories", "fallback_paths", "fit_prior", "graph_source", "load_graph", "make_retriever", "make_scorer",
    "scorer_names", "path_weights", "retrieve", "strongest_subgraph", "subgraph", "task_transition_matrix",
    "transition_matrix",
]
