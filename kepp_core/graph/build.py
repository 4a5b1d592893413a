"""Building, storing and loading the procedure knowledge graph (paper §3.2).

Nodes are the actions of a dataset's vocabulary (``Dataset.actions``); for every
consecutive pair ``(a_t, a_t+1)`` of every training plan the edge count grows by one
(self-loops included). Two weightings are derived from the counts:

- probabilistic (the P²KG): ``count(u, v) / sum_w count(u, w)``, so out-going weights sum to 1;
- frequency (the paper's PKG ablation): min-max normalisation of the counts of all edges
  of the graph, ``(count - min) / (max - min)`` (1 for every edge if all counts are equal).

The graph also keeps per-action start/end counts and per-task statistics, including the
task's training plans, which the views (expert trajectories, transition matrices) and the
longer-range recommendation method read. Stored as JSON; never pickled.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain
from pathlib import Path

import numpy as np

from kepp_core.catalog import EDGE_SCORERS, GRAPH_PAIR
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.graph.compact import load_arrays, load_header, save_arrays
from kepp_core.graph.sparse import EdgeCounts
from kepp_core.io import atomic_write_json, has_suffix, parse_json, read_text_utf8, whole_number
from kepp_core.schema import check_id

__all__ = ["ProcedureGraph", "TaskStats", "build_graph", "graph_source", "load_graph"]

FORMAT = "kepp-procedure-graph"
VERSION = 1
COMPACT_SUFFIX = GRAPH_PAIR[1]  # the compact array form of the same graph
BUILD_ID_KEY = "build_id"  # one id in both files of a JSON + compact pair (ProcedureGraph.save)
COMPANION_KEY = "companion"  # the other file's name in such a pair
_BUILD_ID_HEAD = 4096  # bytes of a JSON graph that hold its stamp (written right after the version)


class TaskStats:
    """What the training plans of one task contribute to the graph, in bounded memory.

    Each distinct plan is kept once with its count (``distinct``, ``counts``, first-seen
    order); the dataset order survives as ``order``, the index into ``distinct`` of every
    plan (4 bytes a plan), so :attr:`plans` still lists the training plans in dataset order.

    >>> s = TaskStats.from_plans("t", [(0, 1), (2,), (0, 1)])
    >>> s.distinct, s.counts, s.plans, s.videos, s.steps
    ([(0, 1), (2,)], [2, 1], [(0, 1), (2,), (0, 1)], 3, 5)
    """

    def __init__(self, name: str, distinct: list[tuple[int, ...]] | None = None,
                 counts: list[int] | None = None, order=None) -> None:
        self.name = name
        self.distinct: list[tuple[int, ...]] = list(distinct or [])
        self.counts: list[int] = list(counts) if counts is not None else [1] * len(self.distinct)
        self.order = array("i", order if order is not None else range(len(self.distinct)))
        self._ids = {p: i for i, p in enumerate(self.distinct)}

    @classmethod
    def from_plans(cls, name: str, plans) -> TaskStats:
        """Statistics of ``plans`` (index sequences, in dataset order)."""
        stats = cls(name)
        for p in plans:
            stats.add(tuple(p))
        return stats

    def add(self, plan: tuple[int, ...], count: int = 1) -> None:
        """Count ``plan`` (a tuple of action indices) ``count`` more times, at the end of the order."""
        i = self._ids.get(plan)
        if i is None:
            i = self._ids[plan] = len(self.distinct)
            self.distinct.append(plan)
            self.counts.append(0)
        self.counts[i] += count
        if count == 1:
            self.order.append(i)
        else:
            self.order.extend([i] * count)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TaskStats):
            return NotImplemented
        return (self.name, self.distinct, self.counts, self.order) == (other.name, other.distinct,
                                                                        other.counts, other.order)

    __hash__ = None

    def __repr__(self) -> str:
        return f"TaskStats({self.name!r}, {self.videos} plans, {len(self.distinct)} distinct)"

    @property
    def plans(self) -> list[tuple[int, ...]]:
        """The task's training plans in dataset order (expanded from the distinct plans)."""
        distinct = self.distinct
        return [distinct[i] for i in self.order]

    def weighted(self) -> list[tuple[tuple[int, ...], int]]:
        """``(plan, count)`` for every distinct plan, in first-seen order."""
        return list(zip(self.distinct, self.counts))

    @property
    def videos(self) -> int:
        return len(self.order)

    @property
    def steps(self) -> int:
        return sum(len(p) * c for p, c in zip(self.distinct, self.counts))

    def action_counts(self) -> Counter:
        """How often each action occurs in the task's training plans."""
        out: Counter = Counter()
        for p, c in zip(self.distinct, self.counts):
            for a in p:
                out[a] += c
        return out

    def transition_counts(self) -> Counter:
        """How often each transition ``(u, v)`` occurs in the task's training plans."""
        out: Counter = Counter()
        for p, c in zip(self.distinct, self.counts):
            for e in zip(p, p[1:]):
                out[e] += c
        return out


