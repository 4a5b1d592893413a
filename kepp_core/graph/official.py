"""Importing the official KEPP repository's P²KG pickles (``PKG/graphs/*/…pkl``) safely.

The official code pickles a ``networkx.DiGraph`` whose nodes are action ids and whose edges
carry ``weight``: either the raw transition counts, or the counts normalised over each node's
out-edges (its ``train_out_n`` mode). A pickle can name any Python callable and have it
called while loading, so the file is read by :class:`GraphUnpickler`, which resolves only the
globals a pickled ``DiGraph`` really references (the graph class, the node/edge/degree view
classes networkx caches on it, ``dict``, and for pickle protocols 0 and 1 the ``copyreg``
helper that re-creates objects) and refuses any other before anything is called.

Counts are kept as they are; normalised weights become the smallest whole counts in the same
ratios per node (the pickle does not hold the counts), so P²KG probabilities are exact while
the frequency (PKG) weighting, which compares counts across nodes, can differ from a graph
built from the plans. A pickle has no start/end counts or task plans: those stay empty.
"""

from __future__ import annotations

import _compat_pickle  # the standard library's Python 2 → 3 name table, which pickle itself uses
import io
import math
import pickle
from fractions import Fraction
from pathlib import Path

from kepp_core.data.official import official_actions
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.graph.build import MAX_COUNT, ProcedureGraph
from kepp_core.io import read_bytes
from kepp_core.schema import check_pickle
from kepp_core.graph.sparse import EdgeCounts

# Globals a pickled networkx DiGraph references (checked with pickletools on networkx 3.x, protocols 0-5).
ALLOWED = frozenset({
    ("networkx.classes.digraph", "DiGraph"),
    *(("networkx.classes.reportviews", n) for n in (
        "NodeView", "NodeDataView", "OutEdgeView", "InEdgeView", "OutEdgeDataView", "InEdgeDataView",
        "DiDegreeView", "InDegreeView", "OutDegreeView")),
    *(("networkx.classes.coreviews", n) for n in ("AdjacencyView", "AtlasView")),
    ("builtins", "dict"),
    # protocols 0 and 1 rebuild the graph object with copyreg._reconstructor(DiGraph, object, None)
    ("copyreg", "_reconstructor"), ("builtins", "object"),
})
WEIGHTINGS = ("counts", "out-edge normalised")
MAX_DENOMINATOR = 10**9  # out-edge counts up to this are recovered exactly from normalised weights
MAX_NODE_ID = 1_000_000
MAX_PICKLE_BYTES = 2**30  # official graph pickles are a few megabytes


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`ALLOWED` (its ``module.name`` is the message)."""


class GraphUnpickler(pickle.Unpickler):
    """An unpickler that resolves only :data:`ALLOWED` globals (anything else: :class:`RefusedGlobal`,
    raised when the pickle names it, before any call)."""

    def find_class(self, module: str, name: str):
        """The global ``module.name`` if allowed (Python 2 names read as Python 3's); else refuse it."""
        # Protocols 0-2 write Python 2 names (__builtin__, copy_reg); read them as Python 3's, as pickle does.
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) not in ALLOWED:
            raise RefusedGlobal(f"{module}.{name}")
        return super().find_class(module, name)


def read_graph_pickle(path: str | Path):
    """The ``networkx.DiGraph`` in an official pickle (read through :class:`GraphUnpickler`)."""
    import networkx as nx

    path = Path(path)
    if not path.exists():
        raise KeppError(f"{path}: graph pickle not found")
    data = read_bytes(path, MAX_PICKLE_BYTES)
    check_pickle(data, str(path))  # bounded nesting and size before anything is built
    try:
        obj = GraphUnpickler(io.BytesIO(data)).load()
    except RefusedGlobal as e:
        raise KeppError(f"{path}: refused to load global {e} (an official graph pickle holds only a "
                        f"networkx DiGraph; nothing was run)") from None
    except Exception as e:  # any allowed global's own error (networkx's too); the message may quote the file
        raise KeppError(f"{path}: not a readable pickle of a networkx DiGraph ({type(e).__name__} while "
                        f"loading it)") from None
    if type(obj) is not nx.DiGraph:
        raise KeppError(f"{path}: holds a {type(obj).__name__}, not a networkx DiGraph")
    return obj


