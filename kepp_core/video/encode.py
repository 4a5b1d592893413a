"""Per-second features of one video file, and the feature-cache files (``.npy``, ``features.json``).

The cache of a dataset is its ``features/`` folder: one ``<video file stem>.npy`` ``[seconds, D]``
per video (the names the loaders look for) plus ``features.json`` recording the encoder and D,
so features of different encoders are never mixed silently. Feature files that were there
before without ``features.json`` (e.g. the S3D features of CrossTask) are never overwritten
unless ``force``.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Annotated, ClassVar

import numpy as np

from kepp_core.io import atomic_write_bytes, atomic_write_json, read_bytes
from kepp_core.schema import Meta, Struct, decode_json
from kepp_core.video.decode import decode_frames, frame_indices, open_video
from kepp_core.video.encoders import FeatureEncoder, check_features, get_encoder

MANIFEST = "features.json"


def decode_for(path: str | os.PathLike, encoder: FeatureEncoder) -> tuple[np.ndarray, float]:
    """Frames of a video as the encoder wants them (its frame rate and size) and their rate."""
    reader = open_video(path, encoder.frame_size)
    n, native = len(reader), float(reader.get_avg_fps())
    want = encoder.sample_fps
    if want is None or native <= want * 1.001:
        return decode_frames(reader, range(n), path), native
    count = max(1, int(math.ceil(n / native * want - 1e-6)))
    return decode_frames(reader, frame_indices(n, native, [k / want for k in range(count)]), path), float(want)


def encode_video(path: str | os.PathLike, encoder: str | FeatureEncoder = "builtin") -> np.ndarray:
    """Per-second features ``[seconds, D]`` float32 of one video file.

    >>> encode_video("videos/tea_0000.mp4").shape  # doctest: +SKIP
    (31, 256)
    """
    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    frames, fps = decode_for(path, enc)
    return check_features(enc(frames, fps), len(frames), fps, enc, str(path))


def save_features(path: str | os.PathLike, feats: np.ndarray) -> None:
    """Write a ``.npy`` feature file atomically.

    The file is made in memory and written by Python: numpy writes an array to a real file with
    C calls whose short writes it does not check, so a full disk or `ulimit -f` would leave a
    truncated file and no error."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(feats, dtype=np.float32), allow_pickle=False)
    atomic_write_bytes(path, buffer.getvalue())


MAX_FEATURE_DIM = 65_536  # per-second feature widths: 256 built in, 512 for S3D


class Manifest(Struct):
    """The schema of a feature cache's ``features.json`` (other keys are ignored)."""

    HINTS: ClassVar[dict[str, str]] = {"encoder": "an encoder name", "dim": f"a feature width 1..{MAX_FEATURE_DIM}"}
    encoder: Annotated[str, Meta(min_length=1, max_length=1000, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")]
    dim: Annotated[int, Meta(ge=1, le=MAX_FEATURE_DIM)] | None = None


def read_manifest(features_dir: Path) -> dict | None:
    """The ``features.json`` of a feature cache (checked by :class:`Manifest`), or None where there is none."""
    path = Path(features_dir) / MANIFEST
    if not path.exists():
        return None
    m = decode_json(read_bytes(path, 2**20), Manifest, str(path), lines=True)
    return {"encoder": m.encoder, "dim": m.dim}


def write_manifest(features_dir: Path, encoder_name: str, dim: int) -> None:
    atomic_write_json(Path(features_dir) / MANIFEST, {"encoder": encoder_name, "dim": int(dim)})
