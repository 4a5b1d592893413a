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
import os
import pickle
from functools import lru_cache
from pathlib import Path

import numpy as np

from kepp_core.data.file_index import FileIndex
from kepp_core.data.records import MAX_VIDEO_SECONDS
from kepp_core.errors import KeppError
from kepp_core.io import check_under, open_regular
from kepp_core.safe_load import npy_header
from kepp_core.schema import check_pickle
from kepp_core.video.encode import MANIFEST, MAX_FEATURE_DIM, read_manifest

# The only globals a feature pickle may reference: numpy's array reconstruction.
_SAFE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict"),
}
FEATURE_KEY = "frames_features"
MAX_PICKLE_BYTES = 2**30  # a pickled S3D feature dict holds [seconds, 512] floats: megabytes


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name} (only numpy arrays are allowed)")


def _raw_pickle(f) -> bool:
    """The open file is a pickle as it is (protocol 2 or later), not a .npy file (left at its start)."""
    head = f.read(2)
    f.seek(0)
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= pickle.HIGHEST_PROTOCOL


def _read_npy(path: Path) -> np.ndarray:
    """Read a .npy file; object arrays and plain pickles go through the array-only unpickler, after
    their opcodes were checked (:func:`kepp_core.schema.check_pickle`)."""
    with open_regular(path) as f:
        if not _raw_pickle(f):
            shape, dtype = npy_header(f, ".npy feature file")
            if not dtype.hasobject:
                f.seek(0)
                return np.load(f, allow_pickle=False)
        data = f.read(MAX_PICKLE_BYTES + 1)
    if len(data) > MAX_PICKLE_BYTES:
        raise KeppError(f"{path}: a pickled feature file of more than {MAX_PICKLE_BYTES:,} bytes")
    check_pickle(data, str(path), max_depth=16, max_ops=1_000_000)
    obj = _ArrayOnlyUnpickler(io.BytesIO(data), encoding="latin1").load()
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject and obj.shape == ():
        obj = obj.item()
    if isinstance(obj, dict):
        keys = {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}
        if FEATURE_KEY not in keys:
            raise KeppError(f"{path}: pickled feature dict has no {FEATURE_KEY!r} key ({len(keys)} other keys)")
        obj = keys[FEATURE_KEY]
    return np.asarray(obj)


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
    if isinstance(e, pickle.UnpicklingError) and str(e).startswith("refused to load"):
        return str(e)  # our own allow-list's message: names the refused global
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
    if len(shape) != 2 or shape[0] == 0:
        raise KeppError(f"{path}: features must have shape [seconds, D] with seconds > 0, got {shape}")
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
