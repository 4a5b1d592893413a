"""Zero-shot planning with the graph alone: every test episode gets the top recommendation
between its endpoints (ground truth, or predictions read from a file).

Predicted endpoints file (JSONL, one episode per line; ``Episode.id`` is
``task/video/first:T``)::

    {"episode": "task/video/0:3", "start": "pour water", "goal": "stir"}

``start``/``goal`` are action labels or indices. Every evaluated episode needs a line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.data.episodes import Episode, make_episodes
from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.io import iter_jsonl
from kepp_core.metrics import BATCH, plan_metrics
from kepp_core.graph.build import ProcedureGraph
from kepp_core.graph.retrieval import Retriever

__all__ = ["ZeroShotResult", "read_endpoints", "zero_shot"]


@dataclass
class ZeroShotResult:
    """Metrics (percent) and per-episode predictions of one path scorer at one horizon."""

    horizon: int
    scorer: str
    endpoints: str
    metrics: dict
    fallbacks: int
    episode_ids: list[str] = field(default_factory=list)
    predictions: list[tuple[int, ...]] = field(default_factory=list)

    def row(self) -> dict:
        m = self.metrics
        return {"T": self.horizon, "scorer": self.scorer, "endpoints": self.endpoints,
                "episodes": m["episodes"], "SR": m["sr"], "mAcc": m["macc"],
                "mIoU ep": m["miou_episode"], "mIoU b256": m["miou_batch"], "fallbacks": self.fallbacks}


def _action(graph: ProcedureGraph, value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise KeppError(f"{where}: expected an action label or index, got {value!r}")
    try:
        return graph.action_index(value)
    except KeppError as e:
        raise KeppError(f"{where}: {e}") from None


def read_endpoints(path: str | Path, graph: ProcedureGraph) -> dict[str, tuple[int, int]]:
    """Read a predicted-endpoints JSONL file: ``{episode id: (a_1, a_T)}``."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: endpoints file not found (expected JSONL lines "
                        f'{{"episode": id, "start": action, "goal": action}})')
    out: dict[str, tuple[int, int]] = {}
    for where, rec in iter_jsonl(path, required=("episode", "start", "goal")):
        eid = str(rec["episode"])
        if eid in out:
            raise KeppError(f"{where}: episode {eid!r} appears twice")
        out[eid] = (_action(graph, rec["start"], where), _action(graph, rec["goal"], where))
    if not out:
        raise KeppError(f"{path}: no endpoints found")
    return out


def zero_shot(dataset: Dataset, graph: ProcedureGraph, horizon: int, scorer: str = "p2kg",
              endpoints: dict[str, tuple[int, int]] | None = None, split: str = "test",
              retriever: Retriever | None = None, progress: bool = False,
              batch_size: int = BATCH, tie_break: str = "smaller") -> ZeroShotResult:
    """Plan every episode of ``split`` with the top path between its endpoints.

    ``endpoints`` maps ``Episode.id`` to predicted ``(a_1, a_T)``; ``None`` uses the
    ground truth. The graph's vocabulary must match the dataset's. ``tie_break`` orders equal
    scores (``smaller`` or ``larger`` index sequence first; ignored if ``retriever`` is given).
    """
    graph.check_vocabulary(dataset)
    episodes: list[Episode] = make_episodes(dataset, horizon, split)
    if not episodes:
        raise KeppError(f"dataset {dataset.name!r} has no {split} episodes of T={horizon} steps")
    if endpoints is None:
        pairs = [(e.actions[0], e.actions[-1]) for e in episodes]
    else:
        missing = [e.id for e in episodes if e.id not in endpoints]
        if missing:
            raise KeppError(f"the endpoints file has no line for {len(missing)} of {len(episodes)} "
                            f"episodes (first: {missing[0]!r})")
        pairs = [endpoints[e.id] for e in episodes]
    retriever = retriever or Retriever(graph, scorer, R=1, tie_break=tie_break)
    recs = retriever.batch(pairs, horizon, progress=progress)
    preds = [r.top for r in recs]
    gts: Sequence[tuple[int, ...]] = [e.actions for e in episodes]
    return ZeroShotResult(horizon, retriever.scorer_name, "gt" if endpoints is None else "predicted",
                          plan_metrics(preds, gts, batch_size), sum(r.fallback for r in recs),
                          [e.id for e in episodes], preds)
