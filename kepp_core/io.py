"""Atomic file writing: write to a temporary file in the same folder, then rename.

Readers never see a half-written file, and a crash leaves the old file (or none).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kepp_core.errors import KeppError


def _file_mode() -> int:
    """Permissions of a normally created file (0666 less the umask); mkstemp would give 0600."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_MODE = _file_mode()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing; rename it over ``path`` on success.

    >>> with atomic_open("/tmp/kepp-doctest.txt") as f:
    ...     _ = f.write("hello")
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        f.write(text)


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 1) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent) + "\n")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path`` for libraries that write files themselves
    (numpy, safetensors, PyAV); it is renamed over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def iter_jsonl(path: str | os.PathLike, required: tuple[str, ...] = ()) -> Iterator[tuple[str, dict]]:
    """Yield ``("FILE:LINE", object)`` for every non-blank line of a JSON-lines file.

    A line that is not a JSON object, or lacks one of ``required``, is a KeppError naming the
    file and line.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise KeppError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(rec, dict):
                raise KeppError(f"{where}: expected a JSON object, got {type(rec).__name__}")
            missing = [k for k in required if k not in rec]
            if missing:
                raise KeppError(f"{where}: expected an object with keys {', '.join(map(repr, required))} "
                                f"(missing {', '.join(map(repr, missing))})")
            yield where, rec