def count_transitions(num_actions: int, weighted) -> tuple[EdgeCounts, np.ndarray, np.ndarray]:
    """Edge, start and end counts of ``(plan, count)`` pairs (vectorised; empty plans add nothing).

    >>> c, s, e = count_transitions(3, [((0, 1, 1), 2), ((2,), 1), ((), 5)])
    >>> c.tolist(), s.tolist(), e.tolist()
    ([[0, 2, 0], [0, 2, 0], [0, 0, 0]], [2, 0, 1], [0, 2, 1])
    """
    plans = [(p, c) for p, c in weighted if p]
    starts = np.zeros(num_actions, dtype=np.int64)
    ends = np.zeros(num_actions, dtype=np.int64)
    if not plans:
        return EdgeCounts.from_coo(num_actions, [], [], []), starts, ends
    lengths = np.fromiter((len(p) for p, _ in plans), dtype=np.int64, count=len(plans))
    weights = np.fromiter((c for _, c in plans), dtype=np.int64, count=len(plans))
    tokens = np.fromiter(chain.from_iterable(p for p, _ in plans), dtype=np.int64, count=int(lengths.sum()))
    if tokens.min() < 0 or tokens.max() >= num_actions:
        bad = next(p for p, _ in plans if min(p) < 0 or max(p) >= num_actions)
        raise KeppError(f"plan {list(bad)} has an action index outside 0..{num_actions - 1}")
    last = np.cumsum(lengths) - 1
    first = last - lengths + 1
    np.add.at(starts, tokens[first], weights)
    np.add.at(ends, tokens[last], weights)
    inner = np.ones(tokens.size, dtype=bool)
    inner[last] = False  # positions followed by a step of the same plan
    pos = np.flatnonzero(inner)
    edge_weights = np.repeat(weights, lengths)[pos]
    counts = EdgeCounts.from_coo(num_actions, tokens[pos], tokens[pos + 1], edge_weights)
    return counts, starts, ends


