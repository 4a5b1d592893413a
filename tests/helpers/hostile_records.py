"""Hostile prediction records for the reliability tests: JSON lines that bend the format (long lines, deep nesting,
keys twice, NaN, integers past 64 bits, mixed types, a BOM, CRLF, bytes that are not UTF-8), Parquet files that
lie (another schema, nested columns, decompression bombs, footers that lie, many row groups) and folders that
trap a walker (symlink loops, FIFOs, files that cannot be opened, 10,000 files)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

GOOD = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "gt": [0, 1, 2],
        "plans": {"m": [0, 1, 2], "other": [0, 2, 2]}}


def record(k: int = 0, **changed) -> dict:
    """A valid record (episode ``k``), with ``changed`` keys set."""
    return {**GOOD, "episode": f"t/v{k}/0:3", "video": f"v{k}", **changed}


def line(k: int = 0, **changed) -> bytes:
    """One JSON line of :func:`record`."""
    return json.dumps(record(k, **changed)).encode() + b"\n"


def good_lines(n: int = 3) -> bytes:
    """``n`` valid JSON lines."""
    return b"".join(line(k) for k in range(n))


def with_raw(k: int, key: str, raw: str) -> bytes:
    """A JSON line of :func:`record` whose ``key`` holds the JSON text ``raw`` as it is (NaN, huge numbers)."""
    rec = {key2: v for key2, v in record(k).items() if key2 != key}
    return json.dumps(rec)[:-1].encode() + f', "{key}": {raw}}}\n'.encode()


def write(path: Path, data: bytes) -> Path:
    """``data`` written to ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def parquet_of(path: Path, table) -> Path:
    """The Arrow ``table`` written as Parquet to ``path``."""
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    return path


def flat_table(n: int = 3):
    """Records as the package writes them to Parquet: nested values as JSON text."""
    import pyarrow as pa

    recs = [record(k) for k in range(n)]
    return pa.table({k: [json.dumps(r[k]) if isinstance(r[k], (dict, list)) else r[k] for r in recs] for k in recs[0]})


def dictionary_bomb(path: Path, value_bytes: int = 2**20, rows: int = 4096) -> Path:
    """A Parquet file of ``rows`` records whose ``task`` is one ``value_bytes`` string, dictionary-encoded: a few KiB
    on disk, ``rows * value_bytes`` once its strings are made (4 GiB by default)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = [record(k) for k in range(rows)]
    cols = {k: [json.dumps(r[k]) if isinstance(r[k], (dict, list)) else r[k] for r in recs] for k in recs[0]}
    t = pa.table({**cols, "task": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)),
                                                                   pa.array(["x" * value_bytes]))})
    pq.write_table(t, path, compression="zstd")
    return path


def plain_bomb(path: Path, batches: int = 96, rows: int = 8, value_bytes: int = 2**21) -> Path:
    """A Parquet file whose ``notes`` column holds ``batches * rows`` strings of ``value_bytes`` bytes, not
    dictionary-encoded, zstd-compressed: tiny on disk, its metadata says what it inflates to (1.5 GiB by default);
    written a row group at a time, so making it takes a row group's memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    notes = pa.array(["y" * value_bytes] * rows)
    writer = None
    for b in range(batches):
        t = flat_table(rows).append_column("notes", notes)
        if writer is None:
            writer = pq.ParquetWriter(path, t.schema, compression="zstd", use_dictionary=False)
        writer.write_table(t)
    writer.close()
    return path


def many_row_groups(path: Path, groups: int) -> Path:
    """A valid records Parquet file of ``groups`` records, one row group each."""
    import pyarrow.parquet as pq

    pq.write_table(flat_table(groups), path, row_group_size=1)
    return path


def footer_length(path: Path, length: int) -> Path:
    """The Parquet file ``path`` with its footer's length field set to ``length`` (the footer lies)."""
    data = bytearray(path.read_bytes())
    data[-8:-4] = struct.pack("<I", length)
    path.write_bytes(bytes(data))
    return path


def footer_scrambled(path: Path) -> Path:
    """The Parquet file ``path`` with the bytes of its footer's first half inverted (a footer that is no thrift)."""
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - length
    for i in range(start, start + length // 2):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def fifo(path: Path) -> Path:
    """A FIFO at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path
