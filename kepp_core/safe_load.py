"""Files a user names, loaded with their sizes checked before anything is allocated: the one
``torch.load`` of the package (:func:`load_torch`: S3D weights, official checkpoints) and the
one ``.npy`` header reader (:func:`npy_header`: feature files, word lists).

``torch.load(weights_only=True)`` runs no code, but it trusts a file's numbers: a pickle nested
a million levels deep crashes the interpreter (segmentation fault), a storage's size field is
allocated before its bytes are read (80 GB), a record compressed inside the zip archive is
inflated whole (a 3 MB file takes 3 GB), and a tensor may view one stored number through a
shape of 10¹⁰ elements with stride 0 (the first operation on it allocates 40 GB). So before
``torch.load`` sees a file, :func:`load_torch` reads it as ``torch.save`` writes it, building
nothing but stubs:

- only a regular file (a FIFO never hangs the command), of at most ``max_bytes``;
- the zip format (``torch.save``'s default): every record stored uncompressed and within the
  archive, one ``data.pkl``; the plain format (``_use_new_zipfile_serialization=False``): its
  five pickles one after another, then the storages' bytes;
- every pickle walked with :func:`kepp_core.schema.check_pickle` (nesting depth and opcode
  count bounded);
- every storage the pickle names of a real number type, no larger than the bytes the file holds
  for it; every tensor a view that fits in its storage and holds no more elements than it
  (no expansion by strides).

Then ``torch.load(weights_only=True)`` reads the same open file. Every refusal and every error
of the load is one :class:`~kepp_core.errors.KeppError` naming the file, never quoting its bytes.

>>> import tempfile, torch
>>> path = tempfile.mkdtemp() + "/w.pth"
>>> torch.save({"w": torch.ones(2, 3)}, path)
>>> load_torch(path, "weights file")["w"].shape
torch.Size([2, 3])
"""

from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from typing import IO

import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import open_regular
from kepp_core.schema import check_pickle

