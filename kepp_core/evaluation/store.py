"""The records store: per-episode records (:mod:`kepp_core.evaluation.records`) as columns, read and
judged once per file version and cached.

JSONL and Parquet stay the formats records are written and exchanged in. A records file read here
is validated once, flattened to one row per (record, method) and judged (success and failure
patterns), and the result is kept as an Arrow IPC file in the cache home's ``records`` folder (:func:`kepp_core.paths.cache_folder`), never beside the user's files. Its
name is the file's content: its size and a BLAKE2 hash of its bytes (a file rewritten with the same
size and time is read again). A later read opens that file memory-mapped: no parsing, no judging.

Reading a JSONL file cold takes the fast way when it can prove the file valid: one
``pyarrow.json.read_json`` of the bytes, checked as columns (key types, plan lengths, ASCII text,
one object per line, no line past :data:`kepp_core.io.MAX_LINE_BYTES`, finite numbers). Anything
it cannot prove (a bad line, an odd type, an older format, Parquet) is read record by record
(:func:`kepp_core.evaluation.records.read_records` and :func:`_record_rows`), which gives the one-line
error of the first bad record, the same error as ever; both ways give the same rows (tested). A folder's
(or a list's) files are read a few at once, one thread per core (:func:`_each`): parsing, judging and writing
the cache are pyarrow and numpy, which let the other threads run.

In memory the rows' plans and ground truths are fixed-width integer arrays, one ``[n, T]`` array per
horizon (:meth:`RecordsColumns.plans`); :func:`predictions_frame` hands the pandas table of
:func:`kepp_core.api.read_predictions` out of them (tuples where the table has always held tuples).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import os
import re
import time
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from kepp_core.catalog import PATTERNS
from kepp_core.errors import KeppError
from kepp_core.evaluation.failures import repeats_batch, stored_paths
from kepp_core.evaluation.records import OUTCOMES, read_records
from kepp_core.io import MAX_JSON_DIGITS, MAX_LINE_BYTES, atomic_path, ensure_folder, open_regular
from kepp_core.metrics import set_iou
from kepp_core.paths import cache_folder

__all__ = ["CACHE", "FRAME_COLUMNS", "PlanArrays", "ProtocolUnits", "RECORD_SUFFIXES", "RecordsColumns", "Skipped",
           "chained", "check_vocabulary", "file_version", "folder_records", "list_values", "predictions_frame",
           "protocol_units", "record_files", "records_columns", "records_in", "row_arrays"]

CACHE = "records"  # the cache home's folder of judged records (kepp_core.paths.CACHE_FOLDERS)
LAYOUT = 4  # the cached table's layout: part of each cache file's name, so a new layout never reads an old file
RECORD_SUFFIXES = (".jsonl", ".parquet")  # the files a folder of records is read from, whatever their names
# The predictions table's columns (kepp_core.api.analysis.RECORD_COLUMNS) and the judged values per row.
FRAME_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "fraction", "method", "truth", "plan",
                 "endpoints", "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                 "goal_time", "source", "imported"]
_SCALARS = ("episode", "task", "video", "setting", "seed", "fraction", "start_time", "goal_time")
_HASH_CHUNK = 8 * 2**20


# --- the file's version ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileVersion:
    """One version of a records file: its size, modification time and the hash of its bytes."""

    path: str
    size: int
    mtime_ns: int
    digest: str

    @property
    def key(self) -> str:
        """The cache file's name of this version (layout, size and content: never the path)."""
        return f"v{LAYOUT}-{self.size}-{self.digest}"


_versions: dict[tuple, FileVersion] = {}  # (path, stat) -> version: hashed once per process while unchanged


