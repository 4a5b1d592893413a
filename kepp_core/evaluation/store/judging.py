"""Judging rows: each row's success and failure patterns, one horizon at a time, as arrays."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kepp_core.catalog import PATTERNS
from kepp_core.evaluation.failures import repeats_batch
from kepp_core.evaluation.store.arrays import list_values, row_arrays

__all__ = ["judge"]


def judge(rows: pa.Table) -> pa.Table:
    """``rows`` with their verdicts: ``success``, ``patterns`` (every failure pattern that applies, comma-separated)
    and ``pattern`` (the first: :func:`kepp_core.evaluation.failures.failure_patterns`); and
    ``min_action`` / ``max_action``, the smallest and largest action id the file names, in the table's metadata."""
    n = rows.num_rows
    horizon = pc.list_value_length(rows.column("truth")).to_numpy(zero_copy_only=False) if n else np.zeros(0, np.int64)
    success = np.zeros(n, dtype=bool)
    code = np.zeros(n, dtype=np.int64)
    has_ends = rows.column("endpoints").is_valid().to_numpy() if n else np.zeros(0, bool)
    low, top = 0, -1
    lists = {c: list_values(rows.column(c)) for c in ("truth", "plan", "endpoints")} if n else {}
    record = rows.column("record").to_numpy() if n else np.zeros(0, np.int64)
    for T in np.unique(horizon):
        idx = np.flatnonzero(horizon == T)
        truth, plan = row_arrays(lists["truth"], idx, int(T)), row_arrays(lists["plan"], idx, int(T))
        ends = np.stack([plan[:, 0], plan[:, -1]], axis=1)
        own = has_ends[idx]
        if own.any():
            ends[own] = row_arrays(lists["endpoints"], idx[own], 2)
        right = plan == truth
        success[idx] = right.all(axis=1)
        first = np.r_[True, record[idx][1:] != record[idx][:-1]]  # a record's rows share its truth: judged once
        flags = ((ends[:, 0] != truth[:, 0]) | (ends[:, 1] != truth[:, -1]), truth[:, 0] == truth[:, -1],
                 repeats_batch(truth[first])[np.cumsum(first) - 1] | repeats_batch(plan))
        code[idx] = sum(f.astype(np.int64) << b for b, f in enumerate(flags))
        low, top = min(low, int(truth.min()), int(plan.min())), max(top, int(truth.max()), int(plan.max()))
    names = [tuple(p for b, p in enumerate(PATTERNS[:3]) if c >> b & 1) or (PATTERNS[3],) for c in range(8)]
    code[success] = 8  # a right plan: no pattern
    pick = pa.array(code)
    out = rows.append_column("success", pa.array(success))
    out = out.append_column("patterns", pa.array([", ".join(p) for p in names] + [""], pa.large_string()).take(pick))
    out = out.append_column("pattern", pa.array([p[0] for p in names] + [""], pa.large_string()).take(pick))
    for c in ("endpoints", "paths"):  # their ids are shown as labels too
        flat = rows.column(c)
        while pa.types.is_list(flat.type):
            flat = pc.list_flatten(flat)
        if len(flat) and flat.null_count < len(flat):
            low, top = min(low, pc.min(flat).as_py()), max(top, pc.max(flat).as_py())
    for i, f in enumerate(out.schema):  # text as pandas holds it
        if f.type == pa.string():
            out = out.set_column(i, f.with_type(pa.large_string()), out.column(i).cast(pa.large_string()))
    return out.replace_schema_metadata({"min_action": str(low), "max_action": str(top)})


