"""Filling a dataset's feature cache: encode every video that has no ``features/<stem>.npy`` yet.

The cache of a dataset is its ``features/`` folder: one ``<video file stem>.npy`` ``[seconds, D]``
per video (the names the loaders look for) plus ``features.json`` recording the encoder and D,
so features of different encoders are never mixed silently. Feature files that were there
before without ``features.json`` (e.g. the S3D features of CrossTask) are never overwritten
unless ``force``.

Several processes can fill one cache (``torchrun --nproc-per-node N kepp features extract``,
or any launcher that sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``): each rank encodes a
disjoint, deterministic share of the videos (every ``WORLD_SIZE``-th output name in sorted
order, :class:`Shard`), writes each file atomically and skips files that exist (so a killed
run resumes); at the end the ranks meet once through ``torch.distributed`` (gloo backend,
``MASTER_ADDR``/``MASTER_PORT`` from the launcher), rank 0 writes ``features.json`` and
holds the merged summary. The files are byte for byte those of a single-process run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.io import remove_stale_temporaries, writer_lock
from kepp_core.video.decode import find_videos
from kepp_core.video.encode import (MANIFEST, decode_workers, encode_files, encoder_record, read_manifest,
                                    save_features, write_manifest)
from kepp_core.video.encoders import FeatureEncoder, get_encoder

__all__ = ["ExtractSummary", "extract_features"]


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
    ranks: int = 1            # processes that shared the work
    rank: int = 0             # this process (only rank 0's summary covers every rank)

    @property
    def speed(self) -> float:
        """Video-seconds encoded per wall-clock second."""
        return self.video_seconds / self.wall_seconds if self.wall_seconds > 0 else float("nan")


@dataclass(frozen=True)
class Shard:
    """This process's place among the ranks of a multi-process run (rank 0 of 1 alone).

    >>> Shard(1, 2).take([("a", Path("x/a.mp4")), ("b", Path("x/b.mp4")), ("c", Path("x/c.mp4"))])
    [('b', PosixPath('x/b.mp4'))]
    """

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls, env: dict | None = None) -> Shard:
        """``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` as set by torchrun and other launchers
        (``SLURM_PROCID``/``SLURM_NTASKS``/``SLURM_LOCALID`` under plain ``srun``)."""
        env = os.environ if env is None else env
        try:
            world = int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", "1")))
            rank = int(env.get("RANK", env.get("SLURM_PROCID", "0")))
            local = int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", "0")))
        except ValueError as e:
            raise KeppError(f"RANK/WORLD_SIZE/LOCAL_RANK must be integers ({e})") from None
        if world < 1 or not 0 <= rank < world:
            raise KeppError(f"RANK={rank} is not within WORLD_SIZE={world}")
        return cls(rank, world, local)

    def take(self, jobs: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
        """This rank's share of ``(video id, file)`` jobs: every ``world``-th output name in
        sorted order (jobs writing the same name stay together, in their order)."""
        if self.world == 1:
            return list(jobs)
        names = sorted({p.stem for _, p in jobs})
        mine = {n for i, n in enumerate(names) if i % self.world == self.rank}
        return [(v, p) for v, p in jobs if p.stem in mine]


def gather_summaries(summary: ExtractSummary, shard: Shard, timeout_hours: float = 12.0) -> list[ExtractSummary]:
    """Every rank's summary, on every rank (one gloo all-gather, which is also the barrier)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=shard.rank, world_size=shard.world,
                            timeout=timedelta(hours=timeout_hours))
    try:
        out: list = [None] * shard.world
        dist.all_gather_object(out, summary)
    finally:
        dist.destroy_process_group()
    return out


def merge_summaries(parts: list[ExtractSummary]) -> ExtractSummary:
    """One summary of all ranks: files written, cached and seconds added up, wall time the longest."""
    dims = {p.dim for p in parts if p.written and p.dim is not None}
    if len(dims) > 1:
        raise KeppError(f"ranks produced features of different sizes D={sorted(dims)}")
    first = parts[0]
    return replace(first, dim=dims.pop() if dims else first.dim,
                   written=sorted(f for p in parts for f in p.written), skipped=sum(p.skipped for p in parts),
                   video_seconds=sum(p.video_seconds for p in parts),
                   wall_seconds=max(p.wall_seconds for p in parts), ranks=len(parts))


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


def _source_jobs(source: Dataset | str | os.PathLike, features_dir) -> tuple[list, list, Path]:
    """``(jobs, missing video ids, features folder)`` of a dataset or of ``ROOT/videos``."""
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
    return jobs, missing, fdir


def extract_features(source: Dataset | str | os.PathLike, encoder: str | FeatureEncoder = "builtin",
                     force: bool = False, features_dir: str | os.PathLike | None = None,
                     progress: bool = True, shard: Shard | None = None, workers: int | None = None) -> ExtractSummary:
    """Fill the feature cache: encode every video of a dataset (or every video file in
    ``ROOT/videos``) that has no ``features/<stem>.npy`` yet, with a progress bar.

    ``force`` re-encodes everything. A cache made by another encoder raises a KeppError
    unless ``force``; a corrupt, empty or unsupported video raises a KeppError naming it.
    ``shard`` (default: from ``RANK``/``WORLD_SIZE``): this process's share of a
    multi-process run; the returned summary then covers every rank (see the module docstring).
    ``workers``: threads decoding videos while the network encodes (default: the encoder's
    ``decode_workers``; :func:`~kepp_core.video.encode.encode_files`), the same files either way.

    >>> extract_features("demo-world", "builtin").written  # doctest: +SKIP
    []
    """
    shard = Shard.from_env() if shard is None else shard
    if shard.world > 1 and not (os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT")):
        raise KeppError(f"WORLD_SIZE={shard.world} but MASTER_ADDR/MASTER_PORT are not set: start the ranks "
                        "with torchrun, or export them (the address and a free port of rank 0's machine)")
    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    workers = decode_workers(enc, workers)
    jobs, missing, fdir = _source_jobs(source, features_dir)
    summary = ExtractSummary(features_dir=fdir, encoder=enc.name, missing_videos=missing, rank=shard.rank)
    manifest = read_manifest(fdir)
    check_same_encoder(fdir, manifest, enc, force)
    with writer_lock(fdir, "kepp features extract") if shard.rank == 0 else contextlib.nullcontext():
        if shard.world == 1:
            remove_stale_temporaries(fdir)  # what a killed extraction left half-written
        else:  # each rank clears its own files' leftovers only: another rank may be writing its own now
            for _vid, path in shard.take(jobs):
                remove_stale_temporaries(fdir, name=glob.escape(f"{path.stem}.npy"))
        return _extract(jobs, fdir, enc, summary, manifest, force, progress, shard, workers)


def check_same_encoder(fdir: Path, manifest: dict | None, enc: FeatureEncoder, force: bool) -> None:
    """One feature folder, one encoder: refuse (unless ``force``) to add features of ``enc`` to a
    folder whose manifest names another encoder (another network, weights, crop or sampling: the
    name holds them), or where a forced replacement by another encoder stopped before it finished;
    the message names both encoders."""
    if manifest is None or force:
        return
    where = fdir / MANIFEST
    if manifest.get("replacing"):
        raise KeppError(f"{where}: a forced extraction with encoder {manifest['encoder']!r} replacing "
                        f"{manifest['replacing']!r} stopped before it finished, so the folder holds features of "
                        f"both: run it again with --force")
    if manifest["encoder"] != enc.name:
        raise KeppError(f"{where}: the folder holds features of encoder {manifest['encoder']!r}"
                        f"{_made_of(manifest)}, this run's encoder is {enc.name!r}{_made_of(encoder_record(enc))}: "
                        f"one folder holds one encoder's features; extract into another folder (--features) "
                        f"or force a recompute (--force) to replace them")


def _made_of(record: dict) -> str:
    """An encoder's crop and frames as a manifest records them, in words (empty where it has none)."""
    parts = [f"{record['crop']} px crop" if record.get("crop") else "",
             f"{record['frames']} frames per row" if record.get("frames") else ""]
    return f" ({', '.join(p for p in parts if p)})" if any(parts) else ""


def _extract(jobs, fdir: Path, enc: FeatureEncoder, summary: ExtractSummary, manifest: dict | None, force: bool,
             progress: bool, shard: Shard, workers: int = 1) -> ExtractSummary:
    """Encode this rank's share of ``jobs`` into ``fdir`` (see :func:`extract_features`) with ``workers``
    decoding threads. Rank 0 writes the manifest before the first feature file: a run stopped halfway
    leaves a folder that names its encoder, so a resume with another encoder is refused
    (:func:`check_same_encoder`)."""
    from tqdm import tqdm

    mine = shard.take(jobs)
    todo = [(vid, p) for vid, p in mine if force or not (fdir / f"{p.stem}.npy").is_file()]
    summary.skipped = len(mine) - len(todo)
    # the cache's width binds new files unless they replace another encoder's (force)
    summary.dim = manifest.get("dim") if manifest and manifest["encoder"] == enc.name else None
    if shard.rank == 0 and todo and (manifest is None or force or manifest["encoder"] != enc.name):
        replacing = manifest and (manifest.get("replacing") or
                                  (manifest["encoder"] if manifest["encoder"] != enc.name else None))
        write_manifest(fdir, encoder_record(enc), summary.dim, replacing)
    start = time.perf_counter()
    show = bool(progress and todo and shard.rank == 0)
    # an encoder that takes a video in chunks (S3D) is slow enough per video to show its seconds too
    seconds_bar = tqdm(total=0, desc="  seconds of video", unit="s", leave=False, dynamic_ncols=True, position=1) \
        if show and getattr(enc, "chunk_seconds", None) else None
    encoded = encode_files([p for _, p in todo], enc, workers, seconds_progress(seconds_bar))
    for path, feats, seconds in tqdm(encoded, total=len(todo), unit="video", disable=not show, dynamic_ncols=True,
                                     desc="features" if shard.world == 1 else f"features (rank 0 of {shard.world})",
                                     position=0):
        if summary.dim is not None and feats.shape[1] != summary.dim:
            raise KeppError(f"{path}: encoder {enc.name} gave D={feats.shape[1]}, but the cache in "
                            f"{fdir} has D={summary.dim}")
        summary.dim = int(feats.shape[1])
        save_features(fdir / f"{path.stem}.npy", feats)
        summary.written.append(fdir / f"{path.stem}.npy")
        summary.video_seconds += seconds
    summary.wall_seconds = time.perf_counter() - start
    if seconds_bar is not None:
        seconds_bar.close()
    if shard.world > 1:
        summary = replace(merge_summaries(gather_summaries(summary, shard)), rank=shard.rank)
    final = {"dim": summary.dim, **encoder_record(enc)}
    if shard.rank == 0 and summary.written and read_manifest(fdir) != final:  # the width known, nothing replaced
        write_manifest(fdir, final, summary.dim)
    return summary


def seconds_progress(bar):
    """A ``progress(done, total)`` callback of :func:`~kepp_core.video.encode.encode_file` that
    shows one video's seconds on a tqdm ``bar`` (None: no callback)."""
    if bar is None:
        return None

    def update(done: float, total: float) -> None:
        if done == 0:
            bar.reset(total=round(total, 1))
        bar.n = round(done, 1)
        bar.refresh()
    return update
