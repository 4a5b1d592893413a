"""The path scorers' readable names (how the graph ranks the paths between two steps; the scorers
themselves: :mod:`kepp_core.graph.scorers`, their registry :data:`kepp_core.graph.retrieval.SCORERS`)."""

from __future__ import annotations

__all__ = ["EDGE_SCORERS", "SCORER_LABELS", "scorer_label"]

# The readable name of each path scorer of kepp_core.graph (its registry lists the names).
SCORER_LABELS = {"p2kg": "P²KG (probabilistic)", "pkg": "frequency graph (PKG)"}
EDGE_SCORERS = ("p2kg", "pkg")  # the scorers that weigh a single arrow (the history scorer weighs whole paths)


def scorer_label(name: str) -> str:
    """A path scorer's readable name (the name itself for one without a label).

    >>> scorer_label("p2kg"), scorer_label("history")
    ('P²KG (probabilistic)', 'history')
    """
    return SCORER_LABELS.get(name, name)

