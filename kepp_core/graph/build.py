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
import json
from array import array
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain
from pathlib import Path

import numpy as np

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.graph.compact import load_arrays, save_arrays
from kepp_core.graph.sparse import EdgeCounts
from kepp_core.io import atomic_write_json

FORMAT = "kepp-procedure-graph"
VERSION = 1
COMPACT_SUFFIX = ".safetensors"  # the compact array form of the same graph


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
        if name.strip().isdigit():
            return self.action_index(int(name))
        raise unknown_name_error("action", name, self.actions)

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
    def to_networkx(self, weighting: str = "p2kg"):
        """A ``networkx.DiGraph`` with node attributes ``label``/``start``/``end`` and edge
        attributes ``count``, ``probability`` and ``frequency``; ``weight`` is the chosen
        weighting (``p2kg`` or ``pkg``)."""
        import networkx as nx

        if weighting not in ("p2kg", "pkg"):
            raise unknown_name_error("weighting", weighting, ["p2kg", "pkg"])
        g = nx.DiGraph(dataset=self.dataset)
        for i, a in enumerate(self.actions):
            g.add_node(i, label=a, start=int(self.start_counts[i]), end=int(self.end_counts[i]))
        c = self.counts
        for u, v, n in zip(c.rows().tolist(), c.indices.tolist(), c.data.tolist()):
            p, f = float(self.probability(u, v)), float(self.frequency(u, v))
            g.add_edge(u, v, count=n, probability=p, frequency=f, weight=p if weighting == "p2kg" else f)
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

    def save(self, path: str | Path) -> None:
        """Write the graph atomically: compact arrays for a ``.safetensors`` path
        (:mod:`kepp_core.graph.compact`), JSON otherwise."""
        if Path(path).suffix == COMPACT_SUFFIX:
            save_arrays(path, *graph_arrays(self))
            return
        atomic_write_json(path, self.to_json(), indent=None)

    @classmethod
    def from_json(cls, obj: dict, where: str = "graph") -> ProcedureGraph:
        """A graph from :meth:`to_json`'s dict; malformed input is a KeppError naming ``where``."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise KeppError(f"{where}: not a KEPP procedure graph (expected \"format\": \"{FORMAT}\")")
        if obj.get("version") != VERSION:
            raise KeppError(f"{where}: graph format version {obj.get('version')!r} is not supported "
                            f"(expected {VERSION})")
        try:
            actions = [str(a) for a in obj["actions"]]
            n = len(actions)
            edges: dict[tuple[int, int], int] = {}  # a repeated pair: the last one wins, as before
            for k, (u, v, c) in enumerate(obj["transitions"]):
                if not (0 <= u < n and 0 <= v < n) or int(c) < 1:
                    raise KeppError(f"{where}: transition {k} [{u}, {v}, {c}] is invalid "
                                    f"(expected action indices below {n} and a count >= 1)")
                edges[(int(u), int(v))] = int(c)
            counts = EdgeCounts.from_coo(n, [u for u, _ in edges], [v for _, v in edges], list(edges.values()))
            starts = np.zeros(n, dtype=np.int64)
            ends = np.zeros(n, dtype=np.int64)
            for key, arr in (("start_counts", starts), ("end_counts", ends)):
                for i, c in obj[key].items():
                    arr[int(i)] = int(c)
            tasks = {}
            for t, rec in obj["tasks"].items():
                plans = [tuple(int(a) for a in p) for p in rec["plans"]]
                if any(not 0 <= a < n for p in plans for a in p):
                    raise KeppError(f"{where}: task {t!r} has a plan with an action index outside 0..{n - 1}")
                tasks[str(t)] = TaskStats.from_plans(str(rec.get("name", t)), plans)
        except KeppError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise KeppError(f"{where}: malformed graph JSON ({type(e).__name__}: {e}); expected keys "
                            f"actions, transitions, start_counts, end_counts, tasks") from None
        params, source = obj.get("params", {}), obj.get("source", {})
        if not isinstance(params, dict) or not isinstance(source, dict):
            raise KeppError(f"{where}: 'params' and 'source' must be objects")
        g = cls(actions, counts, starts, ends, tasks, str(obj.get("dataset", "")), str(obj.get("split", "train")),
                params, source)
        if obj.get("vocabulary_hash") not in (None, g.vocabulary_hash()):
            raise KeppError(f"{where}: vocabulary_hash does not match its actions (file edited or corrupt)")
        return g


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


def graph_from_arrays(arrays: dict[str, np.ndarray], header: dict, where: str = "graph") -> ProcedureGraph:
    """The graph written by :func:`graph_arrays` (a KeppError naming ``where`` when malformed)."""
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise KeppError(f"{where}: not a KEPP procedure graph of format version {VERSION}")
    try:
        actions = [str(a) for a in header["actions"]]
        n = len(actions)
        counts = EdgeCounts(n, arrays["indptr"], arrays["indices"], arrays["data"])
        if counts.indptr.shape != (n + 1,) or counts.indptr[-1] != counts.nnz or (
                counts.nnz and (counts.indices.min() < 0 or counts.indices.max() >= n)):
            raise KeppError(f"{where}: the count arrays do not describe {n} actions")
        tokens = arrays["plan_tokens"].tolist()
        pp = arrays["plan_ptr"].tolist()
        distinct = [tuple(tokens[pp[i]:pp[i + 1]]) for i in range(len(pp) - 1)]
        plan_counts = arrays["plan_counts"].tolist()
        dptr, optr = arrays["task_distinct_ptr"].tolist(), arrays["task_order_ptr"].tolist()
        order = arrays["order"]
        tasks = {}
        for k, (t, name) in enumerate(header["tasks"]):
            s = TaskStats(str(name), distinct[dptr[k]:dptr[k + 1]], plan_counts[dptr[k]:dptr[k + 1]], ())
            s.order = array("i", order[optr[k]:optr[k + 1]].astype(np.int32).tobytes())
            tasks[str(t)] = s
    except KeppError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise KeppError(f"{where}: malformed compact graph ({type(e).__name__}: {e})") from None
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
    if path.suffix == COMPACT_SUFFIX:
        g = graph_from_arrays(*load_arrays(path), where=str(path))
    else:
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise KeppError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
        g = ProcedureGraph.from_json(obj, where=str(path))
    if dataset is not None:
        g.check_vocabulary(dataset, where=str(path))
    return g
