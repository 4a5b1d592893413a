"""Atomic file writing: write to a temporary file in the same folder, then rename.

Readers never see a half-written file, and a crash leaves the old file (or none). The
temporary files of a killed process carry ``TMP_MARK`` in their name;
:func:`remove_stale_temporaries` deletes them on the next run. A folder or file that cannot
be written (read-only, a file where a folder should be) is a KeppError naming it.

Fault injection (tests only): ``KEPP_FAULT_AT=<point>[@<n>]`` makes the process exit at once
(``os._exit(137)``, like a kill) the ``n``-th time (default: the first) it reaches the write
point ``<point>`` (see :func:`fault_point`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from kepp_core.errors import KeppError, printable


def suffix_of(path: str | os.PathLike) -> str:
    """A file's extension as its kind is read from its name: lower case, so that ``P.JSONL`` is a
    JSON-lines file as ``p.jsonl`` is (every such comparison in the package goes through here).

    >>> suffix_of("runs/P.JSONL"), suffix_of("graph.SafeTensors"), suffix_of("README")
    ('.jsonl', '.safetensors', '')
    """
    return Path(path).suffix.lower()


def has_suffix(path: str | os.PathLike, *suffixes: str) -> bool:
    """Whether ``path``'s extension is one of ``suffixes`` (written in lower case), case aside.

    >>> has_suffix("a/B.PARQUET", ".jsonl", ".parquet"), has_suffix("notes.txt", ".jsonl")
    (True, False)
    """
    return suffix_of(path) in suffixes


def _file_mode() -> int:
    """Permissions of a normally created file (0666 less the umask); mkstemp would give 0600."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_MODE = _file_mode()
TMP_MARK = ".kepp-tmp-"  # in the name of every temporary file written here
FAULT_ENV = "KEPP_FAULT_AT"
_fault_hits: dict[str, int] = {}


def fault_point(name: str, before_exit=None) -> None:
    """A named write point: exit at once (status 137, no clean-up) if ``$KEPP_FAULT_AT`` names it.

    ``KEPP_FAULT_AT=state-json@2`` exits the second time the process reaches ``state-json``.
    ``before_exit`` runs first (e.g. to leave a torn write behind). Unset, it does nothing.
    """
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    point, _, nth = spec.partition("@")
    if point != name:
        return
    _fault_hits[name] = _fault_hits.get(name, 0) + 1
    if _fault_hits[name] == int(nth or 1):
        if before_exit is not None:
            before_exit()
        os._exit(137)


def _cannot_write(path: Path, e: OSError):
    if isinstance(e, IsADirectoryError) or (path.is_dir() and not isinstance(e, PermissionError)):
        why = "is a folder, expected a file"
    elif isinstance(e, (NotADirectoryError, FileExistsError)):
        why = "a parent of it is a file, not a folder"
    else:
        why = e.strerror or str(e)
    return KeppError(f"{path}: cannot write ({why})")


def ensure_folder(path: str | os.PathLike) -> Path:
    """Create the folder ``path`` (and parents); a KeppError if it is a file, lies under a file,
    or cannot be written to."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise KeppError(f"{path}: is a file, expected a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _cannot_write(path, e) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise KeppError(f"{path}: cannot write (folder is read-only)")
    return path


# Errors of a write that ran out of room (disk full, `ulimit -f`, quota): the user's to fix.
_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def refuse_non_regular(path: str | os.PathLike) -> None:
    """A KeppError if ``path`` exists (through any symlinks) and is not a regular file: a device,
    FIFO or socket is never renamed over (as root, that would replace ``/dev/null`` with a file)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise _cannot_write(Path(path), e) from None
    if stat.S_ISDIR(mode):
        raise _cannot_write(Path(path), IsADirectoryError())
    if not stat.S_ISREG(mode):
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        raise KeppError(f"{path}: exists and is {kind}, not a regular file: refusing to replace it "
                        f"(name a new file or a regular one)")


