"""Hostile files for the reliability tests: pickles that crash or mislead an unpickler, official
checkpoints with poisoned weights or lying size fields, and small valid datasets to break."""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

OFFICIAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "official-kepp"
PLAN = {"task": "t", "steps": ["a", "b", "c"], "split": "train"}  # a plans line, less its video


def need_official() -> None:
    """Skip without ../shared/data/official-kepp (fail under CI=true)."""
    if not (OFFICIAL / "official-kepp-plan-T3.pth.tar").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("../shared/data/official-kepp is missing")
        pytest.skip("no ../shared/data/official-kepp (the official checkpoints)")


def deep_tuple_key(depth: int = 300_000) -> bytes:
    """A dict whose key is a tuple nested ``depth`` deep: hashing it overflows the C stack."""
    return b"\x80\x02}" + b")" + b"\x85" * depth + b"K\x01s."


def deep_list(depth: int = 100_000) -> bytes:
    """The opcodes of a list nested ``depth`` deep (no stop): to embed in a larger pickle."""
    return b"]" * depth + b"a" * (depth - 1)


def graph_pickle(edit) -> bytes:
    """An official-style P²KG pickle (a networkx DiGraph of counts) after ``edit(graph)``."""
    import networkx as nx

    g = nx.DiGraph()
    for u, v, w in [(0, 1, 3), (1, 2, 2), (0, 2, 1)]:
        g.add_edge(u, v, weight=w)
    edit(g)
    return pickle.dumps(g, protocol=4)


def graph_with_deep_weight(depth: int = 100_000) -> bytes:
    """A DiGraph pickle whose one edge weight is a list nested ``depth`` deep."""
    marker = 123456789
    data = graph_pickle(lambda g: g.add_edge(3, 4, weight=marker))
    packed = b"J" + marker.to_bytes(4, "little")
    assert data.count(packed) == 1
    return data.replace(packed, deep_list(depth))


GRAPH_CASES = {
    # name: (pickle bytes, words of the error)
    "weight-beyond-a-c-long": (lambda: graph_pickle(lambda g: g.add_edge(1, 0, weight=2**70)), "weight"),
    "weight-huge-float": (lambda: graph_pickle(lambda g: g.add_edge(1, 0, weight=1e300)), "weight"),
    "count-beyond-2^53": (lambda: graph_pickle(lambda g: g.add_edge(1, 0, weight=2**60)), "weight"),
    "no-edges": (lambda: graph_pickle(lambda g: g.remove_edges_from(list(g.edges))), "no edges"),
    "adjacency-a-list": (lambda: graph_pickle(lambda g: setattr(g, "_adj", [1, 2])), "malformed"),
    "edge-data-a-string": (lambda: graph_pickle(lambda g: g._adj[0].__setitem__(1, "x")), "edge 0 → 1"),
    "weight-nested-deep": (graph_with_deep_weight, "levels deep"),
}


def official_state(path: Path) -> dict:
    import torch

    return torch.load(path, weights_only=True, map_location="cpu")


def save_checkpoint(ck: dict, path: Path) -> Path:
    import torch

    torch.save(ck, path)
    return path


def poisoned(edit, name: str, folder: Path) -> Path:
    """The shared official planning checkpoint after ``edit(checkpoint)``, saved as ``name``."""
    ck = official_state(OFFICIAL / "official-kepp-plan-T3.pth.tar")
    edit(ck)
    return save_checkpoint(ck, folder / name)


def _first_weight(ck: dict) -> str:
    return next(k for k, v in ck["ema"].items() if v.ndim == 2)


def _nan(ck):
    ck["ema"][_first_weight(ck)][0, 0] = math.nan


def _inf_betas(ck):
    key = next(k for k in ck["ema"] if k.endswith("betas"))
    ck["ema"][key][-1] = math.inf


def _complex(ck):
    import torch

    key = _first_weight(ck)
    ck["ema"][key] = ck["ema"][key].to(torch.complex64)


def _int_keys(ck):
    ck["ema"] = {k if i else 7: v for i, (k, v) in enumerate(ck["ema"].items())}


