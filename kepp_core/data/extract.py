"""Filling a dataset's feature cache: encode every video that has no ``features/<stem>.npy`` yet.

The cache of a dataset is its ``features/`` folder: one ``<video file stem>.npy`` ``[seconds, D]``
per video (the names the loaders look for) plus ``features.json`` recording the encoder and D,
so features of different encoders are never mixed silently. Feature files that were there
before without ``features.json`` (e.g. the S3D features of CrossTask) are never overwritten
unless ``force``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.video.decode import find_videos
from kepp_core.video.encode import MANIFEST, decode_for, read_manifest, save_features, write_manifest
from kepp_core.video.encoders import FeatureEncoder, check_features, get_encoder


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


def dataset_jobs(ds: Dataset, features_dir: Path | None) -> tuple[list[tuple[str, Path]], list[str], Path]:
    """The ``(video id, file)`` pairs to encode, the ids without a video file, and the features folder."""
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
        jobs, missing, fdir = dataset_jobs(source, Path(features_dir) if features_dir else None)
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
