"""Result tables: the metrics a summary reports and the methods × horizons table of the demo
table (per-episode records live in :mod:`kepp_core.evaluation.records`, the summaries over
seeds in :func:`kepp_core.evaluation.stats.summarise`)."""

from __future__ import annotations

from collections.abc import Sequence

from kepp_core.evaluation.methods import LABELS
from kepp_core.io import markdown_table

# A horizon's endpoint accuracy on the test episodes (on every method row): the step model's first and last
# step, each endpoint model's (its most probable, hierarchical: the default one and the earlier pair model,
# EvalContext.step_accuracy) and the S3D text tower's when a method used it.
STEP_METRICS = ("first_acc", "last_acc", "ce_first_acc", "ce_last_acc", "ce_pair_first_acc", "ce_pair_last_acc",
                "text_first_acc", "text_last_acc")
ENDPOINT_MODELS = {"step model": ("first_acc", "last_acc"), "endpoint model": ("ce_first_acc", "ce_last_acc"),
                   "the earlier (pair) endpoint model": ("ce_pair_first_acc", "ce_pair_last_acc"),
                   "text tower (S3D)": ("text_first_acc", "text_last_acc")}


def horizon_table(rows: Sequence[dict], horizons: Sequence[int], metric_cols=("SR", "mAcc", "mIoU")) -> str:
    """Methods × horizons as Markdown: ``SR / mAcc / mIoU`` per horizon (means; ± std of SR over
    seeds: summary rows of :func:`~kepp_core.evaluation.stats.summarise` with ``spread="std"``)."""
    by = {(r["method"], r["T"]): r for r in rows}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    cells = []
    for m in methods:
        row = [LABELS.get(m, m)]
        for h in horizons:
            r = by.get((m, h))
            if r is None:
                row.append("")
                continue
            vals = " / ".join(f"{r[c]:.1f}" for c in metric_cols)
            if r.get("SR_std") is not None and r.get("seeds", 1) > 1:
                vals += f" (SR ± {r['SR_std']:.1f})"
            row.append(vals)
        cells.append(row)
    return markdown_table(["method", *(f"T={h} {' / '.join(metric_cols)}" for h in horizons)], cells)


__all__ = ["ENDPOINT_MODELS", "STEP_METRICS", "horizon_table"]