def _stat_key(path: str, st: os.stat_result) -> tuple:
    # ctime changes with every write and cannot be set back (os.utime sets it to now): with the size, inode and
    # mtime it tells a rewritten file from the one hashed, even one given back its size and mtime
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_version(path: str | Path, data: bytes | None = None) -> FileVersion:
    """The version of the records file ``path`` (``data``: its bytes, when already read). A file's hash is
    remembered in this process and, once the file has settled, in the cache home (:func:`_known_digest`): a later
    process asks the file's status, not its bytes, while it is unchanged."""
    path = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise KeppError(f"{path}: prediction records not found") from None
    key = _stat_key(path, st)
    if key in _versions:
        return _versions[key]
    digest = _known_digest(st, path) if data is None else None
    if digest is None:
        h = hashlib.blake2b(digest_size=16)
        if data is not None:
            h.update(data)
        else:
            with open_regular(path) as f:
                while chunk := f.read(_HASH_CHUNK):
                    h.update(chunk)
        digest = h.hexdigest()
        if data is None:  # bytes read before the status was asked: not remembered
            _remember_digest(st, path, digest)
    version = FileVersion(path, st.st_size, st.st_mtime_ns, digest)
    if len(_versions) > 4096:
        _versions.clear()
    _versions[key] = version
    return version


# A file whose status changed longer ago than this when it was hashed has its hash kept in the cache home: a write
# after the hash changes the status's change time (which no one can set back), a write within the file system's
# clock tick of the hash might not (git's "racy clean" files), so only settled files are remembered.
SETTLED_NS = 2_000_000_000
_DIGEST = re.compile(r"[0-9a-f]{32}")


def _status_file(st: os.stat_result, path: str) -> Path:
    """Where the hash of the file ``path`` with status ``st`` is kept: named by its absolute path, device, inode,
    size, modification and change times."""
    name = "\0".join(map(str, (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)))
    return cache_folder(CACHE) / "hashes" / hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def _known_digest(st: os.stat_result, path: str) -> str | None:
    """The hash kept for the file ``path`` with status ``st``, or None."""
    try:
        digest = _status_file(st, path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError, KeppError):
        return None
    return digest if _DIGEST.fullmatch(digest) else None  # a kept hash names a cache file: nothing else is taken


def _remember_digest(st: os.stat_result, path: str, digest: str) -> None:
    """Keep the hash of the file ``path`` (status ``st``, read since) when it had settled and is unchanged."""
    if time.time_ns() - max(st.st_ctime_ns, st.st_mtime_ns) < SETTLED_NS:
        return
    try:
        if _stat_key(path, os.stat(path)) != _stat_key(path, st):
            return  # written while it was read
        target = _status_file(st, path)
        ensure_folder(target.parent)
        with atomic_path(target) as tmp:  # renamed whole, not synced: a hash lost to a crash is only made again
            tmp.write_text(digest, encoding="ascii")
    except (OSError, KeppError):  # a cache home that cannot be written: hashed again next time
        return