def _temporary(path: Path, suffix: str) -> tuple[int, str]:
    refuse_non_regular(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(prefix=f".{path.name}{TMP_MARK}", suffix=suffix, dir=path.parent)
    except OSError as e:
        raise _cannot_write(path, e) from None


def _replace(tmp: str, path: Path) -> None:
    os.chmod(tmp, _MODE)
    refuse_non_regular(path)  # again: the path may have changed while the file was written
    try:
        os.replace(tmp, path)
    except OSError as e:
        raise _cannot_write(path, e) from None


def _raise_if_no_room(e: BaseException, path: Path) -> None:
    """Turn a write that ran out of room (from Python or from a library writing the temporary
    file) into a KeppError naming the file being written."""
    if isinstance(e, KeppError):
        return
    number = getattr(e, "errno", None)
    if number is None and not isinstance(e, OSError):  # libraries wrap the OSError in their own error
        number = next((getattr(c, "errno", None) for c in (e.__cause__, e.__context__) if c is not None), None)
        if number is None and any(w in str(e) for w in ("No space left", "File too large", "quota exceeded")):
            number = errno.ENOSPC
    if number in _NO_ROOM:
        why = os.strerror(number) if number is not None else "no room to write"
        raise KeppError(f"{path}: cannot write ({why}); nothing was written") from None


def remove_stale_temporaries(folder: str | os.PathLike, recursive: bool = False, name: str = "*") -> list[Path]:
    """Delete the temporary files a killed writer left in ``folder`` (``.<name>.kepp-tmp-*``; with
    ``name``, only those of that file). Call it holding the folder's :func:`writer_lock`."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    pattern = f".{name}{TMP_MARK}*"
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    removed = []
    for p in found:
        if p.is_file():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


class FolderBusy(KeppError):
    """Another process holds the :func:`writer_lock` of a folder or file (the message names it)."""


LOCK_SUFFIX = ".kepp-lock"  # the writer lock of a file or folder NAME is .NAME.kepp-lock beside it


def lock_file(target: str | os.PathLike) -> Path:
    """The writer lock of the file or folder ``target``: ``.NAME.kepp-lock`` beside it, ``target``
    resolved first (two spellings of one folder share one lock), so a folder need not exist yet
    and a file's lock never lands in the folder it names.

    >>> lock_file("/tmp/runs/graph.json").name
    '.graph.json.kepp-lock'
    """
    target = Path(os.path.realpath(target))
    return target.parent / f".{target.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def writer_lock(target: str | os.PathLike, what: str, wait: bool = False) -> Iterator[Path]:
    """Hold the one-writer lock of the folder or file ``target`` (:func:`lock_file`) for the block:
    every kepp command that writes a folder or a file takes it, so a second writer is refused with
    an error naming the first (``what`` and its pid) instead of mixing its files with the first's;
    with ``wait``, it waits for the holder instead (a cache that another process is filling). An
    ``flock``: the kernel drops it when its process dies, so a killed writer never leaves a stale
    lock; its half-written temporary files are the next writer's to remove
    (:func:`remove_stale_temporaries`)."""
    import fcntl  # Unix only: kept local so the package imports on Windows

    path = lock_file(target)
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as e:
            raise _cannot_write(Path(target), e) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    note = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
                    pid, _, holder = note.partition(" ")
                    raise FolderBusy(f"{target}: another {printable(holder) or 'kepp command'} (pid {pid[:20] or '?'}) "
                                     f"is writing into it; wait for it to finish or write into another place") from None
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:  # the holder finished and removed it between our open and lock
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)
        if not wait:
            raise KeppError(f"{target}: another kepp command was writing into it a moment ago; run again")
    try:
        try:  # who holds it, for the error of a second writer; a full disk only loses the note
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {what}\n".encode(), 0)
        except OSError:
            pass
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # still held: a writer that opens the name from now on makes a new lock
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing; rename it over ``path`` on success.

    >>> with atomic_open("/tmp/kepp-doctest.txt") as f:
    ...     _ = f.write("hello")
    """
    path = Path(path)
    fd, tmp = _temporary(path, ".tmp")
    with _renamed_over(tmp, path):
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())


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
    fd, tmp = _temporary(path, suffix or path.suffix)
    os.close(fd)
    with _renamed_over(tmp, path):
        yield Path(tmp)


