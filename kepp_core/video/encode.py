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
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ClassVar

import msgspec
import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_bytes, atomic_write_json, read_bytes
from kepp_core.schema import Meta, Struct, decode_json
from kepp_core.video.decode import decode_frames, frame_indices, open_video
from kepp_core.video.encoders import FeatureEncoder, check_features, get_encoder

MANIFEST = "features.json"


def _reader(path: str | os.PathLike, encoder: FeatureEncoder):
    """A decord reader at the size the encoder wants: its ``frame_size``, or what its
    ``decode_size(width, height)`` asks for this video's size (the S3D encoder's crop scale)."""
    sizer = getattr(encoder, "decode_size", None)
    if sizer is None:
        return open_video(path, encoder.frame_size)
    h, w = open_video(path)[0].shape[:2]
    return open_video(path, sizer(int(w), int(h)))


def frame_plan(n: int, native: float, encoder: FeatureEncoder) -> tuple[list[int] | range, float]:
    """The frame indices an encoder is given and their rate: every frame at the video's own rate,
    or the frame shown at each ``k / sample_fps`` s when the video is faster (or always, for an
    encoder with ``exact_fps``: a slower video repeats frames).

    >>> frame_plan(8, 4.0, type("E", (), {"sample_fps": 8.0, "exact_fps": True})())
    ([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7], 8.0)
    """
    want = encoder.sample_fps
    if want is None or (native <= want * 1.001 and not getattr(encoder, "exact_fps", False)):
        return range(n), native
    count = max(1, int(math.ceil(n / native * want - 1e-6)))
    return frame_indices(n, native, [k / want for k in range(count)]), float(want)


def decode_for(path: str | os.PathLike, encoder: FeatureEncoder) -> tuple[np.ndarray, float]:
    """Frames of a video as the encoder wants them (its frame rate and size) and their rate."""
    reader = _reader(path, encoder)
    indices, fps = frame_plan(len(reader), float(reader.get_avg_fps()), encoder)
    return decode_frames(reader, indices, path), fps


def encode_file(path: str | os.PathLike, encoder: FeatureEncoder,
                progress: Callable[[float, float], None] | None = None) -> tuple[np.ndarray, float]:
    """Per-second features ``[seconds, D]`` of one video file, checked, and the seconds of video
    encoded. An encoder with ``chunk_seconds`` gets the video that many seconds at a time (its
    features of a second depend only on that second), so memory stays bounded on long videos;
    ``progress(done, total)`` is called in seconds after each chunk. An encoder's ``min_frames``
    refuses a shorter video with a KeppError naming the file."""
    chunk = getattr(encoder, "chunk_seconds", None)
    if not chunk:
        frames, fps = decode_for(path, encoder)
        _check_length(path, len(frames), fps, encoder)
        return check_features(encoder(frames, fps), len(frames), fps, encoder, str(path)), len(frames) / fps
    reader = _reader(path, encoder)
    indices, fps = frame_plan(len(reader), float(reader.get_avg_fps()), encoder)
    _check_length(path, len(indices), fps, encoder)
    step = int(round(chunk * fps))
    parts = []
    if progress is not None:
        progress(0.0, len(indices) / fps)
    for a in range(0, len(indices), step):
        frames = decode_frames(reader, indices[a:a + step], path)
        parts.append(check_features(encoder(frames, fps), len(frames), fps, encoder, str(path)))
        if progress is not None:
            progress(min(a + step, len(indices)) / fps, len(indices) / fps)
    return np.concatenate(parts), len(indices) / fps


def _check_length(path, n: int, fps: float, encoder: FeatureEncoder) -> None:
    need = getattr(encoder, "min_frames", 0)
    if n < need:
        raise KeppError(f"{path}: the video is {n / fps:.2f} s long, shorter than one window of encoder "
                        f"{encoder.name} ({need} frames at {fps:g} fps = {need / fps:g} s)")


def encode_video(path: str | os.PathLike, encoder: str | FeatureEncoder = "builtin",
                 progress: Callable[[float, float], None] | None = None) -> np.ndarray:
    """Per-second features ``[seconds, D]`` float32 of one video file (``progress``: see :func:`encode_file`).

    >>> encode_video("videos/tea_0000.mp4").shape  # doctest: +SKIP
    (31, 256)
    """
    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    return encode_file(path, enc, progress)[0]


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
    """The schema of a feature cache's ``features.json`` (other keys are ignored): the encoder's
    name (what identifies it: for S3D its output, sampling, crop and weights digest), the features'
    width, and what the encoder was made of (its spec, weights, crop, frames per second of video and
    frames per feature row, where it has them). ``replacing``: the encoder whose features a forced
    re-extraction was replacing when it stopped (until it finishes, the folder holds both)."""

    HINTS: ClassVar[dict[str, str]] = {"encoder": "an encoder name", "dim": f"a feature width 1..{MAX_FEATURE_DIM}"}
    encoder: Annotated[str, Meta(min_length=1, max_length=1000, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")]
    dim: Annotated[int, Meta(ge=1, le=MAX_FEATURE_DIM)] | None = None
    spec: Annotated[str, Meta(max_length=5000)] | None = None
    weights: Annotated[str, Meta(max_length=1000)] | None = None
    crop: Annotated[int, Meta(ge=1, le=100_000)] | None = None
    fps: Annotated[float, Meta(gt=0, le=1000)] | None = None
    frames: Annotated[int, Meta(ge=1, le=100_000)] | None = None
    replacing: Annotated[str, Meta(max_length=1000)] | None = None


def read_manifest(features_dir: Path) -> dict | None:
    """The ``features.json`` of a feature cache (checked by :class:`Manifest`; keys without a value
    left out, ``dim`` always there), or None where there is none."""
    path = Path(features_dir) / MANIFEST
    if not path.exists():
        return None
    m = decode_json(read_bytes(path, 2**20), Manifest, str(path), lines=True)
    return {"dim": None} | {k: v for k, v in msgspec.structs.asdict(m).items() if v is not None}


def encoder_record(encoder: FeatureEncoder) -> dict:
    """What a feature cache's manifest records of ``encoder``: its name, and what it was made of
    where it says (``encoder.manifest``: the S3D encoder's spec, weights, crop and frames)."""
    return {"encoder": encoder.name, **getattr(encoder, "manifest", {})}


def write_manifest(features_dir: Path, encoder: str | dict, dim: int | None, replacing: str | None = None) -> None:
    """Write ``features.json``: the encoder (its name, or its :func:`encoder_record`), the width
    ``dim`` (None before the first file is written) and the encoder a forced run is ``replacing``."""
    record = {"encoder": encoder} if isinstance(encoder, str) else dict(encoder)
    extra = {"replacing": replacing} if replacing else {}
    atomic_write_json(Path(features_dir) / MANIFEST,
                      {"encoder": record.pop("encoder"), "dim": None if dim is None else int(dim), **record, **extra})
