"""Facts read from many small files, kept in one JSON index per folder.

Opening a COIN-scale dataset reads 10,070 annotation files and the shape of 10,070 feature
files; each is a file opened for a few bytes. A :class:`FileIndex` keeps what was read from
each file in ``<folder>/<index name>``, ``{file name: [size, mtime_ns, inode, ctime_ns, value]}``,
and reads a file again when any of them changed (or it is not in the index): a file rewritten
with the same size and modification time (``touch -r``) still has a new change time, which no
program can set. A remembered value is checked (``valid``) before it is trusted: an index edited
by hand is read again, never believed. What
a file holds that is wrong raises while reading it, so it never enters an index; the index is
only a cache: deleting it is always safe, and a folder that cannot be written keeps none.

>>> index = FileIndex("lengths.json", "example-lengths", lambda path: len(open(path).read()))
>>> index.get("some/folder/a.txt")   # doctest: +SKIP
42
>>> index.save()                     # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_json, parse_json, read_text_utf8

VERSION = 2  # entries [size, mtime_ns, inode, ctime_ns, value] (1: [size, mtime_ns, value])


def _trusted(valid: Callable[[Any], bool], value: Any) -> bool:
    """Whether a remembered value passes ``valid`` (a check that fails on an odd value: not trusted)."""
    try:
        return bool(valid(value))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return False


class FileIndex:
    """What ``read(path)`` gives for files, remembered per folder in ``<folder>/<name>``.

    ``kind`` names the facts (an index of another kind or version is rebuilt); ``read`` returns
    a JSON value and raises (a KeppError naming the file) for a file it cannot use; ``valid``
    checks a remembered value before it is trusted. :meth:`save` writes the index of every
    folder that gained or changed entries or names files that are gone, atomically.
    """

    def __init__(self, name: str, kind: str, read: Callable[[str], Any],
                 valid: Callable[[Any], bool] = lambda value: True) -> None:
        self.name, self.kind, self.read, self.valid = name, kind, read, valid
        # keyed by the folder's path as text: ten thousand files, and pathlib is slow at that
        self._folders: dict[str, dict[str, list]] = {}
        self._seen: dict[str, set[str]] = {}
        self._changed: set[str] = set()

    def get(self, path: str | os.PathLike, stat: os.stat_result | None = None,
            valid: Callable[[Any], bool] | None = None) -> Any:
        """The value of the file ``path`` (remembered where its size and time still match and the
        value passes the index's check and ``valid``, this use's own: e.g. the step numbers of one
        task's range); ``stat``: the file's stat when the caller has it."""
        text = os.fspath(path)
        folder, name = os.path.split(text)
        if stat is None:
            try:
                stat = os.stat(text)
            except OSError as e:
                raise KeppError(f"{text}: cannot read ({e.strerror or e})") from None
        entries = self._entries(folder)
        self._seen[folder].add(name)
        entry = entries.get(name)
        key = [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]
        if type(entry) is list and len(entry) == 5 and entry[:4] == key and _trusted(self.valid, entry[4]) \
                and (valid is None or _trusted(valid, entry[4])):
            return entry[4]
        value = self.read(text)
        entries[name] = [*key, value]
        self._changed.add(folder)
        return value

    def save(self) -> None:
        """Write the index of every folder whose entries changed or name files that are gone."""
        for folder, entries in self._folders.items():
            where = Path(folder)
            gone = {n for n in entries.keys() - self._seen[folder] if not (where / n).is_file()}
            if folder not in self._changed and not gone:
                continue
            files = {n: entries[n] for n in sorted(entries.keys() - gone)}
            try:
                atomic_write_json(where / self.name, {"format": self.kind, "version": VERSION, "files": files},
                                  indent=None)
            except KeppError:  # a read-only folder: no index, the files are read again next time
                pass
        self._changed.clear()

    def _entries(self, folder: str) -> dict[str, list]:
        if folder not in self._folders:
            self._folders[folder], self._seen[folder] = self._read_index(Path(folder) / self.name), set()
        return self._folders[folder]

    def _read_index(self, path: Path) -> dict[str, list]:
        """The entries of an index; none when it is missing, unreadable or not one of ours (rebuilt)."""
        try:
            data = parse_json(read_text_utf8(path), str(path))
        except (OSError, KeppError):
            return {}
        ok = isinstance(data, dict) and data.get("format") == self.kind and data.get("version") == VERSION
        return data["files"] if ok and isinstance(data.get("files"), dict) else {}
