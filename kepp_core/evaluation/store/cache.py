"""The store's cache: a records file's version (its size and the hash of its bytes, the hash remembered in the
cache home while the file is unchanged) and its judged table kept as an Arrow IPC file in the cache home's
``records`` folder (:func:`kepp_core.paths.cache_folder`), never beside the user's files, named by the version
(layout, size and content: a file rewritten with the same size and time is read again). A later read opens that
file memory-mapped: no parsing, no judging."""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from kepp_core.errors import KeppError
from kepp_core.evaluation.store.judging import judge
from kepp_core.evaluation.store.reading import read_rows
from kepp_core.io import atomic_path, ensure_folder, open_regular
from kepp_core.paths import cache_folder

__all__ = ["CACHE", "FileVersion", "file_version", "records_columns"]

CACHE = "records"  # the cache home's folder of judged records (kepp_core.paths.CACHE_FOLDERS)
LAYOUT = 4  # the cached table's layout: part of each cache file's name, so a new layout never reads an old file
_HASH_CHUNK = 8 * 2**20


# --- the file's version ------------------------------------------------------------------------------------------


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
        table = judge(read_rows(path))
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

