"""Building the graph from a plans-JSONL file of any size, in bounded memory.

``build_graph(load_plans(path))`` holds every video of the file as objects (about a
kilobyte each). :func:`stream_graph` reads the file line by line instead and keeps only
what the graph needs: the vocabulary, each task's *distinct* plans with their counts and
the 4-byte plan order (:class:`~kepp_core.graph.build.TaskStats`). Transition counts are
computed once at the end from the distinct plans (vectorised), so the work per line is a
JSON parse and a dictionary lookup. The result equals the in-memory build exactly (same
counts, tasks, plan order and saved JSON).

>>> import tempfile, json, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "plans.jsonl"
>>> _ = f.write_text("".join(json.dumps({"video": f"v{i}", "task": "t", "split": "train",
...                                      "steps": ["a", "b", "b"]}) + "\\n" for i in range(3)))
>>> g = stream_graph(f)
>>> g.counts.tolist(), g.tasks["t"].counts
([[0, 3], [0, 3]], [3])
"""

from __future__ import annotations

from pathlib import Path

from kepp_core.data.plans import action_order, iter_plan_rows
from kepp_core.errors import KeppError
from kepp_core.graph.build import ProcedureGraph, TaskStats


def stream_graph(path: str | Path, split: str = "train", seed: int = 0, name: str = "plans",
                 progress: bool = False) -> ProcedureGraph:
    """The graph of the ``split`` plans of a plans-JSONL file, read as a stream; equal to
    ``build_graph(load_plans(path, seed=seed, name=name), split)``."""
    vocab: dict[str, None] = {}  # every label of every split, in first-appearance order
    seen: set[tuple[str, ...]] = set()  # step lists whose labels are in vocab already
    tasks: dict[str, TaskStats] = {}  # over label tuples until the vocabulary is known
    for _vid, task, row_split, steps, plan in iter_plan_rows(path, seed=seed, progress=progress):
        if steps not in seen:
            seen.add(steps)
            for label in steps:
                vocab.setdefault(label)
        if row_split == split:
            stats = tasks.get(task)
            if stats is None:
                stats = tasks[task] = TaskStats(task)
            stats.add(plan)
    labels = action_order(vocab)  # the loader's rule, so both builds index actions alike
    if not any(t.videos for t in tasks.values()):
        raise KeppError(f"dataset {name!r} has no {split} plans to build a graph from")
    index = {a: i for i, a in enumerate(labels)}
    indexed = {}
    for t, stats in tasks.items():
        out = TaskStats(stats.name, [tuple(index[a] for a in p) for p in stats.distinct], stats.counts, ())
        out.order = stats.order
        indexed[t] = out
    return ProcedureGraph.from_tasks(labels, indexed, name, split)
