"""Which files are records: a folder's records files (any name), those skipped and why, several files read at
once; and records checked against a dataset's vocabulary."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.evaluation.records import RECORD_SUFFIXES  # the files a folder of records is read from
from kepp_core.evaluation.store.cache import records_columns
from kepp_core.evaluation.store.version import file_version
from kepp_core.io import has_suffix

__all__ = ["Skipped", "check_vocabulary", "each_file", "folder_records", "record_files",
           "records_in"]


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
    files = []
    named = sorted(p for p in Path(folder).rglob("*") if has_suffix(p, *RECORD_SUFFIXES) and not p.is_dir())
    found = [p for p in named if p.is_file()]
    skipped = [Skipped(p, _not_a_file(p)) for p in named if not p.is_file()]  # never opened: nothing can hang
    for q, why in zip(found, each_file(_refusal, found)):
        if why:
            skipped.append(Skipped(q, why))
        else:
            files.append(q)
    return files, skipped


def _not_a_file(path: Path) -> str:
    """Why ``path``, named like records but not a regular file, is skipped (it is never opened)."""
    try:
        os.stat(path)
    except OSError as e:
        return f"cannot be opened ({e.strerror}: a symlink to nothing or a loop of symlinks?)"
    return "not a regular file (a FIFO, socket or device is never read)"


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


def each_file(fn, files: Sequence) -> list:
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
