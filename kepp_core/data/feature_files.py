"""Per-second feature files ``[seconds, D]`` (``.npy``): locating, checking and loading them.

Two kinds of ``.npy`` are read:

- a plain 2-D float array (what ``kepp features extract`` writes);
- the S3D feature files distributed for CrossTask, COIN and NIV by the procedure-planning
  literature: a pickled dict ``{"frames_features": [seconds, 512], ...}``, either a pickle as it is
  (what P3IV's scripts wrote with ``pickle.dump`` under a ``.npy`` name, and ``np.load(...,
  allow_pickle=True)`` reads) or inside a ``.npy`` object array (``np.save`` of a dict). These are
  read with a restricted unpickler that only rebuilds numpy arrays, dicts and plain values; any
  other object in the file (code, classes) is refused naming it, so a hostile file cannot run
  anything.

Opening a dataset needs the shape of every feature file (its seconds bound the annotated
segments). :class:`FeatureShapes` keeps them in a small index per feature folder,
``feature-shapes.json``, so that a COIN-scale world (10,070 files) is opened by reading one JSON
file instead of ten thousand file headers.
"""

from __future__ import annotations

import io
import math
import os
import pickle
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["load_features"]

try:
    from numpy._core.multiarray import scalar as _scalar
except ImportError:  # numpy < 2
    from numpy.core.multiarray import scalar as _scalar
from kepp_core.data.file_index import FileIndex
from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.errors import KeppError
from kepp_core.io import check_under, open_regular
from kepp_core.safe_load import npy_header
from kepp_core.schema import check_pickle
from kepp_core.video.encode import MANIFEST, MAX_FEATURE_DIM, read_manifest

FEATURE_KEY = "frames_features"
MAX_PICKLE_BYTES = 2**30  # a pickled S3D feature dict holds [seconds, 512] floats: megabytes
_MAX_DIMS = 32  # dimensions of one array (numpy's own limit is 64)


class _Refused(pickle.UnpicklingError):
    """What the array-only unpickler refuses, in words that name no byte of the file (shown as they are)."""


class _Declared:
    """An array a feature pickle declares: its shape, dtype and data, checked as they arrive and built
    only when asked for (:meth:`build`), so a pickle allocates no more than the bytes it holds and only
    the one array the features are. numpy writes an array as ``_reconstruct(ndarray, (0,), b'b')`` then
    a BUILD with ``(version, shape, dtype, is_fortran, data)``; protocol 5 as
    ``_frombuffer(data, dtype, shape, order)``."""

    def __init__(self) -> None:
        self.shape: tuple[int, ...] | None = None
        self.dtype: np.dtype | None = None
        self.data: bytes | list | None = None
        self.order = "C"

    def __setstate__(self, state) -> None:
        if type(state) is tuple and len(state) == 5:
            state = state[1:]  # (version, shape, dtype, is_fortran, data); numpy < 1.? wrote no version
        if not (type(state) is tuple and len(state) == 4 and type(state[2]) is bool):
            raise _Refused("an array's state is not (shape, dtype, order, data)")
        shape, dtype, fortran, data = state
        self._set(data, dtype, shape, "F" if fortran else "C")

    def _set(self, data, dtype, shape, order: str) -> None:
        if not (type(shape) is tuple and len(shape) <= _MAX_DIMS and all(type(n) is int and n >= 0 for n in shape)
                and isinstance(dtype, np.dtype) and order in ("C", "F")):
            raise _Refused("an array's shape, dtype or order is malformed")
        if type(data) is str:  # Python 2's str, read as latin-1 text
            data = data.encode("latin-1")
        size = math.prod(shape)
        if dtype.hasobject:
            if type(data) is not list or len(data) != size:
                raise _Refused(f"an object array of shape {list(shape)[:4]} without its items")
        elif type(data) not in (bytes, bytearray) or len(data) != size * dtype.itemsize or not dtype.itemsize:
            raise _Refused(f"an array of shape {list(shape)[:4]} ({dtype.str}) declares "
                                         f"{size * dtype.itemsize:,} bytes and holds "
                                         f"{len(data) if type(data) in (bytes, bytearray) else 0:,}")
        self.shape, self.dtype, self.data, self.order = shape, dtype, data, order

    def build(self) -> np.ndarray:
        """The array (its data checked against its shape when it arrived)."""
        if self.data is None:
            raise _Refused("an array without its data (a shape and no values)")
        if self.dtype.hasobject:
            out = np.empty(len(self.data), dtype=object)
            out[:] = self.data
            return out.reshape(self.shape, order=self.order)
        return np.frombuffer(self.data, self.dtype).reshape(self.shape, order=self.order).copy()


