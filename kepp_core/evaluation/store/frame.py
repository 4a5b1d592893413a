"""Several records files as one table: their judged columns (:class:`RecordsColumns`) and the pandas predictions
table of :func:`kepp_core.api.read_predictions` made of them (:func:`predictions_frame`: tuples where the table has
always held tuples)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from kepp_core.evaluation.store.arrays import (PLANS, FramePlans, _objects, _path_lists, _small_lists, _tuples,
                                               list_values, row_arrays)
from kepp_core.evaluation.store.cache import records_columns
from kepp_core.evaluation.store.files import each_file
from kepp_core.evaluation.store.reading import SCALARS

__all__ = ["FRAME_COLUMNS", "PLAN_FRAME_COLUMNS", "RecordsColumns", "plans_frame", "predictions_frame", "read_columns",
           "recorded_step_names", "recorded_tasks"]

# The predictions table's columns (kepp_core.api.analysis.RECORD_COLUMNS) and the judged values per row.
FRAME_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "fraction", "method", "truth", "plan",
                 "endpoints", "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                 "goal_time", "source", "imported"]


@dataclass(frozen=True)
class RecordsColumns:
    """The judged rows of several records files (``table``: one Arrow table, each row with its ``source``, the
    file's name), with the plans and ground truths of one horizon as fixed-width arrays."""

    table: pa.Table
    min_action: int
    max_action: int

    def rows(self, horizon: int) -> np.ndarray:
        """The row numbers of ``horizon``."""
        return np.flatnonzero(self.table.column("horizon").to_numpy() == int(horizon))

    def plans(self, horizon: int) -> np.ndarray:
        """Every plan of ``horizon`` as an ``[n, T]`` int64 array (rows in :meth:`rows`' order)."""
        return row_arrays(self.table.column("plan"), self.rows(horizon), int(horizon))

    def truth(self, horizon: int) -> np.ndarray:
        """The ground truth of every row of ``horizon`` as an ``[n, T]`` int64 array."""
        return row_arrays(self.table.column("truth"), self.rows(horizon), int(horizon))


def read_columns(files: Iterable[str | Path]) -> RecordsColumns:
    """The judged rows of ``files`` (:func:`records_columns` of each, in order), as one table."""
    files = list(files)
    tables, low, top = [], 0, -1
    for n, (f, t) in enumerate(zip(files, each_file(records_columns, files))):
        meta = t.schema.metadata or {}
        low, top = min(low, int(meta.get(b"min_action", b"0"))), max(top, int(meta.get(b"max_action", b"-1")))
        t = t.append_column("source", pa.repeat(pa.scalar(Path(f).name, pa.large_string()), t.num_rows))
        tables.append(t.append_column("file", pa.array(np.full(t.num_rows, n, dtype=np.int64))))
    if not tables:
        return RecordsColumns(pa.table({c: pa.array([], pa.string()) for c in FRAME_COLUMNS}), 0, -1)
    return RecordsColumns(pa.concat_tables(tables, promote_options="permissive"), low, top)


def recorded_tasks(files: Iterable[str | Path]) -> set[str]:
    """The task ids the records ``files`` name (:func:`read_columns`' task column: the store's cached columns, no
    predictions table)."""
    tasks = pc.unique(read_columns(files).table.column("task").cast(pa.large_string())).to_pylist()
    return {t for t in tasks if t is not None}


def predictions_frame(files: Iterable[str | Path]):
    """The predictions table of ``files`` (:func:`kepp_core.api.read_predictions`): one row per episode and
    method (columns :data:`FRAME_COLUMNS`), the plans and ground truths as tuples of ints as ever."""
    with _no_collection():
        return _predictions_frame(list(files))


@contextlib.contextmanager
def _no_collection():
    """The cyclic garbage collector paused while a table of a million small tuples and lists is made: they hold no
    cycles, and the collector's passes over them (every 700 new objects) took about half of the making."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# The columns of plans_frame: what scoring the recorded plans by method, T and run reads.
PLAN_FRAME_COLUMNS = ["horizon", "setting", "seed", "fraction", "method", "source", "imported"]


def plans_frame(files: Iterable[str | Path]):
    """The rows of ``files`` as :func:`predictions_frame` has them (same index, values and dtypes) in the columns
    :data:`PLAN_FRAME_COLUMNS` only, their plans and ground truths the store's ``[n, T]`` arrays alone (carried in
    the table's ``attrs``, counted on by :class:`PlanArrays`): what scores recorded plans (``kepp eval
    --from-records``) without a tuple, list or path per row."""
    import pandas as pd

    cols = read_columns(list(files))
    t = cols.table
    if t.num_rows == 0:
        return pd.DataFrame({c: [] for c in PLAN_FRAME_COLUMNS}, columns=PLAN_FRAME_COLUMNS)
    out = _scalar_columns(t, PLAN_FRAME_COLUMNS)
    horizon = out["horizon"].to_numpy()
    plans, truths = list_values(t.column("plan")), list_values(t.column("truth"))
    arrays = {}
    for T in np.unique(horizon):
        rows = np.flatnonzero(horizon == T)
        arrays[int(T)] = rows, row_arrays(plans, rows, int(T)), row_arrays(truths, rows, int(T))
    out.attrs["actions"] = (cols.min_action, cols.max_action)
    out.attrs[PLANS] = FramePlans(horizon, None, None, arrays)
    return out


def _scalar_columns(t: pa.Table, names: list[str]):
    """The columns ``names`` of a judged table in pandas (text deduplicated), a column with no value at all None
    in every row, as a table of Python values has it."""
    out = t.select(names).to_pandas(deduplicate_objects=True)
    for c in out.columns:
        if t.column(c).null_count == t.num_rows:
            out[c] = np.full(t.num_rows, None, dtype=object)
    return out


def _predictions_frame(files: list):
    import pandas as pd

    cols = read_columns(files)
    t = cols.table
    n = t.num_rows
    if not files or n == 0:
        return pd.DataFrame({c: [] for c in FRAME_COLUMNS}, columns=FRAME_COLUMNS)
    out = _scalar_columns(t, [*SCALARS, "horizon", "method", "source", "imported", "success", "patterns", "pattern"])
    horizon = out["horizon"].to_numpy()
    # one truth per record, shared by its methods' rows (as the record-by-record reader shares it)
    record = t.column("record").to_numpy() + (t.column("file").to_numpy() << 40)  # numbered apart per file
    first = np.flatnonzero(np.r_[True, record[1:] != record[:-1]])
    owner = np.cumsum(np.r_[True, record[1:] != record[:-1]]) - 1
    truth_first = np.empty(len(first), dtype=object)
    plan = np.empty(n, dtype=object)
    first_h = horizon[first]
    plans, truths = list_values(t.column("plan")), list_values(t.column("truth"))
    success = out["success"].to_numpy(dtype=bool)
    arrays = {}  # the plans and truths as arrays per horizon, for the tables counted on this one (PlanArrays)
    for T in np.unique(horizon):
        rows = np.flatnonzero(horizon == T)
        arrays[int(T)] = rows, plan_T, truth_T = rows, row_arrays(plans, rows, int(T)), row_arrays(truths, rows, int(T))
        f = np.flatnonzero(first_h == T)
        truth_first[f] = _tuples(truth_T[np.searchsorted(rows, first[f])])
        wrong = ~success[rows]  # a right plan is its truth: that tuple, not a new one
        plan[rows[wrong]] = _tuples(plan_T[wrong])
    right = np.flatnonzero(success)
    plan[right] = truth_first[owner[right]]
    k = t.column("k").to_numpy()
    endpoints = np.full(n, None, dtype=object)
    scores = np.full(n, None, dtype=object)
    paths = np.empty(n, dtype=object)
    path_scores = np.empty(n, dtype=object)
    uses = np.flatnonzero(k > 0)
    if len(uses):
        # the values of each (record, R) once: rows of one record and R share them
        key = record[uses] * 64 + np.minimum(k[uses], 63)
        uniq, first_of, back = np.unique(key, return_index=True, return_inverse=True)
        at, kk = uses[first_of], k[uses[first_of]]
        endpoints[uses] = _small_lists(t.column("endpoints"), at, as_tuple=True)[back]
        scores[uses] = _small_lists(t.column("endpoint_scores"), at)[back]
        paths[uses] = _path_lists(t.column("paths"), at, kk)[back]
        ps = _small_lists(t.column("path_scores"), at, kk)
        ps[np.equal(ps, None)] = _objects([[]])
        path_scores[uses] = ps[back]  # shared by the rows of one record and R, as their paths are
    column = t.column("paths").combine_chunks()
    own = (k == 0) & column.is_valid().to_numpy(zero_copy_only=False)
    mine = np.flatnonzero(own)  # a row with plans of its own (the K-best rows' K plans, method_paths): all of them
    if len(mine):
        paths[mine] = _path_lists(column, mine, np.full(len(mine), np.iinfo(np.int64).max))
        path_scores[mine] = _small_lists(t.column("path_scores"), mine)
    rest = np.flatnonzero((k == 0) & ~own)  # no paths: one empty list shared by the rows (the table is read-only)
    paths[rest], path_scores[rest] = _objects([[]]), _objects([[]])
    made = {"truth": truth_first[owner], "plan": plan, "endpoints": endpoints, "endpoint_scores": scores, "paths": paths,
            "path_scores": path_scores}
    df = pd.DataFrame({c: made[c] if c in made else out[c] for c in FRAME_COLUMNS}, copy=False)  # put together once
    df.attrs["actions"] = (cols.min_action, cols.max_action)  # the ids named: checked against a dataset's
    df.attrs[PLANS] = FramePlans(horizon, made["plan"], made["truth"], arrays)  # the arrays travel with the table
    return df



# The keys of a record that name its steps: (ids, their names), as kepp eval --records writes them.
_NAMED = (("gt", "gt_labels"), ("endpoints", "endpoint_labels"))


def recorded_step_names(files: Iterable[str | Path]) -> dict[int, str]:
    """Action id -> the name the records ``files`` give it (``gt_labels``, ``endpoint_labels``: where a record has
    as many names as ids), the first name each id has; only those keys are parsed (pyarrow, as columns). Files
    the store reads (checked there first: call after :func:`read_columns`)."""
    import pandas as pd

    schema = pa.schema([(k, pa.list_(pa.int64())) for k, _ in _NAMED] + [(n, pa.list_(pa.large_string())) for _, n in _NAMED])
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=False)
    pairs = []
    for f in files:
        f = Path(f)
        try:
            t = (pq.read_table(f, columns=[c for c in schema.names if c in pq.read_schema(f).names])
                 if f.suffix.lower() == ".parquet" else pj.read_json(f, read_options=pj.ReadOptions(block_size=32 << 20),
                                                                      parse_options=parse))
        except (pa.ArrowInvalid, OSError, TypeError):
            continue  # names it cannot read here: the ids name the steps
        for ids, names in _NAMED:
            if ids not in t.column_names or names not in t.column_names:
                continue
            a, b = t.column(ids).combine_chunks(), t.column(names).combine_chunks()
            same = pc.fill_null(pc.equal(pc.list_value_length(a), pc.list_value_length(b)), False)
            a, b = a.filter(same), b.filter(same)
            pairs.append(pd.DataFrame({"id": pc.list_flatten(a).to_numpy(zero_copy_only=False),
                                       "name": pc.list_flatten(b).to_numpy(zero_copy_only=False)}))
    if not pairs:
        return {}
    found = pd.concat(pairs).dropna().drop_duplicates("id")
    return {int(i): str(n) for i, n in zip(found["id"], found["name"]) if str(n).strip()}
