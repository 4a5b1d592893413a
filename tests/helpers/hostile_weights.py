"""Hostile weights files and word lists, made in a test's folder: pickles that crash an unpickler,
archives whose records inflate to gigabytes, storages and tensor views that claim more than the file
holds, and ``.npy`` word lists that are not what they say. Each maker returns the file's path."""

from __future__ import annotations

import io
import os
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch

from tests.helpers.hostile import deep_list, deep_tuple_key


def torch_zip(path: Path, data_pkl: bytes, storages: dict[str, bytes] | None = None) -> Path:
    """A zip archive laid out as ``torch.save`` writes one (``archive/data.pkl``, its storages
    under ``archive/data/``), every record stored."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data_pkl)
        z.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")
    return path


def saved(path: Path, obj, plain: bool = False) -> Path:
    """``torch.save(obj)`` to ``path`` (its plain format with ``plain``)."""
    torch.save(obj, path, _use_new_zipfile_serialization=not plain)
    return path


def _records(path: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(path) as z:
        return [(i, z.read(i.filename)) for i in z.infolist()]


def _rewrite(path: Path, records: list[tuple[zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for info, data in records:
            z.writestr(info, data)
    return path


def _numel_lie(pickled: bytes, elements: int) -> bytes:
    """A ``torch.save`` pickle whose first storage reference claims ``elements`` values."""
    at = pickled.index(b"X\x03\x00\x00\x00cpu") + len(b"X\x03\x00\x00\x00cpu")
    if pickled[at:at + 1] in (b"q", b"\x94"):  # BINPUT n / MEMOIZE after the string
        at += 2 if pickled[at:at + 1] == b"q" else 1
    width = {b"K": 1, b"M": 2, b"J": 4}[pickled[at:at + 1]]
    return pickled[:at] + b"\x8a\x05" + elements.to_bytes(5, "little") + pickled[at + 1 + width:]


def storage_lie(path: Path, elements: int = 20 * 2**30, plain: bool = False) -> Path:
    """A one-tensor file whose storage claims ``elements`` float32 values (80 GB) in either format."""
    saved(path, {"w": torch.ones(4)}, plain=plain)
    if plain:
        data = path.read_bytes()
        path.write_bytes(_numel_lie(data, elements))
        return path
    return _rewrite(path, [(i, _numel_lie(d, elements) if i.filename.endswith("/data.pkl") else d)
                           for i, d in _records(path)])


def deep_tuple(path: Path, zipped: bool, depth: int = 500_000) -> Path:
    """The 1 MB file that crashed ``torch.load``: a dict keyed by a tuple nested ``depth`` deep
    (hashing it overflows the C stack), as ``data.pkl`` of a zip archive or as a plain pickle."""
    pickled = deep_tuple_key(depth)
    if zipped:
        return torch_zip(path, pickled)
    path.write_bytes(pickled)
    return path


def deep_list_in_state_dict(path: Path, depth: int = 100_000) -> Path:
    """A real state dict's archive whose ``data.pkl`` holds a list nested ``depth`` deep beside it."""
    saved(path, {"w": torch.ones(2)})
    return _rewrite(path, [(i, b"\x80\x02" + deep_list(depth) + b"." if i.filename.endswith("/data.pkl") else d)
                           for i, d in _records(path)])


def _zip_entry(name: bytes, method: int, crc: int, size: int, data: bytes, offset: int) -> tuple[bytes, bytes]:
    """A zip record's local header (with its data) and its central-directory entry."""
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(data), size, len(name), 0)
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(data), size,
                          len(name), 0, 0, 0, 0, 0, offset)
    return local + name + data, central + name


def deflated_storage(path: Path, gigabytes: int = 3) -> Path:
    """A 3 MB ``torch.save``-like archive whose one storage record is deflated zeros that inflate to
    ``gigabytes`` GiB (the compressed stream is one 64 MiB block repeated: made in seconds)."""
    block = bytes(64 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    count = gigabytes * 16
    stream = one * count + c.flush()
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(4)}, buffer)
    pickled = _numel_lie(zipfile.ZipFile(buffer).read("archive/data.pkl"), count * (64 << 20) // 4)
    entries = [(b"archive/data.pkl", 0, zlib.crc32(pickled), len(pickled), pickled),
               (b"archive/data/0", 8, crc, count * (64 << 20), stream),
               (b"archive/version", 0, zlib.crc32(b"3\n"), 2, b"3\n")]
    body, central = b"", b""
    for name, method, crc_, size, data in entries:
        local, entry = _zip_entry(name, method, crc_, size, data, len(body))
        body, central = body + local, central + entry
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(body), 0)
    path.write_bytes(body + central + end)
    return path


def global_call(path: Path) -> Path:
    """An archive whose ``data.pkl`` calls ``os.system`` (``weights_only`` refuses the global)."""
    return torch_zip(path, b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.")


def torch_tar(path: Path) -> Path:
    """A tar archive (torch's oldest format), which ``weights_only=True`` never reads."""
    with tarfile.open(path, "w") as t:
        data = b"\x80\x02K\x01."
        info = tarfile.TarInfo("storages")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return path


def sparse_file(path: Path, size: int = 5 * 2**30) -> Path:
    """A file of ``size`` bytes that takes no disk (a sparse file): larger than any weights file."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


# --- word lists ---------------------------------------------------------------------------------------------
def npy_claiming(path: Path, shape: tuple[int, ...], descr: str = "<U20", data: bytes = b"\0" * 80) -> Path:
    """A ``.npy`` whose header claims ``shape`` values of ``descr`` over ``data`` (a few bytes)."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    path.write_bytes(buffer.getvalue() + data)
    return path


def npy_of(path: Path, array: np.ndarray) -> Path:
    with open(path, "wb") as f:
        np.save(f, array, allow_pickle=True)
    return path


def npz_of(path: Path, words: list[str]) -> Path:
    """A word list saved with ``numpy.savez`` (an archive), under a ``.npy`` name."""
    with open(path, "wb") as f:
        np.savez(f, words=np.array(words))
    return path


def deep_object_npy(path: Path, depth: int = 100_000) -> Path:
    """An object ``.npy`` (a pickle) nesting a list ``depth`` deep."""
    buffer = io.BytesIO()
    np.save(buffer, np.array(["a", 0], dtype=object), allow_pickle=True)
    data = buffer.getvalue()
    at = data.rindex(b"K\x00")
    path.write_bytes(data[:at] + deep_list(depth) + data[at + 2:])
    return path
