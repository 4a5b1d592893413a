"""Per-episode records: the one on-disk format of what every method planned on every test
episode, its writer and its reader (JSON lines, or Parquet with nested values as JSON text).

``kepp eval --records``, ``kepp protocol`` (``records.jsonl``) and ``kepp demo models``
(``predictions.jsonl``) write it; the failure analysis, the app's Results page and the paired
tests read it. One record per (train fraction, seed, horizon, test episode), its keys in this
order (``[...]``: only when known):

- ``[fraction]``, ``[seed]``, ``T``, ``episode`` (``task/video/first:T``), ``video``, ``task``;
- with the episode's context (``kepp eval``, the demo models): ``setting``, ``first``,
  ``start_time``, ``goal_time``;
- ``gt``: the ground-truth plan (action indices); with context: ``gt_labels``, the step model's
  ``endpoints``/``endpoint_labels``/``endpoint_scores`` and the KEPP planner's graph ``paths``
  and ``path_scores`` (R=2's when it ran, else R=1's; with no KEPP-R row, the K-best row's);
- ``plans`` (method -> plan), ``success`` (method -> 1 when the whole plan is right, else 0)
  and ``acc`` (method -> share of steps right);
- ``[samples]`` (method -> K sampled plans, ``kepp eval --samples K``), ``[llm]`` (method -> the
  LLM row's plan and source);
- ``[method_paths]`` and ``[method_path_scores]``: method -> its own K plans, best first, and their
  scores, for the rows whose decoder keeps several plans (the K-best rows: :func:`~kepp_core.catalog.plans_kept`),
  whatever ``paths`` holds.

Older files still read: a record with ``correct`` (method -> true/false) instead of
``success``/``acc`` gets both from its plans and ground truth (:func:`upgrade`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar

import numpy as np

from kepp_core.catalog import paths_source, plans_kept
from kepp_core.catalog.limits import MAX_HORIZON, MAX_SEED
from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.data.split_lists import MAX_ACTION_ID
from kepp_core.errors import KeppError
from kepp_core.io import atomic_open, atomic_path, has_suffix, iter_jsonl, open_regular, parse_json
from kepp_core.schema import MAX_ID_CHARS, Meta, Struct, convert

if TYPE_CHECKING:  # the evaluation's result type: reading records needs no methods (no torch)
    from kepp_core.evaluation.methods import HorizonEvaluation

REQUIRED = ("episode", "gt", "plans")
RECORD_SUFFIXES = (".jsonl", ".parquet")
OUTCOMES = ("success", "acc")  # per method: whole plan right (0/1), share of steps right
_Action = Annotated[int, Meta(ge=0, le=MAX_ACTION_ID)]
_Plan = Annotated[list[_Action], Meta(min_length=1, max_length=MAX_HORIZON)]
_Seconds = Annotated[float, Meta(ge=-MAX_VIDEO_SECONDS, le=MAX_VIDEO_SECONDS)]
_Text = Annotated[str, Meta(max_length=4096)]


class _Checked(Struct):
    """The keys of a record every reader trusts, with their types and ranges (other keys pass as they are)."""

    HINTS: ClassVar[dict[str, str]] = {
        "episode": "an episode id", "gt": "a plan: a list of action ids", "plans": "methods mapped to plans (lists "
        "of action ids)", "T": f"a horizon 1..{MAX_HORIZON}", "seed": f"a whole number 0..{MAX_SEED:,}",
        "fraction": "a training fraction in (0, 1]", "task": "text (an id)", "video": "text (an id)",
        "setting": "text (a setting's name)", "start_time": "seconds (a number within a day)",
        "goal_time": "seconds (a number within a day)", "endpoints": "two action ids",
        "endpoint_scores": "a list of numbers", "paths": "graph paths: lists of action ids",
        "path_scores": "a list of numbers", "method_paths": "methods mapped to their plans (lists of action ids)",
        "method_path_scores": "methods mapped to their plans' scores (lists of numbers)"}
    episode: Annotated[str, Meta(min_length=1, max_length=4096)]
    gt: _Plan
    plans: dict[Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)], _Plan]
    T: Annotated[int, Meta(ge=1, le=MAX_HORIZON)] | None = None
    seed: Annotated[int, Meta(ge=0, le=MAX_SEED)] | None = None
    fraction: Annotated[float, Meta(gt=0, le=1)] | None = None
    # what the store keeps of a record, each one type in every record (a column of mixed types is refused, not
    # read as text)
    task: _Text | None = None
    video: _Text | None = None
    setting: _Text | None = None
    start_time: _Seconds | None = None
    goal_time: _Seconds | None = None
    endpoints: Annotated[list[_Action], Meta(min_length=2, max_length=2)] | None = None
    endpoint_scores: list[float] | None = None
    paths: list[_Plan] | None = None
    path_scores: list[float] | None = None
    method_paths: dict[Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)], list[_Plan]] | None = None
    method_path_scores: dict[Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)], list[float]] | None = None


class Records(list):
    """Per-episode records (dicts in the format of this module) read from or written to ``path``."""

    def __init__(self, records: Iterable[dict] = (), path: str | Path | None = None) -> None:
        super().__init__(records)
        self.path = str(path) if path is not None else None
        self._units: dict | None = None

    def units(self) -> dict[tuple[float, int], dict]:
        """The records as arrays for paired tests: per ``(fraction, T)`` the ``seed`` and
        ``episode`` of every unit and, per method, its ``success`` and ``acc`` (NaN where a unit
        has no plan of that method). KeppError unless every record names its fraction and seed
        (``kepp protocol``'s records)."""
        if self._units is None:
            self._units = _units(self, self.path or "records")
        return self._units

    def methods(self, fraction: float, horizon: int) -> list[str]:
        """The methods recorded at ``(fraction, T)``."""
        g = self.units().get((float(fraction), int(horizon)))
        return sorted(g["success"]) if g else []


def episode_records(ev: HorizonEvaluation, actions: Sequence[str] | None = None, seed: int | None = None,
                    fraction: float | None = None) -> list[dict]:
    """One record per test episode of a horizon's evaluation; with ``actions`` (the dataset's
    vocabulary) the episode's context too (times, labels, the step model's endpoints, the graph
    paths). Methods that drew ``K`` plans add ``samples``, LLM methods ``llm``."""
    gt = ev.data.actions.numpy()
    source = paths_source(ev.outputs) if actions is not None else None
    src = ev.outputs[source] if source is not None else None
    kept = [n for n in plans_kept(ev.outputs) if ev.outputs[n].paths is not None]  # each K-best row's own plans
    endpoints = ev.step_endpoints if actions is not None else None
    out = []
    for i, ep in enumerate(ev.data.episodes):
        rec: dict = {} if fraction is None else {"fraction": fraction}
        if seed is not None:
            rec["seed"] = seed
        rec.update({"T": ev.horizon, "episode": ep.id, "video": ep.video.id, "task": ep.video.task})
        if actions is not None:
            rec.update({"setting": ev.setting, "first": ep.first, "start_time": ep.start_time,
                        "goal_time": ep.goal_time})
        rec["gt"] = gt[i].tolist()
        if actions is not None:
            rec["gt_labels"] = [actions[a] for a in gt[i]]
        if endpoints is not None:
            e = endpoints[i]
            rec["endpoints"] = [int(e[0]), int(e[1])]
            rec["endpoint_labels"] = [actions[int(e[0])], actions[int(e[1])]]
            if ev.step_scores is not None:
                rec["endpoint_scores"] = [round(float(x), 4) for x in ev.step_scores[i]]
        if src is not None:
            rec["paths"] = [list(p) for p in src.paths[i]]
            rec["path_scores"] = [float(s) for s in src.path_scores[i]]
        rec.update({"plans": {}, "success": {}, "acc": {}})
        for name, o in ev.outputs.items():
            p = np.asarray(o.plans[i])
            rec["plans"][name] = p.tolist()
            rec["success"][name] = int((p == gt[i]).all())
            rec["acc"][name] = float((p == gt[i]).mean())
            if o.samples is not None:  # kepp eval --samples K
                rec.setdefault("samples", {})[name] = o.samples[i].tolist()
            if o.llm_plans is not None:  # the LLM row's plan and where it came from (llm or the fallback)
                rec.setdefault("llm", {})[name] = o.llm_plans[i]
        if kept:
            rec["method_paths"] = {n: [list(p) for p in ev.outputs[n].paths[i]] for n in kept}
            rec["method_path_scores"] = {n: [float(s) for s in ev.outputs[n].path_scores[i]] for n in kept}
        out.append(rec)
    return out


def write_records(path: str | Path, records: Iterable[dict]) -> Path:
    """Write records as JSONL (``.jsonl``) or Parquet (``.parquet``), atomically."""
    path = Path(path)
    if has_suffix(path, ".parquet"):
        import pandas as pd  # only for Parquet files: pandas takes a second to load

        df = pd.DataFrame([{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
                           for r in records])
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        return path
    if not has_suffix(path, ".jsonl", ".json"):
        raise KeppError(f"{path}: records are written as .jsonl or .parquet")
    with atomic_open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return path


def read_records(path: str | Path) -> Records:
    """The records of a ``.jsonl`` or ``.parquet`` file, older ones upgraded (:func:`upgrade`).
    A bad line, or a record without ``episode``, ``gt`` and ``plans``, is a KeppError naming the
    file and line (record)."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: prediction records not found")
    if has_suffix(path, ".parquet"):
        rows = _parquet_records(path)
    else:
        rows = list(iter_jsonl(path, unique_keys=True))
    for where, rec in rows:
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            raise KeppError(f"{where}: record lacks {', '.join(missing)} (not written by 'kepp eval --records'?)")
        convert(rec, _Checked, where)
    return Records((upgrade(rec) for _, rec in rows), path)


def _absent(value) -> bool:
    """A Parquet cell of a key the record did not have (None, or NaN in a column of numbers)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


MAX_ROW_GROUPS = 10_000  # a records Parquet file's row groups (pyarrow and pandas write one per 1Mi rows)
MAX_PARQUET_ROWS = 2**26  # records in one Parquet file (the field's benchmark has about 835,000)
# What a records Parquet file may inflate to once its values are made: 256 times its size (records as the
# package writes them inflate about 50 times: JSON text, repeated names), at least 512 MiB.
INFLATE_FACTOR, MIN_INFLATE = 256, 512 * 2**20


def _parquet_records(path: Path) -> list[tuple[str, dict]]:
    """``(where, record)`` of each row of a records Parquet file: its size, row groups and rows checked in the
    footer, then its text read as dictionaries and what its values inflate to counted, all before one value is
    made (a file of a few KiB whose one string repeats 4 GiB worth is refused, not made); JSON text and nested
    columns (lists, structs, maps) give the same records, a cell without a value is a key the record lacks."""
    import pyarrow.parquet as pq

    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        budget = max(MIN_INFLATE, INFLATE_FACTOR * size)
        try:
            pf = pq.ParquetFile(f)
            meta = pf.metadata
            if meta.num_row_groups > MAX_ROW_GROUPS or meta.num_rows > MAX_PARQUET_ROWS:
                raise KeppError(f"{path}: {meta.num_row_groups:,} row groups of {meta.num_rows:,} records (expected at "
                                f"most {MAX_ROW_GROUPS:,} row groups and {MAX_PARQUET_ROWS:,} records)")
            stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            if stored > budget:
                raise KeppError(f"{path}: its values would inflate to {stored:,} bytes from {size:,} (expected at most "
                                f"{budget:,}: {INFLATE_FACTOR} times the file, at least {MIN_INFLATE:,})")
            text = [meta.schema.column(j).path for j in range(meta.num_columns)
                    if meta.schema.column(j).physical_type == "BYTE_ARRAY"]
            table = pq.ParquetFile(f, read_dictionary=text).read()
        except KeppError:
            raise
        except Exception as e:  # pyarrow raises several types for a bad file  # noqa: BLE001
            raise KeppError(f"{path}: not a readable Parquet file ({str(e)[:200]})") from None
        made = sum(_inflated(c) for c in table.columns)
        if made > budget:
            raise KeppError(f"{path}: its values would inflate to {made:,} bytes from {size:,} (expected at most "
                            f"{budget:,}: {INFLATE_FACTOR} times the file, at least {MIN_INFLATE:,})")
    out = []
    for batch in table.to_batches(max_chunksize=65_536):
        for rec in batch.to_pylist():
            where = f"{path}: record {len(out) + 1}"
            out.append((where, {k: _cell(v, where, k) for k, v in rec.items() if not _absent(v)}))
    return out


def _inflated(column) -> int:
    """The bytes a column's values take once made: dictionaries counted as their values repeated."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for arr in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if pa.types.is_dictionary(arr.type):
            lengths = pc.binary_length(arr.dictionary) if pa.types.is_binary(arr.dictionary.type) or \
                pa.types.is_string(arr.dictionary.type) else None
            total += 8 * len(arr) + (int(pc.sum(lengths.take(arr.indices.fill_null(0))).as_py() or 0)
                                     if lengths is not None and len(arr.dictionary) else 0)
        elif pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_map(arr.type):
            total += 8 * len(arr) + _inflated(arr.flatten() if not pa.types.is_map(arr.type) else arr.keys) + \
                (_inflated(arr.items) if pa.types.is_map(arr.type) else 0)
        elif pa.types.is_struct(arr.type):
            total += sum(_inflated(arr.field(i)) for i in range(arr.type.num_fields))
        else:
            total += arr.nbytes
    return total


_TEXT_KEYS = ("episode", "task", "video", "setting")  # ids and names: text even when it starts with a bracket


def _cell(value, where: str, key: str):
    """A Parquet cell as the record's value: JSON text parsed (one reader: :func:`kepp_core.io.parse_json`), a
    map's pairs an object, a struct's fields without a value left out."""
    if isinstance(value, str) and value[:1] in "[{" and key not in _TEXT_KEYS:
        return parse_json(value, f"{where}: {key!r}", lines=False, unique_keys=True)
    if isinstance(value, dict):
        return {k: _cell(v, where, key) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):  # a map's (key, value) pairs
            return {k: _cell(v, where, key) for k, v in value}
        return [_cell(v, where, key) for v in value]
    return value


def upgrade(record: dict) -> dict:
    """A record of an older format in this one: ``correct`` (method -> bool) becomes ``success``
    and ``acc`` computed from the plans and the ground truth (the same numbers a new record has).

    >>> upgrade({"episode": "e", "gt": [1, 2], "plans": {"a": [1, 3]}, "correct": {"a": False}})
    {'episode': 'e', 'gt': [1, 2], 'plans': {'a': [1, 3]}, 'success': {'a': 0}, 'acc': {'a': 0.5}}
    """
    if "correct" not in record or all(k in record for k in OUTCOMES):
        return record
    rec = {k: v for k, v in record.items() if k != "correct"}
    gt = np.asarray(rec["gt"])
    rec["success"] = {m: int((np.asarray(p) == gt).all()) for m, p in rec["plans"].items()}
    rec["acc"] = {m: float((np.asarray(p) == gt).mean()) for m, p in rec["plans"].items()}
    return rec


def _units(records: Iterable[dict], where: str) -> dict[tuple[float, int], dict]:
    """:meth:`Records.units` of ``records``."""
    groups: dict = {}
    for n, rec in enumerate(records, 1):
        try:
            key = (float(rec["fraction"]), int(rec["T"]))
            seed, episode, success, acc = int(rec["seed"]), str(rec["episode"]), rec["success"], rec["acc"]
        except (KeyError, TypeError, ValueError):
            raise KeppError(f"{where}: record {n}: expected a protocol record (fraction, T, seed, episode, "
                            f"success, acc)") from None
        if not isinstance(success, dict) or not isinstance(acc, dict):
            raise KeppError(f"{where}: record {n}: 'success' and 'acc' must map methods to values")
        g = groups.setdefault(key, {"seed": [], "episode": [], "success": {}, "acc": {}})
        size = len(g["seed"])
        for part, values in (("success", success), ("acc", acc)):
            for m, v in values.items():
                col = g[part].setdefault(m, [math.nan] * size)
                col.extend([math.nan] * (size - len(col)))
                col.append(float(v))
        g["seed"].append(seed)
        g["episode"].append(episode)
    out = {}
    for key, g in groups.items():
        size = len(g["seed"])
        out[key] = {"seed": np.asarray(g["seed"]), "episode": g["episode"],
                    **{part: {m: np.asarray(v + [math.nan] * (size - len(v))) for m, v in g[part].items()}
                       for part in OUTCOMES}}
    return out


__all__ = ["OUTCOMES", "REQUIRED", "Records", "episode_records", "read_records", "upgrade", "write_records"]