@dataclass
class ProcedureGraph:
    """Transition counts between actions, from the training plans of one dataset.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (0, 1, 1)])
    >>> int(g.counts[0, 1]), int(g.counts[1, 1]), g.probability(1, 2)
    (2, 1, Fraction(1, 2))
    """

    actions: list[str]
    counts: EdgeCounts  # sparse [A, A], counts[u, v] = times v directly followed u (a dense array is accepted)
    start_counts: np.ndarray  # [A] int64, plans starting with the action
    end_counts: np.ndarray  # [A] int64, plans ending with the action
    tasks: dict[str, TaskStats] = field(default_factory=dict)
    dataset: str = ""
    split: str = "train"
    params: dict = field(default_factory=dict)  # fitted method parameters (e.g. history_prior)
    source: dict = field(default_factory=dict)  # where the graph came from (see graph_source); {}: not recorded

    def __post_init__(self) -> None:
        self._index = {a: i for i, a in enumerate(self.actions)}
        if not isinstance(self.counts, EdgeCounts):
            self.counts = EdgeCounts.from_dense(self.counts)
        c = self.counts
        self.start_counts = np.asarray(self.start_counts, dtype=np.int64)
        self.end_counts = np.asarray(self.end_counts, dtype=np.int64)
        self.out_counts = c.sum(axis=1)
        # Adjacency lists in ascending index order (retrieval relies on this determinism).
        n = c.num_nodes
        ptr, ind = c.indptr.tolist(), c.indices.tolist()
        self.successors: list[tuple[int, ...]] = [tuple(ind[ptr[u]:ptr[u + 1]]) for u in range(n)]
        order = c.transpose_order()
        src = c.rows()[order].tolist()
        tptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(c.indices, minlength=n), out=tptr[1:])
        tptr = tptr.tolist()
        self.predecessors: list[tuple[int, ...]] = [tuple(src[tptr[v]:tptr[v + 1]]) for v in range(n)]
        self.min_count = int(c.data.min()) if c.nnz else 0
        self.max_count = int(c.data.max()) if c.nnz else 0

    # --- construction -----------------------------------------------------------------
    @classmethod
    def from_plans(cls, actions: list[str], plans: list[tuple[int, ...]],
                   tasks: dict[str, TaskStats] | None = None, dataset: str = "",
                   split: str = "train") -> ProcedureGraph:
        """A graph from action vocabulary and plans (index sequences), with optional task labels."""
        counted = TaskStats.from_plans("", (tuple(int(a) for a in p) for p in plans))
        if tasks is None:
            tasks = {"": TaskStats.from_plans("", [p for p in counted.plans if p])}
        return cls.from_tasks(actions, tasks, dataset, split, counted.weighted())

    @classmethod
    def from_tasks(cls, actions: list[str], tasks: dict[str, TaskStats], dataset: str = "",
                   split: str = "train", weighted=None) -> ProcedureGraph:
        """A graph whose counts come from the tasks' distinct plans (or from ``weighted``
        ``(plan, count)`` pairs when given)."""
        if weighted is None:
            weighted = [pc for t in tasks.values() for pc in zip(t.distinct, t.counts)]
        counts, starts, ends = count_transitions(len(actions), weighted)
        return cls(list(actions), counts, starts, ends, dict(tasks), dataset, split)

    # --- vocabulary -------------------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return len(self.actions)

    @property
    def num_edges(self) -> int:
        return self.counts.nnz

    def action_index(self, name: str | int) -> int:
        """Index of an action given by label or index (a digit string that is not a label
        counts as an index); unknown names raise a KeppError listing the closest labels."""
        if type(name) is int and 0 <= name < len(self.actions):
            return name
        if isinstance(name, (int, np.integer)):
            if 0 <= int(name) < self.num_actions:
                return int(name)
            raise KeppError(f"action index {name} is out of range (the graph has {self.num_actions} actions)")
        if name in self._index:
            return self._index[name]
        index = whole_number(name, len(str(self.num_actions)))
        if index is not None:
            return self.action_index(index)
        digits = name.strip()
        if digits.isascii() and digits.isdigit():  # more digits than any action's index: never parsed
            raise KeppError(f"action index {digits[:20]}{'...' if len(digits) > 20 else ''} ({len(digits):,} digits) "
                            f"is out of range (the graph has {self.num_actions} actions)")
        raise unknown_name_error("action", name[:200], self.actions)

    def vocabulary_hash(self) -> str:
        return hashlib.sha1("\n".join(self.actions).encode()).hexdigest()[:12]

    def check_vocabulary(self, dataset: Dataset, where: str = "graph") -> None:
        """Raise a KeppError unless ``dataset`` has exactly this graph's action vocabulary."""
        if list(dataset.actions) == self.actions:
            return
        ours, theirs = set(self.actions), set(dataset.actions)
        detail = f"{len(self.actions)} actions vs {len(dataset.actions)} in dataset {dataset.name!r}"
        missing = sorted(theirs - ours)[:3]
        extra = sorted(ours - theirs)[:3]
        if missing:
            detail += f"; dataset actions not in the graph: {missing}"
        if extra:
            detail += f"; graph actions not in the dataset: {extra}"
        if not missing and not extra:
            detail += "; same labels in a different order"
        raise KeppError(f"{where}: action vocabulary does not match the dataset ({detail}); "
                        f"rebuild it with 'kepp graph build'")

    # --- weights ----------------------------------------------------------------------
    def probability(self, u: int, v: int) -> Fraction:
        """Exact P²KG edge weight ``count(u, v) / out(u)`` (0 without an edge)."""
        out = int(self.out_counts[u])
        return Fraction(self.counts.get(u, v), out) if out else Fraction(0)

    def frequency(self, u: int, v: int) -> Fraction:
        """Exact frequency-graph (PKG) edge weight: min-max normalised count (0 without an edge)."""
        c = self.counts.get(u, v)
        if c == 0:
            return Fraction(0)
        if self.max_count == self.min_count:
            return Fraction(1)
        return Fraction(c - self.min_count, self.max_count - self.min_count)

    def probabilities(self) -> np.ndarray:
        """Row-normalised transition matrix ``[A, A]`` (rows without out-edges are zero);
        dense, for small graphs and the app (retrieval never needs it)."""
        out = self.out_counts[:, None].astype(np.float64)
        counts = self.counts.toarray()
        return np.divide(counts, out, out=np.zeros(counts.shape), where=out > 0)

    def frequencies(self) -> np.ndarray:
        """Min-max normalised counts ``[A, A]`` over the edges of the graph (zero elsewhere)."""
        w = np.zeros(self.counts.shape)
        c = self.counts
        if self.max_count == self.min_count:
            w[c.rows(), c.indices] = 1.0
        else:
            w[c.rows(), c.indices] = (c.data - self.min_count) / (self.max_count - self.min_count)
        return w

    def train_plans(self) -> list[tuple[int, ...]]:
        """All training plans the graph was built from (task by task), expanded in dataset order."""
        return [p for t in self.tasks.values() for p in t.plans]

    def weighted_plans(self) -> list[tuple[tuple[int, ...], int]]:
        """``(plan, count)`` for every distinct training plan of every task: the bounded
        summary that window counts and views use instead of :meth:`train_plans`."""
        return [pc for t in self.tasks.values() for pc in zip(t.distinct, t.counts)]

    # --- conversion -------------------------------------------------------------------
    def to_networkx(self, scorer: str = "p2kg"):
        """A ``networkx.DiGraph`` with node attributes ``label``/``start``/``end`` and edge
        attributes ``count``, ``probability`` and ``frequency``; ``weight`` is the arrow's weight
        under the path ``scorer`` (``p2kg`` or ``pkg``)."""
        import networkx as nx

        if scorer not in EDGE_SCORERS:
            raise unknown_name_error("edge scorer", scorer, EDGE_SCORERS)
        g = nx.DiGraph(dataset=self.dataset)
        for i, a in enumerate(self.actions):
            g.add_node(i, label=a, start=int(self.start_counts[i]), end=int(self.end_counts[i]))
        c = self.counts
        for u, v, n in zip(c.rows().tolist(), c.indices.tolist(), c.data.tolist()):
            p, f = float(self.probability(u, v)), float(self.frequency(u, v))
            g.add_edge(u, v, count=n, probability=p, frequency=f, weight=p if scorer == "p2kg" else f)
        return g

    def to_json(self) -> dict:
        """The graph as a JSON-ready dict (counts sparsely, per-task statistics)."""
        c = self.counts
        return {
            "format": FORMAT,
            "version": VERSION,
            "dataset": self.dataset,
            "split": self.split,
            "vocabulary_hash": self.vocabulary_hash(),
            "actions": self.actions,
            "transitions": [list(t) for t in zip(c.rows().tolist(), c.indices.tolist(), c.data.tolist())],
            "start_counts": {str(i): int(c) for i, c in enumerate(self.start_counts) if c},
            "end_counts": {str(i): int(c) for i, c in enumerate(self.end_counts) if c},
            "tasks": {t: {"name": s.name, "videos": s.videos, "steps": s.steps,
                          "plans": [list(p) for p in s.plans]}
                      for t, s in self.tasks.items()},
            "params": self.params,
            **({"source": self.source} if self.source else {}),
        }

    def save(self, path: str | Path, pair: tuple[str, str] | None = None) -> None:
        """Write the graph atomically: compact arrays for a ``.safetensors`` path
        (:mod:`kepp_core.graph.compact`), JSON otherwise. ``pair`` = ``(build id, companion
        file name)`` when the same build is also written to the companion (``--compact``):
        both files then carry the id, and :func:`load_graph` refuses a pair whose ids differ
        (a build stopped between its two renames)."""
        stamp = {BUILD_ID_KEY: pair[0], COMPANION_KEY: pair[1]} if pair else {}
        if has_suffix(path, COMPACT_SUFFIX):
            arrays, header = graph_arrays(self)
            save_arrays(path, arrays, {**header, **stamp})
            return
        obj = self.to_json()
        # the stamp right after the version: read from the file's first bytes (_build_id_of)
        head = {k: obj.pop(k) for k in ("format", "version")}
        atomic_write_json(path, {**head, **stamp, **obj}, indent=None)

    @classmethod
    def from_json(cls, obj: dict, where: str = "graph") -> ProcedureGraph:
        """A graph from :meth:`to_json`'s dict; malformed input is a KeppError naming ``where``
        and the key (every value's type and range checked: :func:`_check_int`)."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise KeppError(f"{where}: not a KEPP procedure graph (expected \"format\": \"{FORMAT}\")")
        if obj.get("version") != VERSION:
            raise KeppError(f"{where}: graph format version {obj.get('version')!r} is not supported "
                            f"(expected {VERSION})")
        for key, kind in (("actions", list), ("transitions", list), ("start_counts", dict),
                          ("end_counts", dict), ("tasks", dict), ("params", dict)):
            if key not in obj and key != "params":
                raise KeppError(f"{where}: missing key {key!r} (expected keys actions, transitions, "
                                f"start_counts, end_counts, tasks)")
            if not isinstance(obj.get(key, {}), kind):
                raise KeppError(f"{where}: {key!r} must be a JSON {'array' if kind is list else 'object'}, "
                                f"got {type(obj[key]).__name__}")
        actions = obj["actions"]
        if not all(isinstance(a, str) for a in actions):
            raise KeppError(f"{where}: 'actions' must be a list of action names (strings)")
        n = len(actions)
        edges: dict[tuple[int, int], int] = {}  # a repeated pair: the last one wins, as before
        for k, t in enumerate(obj["transitions"]):
            if not isinstance(t, list) or len(t) != 3:
                raise KeppError(f"{where}: transition {k} {t!r} is invalid (expected [from, to, count])")
            u, v, c = (_check_int(x, f"{where}: transition {k}", lo, hi)
                       for x, lo, hi in zip(t, (0, 0, 1), (n - 1, n - 1, MAX_COUNT)))
            edges[(u, v)] = c
        counts = EdgeCounts.from_coo(n, [u for u, _ in edges], [v for _, v in edges], list(edges.values()))
        ends = {}
        for key in ("start_counts", "end_counts"):
            arr = ends[key] = np.zeros(n, dtype=np.int64)
            for i, c in obj[key].items():
                if not (isinstance(i, str) and i.isascii() and i.isdigit() and int(i) < n):
                    raise KeppError(f"{where}: {key} has an action index {i!r} outside 0..{n - 1}")
                arr[int(i)] = _check_int(c, f"{where}: {key}[{i}]", 0, MAX_COUNT)
        tasks = {check_id(t, "task id", where, allow_empty=True): _task_from_json(t, rec, n, f"{where}: task {t!r}")
                 for t, rec in obj["tasks"].items()}
        source = obj.get("source", {})
        if not isinstance(source, dict):
            raise KeppError(f"{where}: 'source' must be a JSON object, got {type(source).__name__}")
        g = cls(actions, counts, ends["start_counts"], ends["end_counts"], tasks, str(obj.get("dataset", "")),
                str(obj.get("split", "train")), obj.get("params", {}), source)
        if obj.get("vocabulary_hash") not in (None, g.vocabulary_hash()):
            raise KeppError(f"{where}: vocabulary_hash does not match its actions (file edited or corrupt)")
        return g


MAX_COUNT = 2 ** 53  # above this a count is not one of real videos (and no longer exact as a probability's float)


def _check_int(value, where: str, lo: int, hi: int) -> int:
    """``value`` when it is an integer in ``lo..hi`` (not a bool, float or string), else a KeppError."""
    if type(value) is not int or not lo <= value <= hi:
        raise KeppError(f"{where}: {value!r} is invalid (expected an integer in {lo}..{hi})")
    return value


def _task_from_json(t: str, rec, n: int, where: str) -> TaskStats:
    """One task's statistics from the graph JSON (its plans checked against ``n`` actions)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("plans"), list):
        raise KeppError(f"{where}: expected an object with a 'plans' list of action-index lists")
    plans = []
    for k, p in enumerate(rec["plans"]):
        if not isinstance(p, list):
            raise KeppError(f"{where}: plan {k} must be a list of action indices, got {p!r}")
        for a in p:
            if type(a) is not int or not 0 <= a < n:
                raise KeppError(f"{where}: plan {k} has an action index {a!r} outside 0..{n - 1}")
        plans.append(tuple(p))
    return TaskStats.from_plans(str(rec.get("name", t)), plans)


