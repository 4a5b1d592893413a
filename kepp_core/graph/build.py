"""Building, storing and loading the procedure knowledge graph (KEPP.md §2).

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

import json
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.io import atomic_write_json

FORMAT = "kepp-procedure-graph"
VERSION = 1


@dataclass
class TaskStats:
    """What the training plans of one task contribute to the graph."""

    name: str
    plans: list[tuple[int, ...]]  # the task's training plans (action indices), in dataset order

    @property
    def videos(self) -> int:
        return len(self.plans)

    @property
    def steps(self) -> int:
        return sum(len(p) for p in self.plans)

    def action_counts(self) -> Counter:
        return Counter(a for p in self.plans for a in p)

    def transition_counts(self) -> Counter:
        return Counter(e for p in self.plans for e in zip(p, p[1:]))


@dataclass
class ProcedureGraph:
    """Transition counts between actions, from the training plans of one dataset.

    >>> g = ProcedureGraph.from_plans(["a", "b", "c"], [(0, 1, 2), (0, 1, 1)])
    >>> int(g.counts[0, 1]), int(g.counts[1, 1]), g.probability(1, 2)
    (2, 1, Fraction(1, 2))
    """

    actions: list[str]
    counts: np.ndarray  # [A, A] int64, counts[u, v] = times v directly followed u
    start_counts: np.ndarray  # [A] int64, plans starting with the action
    end_counts: np.ndarray  # [A] int64, plans ending with the action
    tasks: dict[str, TaskStats] = field(default_factory=dict)
    dataset: str = ""
    split: str = "train"
    params: dict = field(default_factory=dict)  # fitted method parameters (e.g. history_prior)

    def __post_init__(self) -> None:
        self._index = {a: i for i, a in enumerate(self.actions)}
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.out_counts = self.counts.sum(axis=1)
        # Adjacency lists in ascending index order (retrieval relies on this determinism).
        self.successors: list[tuple[int, ...]] = [tuple(np.flatnonzero(r).tolist()) for r in self.counts]
        self.predecessors: list[tuple[int, ...]] = [tuple(np.flatnonzero(c).tolist()) for c in self.counts.T]
        nz = self.counts[self.counts > 0]
        self.min_count = int(nz.min()) if nz.size else 0
        self.max_count = int(nz.max()) if nz.size else 0

    # --- construction -----------------------------------------------------------------
    @classmethod
    def from_plans(cls, actions: list[str], plans: list[tuple[int, ...]],
                   tasks: dict[str, TaskStats] | None = None, dataset: str = "",
                   split: str = "train") -> ProcedureGraph:
        """A graph from action vocabulary and plans (index sequences), with optional task labels."""
        a = len(actions)
        counts = np.zeros((a, a), dtype=np.int64)
        starts = np.zeros(a, dtype=np.int64)
        ends = np.zeros(a, dtype=np.int64)
        plans = [tuple(int(a) for a in p) for p in plans]
        if tasks is None:
            tasks = {"": TaskStats("", [p for p in plans if p])}
        for p in plans:
            if not p:
                continue
            if not all(0 <= a < len(actions) for a in p):
                raise KeppError(f"plan {list(p)} has an action index outside 0..{len(actions) - 1}")
            for u, v in zip(p, p[1:]):
                counts[u, v] += 1
            starts[p[0]] += 1
            ends[p[-1]] += 1
        return cls(list(actions), counts, starts, ends, dict(tasks), dataset, split)

    # --- vocabulary -------------------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return len(self.actions)

    @property
    def num_edges(self) -> int:
        return int((self.counts > 0).sum())

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
        import hashlib

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
        return Fraction(int(self.counts[u, v]), out) if out else Fraction(0)

    def frequency(self, u: int, v: int) -> Fraction:
        """Exact frequency-graph (PKG) edge weight: min-max normalised count (0 without an edge)."""
        c = int(self.counts[u, v])
        if c == 0:
            return Fraction(0)
        if self.max_count == self.min_count:
            return Fraction(1)
        return Fraction(c - self.min_count, self.max_count - self.min_count)

    def probabilities(self) -> np.ndarray:
        """Row-normalised transition matrix ``[A, A]`` (rows without out-edges are zero)."""
        out = self.out_counts[:, None].astype(np.float64)
        return np.divide(self.counts, out, out=np.zeros(self.counts.shape), where=out > 0)

    def frequencies(self) -> np.ndarray:
        """Min-max normalised counts ``[A, A]`` over the edges of the graph (zero elsewhere)."""
        w = np.zeros(self.counts.shape)
        mask = self.counts > 0
        if self.max_count == self.min_count:
            w[mask] = 1.0
        else:
            w[mask] = (self.counts[mask] - self.min_count) / (self.max_count - self.min_count)
        return w

    def train_plans(self) -> list[tuple[int, ...]]:
        """All training plans the graph was built from (task by task)."""
        return [p for t in self.tasks.values() for p in t.plans]

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
        prob, freq = self.probabilities(), self.frequencies()
        for u, v in zip(*np.nonzero(self.counts)):
            u, v = int(u), int(v)
            p, f = float(prob[u, v]), float(freq[u, v])
            g.add_edge(u, v, count=int(self.counts[u, v]), probability=p, frequency=f,
                       weight=p if weighting == "p2kg" else f)
        return g

    def to_json(self) -> dict:
        """The graph as a JSON-ready dict (counts sparsely, per-task statistics)."""
        us, vs = np.nonzero(self.counts)
        return {
            "format": FORMAT,
            "version": VERSION,
            "dataset": self.dataset,
            "split": self.split,
            "vocabulary_hash": self.vocabulary_hash(),
            "actions": self.actions,
            "transitions": [[int(u), int(v), int(self.counts[u, v])] for u, v in zip(us, vs)],
            "start_counts": {str(i): int(c) for i, c in enumerate(self.start_counts) if c},
            "end_counts": {str(i): int(c) for i, c in enumerate(self.end_counts) if c},
            "tasks": {t: {"name": s.name, "videos": s.videos, "steps": s.steps,
                          "plans": [list(p) for p in s.plans]}
                      for t, s in self.tasks.items()},
            "params": self.params,
        }

    def save(self, path: str | Path) -> None:
        """Write the graph as JSON (atomically)."""
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
            counts = np.zeros((n, n), dtype=np.int64)
            for k, (u, v, c) in enumerate(obj["transitions"]):
                if not (0 <= u < n and 0 <= v < n) or int(c) < 1:
                    raise KeppError(f"{where}: transition {k} [{u}, {v}, {c}] is invalid "
                                    f"(expected action indices below {n} and a count >= 1)")
                counts[u, v] = int(c)
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
                tasks[str(t)] = TaskStats(str(rec.get("name", t)), plans)
        except KeppError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise KeppError(f"{where}: malformed graph JSON ({type(e).__name__}: {e}); expected keys "
                            f"actions, transitions, start_counts, end_counts, tasks") from None
        params = obj.get("params", {})
        if not isinstance(params, dict):
            raise KeppError(f"{where}: 'params' must be an object")
        g = cls(actions, counts, starts, ends, tasks, str(obj.get("dataset", "")), str(obj.get("split", "train")),
                params)
        if obj.get("vocabulary_hash") not in (None, g.vocabulary_hash()):
            raise KeppError(f"{where}: vocabulary_hash does not match its actions (file edited or corrupt)")
        return g


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
            tasks[v.task] = TaskStats(task.name if task is not None else v.task, [])
        tasks[v.task].plans.append(v.plan)
    plans = [p for t in tasks.values() for p in t.plans]
    if not plans:
        raise KeppError(f"dataset {dataset.name!r} has no {split} plans to build a graph from")
    return ProcedureGraph.from_plans(dataset.actions, plans, tasks, dataset.name, split)


def load_graph(path: str | Path, dataset: Dataset | None = None) -> ProcedureGraph:
    """Read a graph JSON file; with ``dataset``, check that the vocabularies match."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: graph file not found (build one with 'kepp graph build')")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise KeppError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    g = ProcedureGraph.from_json(obj, where=str(path))
    if dataset is not None:
        g.check_vocabulary(dataset, where=str(path))
    return g