@contextlib.contextmanager
def _renamed_over(tmp: str, path: Path) -> Iterator[None]:
    """Rename ``tmp`` over ``path`` when the block succeeds; otherwise remove it (and name
    ``path`` when the write ran out of room)."""
    try:
        yield
        fault_point(f"before-rename:{path.name}")
        _replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _raise_if_no_room(e, path)
        raise


MAX_PATH_CHARS = 4096  # PATH_MAX of Linux
NOT_ALLOWED = ("is not under a folder this app server allows; the person running it can allow one with "
               "'kepp app --allow-root DIR'")


def check_under(path: str | os.PathLike, roots: Sequence[Path] | None, where: str | None = None) -> Path:
    """``path`` when ``roots`` is None (the command line: the user's own paths) or when it lies
    under one of ``roots`` once symlinks are resolved; else a KeppError that is the same whether
    the path exists or not, and that names ``where`` (the data file and line naming the path).
    ``roots`` are resolved folders (``os.path.realpath``).

    >>> check_under("/srv/data/x.npy", [Path("/srv/data")])
    PosixPath('/srv/data/x.npy')
    >>> check_under("/etc/passwd", [Path("/srv/data")], "plans.jsonl:3")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: plans.jsonl:3: names /etc/passwd, which is not under a folder this app server allows; the person running it can allow one with 'kepp app --allow-root DIR'
    """
    text = os.fspath(path)
    if "\0" in text or len(text) > MAX_PATH_CHARS:  # os calls would raise on it: refused as a path
        shown = repr(text[:60]) + ("…" if len(text) > 60 else "")
        raise KeppError(f"{where + ': names ' if where else ''}{shown}: not a usable path (a NUL byte, or more "
                        f"than {MAX_PATH_CHARS} characters)")
    if roots is None:
        return Path(path)
    real = Path(os.path.realpath(path))
    if any(real == r or real.is_relative_to(r) for r in roots):
        return Path(path)
    if where is None:
        raise KeppError(f"{path} {NOT_ALLOWED}")
    raise KeppError(f"{where}: names {path}, which {NOT_ALLOWED}")


MAX_LINE_BYTES = 16 * 2**20  # one line of a JSON-lines file: a plan or a record, never more


@contextlib.contextmanager
def open_regular(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """``path`` opened for reading in binary, only when it is a regular file (through symlinks): a
    FIFO, socket or device is a KeppError, and opening never blocks (``O_NONBLOCK``), so a FIFO in
    place of a data file or config cannot hang a command or the app. Missing files raise
    ``FileNotFoundError`` as ``open`` does."""
    try:
        f = open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))  # noqa: SIM115
    except IsADirectoryError:
        raise KeppError(f"{path}: is a folder, expected a file") from None
    try:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise KeppError(f"{path}: is a folder, expected a file")
        if not stat.S_ISREG(mode):
            raise KeppError(f"{path}: not a regular file (a FIFO, socket or device is never read)")
        os.set_blocking(f.fileno(), True)
    except BaseException:
        f.close()
        raise
    with f:
        yield f