def graph_arrays(g: ProcedureGraph) -> tuple[dict[str, np.ndarray], dict]:
    """The graph as flat arrays (CSR counts, distinct plans, plan order) and a JSON header."""
    tasks = list(g.tasks.values())
    distinct = [p for t in tasks for p in t.distinct]
    lengths = np.fromiter((len(p) for p in distinct), dtype=np.int64, count=len(distinct))
    ptr = lambda sizes: np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))))  # noqa: E731
    arrays = {
        "indptr": g.counts.indptr, "indices": g.counts.indices.astype(np.int32), "data": g.counts.data,
        "start_counts": g.start_counts, "end_counts": g.end_counts,
        "task_distinct_ptr": ptr([len(t.distinct) for t in tasks]),
        "plan_ptr": ptr(lengths),
        "plan_tokens": np.fromiter(chain.from_iterable(distinct), dtype=np.int32, count=int(lengths.sum())),
        "plan_counts": np.asarray([c for t in tasks for c in t.counts], dtype=np.int64),
        "task_order_ptr": ptr([len(t.order) for t in tasks]),
        "order": np.concatenate([np.frombuffer(t.order, dtype=np.int32) for t in tasks] or
                                [np.zeros(0, dtype=np.int32)]),
    }
    header = {"format": FORMAT, "version": VERSION, "dataset": g.dataset, "split": g.split,
              "vocabulary_hash": g.vocabulary_hash(), "actions": g.actions,
              "tasks": [[t, s.name] for t, s in g.tasks.items()], "params": g.params,
              **({"source": g.source} if g.source else {})}
    return arrays, header


