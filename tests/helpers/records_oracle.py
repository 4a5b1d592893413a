"""The brute-force reference of the records store (networkx's habit: a slow, obvious version the fast one must
equal): prediction records read record by record and judged one method at a time with
:func:`~kepp_core.evaluation.failures.outcome_from_record` and
:func:`~kepp_core.evaluation.failures.failure_patterns`, as one row per episode and method in the columns of
:func:`kepp_core.api.read_predictions`."""

from __future__ import annotations

from pathlib import Path

from kepp_core.evaluation.failures import failure_patterns, outcome_from_record, stored_paths
from kepp_core.evaluation.records import read_records
from kepp_core.evaluation.store import FRAME_COLUMNS


def oracle_rows(files) -> list[dict]:
    """Every (record, method) row of ``files``, judged one by one (dicts keyed by the table's columns)."""
    rows = []
    for f in files:
        for rec in read_records(f):
            paths, path_scores = rec.get("paths") or [], rec.get("path_scores") or []
            imported = rec.get("imported") if isinstance(rec.get("imported"), dict) else {}
            own, own_scores = rec.get("method_paths") or {}, rec.get("method_path_scores") or {}
            for method, plan in rec["plans"].items():
                o = outcome_from_record(rec, method)
                k = stored_paths(method)
                mine = (not k) and method in own  # a row's own plans (the K-best row's), recorded per method
                patterns = failure_patterns(o)
                ends = tuple(map(int, rec["endpoints"])) if k and rec.get("endpoints") is not None else None
                rows.append({
                    "episode": rec["episode"], "task": rec.get("task"), "video": rec.get("video"),
                    "horizon": int(rec.get("T") or len(rec["gt"])), "setting": rec.get("setting"), "seed": rec.get("seed"),
                    "fraction": rec.get("fraction"), "method": method, "truth": o.truth, "plan": o.plan, "endpoints": ends,
                    "endpoint_scores": rec.get("endpoint_scores") if ends is not None else None,
                    "paths": [tuple(p) for p in (own[method] if mine else paths[:k])],
                    "path_scores": (own_scores.get(method) or []) if mine else path_scores[:k], "success": o.success,
                    "patterns": ", ".join(patterns), "pattern": patterns[0] if patterns else "",
                    "start_time": rec.get("start_time"), "goal_time": rec.get("goal_time"), "source": Path(f).name,
                    "imported": imported.get(method)})
    return rows


def differences(table, rows: list[dict]) -> list[str]:
    """Where the predictions table ``table`` differs from the oracle's ``rows`` (empty: none), value by value
    (NaN and None read as the same missing value)."""
    if list(table.columns) != FRAME_COLUMNS:
        return [f"columns {list(table.columns)}"]
    if len(table) != len(rows):
        return [f"{len(table)} rows, the oracle has {len(rows)}"]
    out = []
    for c in FRAME_COLUMNS:
        got = table[c].tolist()
        for i, (g, w) in enumerate(zip(got, (r[c] for r in rows))):
            missing = lambda v: v is None or (isinstance(v, float) and v != v)  # noqa: E731
            if not (g == w or (missing(g) and missing(w))) or type(g) is not type(w) and not (missing(g) and missing(w)) \
                    and not (isinstance(g, (int, float)) and isinstance(w, (int, float))):
                out.append(f"row {i} {c}: {g!r} != {w!r}")
                break
    return out