# --- one file as judged columns ----------------------------------------------------------------------------------
def records_columns(path: str | Path) -> pa.Table:
    """The judged rows of one records file (one per record and method, in the records' order), read
    from the cache when this version of the file was read before, else validated, judged and
    cached. A bad file is the KeppError of :func:`kepp_core.evaluation.records.read_records` or of the
    record's checks (the same one-line errors as reading record by record)."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: prediction records not found")
    version = file_version(path)
    cached = cache_folder(CACHE) / f"{version.key}.arrow"
    if (cached, version.key) in _opened:
        return _opened[(cached, version.key)]
    table = None
    if cached.is_file():
        try:
            table = pa.ipc.open_file(pa.memory_map(str(cached))).read_all()
        except (pa.ArrowInvalid, OSError):  # a cache file cut short (a full disk): made again below
            table = None
    if table is None:
        table = judge(_read_rows(path))
        try:
            ensure_folder(cached.parent)
            with atomic_path(cached) as tmp, pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
            table = pa.ipc.open_file(pa.memory_map(str(cached))).read_all()
        except (KeppError, OSError):  # a cache home that cannot be written: read again next time
            return table
    if len(_opened) >= 1024:
        _opened.clear()
    _opened[(cached, version.key)] = table
    return table


# (cache file, version) -> its table, memory-mapped: a page's rerun that asks again opens nothing
_opened: dict[tuple[Path, str], pa.Table] = {}


def _read_rows(path: Path) -> pa.Table:
    """The rows of one file, not judged: the fast way when it proves the file valid, else record by record."""
    if path.suffix == ".jsonl":
        with open_regular(path) as f:
            data = f.read()
        file_version(path, data)
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
    return col


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
    for name in _SCALARS:
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
    # what a method that uses them takes of the record's endpoints, their scores and its own R graph paths: each
    # row's record, or none (a null place: a null value) for the methods that use none
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
    return pa.table({**rows, **recorded})


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
    cols: dict[str, list] = {c: [] for c in ("record", "k", *_SCALARS, "horizon", "method", "imported", "truth",
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
        used = ends if k else None
        cols["k"].append(k)
        cols["method"].append(method)
        cols["imported"].append(imported.get(method))
        for o in OUTCOMES:
            cols[f"recorded_{o}"].append(_number(outcomes[o].get(method)))
        cols["plan"].append(plan)
        cols["endpoints"].append(used)
        cols["endpoint_scores"].append(scores if used is not None else None)
        cols["paths"].append([tuple(p) for p in paths[:k]] if k else None)
        cols["path_scores"].append(path_scores[:k] if k else None)


def _number(value) -> float | None:
    """A recorded outcome as a float (None: none, or not a number)."""
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None


# --- judging, one horizon at a time ---------------------------------------------------------------------------------
def list_values(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list column as its values (int64) and the first value's place of each row: row ``i``'s list is
    ``values[starts[i]:starts[i] + len_i]`` (no copy per row)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = arr.offsets.to_numpy()
    values = arr.values.to_numpy(zero_copy_only=False)
    return values.astype(np.int64, copy=False), offsets[:-1]


def row_arrays(column, rows: np.ndarray, width: int) -> np.ndarray:
    """The ``rows`` of a list column whose lists there all have ``width`` items, as an ``[n, width]`` int64 array
    (``column``: the column, or its :func:`list_values`).

    >>> col = pa.array([[1, 2], [3]] + [[k, k + 1] for k in range(200)])
    >>> row_arrays(col, np.arange(2, 202), 2)[[0, -1]].tolist()  # rows one after the other: a slice of the values
    [[0, 1], [199, 200]]
    >>> row_arrays(col, np.array([0, 5, 9]), 2).tolist()  # scattered rows: gathered
    [[1, 2], [3, 4], [7, 8]]
    """
    values, starts = column if isinstance(column, tuple) else list_values(column)
    at = starts[rows]
    # runs of rows stored one after the other (a file's records of one T): each run one slice of the values
    cuts = np.flatnonzero(np.diff(at) != width) + 1
    if len(rows) and len(cuts) < len(rows) // 64:
        runs = zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(rows)].tolist())
        return np.concatenate([values[at[a]:at[a] + (b - a) * width] for a, b in runs]).reshape(len(rows), width)
    return values[at[:, None] + np.arange(width)]


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


# --- several files as one table -------------------------------------------------------------------------------------
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
    for n, (f, t) in enumerate(zip(files, _each(records_columns, files))):
        meta = t.schema.metadata or {}
        low, top = min(low, int(meta.get(b"min_action", b"0"))), max(top, int(meta.get(b"max_action", b"-1")))
        t = t.append_column("source", pa.repeat(pa.scalar(Path(f).name, pa.large_string()), t.num_rows))
        tables.append(t.append_column("file", pa.array(np.full(t.num_rows, n, dtype=np.int64))))
    if not tables:
        return RecordsColumns(pa.table({c: pa.array([], pa.string()) for c in FRAME_COLUMNS}), 0, -1)
    return RecordsColumns(pa.concat_tables(tables, promote_options="permissive"), low, top)


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


def _predictions_frame(files: list):
    import pandas as pd

    cols = read_columns(files)
    t = cols.table
    n = t.num_rows
    if not files or n == 0:
        return pd.DataFrame({c: [] for c in FRAME_COLUMNS}, columns=FRAME_COLUMNS)
    out = t.select([*_SCALARS, "horizon", "method", "source", "imported", "success", "patterns", "pattern",
                    ]).to_pandas(deduplicate_objects=True)
    for c in out.columns:  # a column with no value at all is None in every row, as a table of Python values has it
        if t.column(c).null_count == n:
            out[c] = np.full(n, None, dtype=object)
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
    rest = np.flatnonzero(k == 0)  # no stored paths: one empty list shared by the rows (the table is read-only)
    paths[rest], path_scores[rest] = _objects([[]]), _objects([[]])
    made = {"truth": truth_first[owner], "plan": plan, "endpoints": endpoints, "endpoint_scores": scores, "paths": paths,
            "path_scores": path_scores}
    df = pd.DataFrame({c: made[c] if c in made else out[c] for c in FRAME_COLUMNS}, copy=False)  # put together once
    df.attrs["actions"] = (cols.min_action, cols.max_action)  # the ids named: checked against a dataset's
    _remember_arrays(df, horizon, made["plan"], made["truth"], arrays)
    return df


def _small_lists(column, rows: np.ndarray, keep: np.ndarray | None = None, as_tuple: bool = False) -> np.ndarray:
    """The ``rows`` of a list column (each cut to its ``keep`` items) as lists (or tuples) in an object array,
    None where a row has none: made a length at a time from columns (zipped in C), not value by value."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    out = np.full(len(rows), None, dtype=object)
    if arr.type == pa.null():
        return out
    valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
    offsets = arr.offsets.to_numpy()
    values = arr.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)[rows]
    if keep is not None:
        lengths = np.minimum(lengths, keep)
    make = tuple if as_tuple else list
    for length in np.unique(lengths[valid]):
        sel = np.flatnonzero(valid & (lengths == length))
        a = values[offsets[rows[sel]][:, None] + np.arange(length)]
        made = map(make, zip(*a.T.tolist())) if length else (make() for _ in sel)
        out[sel] = np.fromiter(made, dtype=object, count=len(sel))
    return out