ARRAY_NAMES = ("indptr", "indices", "data", "start_counts", "end_counts", "task_distinct_ptr", "plan_ptr",
               "plan_tokens", "plan_counts", "task_order_ptr", "order")


def _check_header(header, where: str) -> None:
    """The compact header's keys and types (what :func:`graph_arrays` writes)."""
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION:
        raise KeppError(f"{where}: not a KEPP procedure graph of format version {VERSION}")
    actions, tasks, params = header.get("actions"), header.get("tasks"), header.get("params", {})
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise KeppError(f"{where}: header key 'actions' must be a list of action names (strings)")
    if not isinstance(tasks, list) or not all(
            isinstance(t, list) and len(t) == 2 and all(isinstance(x, str) for x in t) for t in tasks):
        raise KeppError(f"{where}: header key 'tasks' must be a list of [id, name] string pairs")
    for tid, _name in tasks:
        check_id(tid, "header key 'tasks': task id", where, allow_empty=True)
    if not isinstance(params, dict):
        raise KeppError(f"{where}: header key 'params' must be an object")
    if not isinstance(header.get("source", {}), dict):
        raise KeppError(f"{where}: header key 'source' must be an object")


def _check_arrays(a: dict[str, np.ndarray], n: int, n_tasks: int, where: str) -> None:
    """Every array of a compact graph: integer, 1-D, pointers monotone and ending at their
    array's size, indices within range, counts within ``0..MAX_COUNT``; a KeppError naming the array."""
    for name in ARRAY_NAMES:
        if name not in a:
            raise KeppError(f"{where}: array {name!r} is missing")
        if a[name].ndim != 1 or a[name].dtype.kind not in "iu":
            raise KeppError(f"{where}: array {name!r} must be a 1-D integer array, got {a[name].dtype} {a[name].shape}")

    def check(name, lo, hi, size=None):
        x = a[name]
        if size is not None and x.size != size:
            raise KeppError(f"{where}: array {name!r} has {x.size} entries, expected {size}")
        if x.size and (int(x.min()) < lo or int(x.max()) > hi):
            raise KeppError(f"{where}: array {name!r} has values outside {lo}..{hi}")

    def pointer(name, entries, size):
        check(name, 0, size, entries + 1)
        x = a[name]
        if x[0] != 0 or x[-1] != size or (x.size > 1 and bool((np.diff(x) < 0).any())):
            raise KeppError(f"{where}: array {name!r} is not an offset array 0..{size}")

    pointer("indptr", n, a["indices"].size)
    check("indices", 0, n - 1)
    check("data", 1, MAX_COUNT, a["indices"].size)
    check("start_counts", 0, MAX_COUNT, n)
    check("end_counts", 0, MAX_COUNT, n)
    check("plan_tokens", 0, n - 1)
    pointer("plan_ptr", a["plan_counts"].size, a["plan_tokens"].size)
    check("plan_counts", 1, MAX_COUNT)
    pointer("task_distinct_ptr", n_tasks, a["plan_counts"].size)
    pointer("task_order_ptr", n_tasks, a["order"].size)
    dptr, optr, order = a["task_distinct_ptr"], a["task_order_ptr"], a["order"]
    for k in range(n_tasks):
        part = order[optr[k]:optr[k + 1]]
        if part.size and (int(part.min()) < 0 or int(part.max()) >= dptr[k + 1] - dptr[k]):
            raise KeppError(f"{where}: array 'order' of task {k} points outside the task's distinct plans")