def read_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`); with ``limit``, a KeppError
    for a file larger than that, before reading it."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if limit is not None and size > limit:
            raise KeppError(f"{path}: {size:,} bytes, more than the {limit:,} a file of this kind may have")
        return f.read()


UTF8_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark: read as nothing at a file's start (editors on Windows write it)


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[str, bytes]]:
    """``("FILE:LINE", bytes)`` for every non-blank line of the regular file ``path`` (a UTF-8 byte-order mark
    at its start dropped; CRLF line ends are lines as LF ones are); a line longer than :data:`MAX_LINE_BYTES`
    is a KeppError naming it (it is never read whole)."""
    with open_regular(path) as f:
        readline = f.readline
        lineno = 0
        while raw := readline(MAX_LINE_BYTES + 1):
            lineno += 1
            if len(raw) > MAX_LINE_BYTES:
                raise KeppError(f"{path}:{lineno}: line longer than {MAX_LINE_BYTES:,} bytes")
            if lineno == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM):]
            if raw.strip():
                yield f"{path}:{lineno}", raw


def iter_jsonl(path: str | os.PathLike, required: tuple[str, ...] = (),
               unique_keys: bool = False) -> Iterator[tuple[str, dict]]:
    """Yield ``("FILE:LINE", object)`` for every non-blank line of a JSON-lines file.

    A line that is not a JSON object, or lacks one of ``required``, is a KeppError naming the
    file and line (with ``unique_keys``, an object holding a key twice too: :func:`parse_json`).
    """
    for where, raw in iter_lines(path):
        line = decode_utf8(raw, where)
        rec = parse_json(line, where, dict, lines=False, unique_keys=unique_keys)
        missing = [k for k in required if k not in rec]
        if missing:
            raise KeppError(f"{where}: expected an object with keys {', '.join(map(repr, required))} "
                        f"(missing {', '.join(map(repr, missing))})")
        yield where, rec


MAX_DIGITS = 18  # a whole number typed as text (an index, a count, a folder's horizon): below 10¹⁸


def whole_number(text: object, most: int = MAX_DIGITS) -> int | None:
    """``text`` as a whole number when it is ASCII digits only (surrounding spaces allowed), at most
    ``most`` of them; else None. The one parser of numbers typed as text: ``"²".isdigit()`` is
    true but ``int("²")`` fails, and ``int`` of 5,000 digits is a ValueError.

    >>> whole_number("42"), whole_number(" 7 "), whole_number("²"), whole_number("-1"), whole_number("9" * 5000)
    (42, 7, None, None, None)
    """
    digits = str(text).strip()
    if not (0 < len(digits) <= most and digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


# JSON numbers past these are not data any kepp file holds: refused before Python's own limits
# (4,300-digit integers, floats that overflow to inf) turn them into tracebacks or silent infinities.
MAX_JSON_DIGITS = 100


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise _JsonValueError(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _JsonValueError(f"the number {text[:40]} (too large for a float)")
    return value


def _json_constant(name: str):
    raise _JsonValueError(f"{name} (not a JSON number)")


class _JsonValueError(ValueError):
    """A JSON value outside what kepp reads (raised from the parser's hooks)."""


class _KeyTwice(ValueError):
    """An object holding a key twice (raised from the parser's hook)."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyTwice(key)
            seen.add(key)
    return obj


def parse_json(text: str, where: str, expect: type | None = None, lines: bool = True, unique_keys: bool = False):
    """``text`` parsed as JSON, the one way the package reads JSON: a KeppError naming ``where``
    (a file, or with ``lines=False`` a ``file:line`` of a JSON-lines file or an option; invalid
    JSON is then named by its line) for invalid JSON, nesting deeper than the parser can
    follow, integers of more than ``MAX_JSON_DIGITS`` digits, numbers too large for a float,
    NaN / Infinity, a byte-order mark inside the text, (with ``unique_keys``) an object holding a key twice
    (JSON leaves which one counts to the reader: kepp refuses to guess), or (with ``expect``) a top-level value
    of another type.

    >>> parse_json('{"a": [1, 2.5]}', "x.json", dict)
    {'a': [1, 2.5]}
    >>> parse_json("1e999", "x.json")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: x.json: the number 1e999 (too large for a float) is not readable
    """
    try:
        value = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant,
                           object_pairs_hook=_unique_object if unique_keys else None)
    except json.JSONDecodeError as e:
        at = f":{e.lineno}" if lines else ""  # ``where`` of a JSON-lines record names its line already
        if e.msg.startswith("Unexpected UTF-8 BOM"):
            raise KeppError(f"{where}{at}: a byte-order mark (U+FEFF) where JSON was expected (one is read only as "
                            "a file's first bytes)") from None
        raise KeppError(f"{where}{at}: invalid JSON ({e.msg} at column {e.colno})") from None
    except _KeyTwice as e:
        raise KeppError(f"{where}: the key {str(e)[:80]!r} twice in one object (expected each key once)") from None
    except _JsonValueError as e:
        raise KeppError(f"{where}: {e} is not readable") from None
    except RecursionError:
        raise KeppError(f"{where}: JSON nested too deeply to read") from None
    if expect is not None and not isinstance(value, expect):
        wanted = {dict: "a JSON object", list: "a JSON list"}.get(expect, expect.__name__)
        raise KeppError(f"{where}: expected {wanted}, got {type(value).__name__}")
    return value


def read_json(path: str | os.PathLike, expect: type | None = None):
    """The JSON file ``path`` (UTF-8), read by :func:`parse_json`; a missing or unreadable file is
    a KeppError naming it."""
    try:
        text = read_text_utf8(path)
    except FileNotFoundError:
        raise KeppError(f"{path}: not found") from None
    except IsADirectoryError:
        raise KeppError(f"{path}: is a folder, expected a JSON file") from None
    except OSError as e:
        raise KeppError(f"{path}: cannot read ({e.strerror or e})") from None
    return parse_json(text, str(path), expect)


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text; a KeppError naming ``where`` and the bad byte's offset otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise KeppError(f"{where}: not valid UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def read_text_utf8(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file (a regular file: :func:`open_regular`); invalid UTF-8 is a
    KeppError naming the file, line and byte."""
    return utf8_text(read_bytes(path), str(path))


def utf8_text(data: bytes, where: str) -> str:
    """The bytes of the document ``where`` as text; invalid UTF-8 is a KeppError naming its line
    and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise KeppError(f"{where}:{line}: not valid UTF-8 text (byte 0x{data[e.start]:02x})") from None


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A Markdown table: ``header`` and one line per row (cells as ``str``); ``align``: one letter
    per column, ``l`` (default) or ``r`` (right-aligned, ``---:``). The one Markdown table writer
    of the package (result tables, the protocol's ``results.md``, the benchmarks' reports).

    A ``|`` inside a cell is escaped (``\\|``), so it never splits the cell.

    >>> print(markdown_table(["method", "SR"], [["a", 1.5]], align="lr"))
    | method | SR |
    |---|---:|
    | a | 1.5 |
    >>> markdown_table(["a|b"], [["x|y"]]).splitlines()[2]
    '| x\\\\|y |'
    """
    align = align or "l" * len(header)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise KeppError(f"markdown table: align {align!r} needs one of 'l'/'r' per column ({len(header)})")

    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    lines = [line(header), "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    lines += [line(row) for row in rows]
    return "\n".join(lines)


def remembered_json(folder: str | os.PathLike, key: str, compute: Callable[[], Any], kind: str) -> Any:
    """``compute()``, remembered as a JSON file in ``folder`` under ``key`` (any string: the file
    is named by its SHA-1) and read back while the stored key and ``kind`` match. A file that
    cannot be read is computed again; a folder that cannot be written is skipped (the value is
    computed again next time). For caches of derived data only: deleting the folder is safe.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> remembered_json(d, "k", lambda: [1, 2], "demo"), remembered_json(d, "k", lambda: [3], "demo")
    ([1, 2], [1, 2])
    """
    path = Path(folder) / f"{hashlib.sha1(key.encode()).hexdigest()}.json"
    try:
        data = read_json(path, dict)
        if data.get("format") == kind and data.get("key") == key:
            return data["value"]
    except (OSError, KeyError, KeppError):
        pass  # not remembered yet, or not readable: compute it
    value = compute()
    try:
        ensure_folder(folder)
        atomic_write_json(path, {"format": kind, "key": key, "value": value})
    except KeppError:
        pass
    return value