def _path_lists(column, rows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The first ``keep`` graph paths of each of ``rows`` (a list column of paths) as lists of tuples."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.type == pa.null():
        return np.fromiter(([] for _ in rows), dtype=object, count=len(rows))
    valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
    offsets = arr.offsets.to_numpy()
    count = np.where(valid, np.minimum(np.diff(offsets)[rows], keep), 0)
    begin = np.concatenate(([0], np.cumsum(count)[:-1]))
    owner = np.repeat(np.arange(len(rows)), count)
    which = offsets[rows][owner] + np.arange(int(count.sum())) - begin[owner]  # every path kept, in order
    each = _small_lists(arr.values, which, as_tuple=True)
    out = np.empty(len(rows), dtype=object)
    for m in np.unique(count):
        sel = np.flatnonzero(count == m)
        made = map(list, zip(*(each[begin[sel] + q] for q in range(m)))) if m else ([] for _ in sel)
        out[sel] = np.fromiter(made, dtype=object, count=len(sel))
    return out


def _objects(values: Iterable) -> np.ndarray:
    """``values`` as a 1-D object array (lists stay lists: never read as a second axis)."""
    return np.fromiter(values, dtype=object)


def _tuples(a: np.ndarray) -> np.ndarray:
    """The rows of an ``[n, T]`` array as tuples of ints (an object array): zipped from its columns, in C."""
    return np.fromiter(zip(*a.T.tolist()), dtype=object, count=len(a))


class PlanArrays:
    """The plans and ground truths of a predictions table (:func:`predictions_frame`'s tuples) as ``[n, T]`` int64
    arrays, made once per horizon (the tuples' values chained in C) and cut for any rows of one T (:meth:`of`):
    what the metric tables, slices and comparisons count on, never a plan at a time.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"horizon": [3, 3], "plan": [(1, 2, 3), (1, 5, 3)], "truth": [(1, 2, 3), (1, 2, 3)]})
    >>> PlanArrays(rows).of(np.array([1]))[0].tolist()
    [[1, 5, 3]]
    """

    def __init__(self, preds):
        self.preds = preds
        self.horizon = preds["horizon"].to_numpy()
        self.made: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = _known_arrays(preds, self.horizon)

    def _horizon(self, T: int):
        if T not in self.made:
            rows = np.flatnonzero(self.horizon == T)
            arrays = [chained(self.preds[c].to_numpy()[rows]) for c in ("plan", "truth")]
            self.made[T] = (rows, *arrays) if all(a.ndim == 2 for a in arrays) else None
        return self.made[T]

    def of(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plans and ground truths of rows ``idx`` (positions, in that order): ``[n, T]`` arrays where the
        rows are of one T and their plans as long, else object arrays of them (the metrics name the first odd one)."""
        idx = np.asarray(idx, dtype=np.int64)
        made = self._horizon(int(self.horizon[idx[0]])) if len(idx) else None
        if made is None or not (self.horizon[idx] == self.horizon[idx[0]]).all():
            return tuple(chained(self.preds[c].to_numpy()[idx]) for c in ("plan", "truth"))
        rows, pred, gt = made
        at = np.searchsorted(rows, idx)
        return pred[at], gt[at]

    def set_iou(self, idx: np.ndarray) -> np.ndarray:
        """The set IoU of each of rows ``idx`` (:func:`kepp_core.metrics.set_iou`), counted once per horizon of the
        table where the rows are of one T."""
        idx = np.asarray(idx, dtype=np.int64)
        T = int(self.horizon[idx[0]]) if len(idx) else None
        made = self._horizon(T) if T is not None else None
        if made is None or not (self.horizon[idx] == T).all():
            return set_iou(*self.of(idx))
        if ("iou", T) not in self.made:
            self.made[("iou", T)] = set_iou(made[1], made[2])
        return self.made[("iou", T)][np.searchsorted(made[0], idx)]


# id of a predictions table -> (its horizons, plans and truths as they were, the arrays made of them per horizon): a
# table's arrays are made once (by predictions_frame, from the store's columns) and shared by every table and slice
# of it while its plans and truths are, value for value, the ones they were made of (checked each time: a compare of
# the tuples, a tenth of making the arrays again); forgotten with the table.
_ARRAYS: dict[int, tuple] = {}


def _known_arrays(preds, horizon: np.ndarray) -> dict:
    """The per-horizon arrays already made of the table ``preds`` (shared: a new horizon made is kept too), or a new
    dict kept for it."""
    entry = _ARRAYS.get(id(preds))
    if entry is not None:
        seen_h, seen_plan, seen_truth, made = entry
        try:
            if (len(seen_h) == len(horizon) and np.array_equal(seen_h, horizon)
                    and bool((preds["plan"].to_numpy() == seen_plan).all())
                    and bool((preds["truth"].to_numpy() == seen_truth).all())):
                return made
        except (ValueError, TypeError):  # a plan that is no longer a tuple: made again
            pass
    made: dict = {}
    _remember_arrays(preds, horizon, preds["plan"].to_numpy(), preds["truth"].to_numpy(), made)
    return made


def _remember_arrays(preds, horizon: np.ndarray, plan: np.ndarray, truth: np.ndarray, made: dict) -> None:
    key = id(preds)
    _ARRAYS[key] = (np.array(horizon, copy=True), np.array(plan, dtype=object, copy=True),
                    np.array(truth, dtype=object, copy=True), made)
    weakref.finalize(preds, _ARRAYS.pop, key, None)


def chained(col: np.ndarray) -> np.ndarray:
    """An object array of plans (tuples) of one length as an ``[n, T]`` int64 array (their values chained in C), or
    an object array of them when their lengths differ."""
    width = len(col[0]) if len(col) else 0
    if len(col) and (np.fromiter(map(len, col), dtype=np.int64, count=len(col)) != width).any():
        return np.array(list(col), dtype=object)  # plans of several lengths
    try:
        return np.fromiter(itertools.chain.from_iterable(col), dtype=np.int64,
                           count=len(col) * width).reshape(len(col), width)
    except (ValueError, TypeError):  # not whole numbers
        return np.array(list(col), dtype=object)


# --- a protocol's records as units ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProtocolUnits:
    """A protocol's records file (``kepp protocol``'s ``records.jsonl``) as the units of its paired tests, read
    from the records store: per ``(fraction, T)`` the ``seed`` and ``episode`` of every unit (a record) and, per
    method with plans, its recorded ``success`` and ``acc`` (NaN where a unit has none): what
    :meth:`kepp_core.evaluation.records.Records.units` gives for the same records, made from columns."""

    path: str
    groups: dict

    def units(self) -> dict[tuple[float, int], dict]:
        return self.groups

    def methods(self, fraction: float, horizon: int) -> list[str]:
        """The methods recorded at ``(fraction, T)``."""
        g = self.groups.get((float(fraction), int(horizon)))
        return sorted(g["success"]) if g else []


def protocol_units(path: str | Path) -> ProtocolUnits:
    """The paired-test units of the protocol records file ``path`` (:class:`ProtocolUnits`); KeppError unless every
    record names its fraction and seed (a protocol's records), as :meth:`~kepp_core.evaluation.records.Records.units`."""
    t = records_columns(path)
    if not t.num_rows:
        return ProtocolUnits(str(path), {})
    record = t.column("record").to_numpy()
    missing = t.column("fraction").is_null().to_numpy(zero_copy_only=False) | \
        t.column("seed").is_null().to_numpy(zero_copy_only=False)
    if missing.any() or t.column("fraction").type not in (pa.float64(), pa.int64()) or \
            t.column("seed").type != pa.int64():
        n = int(record[np.flatnonzero(missing)[0]]) + 1 if missing.any() else 1
        raise KeppError(f"{path}: record {n}: expected a protocol record (fraction, T, seed, episode, success, acc)")
    fraction = t.column("fraction").to_numpy().astype(np.float64)
    horizon, seed = t.column("horizon").to_numpy(), t.column("seed").to_numpy()
    method_codes, names = _codes(t.column("method"))
    outcomes = {o: t.column(f"recorded_{o}").to_numpy(zero_copy_only=False).astype(np.float64) for o in OUTCOMES}
    episode = t.column("episode")
    groups = {}
    keys = np.stack([fraction, horizon.astype(np.float64)], axis=1)
    for f, h in sorted({(float(a), int(b)) for a, b in np.unique(keys, axis=0)}):
        rows = np.flatnonzero((fraction == f) & (horizon == h))
        firsts, unit = np.unique(record[rows], return_index=True, return_inverse=True)[1:]
        unit = unit.ravel()
        g = {"seed": seed[rows[firsts]], "episode": [str(e) for e in episode.take(pa.array(rows[firsts])).to_pylist()]}
        for o in OUTCOMES:
            g[o] = {}
            for code in np.unique(method_codes[rows]):
                mine = method_codes[rows] == code
                values = np.full(len(firsts), np.nan)
                values[unit[mine]] = outcomes[o][rows[mine]]
                if not np.isnan(values).all():
                    g[o][names[code]] = values
        groups[(f, h)] = g
    return ProtocolUnits(str(path), groups)


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """A string column's codes (one per row) and the values they stand for."""
    codes = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
    return codes.indices.to_numpy(zero_copy_only=False).astype(np.int64), codes.dictionary.to_pylist()


# --- folders and vocabularies ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Skipped:
    """A file of a records folder that is not records, and why (one line)."""

    path: Path
    why: str

    def line(self) -> str:
        return f"{self.path}: skipped: {self.why}"


def folder_records(folder: str | Path) -> tuple[list[Path], list[Skipped]]:
    """Every ``.jsonl`` / ``.parquet`` file under ``folder`` (any name) that reads as records, and those that
    do not, each with why (the reader's one-line error). Reading a file once here caches it
    (:func:`records_columns`), so reading it again is a memory map."""
    files, skipped = [], []
    found = sorted(p for p in Path(folder).rglob("*") if p.suffix in RECORD_SUFFIXES and p.is_file())
    for q, why in zip(found, _each(_refusal, found)):
        if why:
            skipped.append(Skipped(q, why))
        else:
            files.append(q)
    return files, skipped


def _refusal(path: Path) -> str | None:
    """Why the file ``path`` is not records (one line), or None when it is (then it is cached)."""
    try:
        version = file_version(path)
        why = _refused.get(version.key)
        if why is None:
            try:
                records_columns(path)
            except KeppError as e:
                text = str(e)
                if text.startswith(str(path)):  # "FILE:LINE: why" -> "line LINE: why"
                    text = re.sub(r"^:(\d+): ", r"line \1: ", text[len(str(path)):]).lstrip(": ")
                why = _refused[version.key] = text
    except KeppError as e:  # a file that went away or cannot be read
        why = str(e)
    return why


def _each(fn, files: Sequence) -> list:
    """``fn`` of each of ``files``, in order, several files at once: reading, judging and caching a file is
    mostly pyarrow and numpy, which let other threads run, so a folder read cold uses every core, not one. An
    exception is raised as calling ``fn`` on the files in order would raise it (the first failing file's)."""
    workers = min(len(files), _cores())
    if workers < 2:
        return [fn(f) for f in files]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, files))


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def records_in(path: str | Path) -> tuple[list[Path], list[Skipped]]:
    """The records files ``path`` names and the files skipped: the file itself, or in a folder (and its
    sub-folders) every file that reads as records, whatever its name (:func:`folder_records`), as the app reads
    a folder. A missing path, or a folder where no file reads as records, is a KeppError naming it."""
    path = Path(path)
    if not path.exists():
        raise KeppError(f"{path}: prediction records not found (expected a records file or a folder of them)")
    if not path.is_dir():
        return [path], []
    files, skipped = folder_records(path)
    if not files:
        raise KeppError(f"{path}: a folder without records (expected .jsonl or .parquet records files, as "
                        "'kepp eval --records', 'kepp protocol' and 'kepp records import' write them)"
                        + (f"; {len(skipped)} file(s) skipped, the first {skipped[0].line()}" if skipped else ""))
    return files, skipped


def record_files(path: str | Path) -> list[Path]:
    """The records files ``path`` names (:func:`records_in`), without the skipped ones."""
    return records_in(path)[0]


_refused: dict[str, str] = {}  # file version -> why it is not records: a folder read again does not parse it again


def check_vocabulary(preds, actions: Sequence[str], dataset: str) -> None:
    """KeppError unless every action id of the predictions table ``preds`` (read by :func:`predictions_frame`)
    is one of the dataset's ``actions``: records of another dataset opened with this one."""
    low, top = preds.attrs.get("actions", (0, -1)) if preds is not None else (0, -1)
    if low < 0 or top >= len(actions):
        raise KeppError(f"the records name action id {low if low < 0 else top}, but the dataset {dataset!r} has {len(actions)} actions "
                        f"(ids 0–{len(actions) - 1}): these records are not of this dataset (open them with the "
                        f"dataset they were evaluated on)")