def graph_from_arrays(arrays: dict[str, np.ndarray], header: dict, where: str = "graph") -> ProcedureGraph:
    """The graph written by :func:`graph_arrays` (a KeppError naming ``where`` and the header key
    or array when malformed)."""
    _check_header(header, where)
    actions = header["actions"]
    n = len(actions)
    _check_arrays(arrays, n, len(header["tasks"]), where)
    counts = EdgeCounts(n, arrays["indptr"], arrays["indices"], arrays["data"])
    tokens = arrays["plan_tokens"].tolist()
    pp = arrays["plan_ptr"].tolist()
    distinct = [tuple(tokens[pp[i]:pp[i + 1]]) for i in range(len(pp) - 1)]
    plan_counts = arrays["plan_counts"].tolist()
    dptr, optr = arrays["task_distinct_ptr"].tolist(), arrays["task_order_ptr"].tolist()
    order = arrays["order"]
    tasks = {}
    for k, (t, name) in enumerate(header["tasks"]):
        s = TaskStats(name, distinct[dptr[k]:dptr[k + 1]], plan_counts[dptr[k]:dptr[k + 1]], ())
        s.order = array("i", order[optr[k]:optr[k + 1]].astype(np.int32).tobytes())
        tasks[t] = s
    g = ProcedureGraph(actions, counts, arrays["start_counts"], arrays["end_counts"], tasks,
                       str(header.get("dataset", "")), str(header.get("split", "train")), dict(header.get("params", {})),
                       dict(header.get("source", {})))
    if header.get("vocabulary_hash") not in (None, g.vocabulary_hash()):
        raise KeppError(f"{where}: vocabulary_hash does not match its actions (file edited or corrupt)")
    return g


