"""Per-second feature files ``[seconds, D]`` (``.npy``): locating, checking and loading them."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError


def find_file(folder: Path, names: list[str]) -> Path | None:
    """The first of ``names`` that exists in ``folder`` (None if none does)."""
    for n in names:
        p = folder / n
        if p.is_file():
            return p
    return None


def read_feature_shape(path: str | Path) -> tuple[int, int]:
    """Shape of a feature file without reading its data; raises KeppError if it is not 2-D."""
    path = Path(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise KeppError(f"{path}: not a readable .npy feature file ({e})") from None
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise KeppError(f"{path}: features must have shape [seconds, D] with seconds > 0, got {arr.shape}")
    return int(arr.shape[0]), int(arr.shape[1])


@lru_cache(maxsize=4096)
def _load(path: str, mtime: float) -> np.ndarray:
    arr = np.load(path, allow_pickle=False)
    return np.ascontiguousarray(arr, dtype=np.float32)


def load_features(path: str | Path, dim: int | None = None) -> np.ndarray:
    """Load ``[seconds, D]`` features as float32 (cached); ``dim`` checks D."""
    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: feature file not found")
    read_feature_shape(path)
    arr = _load(str(path), path.stat().st_mtime)
    if dim is not None and arr.shape[1] != dim:
        raise KeppError(f"{path}: features have dimension {arr.shape[1]}, expected {dim}")
    return arr
