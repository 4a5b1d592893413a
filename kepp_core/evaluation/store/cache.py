"""The store's cache: a records file's judged table kept as an Arrow IPC file in the cache home's ``records``
folder (:func:`kepp_core.paths.cache_folder`), never beside the user's files, named by the file's version (layout,
size and content: a file rewritten with the same size and time is read again). A later read opens that file
memory-mapped: no parsing, no judging.

A cached table proves what it is before it is used (git's index checks stat data and content hashes the same way):

- it carries the identity of its source in its schema's metadata (:class:`Identity`: the source's size, the hash of
  its bytes, a probe of its bytes, the layout version and the table's schema), checked against the file being read;
- its bytes end in a checksum of everything before it (:data:`TRAILER`), checked before Arrow reads a byte of it;
- it is opened as a regular file only, without following a link or blocking, and only up to a size its source
  allows (:func:`home_fd`).

Anything else (another file's table, another schema, changed bytes, a link, a FIFO, a device, a folder, an
oversized entry) is said once on stderr and the table is made again from the records file: never a traceback,
never another file's numbers. Anyone who can write the cache home can write a table that passes these checks: the
cache home is the user's own (``$KEPP_HOME``), as trusted as their records files; the checks catch files copied,
linked, cut short or changed by mistake, not a forger."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from kepp_core.errors import KeppError
from kepp_core.evaluation.store.judging import judge
from kepp_core.evaluation.store.reading import read_rows
from kepp_core.evaluation.store.sources import held
from kepp_core.evaluation.store.version import (CACHE, LAYOUT, FileVersion, home_fd, known_version, probe_of, proved,
                                                said, version_of_bytes)
from kepp_core.io import atomic_path, ensure_folder, has_suffix, open_regular
from kepp_core.paths import cache_folder

__all__ = ["Identity", "records_columns"]

TRAILER = b"KEPPSUM1"  # then 16 bytes: the checksum of every byte before them (:func:`checksum`)
_TRAILER_SIZE = len(TRAILER) + 16
_META = b"kepp.source"  # the schema metadata's key of the table's Identity
# the columns the store's readers take, with their types: a table without them is not the store's
REQUIRED = {"record": pa.int64(), "k": pa.int64(), "horizon": pa.int64(), "episode": pa.large_string(),
            "method": pa.large_string(), "imported": pa.large_string(), "truth": pa.list_(pa.int64()),
            "plan": pa.list_(pa.int64()), "endpoints": pa.list_(pa.int64()), "endpoint_scores": pa.list_(pa.float64()),
            "paths": pa.list_(pa.list_(pa.int64())), "path_scores": pa.list_(pa.float64()), "success": pa.bool_(),
            "patterns": pa.large_string(), "pattern": pa.large_string(), "recorded_success": pa.float64(),
            "recorded_acc": pa.float64()}


@dataclass(frozen=True, kw_only=True)
class Identity:
    """What a cached table says of its source: the records file's ``size``, the hash of its bytes (``digest``), a
    hash of some of its bytes at fixed places (``probe``: :func:`~kepp_core.evaluation.store.version.probe_of`),
    the store's ``layout`` and the hash of the table's own schema (``schema``)."""

    size: int
    digest: str
    probe: str
    layout: int
    schema: str

    def text(self) -> bytes:
        """As the schema metadata holds it."""
        return json.dumps(asdict(self), sort_keys=True).encode("ascii")


def schema_hash(schema: pa.Schema) -> str:
    """The hash of a table's schema without its metadata (names, types, nesting)."""
    return hashlib.blake2b(schema.remove_metadata().serialize().to_pybytes(), digest_size=16).hexdigest()


# 2**17 fixed odd weights: each word's place in a block of them counts in the checksum, not only its value
_WEIGHTS = np.random.default_rng(55).integers(1, 2**62, size=2**17, dtype=np.uint64) | np.uint64(1)


def checksum(data) -> bytes:
    """A 16-byte checksum of ``data`` (bytes or a buffer) at numpy's speed: the sum of its 64-bit words, their sum
    weighted by place within each block of :data:`_WEIGHTS` and each block's sum weighted by the block's number
    (all modulo 2**64), with the last bytes and the length. Any changed word, swapped words or cut bytes change it.

    >>> checksum(b"12345678" * 3) == checksum(b"12345678" * 3), checksum(b"a" * 16) == checksum(b"a" * 15 + b"b")
    (True, False)
    """
    view = memoryview(data).cast("B")
    n = len(view) // 8
    words = np.frombuffer(view, dtype=np.uint64, count=n)
    total = placed = blocks = 0
    for k, at in enumerate(range(0, n, len(_WEIGHTS)), start=1):
        block = words[at:at + len(_WEIGHTS)]
        s = int(block.sum(dtype=np.uint64))
        total, blocks = (total + s) % 2**64, (blocks + k * s) % 2**64
        placed = (placed + int(block @ _WEIGHTS[:len(block)])) % 2**64
    tail = bytes(view[8 * n:])
    return hashlib.blake2b(b"%d %d %d %d " % (len(view), total, placed, blocks) + tail, digest_size=16).digest()