def _reconstruct(cls, shape, dtype) -> _Declared:
    """numpy's ``_reconstruct(ndarray, (0,), b'b')``: an array whose BUILD brings its state (never
    numpy's own, which allocates the shape it is given before any data arrives)."""
    if cls is not _NdarrayName:
        raise _Refused("_reconstruct of something other than numpy.ndarray")
    return _Declared()


def _frombuffer(data, dtype, shape, order="C") -> _Declared:
    """numpy's ``_frombuffer`` (protocol 5): the array of ``data``, checked against its shape."""
    out = _Declared()
    out._set(data, dtype, shape, order)
    return out


def _latin1(text, encoding) -> bytes:
    """``_codecs.encode(text, "latin1")``: how protocol 2 writes bytes (numpy's data among them)."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise _Refused("_codecs.encode of something other than latin-1 text")
    return text.encode("latin-1")


class _NdarrayName:
    """``numpy.ndarray`` as a pickle names it: an argument of :func:`_reconstruct`, never called (calling
    it allocates any shape)."""

    def __new__(cls, *args, **kwargs):
        raise _Refused("numpy.ndarray called directly (numpy never writes that)")


# The only globals a feature pickle may reference, each read as a stand-in that allocates nothing
# beyond the bytes the pickle holds (numpy's dtype and scalar build small values from their arguments).
_SAFE_GLOBALS = {
    **{(m, "_reconstruct"): _reconstruct for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(m, "_frombuffer"): _frombuffer for m in ("numpy.core.numeric", "numpy._core.numeric")},
    **{(m, "scalar"): _scalar for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    ("numpy", "ndarray"): _NdarrayName, ("numpy", "dtype"): np.dtype, ("collections", "OrderedDict"): OrderedDict,
    ("_codecs", "encode"): _latin1,
}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        found = _SAFE_GLOBALS.get((module, name))
        if found is None:
            raise _Refused(f"refused to load {module}.{name} (only numpy arrays are allowed)")
        return found


def _raw_pickle(f) -> bool:
    """The open file is a pickle as it is (protocol 2 or later), not a .npy file (left at its start)."""
    head = f.read(2)
    f.seek(0)
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= pickle.HIGHEST_PROTOCOL


def _read_npy(path: Path) -> np.ndarray:
    """Read a .npy file; object arrays and plain pickles go through the array-only unpickler, after
    their opcodes were checked (:func:`kepp_core.schema.check_pickle`), and only the features' array
    is built, after its shape was checked (:func:`check_feature_shape`)."""
    with open_regular(path) as f:
        if not _raw_pickle(f):
            shape, dtype = npy_header(f, ".npy feature file")
            if not dtype.hasobject:
                check_feature_shape(shape, path)
                f.seek(0)
                return np.load(f, allow_pickle=False)
        data = f.read(MAX_PICKLE_BYTES + 1)
    if len(data) > MAX_PICKLE_BYTES:
        raise KeppError(f"{path}: a pickled feature file of more than {MAX_PICKLE_BYTES:,} bytes")
    check_pickle(data, str(path), max_depth=16, max_ops=1_000_000)
    obj = _ArrayOnlyUnpickler(io.BytesIO(data), encoding="latin1").load()
    if isinstance(obj, _Declared) and obj.dtype is not None and obj.dtype.hasobject and obj.shape == ():
        obj = obj.data[0]  # np.save of a dict: a 0-d object array holding it
    if isinstance(obj, dict):
        keys = {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}
        if FEATURE_KEY not in keys:
            raise KeppError(f"{path}: pickled feature dict has no {FEATURE_KEY!r} key ({len(keys)} other keys)")
        obj = keys[FEATURE_KEY]
    if not isinstance(obj, _Declared):
        raise KeppError(f"{path}: features must be a numeric array [seconds, D], got a pickled {type(obj).__name__}")
    if obj.shape is not None:
        check_feature_shape(obj.shape, path)
    return obj.build()


def check_feature_shape(shape: tuple[int, ...], path) -> None:
    """KeppError naming ``path`` unless ``shape`` is ``[seconds, D]`` within the bounds every feature
    file keeps (:data:`MAX_VIDEO_SECONDS` seconds, :data:`MAX_FEATURE_DIM` columns): checked before the
    array is allocated."""
    if len(shape) != 2 or shape[0] == 0:
        raise KeppError(f"{path}: features must have shape [seconds, D] with seconds > 0, got {tuple(shape)[:8]}")
    if shape[0] > MAX_VIDEO_SECONDS or shape[1] > MAX_FEATURE_DIM:
        raise KeppError(f"{path}: features of shape {list(shape)}: expected at most {MAX_VIDEO_SECONDS:,.0f} "
                        f"seconds and {MAX_FEATURE_DIM:,} columns")


def find_file(folder: Path, names: list[str], listing: set[str] | None = None) -> Path | None:
    """The first of ``names`` that exists in ``folder`` (None if none does); ``listing``: the
    folder's file names (:func:`file_names`), looked up instead of the disk."""
    for n in names:
        if (n in listing) if listing is not None else (folder / n).is_file():
            return folder / n
    return None