CHECKPOINT_CASES = {
    "nan-weight": (_nan, "non-finite"),
    "infinite-betas": (_inf_betas, "non-finite"),
    "complex-tensor": (_complex, "complex"),
    "integer-key": (_int_keys, "not a state dict"),
}


def size_lie(src: Path, dst: Path, elements: int = 20 * 2**30) -> Path:
    """``src`` (a torch.save archive) whose first storage claims ``elements`` float32 values (80 GB)."""
    with zipfile.ZipFile(src) as z:
        items = [(i, z.read(i.filename)) for i in z.infolist()]
    out = []
    for info, data in items:
        if info.filename.endswith("/data.pkl"):
            # the first storage tuple ('storage', <type>, '0', 'cpu', numel): replace its numel
            at = data.index(b"X\x03\x00\x00\x00cpu")
            end = at + len(b"X\x03\x00\x00\x00cpu")
            if data[end:end + 1] in (b"q", b"\x94"):  # BINPUT n / MEMOIZE after the string
                end += 2 if data[end:end + 1] == b"q" else 1
            op = data[end:end + 1]
            width = {b"K": 1, b"M": 2, b"J": 4}[op]
            data = data[:end] + b"\x8a\x05" + elements.to_bytes(5, "little") + data[end + 1 + width:]
        out.append((info, data))
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for info, data in out:
            z.writestr(info, data)
    return dst


def deep_data_pkl(src: Path, dst: Path, depth: int = 100_000) -> Path:
    """``src`` whose ``data.pkl`` holds a list nested ``depth`` deep (under an extra key)."""
    with zipfile.ZipFile(src) as z:
        items = [(i, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for info, data in items:
            if info.filename.endswith("/data.pkl"):
                data = b"\x80\x02" + deep_list(depth) + b"."
            z.writestr(info, data)
    return dst


def s3d_dict_nested_deep(path: Path, depth: int = 100_000) -> Path:
    """A pickled S3D-style feature .npy whose dict holds a list nested ``depth`` deep."""
    buffer = io.BytesIO()
    np.save(buffer, np.array({"frames_features": 0}, dtype=object), allow_pickle=True)
    data = buffer.getvalue()
    marker = b"K\x00"  # the int 0 of the dict's one value
    at = data.rindex(marker)
    path.write_bytes(data[:at] + deep_list(depth) + data[at + len(marker):])
    return path


def npy_header_lie(path: Path, rows: int = 5 * 10**12, dim: int = 5) -> Path:
    """A float32 .npy whose header claims ``rows × dim`` values (here 25·10¹², 93 TiB) with 40 bytes of data."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (rows, dim)}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    path.write_bytes(buffer.getvalue() + b"\0" * 40)
    return path


def plans_lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


class _Reduced:
    """Pickles as ``func(*args)``: a feature pickle naming one allowed global with arguments numpy never writes."""

    def __init__(self, func, *args) -> None:
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def features_pickle(value, protocol: int = 4) -> bytes:
    """A pickled S3D-style feature dict whose ``frames_features`` is ``value``."""
    return pickle.dumps({"frames_features": value}, protocol=protocol)


def array_without_data(shape: tuple, dtype: str = "f8") -> bytes:
    """A feature dict whose array is numpy's ``_reconstruct`` with a declared shape and no data (numpy's own
    ``_reconstruct`` allocates the shape; a ``[100000, 1500]`` float64 one is 1.2 GB from 100 bytes)."""
    from numpy._core.multiarray import _reconstruct

    return features_pickle(_Reduced(_reconstruct, np.ndarray, shape, dtype.encode()))


def ndarray_called(shape: tuple, dtype: str = "f8") -> bytes:
    """A feature dict whose array is ``numpy.ndarray(shape, dtype)`` called by the pickle (an allocation)."""
    return features_pickle(_Reduced(np.ndarray, shape, dtype))


def array_short_of_data(shape: tuple, data: bytes = b"\0" * 16) -> bytes:
    """A feature dict whose array is numpy's protocol-5 ``_frombuffer`` of ``data`` under a larger ``shape``."""
    from numpy._core.numeric import _frombuffer

    return features_pickle(_Reduced(_frombuffer, bytearray(data), np.dtype("f4"), shape, "C"), protocol=5)
