"""Per-second feature files ``[seconds, D]`` (``.npy``): locating, checking and loading them.

Two kinds of ``.npy`` are read:

- a plain 2-D float array (what ``kepp features extract`` writes);
- the S3D feature files distributed for CrossTask, COIN and NIV by the procedure-planning
  literature: a pickled dict ``{"frames_features": [seconds, 512], ...}``. These are read with a
  restricted unpickler that only rebuilds numpy arrays, dicts and plain values; any other
  object in the file (code, classes) is refused, so a hostile file cannot run anything.
"""

from __future__ import annotations

import io
import pickle
from functools import lru_cache
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError

# The only globals a feature pickle may reference: numpy's array reconstruction.
_SAFE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict"),
}
FEATURE_KEY = "frames_features"


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name} (only numpy arrays are allowed)")


def _read_npy(path: Path) -> np.ndarray:
    """Read a .npy file; object arrays go through the array-only unpickler."""
    with path.open("rb") as f:
        version = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(f)
        if not dtype.hasobject:
            f.seek(0)
            return np.load(f, allow_pickle=False)
        obj = _ArrayOnlyUnpickler(io.BufferedReader(f), encoding="latin1").load()
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject and obj.shape == ():
        obj = obj.item()
    if isinstance(obj, dict):
        keys = {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}
        if FEATURE_KEY not in keys:
            raise KeppError(f"{path}: pickled feature dict has no {FEATURE_KEY!r} key "
                            f"(keys: {', '.join(map(str, keys))})")
        obj = keys[FEATURE_KEY]
    return np.asarray(obj)


def find_file(folder: Path, names: list[str]) -> Path | None:
    """The first of ``names`` that exists in ``folder`` (None if none does)."""
    for n in names:
        p = folder / n
        if p.is_file():
            return p
    return None


@lru_cache(maxsize=4096)
def _load(path: str, mtime: float) -> np.ndarray:
    p = Path(path)
    try:
        arr = _read_npy(p)
    except KeppError:
        raise
    except (ValueError, OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError) as e:
        raise KeppError(f"{p}: not a readable .npy feature file ({e})") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or not np.issubdtype(arr.dtype, np.number):
        raise KeppError(f"{p}: features must be a numeric array [seconds, D] with seconds > 0, "
                        f"got shape {arr.shape} of {arr.dtype}")
    if np.iscomplexobj(arr):
        raise KeppError(f"{p}: features are complex numbers ({arr.dtype}), expected real numbers")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
    check_finite(out, p)
    return out


def check_finite(arr: np.ndarray, where) -> None:
    """KeppError naming ``where`` unless every value is finite (NaN, inf and values too large
    for float32 are refused: they poison training and silently change metrics)."""
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise KeppError(f"{where}: features hold {int(bad.sum())} non-finite values (NaN, inf or beyond "
                        f"float32), first at second {r}, column {c}: {arr[r, c]}; expected finite numbers")


def read_feature_shape(path: str | Path) -> tuple[int, int]:
    """Shape ``(seconds, D)`` of a feature file; raises KeppError if it is not a 2-D numeric array.

    Plain arrays are read from the header only.
    """
    path = Path(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:
        arr = _load(str(path), path.stat().st_mtime)  # a pickled S3D dict: read it safely
    except (OSError, EOFError) as e:
        raise KeppError(f"{path}: not a readable .npy feature file ({e})") from None
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise KeppError(f"{path}: features must have shape [seconds, D] with seconds > 0, got {arr.shape}")
    return int(arr.shape[0]), int(arr.shape[1])


def load_features(path: str | Path, dim: int | None = None) -> np.ndarray:
    """Load ``[seconds, D]`` features as float32 (cached); ``dim`` checks D."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: feature file not found")
    arr = _load(str(path), path.stat().st_mtime)
    if dim is not None and arr.shape[1] != dim:
        raise KeppError(f"{path}: features have dimension {arr.shape[1]}, expected {dim}")
    return arr