def file_names(folder: Path) -> set[str]:
    """Names of the files in ``folder`` (none if it is not a folder): one listing of a large
    folder instead of a look-up per name.

    >>> file_names(Path("no/such/folder"))
    set()
    """
    try:
        with os.scandir(folder) as it:
            return {e.name for e in it if e.is_file()}
    except (FileNotFoundError, NotADirectoryError):
        return set()


@lru_cache(maxsize=4096)
def _load(path: str, mtime: float) -> np.ndarray:
    p = Path(path)
    try:
        arr = _read_npy(p)
    except KeppError:
        raise
    except (ValueError, OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError, MemoryError,
            RecursionError, KeyError, IndexError) as e:  # the library's message may quote the file: not shown
        raise KeppError(f"{p}: not a readable .npy feature file ({_reason(e)})") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or not np.issubdtype(arr.dtype, np.number):
        raise KeppError(f"{p}: features must be a numeric array [seconds, D] with seconds > 0, "
                        f"got shape {arr.shape} of {arr.dtype}")
    if np.iscomplexobj(arr):
        raise KeppError(f"{p}: features are complex numbers ({arr.dtype}), expected real numbers")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
    check_finite(out, p)
    return out


def _reason(e: BaseException) -> str:
    """Why a feature file could not be read, without the library's text (it may quote the file)."""
    if isinstance(e, _Refused):
        return str(e)  # our own allow-list's message: names the refused global or the malformed array
    return f"{type(e).__name__} while reading it"


def check_finite(arr: np.ndarray, where) -> None:
    """KeppError naming ``where`` unless every value is finite (NaN, inf and values too large
    for float32 are refused: they poison training and silently change metrics)."""
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise KeppError(f"{where}: features hold {int(bad.sum())} non-finite values (NaN, inf or beyond "
                        f"float32), first at second {r}, column {c}: {arr[r, c]}; expected finite numbers")