def _edges(g, path: Path) -> list[tuple[int, int, float]]:
    """The ``(from, to, weight)`` edges of an unpickled graph, every part checked: what the pickle
    put in the graph's dictionaries is untrusted (a list where networkx keeps a dict, a string as
    edge data), so anything else than networkx's own layout is one error naming the part."""
    try:
        nodes, edges = list(g.nodes), list(g.edges(data=True))
    except Exception:  # what the pickle put in the graph's tables decides what fails here
        raise KeppError(f"{path}: not a networkx DiGraph as networkx pickles one (its node or edge "
                        f"tables are malformed)") from None
    for node in nodes:
        if type(node) is not int or not 0 <= node <= MAX_NODE_ID:
            raise KeppError(f"{path}: a node is {_kind(node)}, not an action id (an integer 0..{MAX_NODE_ID:,})")
    out = []
    for u, v, data in edges:
        if type(data) is not dict:
            raise KeppError(f"{path}: edge {u} → {v} has {_kind(data)} as its data (expected a dict with 'weight')")
        w = data.get("weight")
        ok = (type(w) is int and 0 < w <= MAX_COUNT) or (type(w) is float and math.isfinite(w) and w > 0)
        if not ok:
            raise KeppError(f"{path}: edge {u} → {v} has weight {_kind(w)} (expected a positive number; "
                            f"counts at most {MAX_COUNT:,})")
        out.append((u, v, w))
    if not out:
        raise KeppError(f"{path}: the graph has no edges (an official P²KG has the transitions of its plans)")
    return out


def _kind(value) -> str:
    """A value of an unpickled graph as an error message shows it: numbers as they are, anything
    else by its type (its text could be anything, of any length).

    >>> _kind(3), _kind(2.5), _kind([[1]]), _kind(None)
    ('3', '2.5', 'a list', 'None')
    """
    if value is None or (type(value) in (int, float) and abs(value) < 1e30):
        return repr(value)
    return f"a {type(value).__name__}" if type(value).__name__[0] not in "aeiou" else f"an {type(value).__name__}"


def official_counts(edges: list[tuple[int, int, float]], path: Path) -> tuple[list[int], str]:
    """Whole counts for the edges and the weighting recognised (see the module docstring)."""
    if all(float(w).is_integer() for _, _, w in edges):
        return [int(w) for _, _, w in edges], WEIGHTINGS[0]
    by_node: dict[int, list[int]] = {}
    for k, (u, _, _) in enumerate(edges):
        by_node.setdefault(u, []).append(k)
    fracs = [Fraction(w).limit_denominator(MAX_DENOMINATOR) for _, _, w in edges]
    counts = [0] * len(edges)
    for u, ks in by_node.items():
        if sum(fracs[k] for k in ks) != 1:
            total = sum(edges[k][2] for k in ks)
            raise KeppError(f"{path}: node {u}'s out-edge weights sum to {total:.6g}: neither counts nor "
                            f"out-edge normalised (min-max normalised graphs do not keep the counts)")
        scale = math.lcm(*(fracs[k].denominator for k in ks))
        for k in ks:
            counts[k] = int(fracs[k] * scale)
    return counts, WEIGHTINGS[1]


def import_graph_pickle(path: str | Path, dataset: Dataset | None = None) -> ProcedureGraph:
    """This package's graph for an official P²KG pickle. With ``dataset``, action id ``i`` is
    the dataset's action ``i`` (its vocabulary must cover every id); without, the actions are
    the ids ``"0" .. "<max id>"``."""
    path = Path(path)
    g = read_graph_pickle(path)
    edges = _edges(g, path)
    counts, weighting = official_counts(edges, path)
    top = max(g.nodes, default=-1)
    if dataset is not None:
        if top >= dataset.num_actions:
            raise KeppError(f"{path}: action id {top} is outside dataset {dataset.name!r}'s "
                            f"{dataset.num_actions} actions")
        actions, name = list(dataset.actions), dataset.name
    else:
        actions, name = official_actions(top + 1), "official"
    n = len(actions)
    if max(counts) > MAX_COUNT:
        raise KeppError(f"{path}: its {weighting} weights give counts beyond {MAX_COUNT:,}; not a graph of plans")
    ec = EdgeCounts.from_coo(n, [u for u, _, _ in edges], [v for _, v, _ in edges], counts)
    zeros = [0] * n
    g = ProcedureGraph(actions, ec, zeros, zeros, {}, name, "train",
                       source={"imported_from": str(path), "weighting": weighting})
    # what is written is what every reader accepts: the graph goes through the graph file's own checks
    return ProcedureGraph.from_json(g.to_json(), str(path))


__all__ = ["ALLOWED", "WEIGHTINGS", "GraphUnpickler", "RefusedGlobal", "import_graph_pickle", "official_counts", "read_graph_pickle"]
