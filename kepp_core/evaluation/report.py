"""Per-episode prediction records (JSONL or Parquet) and result tables (mean ± std over seeds)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from kepp_core.catalog import METRIC_KEYS, paths_source
from kepp_core.errors import KeppError
from kepp_core.evaluation.methods import LABELS, HorizonEvaluation
from kepp_core.io import atomic_open, atomic_path


def episode_records(ev: HorizonEvaluation, actions: Sequence[str], seed: int | None = None) -> list[dict]:
    """One record per test episode: ids, times, ground truth, endpoints, graph paths, plan and
    correctness per method (``endpoints`` are the step model's, ``paths`` those of the KEPP
    planner with the most paths that ran, :func:`kepp_core.catalog.paths_source`);
    with ``--samples K`` the ``K`` sampled plans per method (``samples``), with LLM methods the
    LLM row's plan and source (``llm``)."""
    gt = ev.data.actions.numpy()
    source = paths_source(ev.outputs)
    src = ev.outputs[source] if source is not None else None
    out = []
    for i, ep in enumerate(ev.data.episodes):
        rec = {"episode": ep.id, "video": ep.video.id, "task": ep.video.task, "T": ev.horizon,
               "setting": ev.setting, "first": ep.first, "start_time": ep.start_time, "goal_time": ep.goal_time,
               "gt": gt[i].tolist(), "gt_labels": [actions[a] for a in gt[i]]}
        if seed is not None:
            rec["seed"] = seed
        if ev.step_endpoints is not None:
            e = ev.step_endpoints[i]
            rec["endpoints"] = [int(e[0]), int(e[1])]
            rec["endpoint_labels"] = [actions[int(e[0])], actions[int(e[1])]]
            if ev.step_scores is not None:
                rec["endpoint_scores"] = [round(float(x), 4) for x in ev.step_scores[i]]
        if src is not None:
            rec["paths"] = [list(p) for p in src.paths[i]]
            rec["path_scores"] = [float(s) for s in src.path_scores[i]]
        rec["plans"] = {}
        rec["correct"] = {}
        for name, o in ev.outputs.items():
            p = o.plans[i].tolist()
            rec["plans"][name] = p
            rec["correct"][name] = p == gt[i].tolist()
            if o.samples is not None:  # kepp eval --samples K
                rec.setdefault("samples", {})[name] = o.samples[i].tolist()
            if o.llm_plans is not None:  # the LLM row's plan and where it came from (llm or the fallback)
                rec.setdefault("llm", {})[name] = o.llm_plans[i]
        out.append(rec)
    return out


def write_records(path: str | Path, records: list[dict]) -> Path:
    """Write records as JSONL (``.jsonl``) or Parquet (``.parquet``), atomically."""
    import json

    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        df = pd.DataFrame([{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
                           for r in records])
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        return path
    if path.suffix not in (".jsonl", ".json"):
        raise KeppError(f"{path}: records are written as .jsonl or .parquet")
    with atomic_open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return path


def summarise(rows: Iterable[dict], keys: Sequence[str] = ("method", "T", "setting")) -> list[dict]:
    """Mean and standard deviation of each metric over rows sharing ``keys`` (e.g. seeds)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in keys)].append(r)
    out = []
    for key, rs in groups.items():
        row = dict(zip(keys, key))
        row["seeds"] = len(rs)
        for m in METRIC_KEYS + ("first_acc", "last_acc"):
            vals = [r[m] for r in rs if r.get(m) is not None]
            if vals:
                row[m] = float(np.mean(vals))
                row[f"{m}_std"] = float(np.std(vals))
        out.append(row)
    return out


def markdown_table(rows: Sequence[dict], horizons: Sequence[int], metric_cols=("SR", "mAcc", "mIoU")) -> str:
    """Methods × horizons as Markdown: ``SR / mAcc / mIoU`` per horizon (means; ± std of SR over seeds)."""
    by = {(r["method"], r["T"]): r for r in rows}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    head = "| method | " + " | ".join(f"T={h} {' / '.join(metric_cols)}" for h in horizons) + " |"
    lines = [head, "|---|" + "---|" * len(horizons)]
    for m in methods:
        cells = []
        for h in horizons:
            r = by.get((m, h))
            if r is None:
                cells.append("")
                continue
            vals = " / ".join(f"{r[c]:.1f}" for c in metric_cols)
            if r.get("SR_std") is not None and r.get("seeds", 1) > 1:
                vals += f" (SR ± {r['SR_std']:.1f})"
            cells.append(vals)
        lines.append(f"| {LABELS.get(m, m)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