def read_feature_shape(path: str | Path) -> tuple[int, int]:
    """Shape ``(seconds, D)`` of a feature file; raises KeppError if it is not a 2-D array or
    not a readable ``.npy`` file (a truncated one included).

    Plain arrays are read from the header only; a pickled S3D dict is read whole (safely).
    """
    path = Path(path)
    try:
        with open_regular(path) as f:
            pickled = _raw_pickle(f)
            if not pickled:
                shape, dtype = npy_header(f, ".npy feature file")
    except OSError as e:
        raise KeppError(f"{path}: not a readable .npy feature file ({e.strerror or type(e).__name__})") from None
    if pickled or dtype.hasobject:
        shape = _load(str(path), path.stat().st_mtime).shape  # a pickled S3D dict: read it safely
    check_feature_shape(shape, path)
    return int(shape[0]), int(shape[1])


SHAPES_FILE = "feature-shapes.json"


class FeatureShapes:
    """Shapes ``(seconds, D)`` of feature files, kept in ``<folder>/feature-shapes.json``
    (a :class:`~kepp_core.data.file_index.FileIndex`): a file whose size and modification time
    match its entry is not opened, any other is read with :func:`read_feature_shape` (so a bad
    file raises the same KeppError naming it). Call :meth:`save` once all shapes are read.

    >>> shapes = FeatureShapes()
    >>> shapes.shape("world/features/ArcWeld_0UcBldDI0RA.npy")  # doctest: +SKIP
    (157, 256)
    >>> shapes.save()                                         # doctest: +SKIP
    """

    def __init__(self) -> None:
        self._index = FileIndex(SHAPES_FILE, "kepp-feature-shapes", lambda path: list(read_feature_shape(path)),
                                lambda v: type(v) is list and len(v) == 2 and all(type(n) is int for n in v)
                                and 0 < v[0] <= MAX_VIDEO_SECONDS and 0 < v[1] <= MAX_FEATURE_DIM)

    def shape(self, path: str | Path) -> tuple[int, int]:
        """The shape of the feature file ``path``."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise KeppError(f"{path}: not a readable .npy feature file ({e})") from None
        seconds, dim = self._index.get(path, st)
        return seconds, dim

    def save(self) -> None:
        """Write the index of every folder that gained or changed shapes."""
        self._index.save()


def load_features(path: str | Path, dim: int | None = None) -> np.ndarray:
    """Load ``[seconds, D]`` features as float32 (cached); ``dim`` checks D."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: feature file not found")
    arr = _load(str(path), path.stat().st_mtime)
    if dim is not None and arr.shape[1] != dim:
        raise KeppError(f"{path}: features have dimension {arr.shape[1]}, expected {dim}")
    return arr


def check_manifests_under(ds, roots) -> None:
    """Refuse a dataset (a KeppError) whose feature folders hold a ``features.json`` lying outside
    ``roots`` (the app's allowed folders) once links are resolved: the app reads the manifest to
    know the features' encoder, so a manifest linking elsewhere names a path like any data file.
    ``roots`` None (the command line) checks nothing."""
    if roots is None:
        return
    for folder in sorted({Path(v.feature_file).parent for v in ds.videos if v.feature_file is not None}):
        manifest = folder / MANIFEST
        if os.path.lexists(manifest):
            check_under(os.path.realpath(manifest), roots, f"{manifest} (the feature manifest)")


def features_manifest(ds) -> dict:
    """The encoder that made a dataset's features (its feature folder's ``features.json``):
    ``{"encoder": name or None, "dim": D or None, "folder": path or None}``."""
    files = [v.feature_file for v in ds.videos if v.feature_file is not None]
    if not files:
        return {"encoder": None, "dim": None, "folder": None}
    folder = Path(files[0]).parent
    manifest = read_manifest(folder) or {}
    return {"encoder": manifest.get("encoder"), "dim": manifest.get("dim"), "folder": str(folder)}
