"""A records file's version (its size and the hash of its bytes) and the cache home's small reads.

A file's hash is remembered in this process and, once the file has settled, in the cache home (a "hash entry"
named by the file's path and status): a later process asks the file's status, not its bytes, while it is
unchanged. A hash taken from an entry is checked before its table is used: the table's source identity names a
probe of its bytes (:func:`probe_of`), which must be the file's now.

Every read under the cache home opens regular files only, without following links or blocking, and reads a
bounded number of bytes (:func:`home_fd`, :func:`home_bytes`); what it refuses is said once on stderr
(:func:`said`) and made again."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.io import atomic_path, ensure_folder, open_regular
from kepp_core.paths import cache_folder

__all__ = ["CACHE", "FileVersion", "file_version", "home_bytes", "home_fd", "probe_of"]

CACHE = "records"  # the cache home's folder of judged records (kepp_core.paths.CACHE_FOLDERS)
LAYOUT = 6  # the cached table's layout: part of each cache file's name, so a new layout never reads an old file
_HASH_CHUNK = 8 * 2**20
_HOME_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class FileVersion:
    """One version of a records file: its size, modification time and the hash of its bytes; ``probe`` (a hash of
    some of its bytes, :func:`probe_of`) where the hash was taken from the cache home and is still to be proved."""

    path: str
    size: int
    mtime_ns: int
    digest: str
    probe: str | None = None

    @property
    def key(self) -> str:
        """The cache file's name of this version (layout, size and content: never the path)."""
        return f"v{LAYOUT}-{self.size}-{self.digest}"


_versions: dict[tuple, FileVersion] = {}  # (path, stat) -> version: hashed once per process while unchanged


def _stat_key(path: str, st: os.stat_result) -> tuple:
    # ctime changes with every write and cannot be set back (os.utime sets it to now): with the size, inode and
    # mtime it tells a rewritten file from the one hashed, even one given back its size and mtime
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _status(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise KeppError(f"{path}: prediction records not found") from None


def known_version(path: str | Path) -> FileVersion | None:
    """The version of ``path`` this process hashed, or the one its hash entry in the cache home names (with the
    file's probe, to be checked against the cached table's), or None: the file's bytes are not read."""
    path = str(path)
    st = _status(path)
    key = _stat_key(path, st)
    if key in _versions:
        return _versions[key]
    digest = _known_digest(st, path)
    if digest is None:
        return None
    version = FileVersion(path, st.st_size, st.st_mtime_ns, digest, probe_of(path))
    _keep(key, version)
    return version


def file_version(path: str | Path) -> FileVersion:
    """The version of the records file ``path``: :func:`known_version`, else its bytes hashed."""
    return known_version(path) or version_of_bytes(path, None)


def version_of_bytes(path: str | Path, data: bytes | None) -> FileVersion:
    """The version of ``path`` hashed from its bytes (``data``: the bytes read, else read here as a stream),
    remembered in this process and, once the file has settled, in the cache home."""
    path = str(path)
    st = _status(path)
    h = hashlib.blake2b(digest_size=16)
    if data is not None:
        h.update(data)
    else:
        with open_regular(path) as f:
            while chunk := f.read(_HASH_CHUNK):
                h.update(chunk)
    digest = h.hexdigest()
    size = len(data) if data is not None else st.st_size
    version = FileVersion(path, size, st.st_mtime_ns, digest)
    if size == st.st_size:
        _remember_digest(st, path, digest)
        _keep(_stat_key(path, st), version)
    return version


def _keep(key: tuple, version: FileVersion) -> None:
    if len(_versions) > 4096:
        _versions.clear()
    _versions[key] = version


def proved(version: FileVersion) -> None:
    """The version's hash proved right (its table's probe matched): no probe asked again in this process."""
    _versions[_stat_key(version.path, _status(version.path))] = replace(version, probe=None)


# --- the file's probe ---------------------------------------------------------------------------------------------
PROBE_BLOCKS, PROBE_BLOCK = 16, 4096  # a probe reads at most 64 KiB: the whole of a smaller file


def probe_of(path: str | Path, data: bytes | None = None) -> str:
    """A hash of the file's size and of :data:`PROBE_BLOCKS` blocks of its bytes at evenly spread places (its first
    and last among them; all of a file of at most that many bytes): what a cached table says its source holds,
    read in one bounded look when the file's hash is taken from the cache home."""
    if data is not None:
        size, read = len(data), lambda at: data[at:at + PROBE_BLOCK]
        return _probe(size, read)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeppError(f"{path}: not a regular file (a FIFO, socket or device is never read)")
        return _probe(st.st_size, lambda at: os.pread(fd, PROBE_BLOCK, at))  # a look at 64 KiB: never the whole file
    finally:
        os.close(fd)


def _probe(size: int, read) -> str:
    h = hashlib.blake2b(str(size).encode("ascii"), digest_size=16)
    if size <= PROBE_BLOCKS * PROBE_BLOCK:
        places = range(0, size, PROBE_BLOCK)
    else:
        places = sorted({(size - PROBE_BLOCK) * k // (PROBE_BLOCKS - 1) for k in range(PROBE_BLOCKS)})
    for at in places:
        h.update(read(at))
    return h.hexdigest()


# --- the hash entries -----------------------------------------------------------------------------------------------
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
    """The hash kept for the file ``path`` with status ``st``, or None (an entry that is not one is said once)."""
    try:
        entry = _status_file(st, path)
        text = home_bytes(entry, 32)
    except FileNotFoundError:
        return None
    except KeppError as e:
        said(None, f"{e}; the records file's bytes are hashed again")
        return None
    if _DIGEST.fullmatch(text.decode("latin-1")):  # a kept hash names a cache file: nothing else is taken
        return text.decode("ascii")
    said(entry, "ignored (not a hash); the records file's bytes are hashed again")
    return None


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


# --- reading under the cache home ------------------------------------------------------------------------------------
def home_fd(path: str | Path, limit: int) -> int:
    """A descriptor of ``path`` under the cache home opened for reading only when it is a regular file of at most
    ``limit`` bytes, never through a symbolic link and never blocking (a FIFO); a KeppError saying what it is
    otherwise. A missing file raises ``FileNotFoundError``."""
    try:
        fd = os.open(path, _HOME_FLAGS)
    except (FileNotFoundError, NotADirectoryError):  # none there (a cache home's folder that is a file holds none)
        raise FileNotFoundError(path) from None
    except OSError as e:
        what = "a symbolic link" if e.errno in (errno.ELOOP, errno.EMLINK) else e.strerror
        raise KeppError(f"{path}: ignored ({what}, not a regular file)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket")
            raise KeppError(f"{path}: ignored ({kind}, not a regular file)")
        if st.st_size > limit:
            raise KeppError(f"{path}: ignored (oversized: {st.st_size:,} bytes, more than the {limit:,} it may have)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def home_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` under the cache home (:func:`home_fd`), at most ``limit`` of them
    read (a file that grows while read is cut there)."""
    fd = home_fd(path, limit)
    try:
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_said: set[str] = set()


def said(where: Path | None, text: str) -> None:
    """Say ``text`` (about ``where``) on stderr, once per process."""
    line = f"kepp: {where}: {text}" if where is not None else f"kepp: {text}"
    if line not in _said:
        _said.add(line)
        print(line, file=sys.stderr)
