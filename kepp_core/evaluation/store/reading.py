"""Reading a records file as rows, not judged: one row per (record, method), in the records' order.

Reading a JSONL file takes the fast way when it can prove the file valid: one ``pyarrow.json.read_json`` of the
bytes, checked as columns (key types, plan lengths, ASCII text, one object per line, no line past
:data:`kepp_core.io.MAX_LINE_BYTES`, finite numbers). Anything it cannot prove (a bad line, an odd type, an older
format, Parquet) is read record by record (:func:`kepp_core.evaluation.records.read_records` and
:func:`_record_rows`), which gives the one-line error of the first bad record, the same error as ever; both ways
give the same rows (tested)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.errors import KeppError
from kepp_core.evaluation.failures import stored_paths
from kepp_core.evaluation.records import OUTCOMES, read_records
from kepp_core.io import MAX_JSON_DIGITS, MAX_LINE_BYTES, has_suffix, open_regular

__all__ = ["read_rows"]

SCALARS = ("episode", "task", "video", "setting", "seed", "fraction", "start_time", "goal_time")  # one per record


def read_rows(path: Path, data: bytes | None = None) -> pa.Table:
    """The rows of one file, not judged (``data``: a JSONL file's bytes, when already read): the fast way when it
    proves the file valid, else record by record."""
    if has_suffix(path, ".jsonl"):
        if data is None:
            with open_regular(path) as f:
                data = f.read()
        fast = _fast_rows(data)
        if fast is not None:
            return fast
    return _exact_rows(path)


# --- the fast way: pyarrow's JSON reader, the checks as columns ---------------------------------------------------
_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % (MAX_JSON_DIGITS + 1))


def _fast_columns(data: bytes) -> dict[str, pa.Array] | None:
    """A JSONL file's bytes parsed by pyarrow as columns, each of a type the records format allows, or None when
    the bytes or a column are anything the record-by-record reader might refuse or read otherwise."""
    if not data or not data.isascii() or not data.endswith(b"}\n"):
        return None  # non-ASCII text (a BOM, invalid UTF-8) and odd endings: the exact reader
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    if (ends - starts + 1).max() > MAX_LINE_BYTES or (buf[starts] != ord("{")).any() or (buf[ends - 1] != ord("}")).any():
        return None  # every line one object, none too long, no blank lines
    if not _shallow(data, ends - starts + 1):
        return None  # a line that may nest deeper than pyarrow's parser follows (it crashes the process)
    try:
        t = pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(block_size=max(2 * MAX_LINE_BYTES, 1 << 20)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    if t.num_rows != len(ends) or not _plain(t.schema):
        return None
    big = _largest(t)
    if big is None or (big >= 1e99 and _LONG_NUMBER.search(data)):
        return None  # NaN, Infinity or integers past MAX_JSON_DIGITS digits (read as floats here): the exact reader
    names = set(t.column_names)
    if not {"episode", "gt", "plans"} <= names:
        return None
    col = {n: t.column(n).combine_chunks() for n in t.column_names}
    gt, plans, episode = col["gt"], col["plans"], col["episode"]
    if (gt.null_count or plans.null_count or episode.null_count or gt.type != pa.list_(pa.int64())
            or episode.type != pa.string() or not pa.types.is_struct(plans.type) or plans.type.num_fields == 0):
        return None
    gt_len = pc.list_value_length(gt).to_numpy(zero_copy_only=False)
    if (gt_len == 0).any():
        return None
    for name, kinds in (("T", (pa.int64(),)), ("task", (pa.string(),)), ("video", (pa.string(),)),
                        ("setting", (pa.string(),)), ("seed", (pa.int64(),)), ("fraction", (pa.int64(), pa.float64())),
                        ("start_time", (pa.int64(), pa.float64())), ("goal_time", (pa.int64(), pa.float64()))):
        if name in col and col[name].type not in (*kinds, pa.null()):
            return None
    ends_col = col.get("endpoints")
    if ends_col is not None and ends_col.type != pa.null():
        if ends_col.type != pa.list_(pa.int64()) or (pc.list_value_length(ends_col).fill_null(2).to_numpy() != 2).any():
            return None
    paths = col.get("paths")
    if paths is not None and paths.type != pa.null() and paths.type != pa.list_(pa.list_(pa.int64())):
        return None
    for name in ("endpoint_scores", "path_scores"):
        c = col.get(name)
        if c is not None and c.type not in (pa.null(), pa.list_(pa.float64()), pa.list_(pa.int64())):
            return None
    for name, kinds in (("method_paths", (pa.list_(pa.list_(pa.int64())),)),
                        ("method_path_scores", (pa.list_(pa.float64()), pa.list_(pa.int64())))):
        c = col.get(name)  # method -> its own plans (the K-best rows'), and their scores
        if c is not None and c.type != pa.null() and not (pa.types.is_struct(c.type) and all(
                c.type.field(i).type in (*kinds, pa.null()) for i in range(c.type.num_fields))):
            return None
    return col if _within_bounds(col) else None


# pyarrow's JSON parser follows nesting on the C stack: 50,000 levels in one line crash the process (a
# segmentation fault, tested at 10,000 levels without). A line of at most this many bytes cannot nest deeper;
# a longer one has its opening brackets counted, and more of them than this leave the file to the exact reader.
_SAFE_DEPTH = 4096
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{\n")


def _shallow(data: bytes, lengths: np.ndarray) -> bool:
    """Whether no line of ``data`` (JSON lines of these ``lengths``) can nest past :data:`_SAFE_DEPTH`: counted
    only where a line is longer than that, in one pass over the bytes."""
    if lengths.max() <= _SAFE_DEPTH:
        return True
    opening = np.frombuffer(data.translate(None, _NOT_OPENING), dtype=np.uint8)
    per_line = np.diff(np.r_[-1, np.flatnonzero(opening == 10)]) - 1
    return bool(per_line.max() <= _SAFE_DEPTH)


def _within_bounds(col: dict[str, pa.Array]) -> bool:
    """Whether the columns' values are within the bounds the record-by-record reader checks
    (:class:`kepp_core.evaluation.records._Checked`): times within a day, ids and names of at most 4,096
    characters, graph paths of at least one step."""
    for name in ("start_time", "goal_time"):
        c = col.get(name)
        if c is not None and c.type != pa.null() and c.null_count < len(c):
            low, high = pc.min_max(c).values()
            if max(abs(low.as_py()), abs(high.as_py())) > MAX_VIDEO_SECONDS:
                return False
    for name in ("episode", "task", "video", "setting"):
        c = col.get(name)
        if c is not None and c.type == pa.string() and len(c) and (pc.max(pc.utf8_length(c)).as_py() or 0) > 4096:
            return False
    own = col.get("method_paths")
    own = [own.field(i) for i in range(own.type.num_fields)] if own is not None and own.type != pa.null() else []
    for paths in (col.get("paths"), *own):
        if paths is not None and paths.type != pa.null():
            inner = pc.list_flatten(paths)
            if len(inner) and pc.min(pc.list_value_length(inner)).as_py() < 1:
                return False
    return True


def _fast_rows(data: bytes) -> pa.Table | None:
    """The rows of a JSONL file's bytes, or None when this way cannot prove them what the record-by-record
    reader would read without error (then that reader reads the file)."""
    col = _fast_columns(data)
    if col is None:
        return None
    gt, plans = col["gt"], col["plans"]
    n = len(gt)
    gt_len = pc.list_value_length(gt).to_numpy(zero_copy_only=False)
    horizon = gt_len.astype(np.int64)
    if "T" in col and col["T"].type == pa.int64():
        T = col["T"].fill_null(0).to_numpy()
        horizon = np.where(T != 0, T, gt_len)
    paths = col.get("paths")
    methods = [plans.type.field(i).name for i in range(plans.type.num_fields)]
    children = [plans.field(i) for i in range(len(methods))]
    if any(c.type != pa.list_(pa.int64()) for c in children):
        return None
    if any(c.null_count for c in children) and b"null" in data:
        return None  # a method's plan given as null (the exact reader refuses it) reads like an absent one here
    imported = col.get("imported")
    if imported is not None and not (pa.types.is_struct(imported.type) or imported.type == pa.null()):
        imported = None  # not a mapping: the exact reader ignores it too
    # the rows: (record, method) of every plan given, record by record, methods in the file's order
    present = np.stack([c.is_valid().to_numpy(zero_copy_only=False) for c in children], axis=1)
    rec_idx, meth_idx = np.nonzero(present)
    ks = np.array([stored_paths(m) for m in methods], dtype=np.int64)[meth_idx]
    pick = pa.array(meth_idx * n + rec_idx)  # each row's place in its methods' columns one after the other
    plan = pa.concat_arrays(children).take(pick)
    take = pa.array(rec_idx)
    truth = gt.take(take)
    if (pc.list_value_length(plan).to_numpy(zero_copy_only=False) != gt_len[rec_idx]).any():
        return None  # a plan of another length: the exact reader names its episode
    has_paths = np.zeros(n, dtype=bool)
    top_len = np.zeros(n, dtype=np.int64)
    if paths is not None and paths.type != pa.null():
        plen = pc.list_value_length(paths).fill_null(0).to_numpy()
        has_paths = plen > 0
        first = pc.list_element(pc.if_else(pa.array(has_paths), paths, pa.nulls(n, paths.type)), 0)
        top_len = pc.list_value_length(first).fill_null(0).to_numpy()
    if ((ks > 0) & has_paths[rec_idx] & (top_len[rec_idx] != gt_len[rec_idx])).any():
        return None  # a graph path of another length: the exact reader names its episode
    rows = {"record": pa.array(rec_idx, pa.int64()), "k": pa.array(ks, pa.int64())}
    for name in SCALARS:
        c = col.get(name)
        rows[name] = c.take(take) if c is not None else pa.nulls(len(rec_idx))
    rows["horizon"] = pa.array(horizon[rec_idx], pa.int64())
    rows["method"] = pa.array(np.array(methods, dtype=object)[meth_idx], pa.string())
    if "correct" in col:  # an older format's outcomes: the exact reader upgrades them
        return None
    per_row = lambda mapping, typ, kinds: _per_method(mapping, typ, kinds, methods, pick, n)  # noqa: E731
    rows["imported"] = per_row(imported, pa.string(), (pa.string(),))
    # what each record says of each method (the units of kepp protocol's paired tests): the table's last columns
    recorded = {f"recorded_{name}": per_row(col.get(name), pa.float64(), (pa.int64(), pa.float64(), pa.bool_(), pa.null()))
                for name in OUTCOMES}
    if any(c is None for c in recorded.values()):
        return None
    rows["truth"], rows["plan"] = truth, plan
    rows.update(_used_values(col, ks, rec_idx, n))
    own = _own_paths(col, per_row, ks, gt_len[rec_idx])
    if own is None:
        return None  # a plan of another length: the exact reader names its episode
    for name, values in own.items():  # a row's own plans where recorded, else the record's as above
        rows[name] = pc.if_else(pa.array(values.is_valid()), values, rows[name])
    return pa.table({**rows, **recorded})


def _used_values(col: dict[str, pa.Array], ks: np.ndarray, rec_idx: np.ndarray, n: int) -> dict[str, pa.Array]:
    """What a method that uses them takes of the record's endpoints, their scores and its own R graph paths
    (``ks``: each row's R; ``rec_idx``: its record of ``n``): each row's record, or none (a null place: a null
    value) for the methods that use none."""
    rows = {}
    rs = np.unique(ks[ks > 0])
    uses = pa.array(rec_idx, mask=ks == 0)
    for name, typ in (("endpoints", pa.list_(pa.int64())), ("endpoint_scores", pa.list_(pa.float64())),
                      ("paths", pa.list_(pa.list_(pa.int64()))), ("path_scores", pa.list_(pa.float64()))):
        c = col.get(name)
        c = pa.nulls(n, typ) if c is None or c.type == pa.null() else c.cast(typ)
        if name == "endpoint_scores":  # the step model's scores go with its endpoints (no endpoints: no scores)
            ends = col.get("endpoints")
            none = ks == 0
            if ends is not None and ends.type != pa.null():
                none |= ~ends.is_valid().to_numpy(zero_copy_only=False)[rec_idx]
            else:
                none[:] = True
            rows[name] = c.take(pa.array(rec_idx, mask=none))
        elif name in ("paths", "path_scores") and len(rs):  # the first R of them, R each row's method's
            place = np.searchsorted(rs, ks) * n + rec_idx
            rows[name] = pa.concat_arrays([pc.list_slice(c, 0, int(r)) for r in rs]).take(pa.array(place, mask=ks == 0))
        else:
            rows[name] = c.take(uses)
    return rows


def _own_paths(col: dict[str, pa.Array], per_row, ks: np.ndarray, horizon: np.ndarray) -> dict[str, pa.Array] | None:
    """The ``paths`` and ``path_scores`` of the rows that use no stored graph paths (``ks`` 0) but have plans of
    their own in ``method_paths`` (the K-best rows' K plans) and ``method_path_scores`` (valid on those rows:
    null on the others; ``{}``: none); None when one has a plan of another length than its row's ``horizon``."""
    if col.get("method_paths") is None or col["method_paths"].type == pa.null():
        return {}
    paths = per_row(col["method_paths"], pa.list_(pa.list_(pa.int64())), (pa.list_(pa.list_(pa.int64())), pa.null()))
    scores = per_row(col.get("method_path_scores"), pa.list_(pa.float64()),
                     (pa.list_(pa.float64()), pa.list_(pa.int64()), pa.null()))
    mine = paths.is_valid().to_numpy(zero_copy_only=False) & (ks == 0)
    if not mine.any():
        return {}
    counts = pc.list_value_length(paths).fill_null(0).to_numpy()
    first = pc.list_element(pc.if_else(pa.array(mine & (counts > 0)), paths, pa.nulls(len(ks), paths.type)), 0)
    if (mine & (counts > 0) & (pc.list_value_length(first).fill_null(0).to_numpy() != horizon)).any():
        return None
    empty = pa.ListArray.from_arrays(pa.array(np.zeros(len(ks) + 1, np.int32)), pa.array([], pa.float64()))  # no scores
    return {"paths": pc.if_else(pa.array(mine), paths, pa.nulls(len(ks), paths.type)),
            "path_scores": pc.if_else(pa.array(mine), pc.if_else(scores.is_valid(), scores, empty),
                                      pa.nulls(len(ks), scores.type))}


def _per_method(mapping, typ, kinds, methods: list[str], pick: pa.Array, n: int) -> pa.Array | None:
    """A column mapping methods to values (a struct of ``n`` records: ``imported``, ``success``, ``acc``) as each
    row's value of its method (null: none), of type ``typ`` (``pick``: each row's place in the methods' values one
    method after the other). A value not of ``kinds`` reads as none where ``typ`` is text; where it is a number,
    None: text where a number belongs, the exact reader decides."""
    fields = {mapping.type.field(i).name: i for i in range(mapping.type.num_fields)} \
        if mapping is not None and pa.types.is_struct(mapping.type) else {}
    parts = []
    for m, name in enumerate(methods):
        c = mapping.field(fields[name]) if name in fields else None
        if c is not None and c.type not in kinds:
            if typ != pa.string():
                return None
            c = None
        parts.append(pa.nulls(n, typ) if c is None else c.cast(typ))
    return pa.concat_arrays(parts).take(pick) if parts else pa.nulls(0, typ)


def _plain(schema: pa.Schema, depth: int = 6) -> bool:
    """Whether every column's type nests at most ``depth`` deep (deeper: the exact reader's limits decide)."""
    def deep(t: pa.DataType) -> int:
        if pa.types.is_struct(t):
            return 1 + max((deep(t.field(i).type) for i in range(t.num_fields)), default=0)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return 1 + deep(t.value_type)
        return 0
    return all(deep(f.type) <= depth for f in schema)


def _largest(t: pa.Table) -> float | None:
    """The largest magnitude of any floating-point value in the table (0 with none), None when one is NaN or infinite."""
    def leaves(arr):
        if pa.types.is_struct(arr.type):
            for i in range(arr.type.num_fields):
                yield from leaves(arr.field(i))
        elif pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            yield from leaves(pc.list_flatten(arr))
        elif pa.types.is_floating(arr.type):
            yield arr

    top = 0.0
    for name in t.column_names:
        for leaf in leaves(t.column(name).combine_chunks()):
            if len(leaf) - leaf.null_count:
                if not pc.all(pc.is_finite(leaf.drop_null())).as_py():
                    return None
                top = max(top, pc.max(pc.abs(leaf)).as_py())
    return top


# --- the exact way: record by record ------------------------------------------------------------------------------
def _exact_rows(path: Path) -> pa.Table:
    """The rows of one file read record by record (:func:`~kepp_core.evaluation.records.read_records`),
    with :func:`_record_rows`'s checks: the reference the fast way must equal."""
    cols: dict[str, list] = {c: [] for c in ("record", "k", *SCALARS, "horizon", "method", "imported", "truth",
                                             "plan", "endpoints", "endpoint_scores", "paths", "path_scores",
                                             *(f"recorded_{o}" for o in OUTCOMES))}
    for n, rec in enumerate(read_records(path)):
        try:
            _record_rows(rec, n, cols)
        except (TypeError, ValueError, AttributeError) as e:  # a plan of text, a method's plan given as null
            raise KeppError(f"{path}: record {n + 1} (episode {str(rec.get('episode'))[:80]!r}): a value of the wrong "
                            f"type ({str(e)[:120]}; expected plans and ground truth as lists of action ids)") from None
    out = {}
    for name, values in cols.items():
        try:
            out[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed types: kept as text
            out[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    for name, typ in (("truth", pa.list_(pa.int64())), ("plan", pa.list_(pa.int64())), ("endpoints", pa.list_(pa.int64())),
                      ("paths", pa.list_(pa.list_(pa.int64()))), ("path_scores", pa.list_(pa.float64())),
                      ("endpoint_scores", pa.list_(pa.float64())), ("method", pa.string()), ("imported", pa.string()),
                      ("horizon", pa.int64()), ("record", pa.int64()), ("k", pa.int64()),
                      *((f"recorded_{o}", pa.float64()) for o in OUTCOMES)):
        out[name] = out[name].cast(typ) if len(values) else pa.array([], typ)
    return pa.table(out)


def _record_rows(rec: dict, n: int, cols: dict[str, list]) -> None:
    """Append one record's rows (one per method) to ``cols``: what each method planned and the endpoints
    and graph paths it used (:func:`~kepp_core.evaluation.failures.stored_paths`); the same checks as
    :class:`~kepp_core.evaluation.failures.EpisodeOutcome`."""
    episode, truth, plans = rec["episode"], tuple(map(int, rec["gt"])), rec["plans"]
    if not truth:
        raise KeppError(f"episode {str(episode)!r}: empty ground-truth plan")
    ends = rec.get("endpoints")
    ends = tuple(map(int, ends)) if ends is not None else None
    paths, path_scores, scores = rec.get("paths") or [], rec.get("path_scores") or [], rec.get("endpoint_scores")
    imported = rec.get("imported") if isinstance(rec.get("imported"), dict) else {}
    own, own_scores = (rec.get(key) if isinstance(rec.get(key), dict) else {}
                       for key in ("method_paths", "method_path_scores"))  # the K-best rows' own plans
    outcomes = {o: rec.get(o) if isinstance(rec.get(o), dict) else {} for o in OUTCOMES}
    m = len(plans)
    for c, v in (("record", n), ("episode", episode), ("task", rec.get("task")), ("video", rec.get("video")),
                 ("horizon", int(rec.get("T") or len(rec["gt"]))), ("setting", rec.get("setting")),
                 ("seed", rec.get("seed")), ("fraction", rec.get("fraction")), ("start_time", rec.get("start_time")),
                 ("goal_time", rec.get("goal_time")), ("truth", truth)):
        cols[c].extend([v] * m)
    for method, plan in plans.items():
        plan = tuple(map(int, plan))
        if len(plan) != len(truth):
            raise KeppError(f"episode {str(episode)!r}: plan has {len(plan)} steps, ground truth has {len(truth)}")
        k = stored_paths(method)
        if k and paths and len(paths[0]) != len(truth):
            raise KeppError(f"episode {str(episode)!r}: top graph path has {len(paths[0])} steps, "
                            f"expected {len(truth)}")
        mine = own.get(method) if not k else None
        if mine and len(mine[0]) != len(truth):
            raise KeppError(f"episode {str(episode)!r}: {method}'s first recorded plan has {len(mine[0])} steps, "
                            f"expected {len(truth)}")
        used = ends if k else None
        cols["k"].append(k)
        cols["method"].append(method)
        cols["imported"].append(imported.get(method))
        for o in OUTCOMES:
            cols[f"recorded_{o}"].append(_number(outcomes[o].get(method)))
        cols["plan"].append(plan)
        cols["endpoints"].append(used)
        cols["endpoint_scores"].append(scores if used is not None else None)
        if mine is not None:  # its own plans (method_paths), not the record's
            cols["paths"].append([tuple(p) for p in mine])
            cols["path_scores"].append(own_scores.get(method) or [])
        else:
            cols["paths"].append([tuple(p) for p in paths[:k]] if k else None)
            cols["path_scores"].append(path_scores[:k] if k else None)


def _number(value) -> float | None:
    """A recorded outcome as a float (None: none, or not a number)."""
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None