# --- reading a cached table ---------------------------------------------------------------------------------------
def _cached(entry: Path, version: FileVersion) -> pa.Table | str | None:
    """The table cached at ``entry`` when it proves to be the judged table of ``version``; else why not (one
    phrase), or None when there is none."""
    try:
        # a record's rows repeat its truth and graph paths once per method, as 8-byte integers: a table is at most some
        # hundred times its records' bytes
        fd = home_fd(entry, limit=1024 * version.size + 2**26)
    except FileNotFoundError:
        return None
    except KeppError as e:
        return str(e).removeprefix(f"{entry}: ignored (").removesuffix(")")
    try:
        size = os.fstat(fd).st_size
        if size < _TRAILER_SIZE:
            return "cut short"
        data = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    buf = memoryview(data)
    if bytes(buf[size - _TRAILER_SIZE:size - 16]) != TRAILER or checksum(buf[:size - _TRAILER_SIZE]) != bytes(buf[size - 16:]):
        return "its bytes do not match their checksum: changed or cut short"
    try:
        reader = pa.ipc.open_file(pa.py_buffer(data).slice(0, size - _TRAILER_SIZE))
        schema = reader.schema
        meta = json.loads((schema.metadata or {}).get(_META, b"null"))
        identity = Identity(**meta) if isinstance(meta, dict) else None
    except (pa.ArrowInvalid, ValueError, TypeError, OSError):
        return "not a table the store wrote"
    if identity is None or identity.layout != LAYOUT:
        return "not a table of this store's layout"
    if (identity.size, identity.digest) != (version.size, version.digest) or identity.schema != schema_hash(schema):
        return "the table of another records file" if identity.schema == schema_hash(schema) else "another schema"
    if any(schema.field(n).type != t if n in schema.names else True for n, t in REQUIRED.items()):
        return "another schema"
    if version.probe is not None and identity.probe != version.probe:
        return "the table of another records file (its remembered hash named another file's)"
    try:
        return reader.read_all()
    except (pa.ArrowInvalid, OSError):
        return "not a table the store wrote"


def _write(entry: Path, table: pa.Table, identity: Identity) -> pa.Table:
    """Keep ``table`` at ``entry`` (its identity in its schema's metadata, its checksum after it; written whole
    then renamed, never over anything but a regular file) and give it back memory-mapped from what was written."""
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META: identity.text()})
    ensure_folder(entry.parent)
    with atomic_path(entry) as tmp:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        with open(tmp, "r+b") as f:  # the temporary file, made here: only this process has it
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            f.seek(0, os.SEEK_END)
            f.write(TRAILER + checksum(data))
    return pa.ipc.open_file(pa.py_buffer(data)).read_all()  # the bytes renamed into place, mapped


# --- one file as judged columns ----------------------------------------------------------------------------------
def records_columns(path: str | Path) -> pa.Table:
    """The judged rows of one records file (one per record and method, in the records' order), read
    from the cache when this version of the file was read before and its table proves to be of it, else
    validated, judged and cached. A bad file is the KeppError of :func:`kepp_core.evaluation.records.read_records`
    or of the record's checks (the same one-line errors as reading record by record)."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: prediction records not found")
    version = known_version(path)  # no byte of the file read when this process or the cache home knows its hash
    if version is not None and _opened.get(str(path), (None,))[0] == version.key:
        return _opened[str(path)][1]
    table, why = _proved(version) if version is not None else (None, None)
    if table is None:
        tried, data = version, _source_bytes(path)
        version = version_of_bytes(path, data)  # read once: hashed here, parsed below
        if tried is None or tried.key != version.key:
            if why:  # the table the remembered hash named was not this file's: said of that one
                said(cache_folder(CACHE) / f"{tried.key}.arrow", f"ignored ({why}); {path} hashed again")
            table, why = _proved(version)
    entry = cache_folder(CACHE) / f"{version.key}.arrow"
    if table is None:
        rows = judge(read_rows(path, data))
        identity = Identity(size=version.size, digest=version.digest, probe=probe_of(path, data), layout=LAYOUT,
                            schema=schema_hash(rows.schema))
        try:
            table = _write(entry, rows, identity)
        except (KeppError, OSError) as e:  # a cache home that cannot be written (read-only, full): read again next time
            said(entry if why else None, f"ignored ({why}); made again from {path}, not cached" if why else
                 f"records not cached ({str(e)[:300]})")
            return rows
    if why:
        said(entry, f"ignored ({why}); made again from {path}")
    if len(_opened) >= 1024:
        _opened.clear()
    _opened[str(path)] = version.key, table  # an older version of the file let go: its map closes with its last user
    held(path, version.key)  # the cache's older table of this file deleted
    return table


# path -> its version's key and table, memory-mapped: a page's rerun that asks again opens nothing
_opened: dict[str, tuple[str, pa.Table]] = {}


def _proved(version: FileVersion) -> tuple[pa.Table | None, str | None]:
    """The cached table of ``version`` when there is one and it proves to be of it, else None and why not (None:
    no table there)."""
    table = _cached(cache_folder(CACHE) / f"{version.key}.arrow", version)
    if isinstance(table, str):
        return None, table
    if table is not None and version.probe is not None:
        proved(version)
    return table, None


def _source_bytes(path: Path) -> bytes | None:
    """A JSONL records file's bytes (read once: hashed and parsed); None for Parquet (hashed as a stream)."""
    if not has_suffix(path, ".jsonl"):  # as read_rows tells them
        return None
    with open_regular(path) as f:
        return f.read()
