"""The procedure knowledge graph (P²KG): build/save/load, path scorers and exact top-R
retrieval, the history-backed recommendation method, exploration (sub-graph, expert
trajectories, transition matrices) and import of the official repository's pickled graphs
(:mod:`kepp_core.graph.official`)."""

from kepp_core.graph.build import *  # noqa: F403
from kepp_core.graph.explore import *  # noqa: F403
from kepp_core.graph.history import *  # noqa: F403
from kepp_core.graph.retrieval import *  # noqa: F403
from kepp_core.graph.scorers import *  # noqa: F403
from kepp_core.graph import build, explore, history, retrieval, scorers

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *build.__all__,
    *explore.__all__,
    *history.__all__,
    *retrieval.__all__,
    *scorers.__all__,
]