MAX_TORCH_BYTES = 2**32  # 4 GiB: the S3D release is 30 MB, official KEPP checkpoints 10 MB
MAX_PICKLE_BYTES = 2**28  # a state dict's pickle (names and shapes) is kilobytes to megabytes
MAX_DEPTH = 32  # a state dict nests a handful of levels (a dict of dicts of tensors)
MAX_OPS = 10_000_000  # opcodes of one pickle: millions of tensors are not a network
MAX_DIMS = 32  # dimensions of one tensor
MAX_INFLATED = 2**28  # what a TorchScript archive's compressed records (its code) may inflate to
# torch.save's storage types and the bytes of one element; complex and quantised ones are not weights
ITEMSIZE = {"FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8,
            "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1}
_ZIP_MAGIC = b"PK\x03\x04"
_TENSOR_BUILDERS = ("_rebuild_tensor", "_rebuild_tensor_v2")


class _Unreadable(Exception):
    """Not a file ``torch.save`` writes (the reason); :func:`load_torch` names the file."""


class _Stub:
    """What the census builds in place of every object a pickle names: nothing."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setitem__(self, key, value) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass

    def append(self, value) -> None:
        pass

    def extend(self, values) -> None:
        pass


class _Storage(_Stub):
    """A storage the pickle names: its key and element count (checked against the file)."""

    def __init__(self, key: str, numel: int) -> None:
        self.key, self.numel = key, numel


class _Census(pickle.Unpickler):
    """Reads a ``torch.save`` pickle building only stubs (no global is imported or called): lists
    the storages it names and checks every tensor view against its storage (``where`` names the
    file in a refusal)."""

    def __init__(self, data: bytes, where: str) -> None:
        super().__init__(io.BytesIO(data))
        self.where = where
        self.storages: list[tuple] = []

    def find_class(self, module: str, name: str):
        """A stub class for every global, but the tensor builder, which is checked (:meth:`tensor`)."""
        if module == "torch._utils" and name in _TENSOR_BUILDERS:
            return self.tensor
        return type(name, (_Stub,), {})

    def persistent_load(self, pid):
        """A storage reference, checked and counted (:class:`_Storage`); other references: a stub."""
        if not (type(pid) is tuple and len(pid) >= 5 and pid[0] == "storage"):
            return _Stub()  # the plain format's module records; torch.load refuses what is not a storage
        kind = pid[1].__name__ if isinstance(pid[1], type) else type(pid[1]).__name__
        key, numel = pid[2], pid[4]
        if type(key) is not str or type(numel) is not int or numel < 0:
            raise KeppError(f"{self.where}: a storage reference of its pickle is malformed (not one torch.save writes)")
        if kind not in ITEMSIZE:
            raise KeppError(f"{self.where}: storage {key[:40]!r} holds {kind[:40]} (expected real numbers: "
                            f"weights are real floating-point tensors)")
        self.storages.append((key, kind, numel))
        return _Storage(key, numel)

    def tensor(self, storage, offset, size, stride, *rest):
        """``torch._utils._rebuild_tensor_v2``'s arguments checked: a view inside its storage that
        holds no more elements than the storage does."""
        dims = (size, stride)
        if not (isinstance(storage, _Storage) and type(offset) is int and all(type(d) is tuple for d in dims)
                and len(size) == len(stride) <= MAX_DIMS
                and all(type(n) is int and n >= 0 for n in (offset, *size, *stride))):
            raise KeppError(f"{self.where}: a tensor of its pickle is malformed (not one torch.save writes)")
        numel = math.prod(size)
        extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if numel else 0
        if numel > storage.numel or extent > storage.numel:
            raise KeppError(f"{self.where}: a tensor of shape {list(size)[:8]} ({numel:,} elements) views storage "
                            f"{storage.key[:40]!r} of {storage.numel:,} elements (by strides {list(stride)[:8]}); "
                            f"refused before allocating")
        return _Stub()


def _census(data: bytes, where: str) -> list[tuple]:
    """The storages ``(key, type, elements)`` a checked pickle names (:class:`_Census`)."""
    census = _Census(data, where)
    try:
        census.load()
    except KeppError:
        raise
    except Exception:  # the census builds stubs only: any error is a pickle torch.save did not write
        raise _Unreadable("its pickle is not one torch.save writes") from None
    return census.storages


def _check_zip(f: IO[bytes], size: int, where: str) -> None:
    """The zip format: stored records within the archive, one ``data.pkl``, its storages' sizes."""
    try:
        with zipfile.ZipFile(f) as z:
            infos = z.infolist()
            for i in infos:
                if i.compress_type != zipfile.ZIP_STORED or i.compress_size != i.file_size:
                    raise KeppError(f"{where}: record {i.filename[-60:]!r} is compressed ({i.file_size:,} bytes "
                                    f"inflated from {i.compress_size:,}); torch.save stores its records as they "
                                    f"are: refused before inflating it")
            if sum(i.file_size for i in infos) > size:
                raise KeppError(f"{where}: its records claim more bytes than the file's {size:,} (a damaged archive)")
            names = {i.filename: i.file_size for i in infos}
            pkls = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(pkls) != 1:
                raise _Unreadable(f"{'no' if not pkls else 'several'} data.pkl in the archive")
            if names[pkls[0]] > MAX_PICKLE_BYTES:
                raise KeppError(f"{where}: data.pkl of {names[pkls[0]]:,} bytes (a state dict's pickle is "
                                f"at most {MAX_PICKLE_BYTES:,})")
            data = z.read(pkls[0])
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError):
        raise _Unreadable("a damaged zip archive") from None
    check_pickle(data, f"{where} (data.pkl)", MAX_DEPTH, MAX_OPS)
    prefix = pkls[0].rsplit("/", 1)[0]
    for key, kind, numel in _census(data, where):
        have = names.get(f"{prefix}/data/{key}")
        if have is None or numel * ITEMSIZE[kind] > have:
            raise KeppError(f"{where}: storage {key[:40]!r} claims {numel:,} elements ({numel * ITEMSIZE[kind]:,} "
                            f"bytes) but the file holds {have or 0:,} bytes for it; refused before allocating")


def _check_plain(f: IO[bytes], size: int, where: str) -> None:
    """The plain format: the magic number, protocol version, system information, the object and
    the storage keys, five pickles one after another (each checked before the next is read),
    then every storage's bytes (their total bounded by what is left of the file)."""
    start, storages = 0, []
    for part in ("magic number", "protocol version", "system information", "object", "storage keys"):
        f.seek(start)
        end = check_pickle(f, f"{where} ({part})", MAX_DEPTH, MAX_OPS)
        if part == "object":
            if end - start > MAX_PICKLE_BYTES:
                raise KeppError(f"{where}: a pickle of {end - start:,} bytes (a state dict's pickle is at most "
                                f"{MAX_PICKLE_BYTES:,})")
            f.seek(start)
            storages = _census(f.read(end - start), where)
        start = end
    need = sum(8 + numel * ITEMSIZE[kind] for _key, kind, numel in {s[0]: s for s in storages}.values())
    if need > size - start:
        raise KeppError(f"{where}: its storages claim {need:,} bytes but the file holds {size - start:,} after its "
                        f"pickles; refused before allocating")


