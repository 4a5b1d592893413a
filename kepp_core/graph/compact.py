"""The compact graph file: named numpy arrays in ``safetensors`` plus a JSON header.

A graph of millions of plans is mostly integers (CSR counts, distinct plans, plan order);
JSON spends ~5 bytes per integer and seconds to parse them, so the compact form stores
them as raw little-endian arrays (memory-mapped on load) and everything else (actions,
task names, parameters) as one JSON string in the safetensors metadata. Never pickled:
safetensors holds plain tensors only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import atomic_path, parse_json

HEADER_KEY = "kepp"


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray], header: dict) -> None:
    """Write ``arrays`` and a JSON ``header`` to a ``.safetensors`` file (atomically)."""
    from safetensors.numpy import save_file

    tensors = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    with atomic_path(path, suffix=".safetensors") as tmp:
        save_file(tensors, tmp, metadata={HEADER_KEY: json.dumps(header)})


def load_arrays(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and the JSON header of a file written by :func:`save_arrays`."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
            arrays = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError) as e:
        raise KeppError(f"{path}: not a readable safetensors file ({e})") from None
    if HEADER_KEY not in meta:
        raise KeppError(f"{path}: no KEPP header in the safetensors metadata (not a KEPP graph file)")
    header = parse_json(meta[HEADER_KEY], f"{path}: header", lines=False)
    return arrays, header


def load_header(path: str | Path) -> dict:
    """Only the JSON header of a file written by :func:`save_arrays` (no array is read)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
    except (SafetensorError, OSError) as e:
        raise KeppError(f"{path}: not a readable safetensors file ({e})") from None
    if HEADER_KEY not in meta:
        raise KeppError(f"{path}: no valid KEPP header in the safetensors metadata")
    return parse_json(meta[HEADER_KEY], f"{path}: header", lines=False)
