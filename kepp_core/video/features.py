"""Per-second features from video files and the on-disk feature cache.

The cache of a dataset is its ``features/`` folder: one ``<video file stem>.npy`` ``[seconds, D]``
per video (the names the loaders look for) plus ``features.json`` recording the encoder and D,
so features of different encoders are never mixed silently. Feature files that were there
before without ``features.json`` (e.g. the S3D features of CrossTask) are never overwritten
unless ``force``.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.io import atomic_path, atomic_write_json
from kepp_core.video.decode import find_videos, frame_indices, open_video, _get
from kepp_core.video.encoders import FeatureEncoder, check_features, get_encoder

MANIFEST = "features.json"


def decode_for(path: str | os.PathLike, encoder: FeatureEncoder) -> tuple[np.ndarray, float]:
    """Frames of a video as the encoder wants them (its frame rate and size) and their rate."""
    reader = open_video(path, encoder.frame_size)
    n, native = len(reader), float(reader.get_avg_fps())
    want = encoder.sample_fps
    if want is None or native <= want * 1.001:
        return _get(reader, range(n), path), native
    count = max(1, int(math.ceil(n / native * want - 1e-6)))
    return _get(reader, frame_indices(n, native, [k / want for k in range(count)]), path), float(want)


def encode_video(path: str | os.PathLike, encoder: str | FeatureEncoder = "builtin") -> np.ndarray:
    """Per-second features ``[seconds, D]`` float32 of one video file.

    >>> encode_video("videos/tea_0000.mp4").shape  # doctest: +SKIP
    (31, 256)
    """
    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    frames, fps = decode_for(path, enc)
    return check_features(enc(frames, fps), len(frames), fps, enc, str(path))


def save_features(path: str | os.PathLike, feats: np.ndarray) -> None:
    """Write a ``.npy`` feature file atomically."""
    with atomic_path(path, suffix=".npy") as tmp:
        np.save(tmp, np.ascontiguousarray(feats, dtype=np.float32), allow_pickle=False)


def read_manifest(features_dir: Path) -> dict | None:
    path = Path(features_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise KeppError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    if not isinstance(data, dict) or "encoder" not in data:
        raise KeppError(f"{path}: expected an object with 'encoder' and 'dim'")
    return data


def write_manifest(features_dir: Path, encoder_name: str, dim: int) -> None:
    atomic_write_json(Path(features_dir) / MANIFEST, {"encoder": encoder_name, "dim": int(dim)})


@dataclass
class ExtractSummary:
    """What ``extract_features`` did."""

    features_dir: Path
    encoder: str
    dim: int | None = None
    written: list[Path] = field(default_factory=list)
    skipped: int = 0          # already in the cache
    missing_videos: list[str] = field(default_factory=list)  # annotated videos without a file
    video_seconds: float = 0.0  # seconds of video encoded
    wall_seconds: float = 0.0

    @property
    def speed(self) -> float:
        """Video-seconds encoded per wall-clock second."""
        return self.video_seconds / self.wall_seconds if self.wall_seconds > 0 else float("nan")


def _jobs_from_dataset(ds: Dataset, features_dir: Path | None) -> tuple[list[tuple[str, Path]], list[str], Path]:
    root = Path(ds.root) if ds.root is not None else None
    if features_dir is None:
        meta = ds.meta.get("features")
        features_dir = Path(meta) if meta else (root / "features" if root else None)
    if features_dir is None:
        raise KeppError(f"dataset {ds.name} has no root folder: give the features folder explicitly")
    jobs, missing = [], []
    video_dir = root / "videos" if root is not None else None
    for v in ds.videos:
        path = v.video_file
        if path is None and video_dir is not None:
            for name in (f"{v.task}_{v.id}", v.id):
                hits = [video_dir / f"{name}{s}" for s in (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v")]
                path = next((h for h in hits if h.is_file()), None)
                if path is not None:
                    break
        if path is None:
            missing.append(v.id)
        else:
            jobs.append((v.id, Path(path)))
    return jobs, missing, features_dir


def extract_features(source: Dataset | str | os.PathLike, encoder: str | FeatureEncoder = "builtin",
                     force: bool = False, features_dir: str | os.PathLike | None = None,
                     progress: bool = True) -> ExtractSummary:
    """Fill the feature cache: encode every video of a dataset (or every video file in
    ``ROOT/videos``) that has no ``features/<stem>.npy`` yet, with a progress bar.

    ``force`` re-encodes everything. A cache made by another encoder raises a KeppError
    unless ``force``; a corrupt, empty or unsupported video raises a KeppError naming it.

    >>> extract_features("demo-world", "builtin").written  # doctest: +SKIP
    []
    """
    from tqdm import tqdm

    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    if isinstance(source, Dataset):
        jobs, missing, fdir = _jobs_from_dataset(source, Path(features_dir) if features_dir else None)
        where = f"dataset {source.name}"
    else:
        root = Path(source)
        if root.is_file():
            root = root.parent
        if not root.is_dir():
            raise KeppError(f"{root}: folder not found (expected a dataset folder with videos/)")
        jobs = [(p.stem, p) for p in find_videos(root / "videos")]
        missing, fdir = [], Path(features_dir) if features_dir else root / "features"
        where = str(root / "videos")
    if not jobs:
        raise KeppError(f"{where}: no video files found (expected videos/<name>.mp4)")

    summary = ExtractSummary(features_dir=fdir, encoder=enc.name, missing_videos=missing)
    manifest = read_manifest(fdir)
    if manifest is not None and manifest["encoder"] != enc.name and not force:
        raise KeppError(f"{fdir / MANIFEST}: the cache holds features of encoder {manifest['encoder']!r}, "
                        f"not {enc.name!r}; use --force to recompute them")
    todo = [(vid, p) for vid, p in jobs if force or not (fdir / f"{p.stem}.npy").is_file()]
    summary.skipped = len(jobs) - len(todo)
    summary.dim = manifest.get("dim") if manifest else None
    start = time.perf_counter()
    for _vid, path in tqdm(todo, desc="features", unit="video", disable=not progress or not todo,
                           dynamic_ncols=True):
        frames, fps = decode_for(path, enc)
        feats = check_features(enc(frames, fps), len(frames), fps, enc, str(path))
        if summary.dim is not None and feats.shape[1] != summary.dim:
            raise KeppError(f"{path}: encoder {enc.name} gave D={feats.shape[1]}, but the cache in "
                            f"{fdir} has D={summary.dim}")
        summary.dim = int(feats.shape[1])
        save_features(fdir / f"{path.stem}.npy", feats)
        summary.written.append(fdir / f"{path.stem}.npy")
        summary.video_seconds += len(frames) / fps
    summary.wall_seconds = time.perf_counter() - start
    if summary.written and (manifest is None or force or manifest.get("dim") != summary.dim):
        write_manifest(fdir, enc.name, summary.dim)
    return summary
