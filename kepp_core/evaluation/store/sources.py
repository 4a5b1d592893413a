"""Which version of each records file the cache holds, and the cache's files of versions no longer on disk deleted.

Every records file read through the store has a *source entry* in the cache home (``records/sources/``, named by a
hash of the file's absolute path): its path, the key of the version whose table the cache last held for it
(:attr:`~kepp_core.evaluation.store.version.FileVersion.key`) and the name of that version's hash entry. When the
file's version changes (:func:`held` with another key), its entry names the new one and the old version's table and
hash entry are deleted unless another source's entry still names that table (two files of the same bytes share
one); the entries of files no longer on disk go the same way. So a records file edited twenty times leaves one
table in the cache, not twenty.

Only files the cache itself wrote are deleted, proven by its naming rules: a regular file (never followed through a
link), in the cache's own folder, named ``<key>.arrow`` with a key of :data:`KEY`'s form, or a hash entry named by
32 hex digits. A process still reading a deleted table keeps its memory map (an unlink removes the name, not the
open file); one that looks for it afterwards makes it again. Tables cached before source entries existed are named
by no entry and left alone."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.evaluation.store.version import CACHE, _status_file, home_bytes
from kepp_core.io import atomic_path, ensure_folder
from kepp_core.paths import cache_folder

__all__ = ["held", "source_keys"]

KEY = re.compile(r"v\d+-\d+-[0-9a-f]{32}")  # FileVersion.key's form: what a table the cache wrote is named by
_HASH = re.compile(r"[0-9a-f]{32}")  # a hash entry's name
SOURCES = "sources"
_ENTRY_LIMIT = 8192  # a source entry is a path, a key and a name: a larger file is not one
_MAX_ENTRIES = 100_000  # a sources folder is read whole when a version changes: at most this many entries


def _entry_file(path: str) -> Path:
    name = hashlib.blake2b(path.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return cache_folder(CACHE) / SOURCES / name


def _entry(file: Path) -> dict | None:
    """A source entry's fields, or None when there is none or it is not one (a link, a folder, another file)."""
    try:
        data = json.loads(home_bytes(file, _ENTRY_LIMIT))
    except (FileNotFoundError, KeppError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("path", "key", "hash")):
        return None
    return data if KEY.fullmatch(data["key"]) and (not data["hash"] or _HASH.fullmatch(data["hash"])) else None


def held(path: str | Path, key: str) -> None:
    """The cache holds the table ``key`` of the records file ``path`` now: its source entry says so, and when it
    named another version before, that version's table and hash entry are deleted (:func:`_prune`). A cache home
    that cannot be written keeps what it has."""
    path = os.path.abspath(path)
    file = _entry_file(path)
    old = _entry(file)
    try:
        digest_file = _status_file(os.stat(path), path)
        new = {"path": path, "key": key, "hash": digest_file.name if digest_file.is_file() else ""}
        if old == new:
            return
        ensure_folder(file.parent)
        with atomic_path(file) as tmp:  # renamed whole: a reader sees the old entry or the new one
            tmp.write_text(json.dumps(new, sort_keys=True), encoding="utf-8")
    except (OSError, KeppError):
        return
    if old is not None and old != new:
        _prune({old["key"]} - {key}, {old["hash"]} - {new["hash"], ""})


def source_keys() -> dict[str, str]:
    """Each records file the cache holds a table for (absolute path) and that table's key."""
    return {e["path"]: e["key"] for e in map(_entry, _entries()) if e is not None}


def _entries() -> list[Path]:
    try:
        with os.scandir(cache_folder(CACHE) / SOURCES) as it:
            return [Path(d.path) for _, d in zip(range(_MAX_ENTRIES), it)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _prune(keys: set[str], hashes: set[str]) -> None:
    """Delete the tables ``keys`` and hash entries ``hashes`` (superseded versions) that no source entry names, and
    the entries of records files no longer on disk with theirs."""
    named, named_hashes = set(), set()
    for file in _entries():
        e = _entry(file)
        if e is None:
            continue
        if not os.path.isfile(e["path"]):  # a records file gone: its entry, table and hash entry go too
            _unlink(file, _HASH) and (keys.add(e["key"]), hashes.add(e["hash"]))
            continue
        named.add(e["key"])
        named_hashes.add(e["hash"])
    folder = cache_folder(CACHE)
    for key in keys - named:
        _unlink(folder / f"{key}.arrow", KEY, suffix=".arrow")
    for name in hashes - named_hashes - {""}:
        _unlink(folder / "hashes" / name, _HASH)


def _unlink(file: Path, form: re.Pattern, suffix: str = "") -> bool:
    """Delete ``file`` when it is a regular file named by ``form`` (then ``suffix``); True when it was."""
    if not file.name.endswith(suffix) or not form.fullmatch(file.name[:len(file.name) - len(suffix)]):
        return False
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(file).st_mode):
            os.unlink(file)
            return True
    return False