def graph_source(g: ProcedureGraph) -> str:
    """Where a graph came from, in one line (for the app's Graph page and ``kepp graph``):
    built from which plans, or imported from which file.

    >>> g = ProcedureGraph.from_plans(["a"], [(0,)])
    >>> graph_source(g)
    'not recorded'
    >>> g.source = {"built_from": "plans.jsonl", "dataset": "plans"}; graph_source(g)
    'built from the train plans of plans.jsonl (dataset plans)'
    >>> g.source = {"imported_from": "trained_graph.pkl", "weighting": "counts"}; graph_source(g)
    'imported from trained_graph.pkl (counts)'
    """
    src = g.source or {}
    if "imported_from" in src:
        how = src.get("weighting")
        return f"imported from {src['imported_from']}" + (f" ({how})" if how else "")
    if "built_from" in src:
        ds = src.get("dataset")
        return f"built from the {g.split} plans of {src['built_from']}" + (f" (dataset {ds})" if ds else "")
    return "not recorded"


def build_graph(dataset: Dataset, split: str = "train") -> ProcedureGraph:
    """Build the graph from the plans of one split of ``dataset`` (the training split).

    >>> from kepp_core.data.records import Dataset, Step, Task, Video
    >>> ds = Dataset("toy", ["a", "b"], {"t": Task("t", "t")},
    ...              [Video("v", "t", [Step(0), Step(1), Step(1)])])
    >>> build_graph(ds).counts.tolist()
    [[0, 1], [0, 1]]
    """
    tasks: dict[str, TaskStats] = {}
    for v in dataset.split(split):
        if v.task not in tasks:
            task = dataset.tasks.get(v.task)
            tasks[v.task] = TaskStats(task.name if task is not None else v.task)
        tasks[v.task].add(v.plan)
    if not any(t.videos for t in tasks.values()):
        raise KeppError(f"dataset {dataset.name!r} has no {split} plans to build a graph from")
    return ProcedureGraph.from_tasks(dataset.actions, tasks, dataset.name, split)