def load_torch(path: str | os.PathLike, what: str = "file", max_bytes: int = MAX_TORCH_BYTES):
    """What ``torch.save`` wrote to ``path`` (a regular file of at most ``max_bytes``), checked as the
    module docstring says and then read with ``torch.load(weights_only=True)`` on the CPU. Every
    refusal is a KeppError naming the file (``what`` says what it should be)."""
    import torch

    where = str(path)
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise KeppError(f"{where}: {size:,} bytes, more than the {max_bytes:,} a {what} may have")
        head = f.read(4)
        f.seek(0)
        try:
            if head == _ZIP_MAGIC:
                _check_zip(f, size, where)
            elif head[:1] == b"\x80":
                _check_plain(f, size, where)
            else:
                raise _Unreadable("neither its zip nor its plain format")
        except _Unreadable as e:
            raise KeppError(f"{where}: not a {what} torch.load(weights_only=True) can read ({e})") from None
        f.seek(0)
        try:
            return torch.load(f, weights_only=True, map_location="cpu")
        except Exception as e:  # torch's text may quote the file: only the kind of error is shown
            raise KeppError(f"{where}: not a {what} torch.load(weights_only=True) can read "
                            f"({type(e).__name__} while loading it)") from None


def check_archive_pickles(path: str | os.PathLike, what: str = "file", max_bytes: int = MAX_TORCH_BYTES) -> None:
    """For a zip archive that ``torch.jit.save`` writes (a TorchScript module, which
    ``torch.jit.load`` reads with its own unpickler): a regular file of at most ``max_bytes``,
    whose records inflate to at most :data:`MAX_INFLATED` bytes beyond the archive's own size
    (its code is compressed, its tensors are not) and whose pickles (``*.pkl``, ``*.debug_pkl``)
    are bounded like :func:`load_torch`'s; checked before ``torch.jit.load`` reads it."""
    where = str(path)
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise KeppError(f"{where}: {size:,} bytes, more than the {max_bytes:,} a {what} may have")
        try:
            with zipfile.ZipFile(f) as z:
                infos = z.infolist()
                inflated = sum(i.file_size for i in infos)
                if inflated > size + MAX_INFLATED:
                    raise KeppError(f"{where}: its records inflate to {inflated:,} bytes (the file has {size:,}); "
                                    f"refused before inflating them")
                for i in infos:
                    if i.filename.endswith((".pkl", ".debug_pkl")):
                        check_pickle(z.read(i), f"{where} ({i.filename[-60:]})", MAX_DEPTH, MAX_OPS)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError):
            raise KeppError(f"{where}: not a {what} (not a zip archive torch.jit.save writes)") from None


# --- .npy headers -----------------------------------------------------------------------------------------
def npy_header(f: IO[bytes], what: str = ".npy file") -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from the header of an open ``.npy`` file (left at the start of the data),
    checked against the file's size before anything is allocated (a header claiming 10¹¹ strings
    would ask numpy for terabytes). A file that is not one is a KeppError that names it and never
    quotes its bytes (numpy's own message does: ``got b'root:x'``); an ``.npz`` archive is named as one.
    Object arrays (pickles) have no size to check: the caller decides whether it reads them."""
    try:
        version = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _fortran, dtype = read_header(f)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError):
        start = _peek(f, 4)
        kind = " (an .npz archive: numpy.savez writes those; numpy.save writes a .npy)" if start == _ZIP_MAGIC else ""
        raise KeppError(f"{f.name}: not a readable {what} (no NumPy header){kind}") from None
    if len(shape) > MAX_DIMS or any(type(n) is not int or n < 0 for n in shape):
        raise KeppError(f"{f.name}: not a readable {what} (its header's shape is not a list of sizes)")
    if not dtype.hasobject:
        need = f.tell() + math.prod(shape) * dtype.itemsize
        size = os.fstat(f.fileno()).st_size
        if size < need:
            raise KeppError(f"{f.name}: not a readable {what} (truncated: its header promises {need:,} bytes "
                            f"for {list(shape)} values of {dtype}, the file has {size:,})")
    return shape, dtype


def _peek(f: IO[bytes], n: int) -> bytes:
    """The first ``n`` bytes of an open file (its position kept)."""
    at = f.tell()
    f.seek(0)
    head = f.read(n)
    f.seek(at)
    return head


def read_npy(path: str | os.PathLike, what: str = ".npy file", kinds: str = "biufUS") -> np.ndarray:
    """The array of the ``.npy`` file ``path`` (a regular file), its header checked by
    :func:`npy_header` and its dtype's kind one of ``kinds`` (never an object array: no pickle is read)."""
    with open_regular(path) as f:
        shape, dtype = npy_header(f, what)
        if dtype.kind not in kinds or dtype.hasobject:
            raise KeppError(f"{path}: a {what} of {dtype} values (expected {_KIND_WORDS.get(kinds, kinds)})")
        f.seek(0)
        try:
            return np.load(f, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise KeppError(f"{path}: not a readable {what} ({type(e).__name__} while reading it)") from None


_KIND_WORDS = {"US": "strings", "f": "floating-point numbers", "biufUS": "numbers or strings"}

__all__ = ["ITEMSIZE", "MAX_TORCH_BYTES", "check_archive_pickles", "load_torch", "npy_header", "read_npy"]