def load_graph(path: str | Path, dataset: Dataset | None = None) -> ProcedureGraph:
    """Read a graph file (JSON, or the compact ``.safetensors`` form); with ``dataset``,
    check that the vocabularies match."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: graph file not found (build one with 'kepp graph build')")
    if has_suffix(path, COMPACT_SUFFIX):
        arrays, obj = load_arrays(path)
        g = graph_from_arrays(arrays, obj, where=str(path))
    else:
        obj = parse_json(read_text_utf8(path), str(path))
        g = ProcedureGraph.from_json(obj, where=str(path))
    _check_pair(path, obj)
    if dataset is not None:
        g.check_vocabulary(dataset, where=str(path))
    return g


def _check_pair(path: Path, obj: dict) -> None:
    """Refuse a graph whose companion (the other file of a ``--compact`` pair) is there but
    stamped with another build id: one of the two is left over from an earlier build."""
    companion, build_id = obj.get(COMPANION_KEY), obj.get(BUILD_ID_KEY)
    if not isinstance(companion, str) or not companion or "/" in companion or "\\" in companion:
        return
    other = path.with_name(companion)
    if other.is_file() and _build_id_of(other) != build_id:
        raise KeppError(f"{path}: {other.name} next to it comes from a different build (a build was stopped "
                        f"between writing the two files): run 'kepp graph build' again")


def _build_id_of(path: Path) -> str | None:
    """The build id a graph file was stamped with (None without one), read cheaply: the
    compact file's header only, the JSON file's first bytes."""
    if has_suffix(path, COMPACT_SUFFIX):
        try:
            header = load_header(path)
        except KeppError:
            return None
        return header.get(BUILD_ID_KEY) if isinstance(header, dict) else None
    with path.open("rb") as f:
        head = f.read(_BUILD_ID_HEAD).decode("utf-8", "replace")
    m = re.search(r'"%s": "([0-9a-f]{1,64})"' % BUILD_ID_KEY, head)
    return m.group(1) if m else None
