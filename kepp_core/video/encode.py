"""Per-second features of video files, and the feature-cache files (``.npy``, ``features.json``).

One file at a time (:func:`encode_file`), or many through a pipeline that keeps a network busy
(:func:`encode_files` with ``workers`` > 1): decoding threads (decord releases the GIL while it
decodes) take the videos in order, split a video into parts over the threads where fewer videos
than threads are left (each part a run of whole seconds, decoded by a reader of its own from its
first frame), cut what they decode into the encoder's windows a few seconds at a time
(:data:`PIECE_SECONDS`) and put them on a bounded queue (:data:`QUEUE_PIECES_PER_WORKER` pieces per
thread: memory stays bounded); the calling thread puts each chunk of a video together from its
pieces, runs the network on it once complete and hands back each video's features in the order
given. The network sees the same chunks, cut into the same batches, as on the serial path, so the
features are the same, byte for byte.

The cache of a dataset is its ``features/`` folder: one ``<video file stem>.npy`` ``[seconds, D]``
per video (the names the loaders look for) plus ``features.json`` recording the encoder and D,
so features of different encoders are never mixed silently. Feature files that were there
before without ``features.json`` (e.g. the S3D features of CrossTask) are never overwritten
unless ``force``.
"""

from __future__ import annotations

import collections
import io
import math
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, ClassVar

import msgspec
import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_bytes, atomic_write_json, read_bytes
from kepp_core.schema import Meta, Struct, decode_json
from kepp_core.video.decode import decode_frames, frame_indices, open_video
from kepp_core.video.encoders import FeatureEncoder, check_features, get_encoder

__all__ = ["encode_video", "read_manifest", "save_features", "write_manifest"]

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
                 progress: Callable[[float, float], None] | None = None, workers: int | None = None) -> np.ndarray:
    """Per-second features ``[seconds, D]`` float32 of one video file (``progress``: see :func:`encode_file`;
    ``workers``: decoding threads, default the encoder's ``decode_workers``, see :func:`encode_files`).

    >>> encode_video("videos/tea_0000.mp4").shape  # doctest: +SKIP
    (31, 256)
    """
    enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
    return next(encode_files([path], enc, workers, progress))[1]


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


# --- many videos, decoded in parallel -------------------------------------------------------------------------
QUEUE_PIECES_PER_WORKER = 4  # decoded pieces that may wait for the network, per decoding thread
PIECE_SECONDS = 4  # what a decoding thread decodes and queues at a time (a chunk's divisor), encoders with windows
MAX_WORKERS = 64


def decode_workers(encoder: FeatureEncoder, workers: int | None = None) -> int:
    """The decoding threads for ``encoder``: ``workers``, else its ``decode_workers``, else 1 (the serial path)."""
    n = workers if workers is not None else getattr(encoder, "decode_workers", 1)
    if not isinstance(n, int) or not 1 <= n <= MAX_WORKERS:
        raise KeppError(f"decoding workers {n!r}: expected a whole number from 1 to {MAX_WORKERS}")
    return n


def encode_files(paths: Sequence[str | os.PathLike], encoder: FeatureEncoder, workers: int | None = None,
                 progress: Callable[[float, float], None] | None = None) -> Iterator[tuple[Path, np.ndarray, float]]:
    """``(path, features [seconds, D], seconds of video)`` of every file, in the order given; a video
    that cannot be encoded raises its KeppError when its turn comes, as on the serial path.

    ``workers`` (default :func:`decode_workers`) threads decode while this thread runs the encoder (module
    docstring); 1 is :func:`encode_file` one file after another. ``progress(done, total)``: the seconds
    of the video whose turn it is."""
    n = decode_workers(encoder, workers)
    if n == 1:
        for path in paths:
            feats, seconds = encode_file(path, encoder, progress)
            yield Path(path), feats, seconds
        return
    pipe = _Pipeline([Path(p) for p in paths], encoder, n, progress)
    try:
        yield from pipe.results()
    finally:
        pipe.close()


class _Video:
    """One video on its way through the pipeline: its frame plan in chunks (what the encoder gets at once,
    as on the serial path) and pieces (what a decoding thread queues at once: whole seconds, a chunk's
    divisor), the decoded pieces of chunks not complete yet and the features of the chunks encoded."""

    def __init__(self, path: Path, size, indices, fps: float, chunk: int, piece: int) -> None:
        self.path, self.size, self.indices, self.fps, self.chunk, self.piece = path, size, indices, fps, chunk, piece
        self.chunks, self.pieces = max(1, -(-len(indices) // chunk)), max(1, -(-len(indices) // piece))
        self.waiting: dict[int, dict[int, tuple]] = {}  # chunk -> piece -> (windows or frames, frames)
        self.parts: dict[int, np.ndarray] = {}

    @property
    def seconds(self) -> float:
        return len(self.indices) / self.fps

    def frames(self, piece: int) -> Sequence[int]:
        return self.indices[piece * self.piece:(piece + 1) * self.piece]

    def add(self, piece: int, x, n_frames: int) -> tuple[int, list] | None:
        """Keep a decoded piece; ``(chunk, its pieces in order)`` once that chunk is complete."""
        c = piece * self.piece // self.chunk
        got = self.waiting.setdefault(c, {})
        got[piece] = (x, n_frames)
        if sum(n for _, n in got.values()) < len(self.indices[c * self.chunk:(c + 1) * self.chunk]):
            return None
        del self.waiting[c]
        return c, [got[k] for k in sorted(got)]


class _Pipeline:
    """The decoding threads, the bounded queue and the network's loop of :func:`encode_files`."""

    def __init__(self, paths: list[Path], encoder: FeatureEncoder, workers: int, progress) -> None:
        self.paths, self.enc, self.workers, self.progress = paths, encoder, workers, progress
        self.prepare = getattr(encoder, "prepare", None)
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_PIECES_PER_WORKER * workers)
        self.lock, self.stop = threading.Lock(), threading.Event()
        self.spans: collections.deque = collections.deque()  # (video index, first piece, end piece, None) to decode
        self.videos: dict[int, _Video] = {}
        self.next_video = 0
        self.threads = [threading.Thread(target=self._work, name=f"kepp-decode-{k}", daemon=True)
                        for k in range(workers)]

    # --- the decoding threads --------------------------------------------------------------------------------
    def _put(self, item: tuple) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                unit = self._take()
                if unit is None:
                    break
                if unit != ():
                    self._decode(*unit)
        except BaseException as e:  # not a user error: the network's thread raises it as it is
            self._put(("bug", -1, e))
        finally:
            self._put(("done", -1, None))

    def _take(self) -> tuple | None:
        """The next run of pieces to decode: a part of a video already opened, else the next video (split
        into parts over the threads when fewer videos than threads are left); ``()`` when the video was
        refused, None when there is nothing left."""
        with self.lock:
            if self.spans:
                return self.spans.popleft()
            if self.next_video >= len(self.paths):
                return None
            i, self.next_video = self.next_video, self.next_video + 1
            left = len(self.paths) - self.next_video
        try:
            video, reader = self._open(self.paths[i])
        except KeppError as e:
            self._put(("error", i, e))
            return ()
        parts = min(video.pieces, self.workers) if left < self.workers else 1
        bounds = [round(k * video.pieces / parts) for k in range(parts + 1)]
        with self.lock:  # the video first: its other parts may be decoded (and encoded) before this one
            self.videos[i] = video
            self.spans.extendleft(reversed([(i, a, b, None) for a, b in zip(bounds[1:-1], bounds[2:])]))
        return i, bounds[0], bounds[1], reader

    def _open(self, path: Path):
        """The video's frame plan in chunks and pieces, and a reader at the encoder's size."""
        reader = _reader(path, self.enc)
        indices, fps = frame_plan(len(reader), float(reader.get_avg_fps()), self.enc)
        _check_length(path, len(indices), fps, self.enc)
        seconds = getattr(self.enc, "chunk_seconds", None)
        chunk = int(round(seconds * fps)) if seconds else max(1, len(indices))
        piece = int(round(math.gcd(int(seconds), PIECE_SECONDS) * fps)) \
            if seconds and self.prepare is not None and float(seconds).is_integer() and float(fps).is_integer() else chunk
        return _Video(path, getattr(reader, "_kepp_size", None), indices, fps, chunk, piece), reader

    def _decode(self, i: int, first: int, end: int, reader=None) -> None:
        """Decode pieces ``first..end-1`` of video ``i`` with a reader of its own (``reader``: the one the
        video was opened with, for its first part), cut them into the encoder's windows (``prepare``) and
        queue them."""
        video = self.videos[i]
        try:
            reader = reader if reader is not None else open_video(video.path, video.size)
            for p in range(first, end):
                frames = decode_frames(reader, video.frames(p), video.path)
                x = self.prepare(frames, video.fps) if self.prepare is not None else frames
                if not self._put(("piece", i, (p, x, len(frames)))):
                    return
        except KeppError as e:
            self._put(("error", i, e))

    # --- the network's thread --------------------------------------------------------------------------------
    def results(self) -> Iterator[tuple[Path, np.ndarray, float]]:
        """Each video's ``(path, features, seconds)`` in the order given, encoding chunks as they complete."""
        for t in self.threads:
            t.start()
        errors: dict[int, KeppError] = {}
        turn, running = 0, len(self.threads)
        while turn < len(self.paths):
            if turn in errors:
                raise errors[turn]
            video = self.videos.get(turn)
            if video is not None and len(video.parts) == video.chunks:
                yield video.path, np.concatenate([video.parts[c] for c in range(video.chunks)]), video.seconds
                del self.videos[turn]
                turn += 1
                continue
            if running == 0 and self.queue.empty():  # each thread's "done" comes after all it queued
                raise RuntimeError(f"the decoding threads ended before {self.paths[turn]} was decoded")
            kind, i, item = self.queue.get()
            if kind == "piece":
                self._encode(i, *item, turn)
            elif kind == "error":
                errors.setdefault(i, item)
            elif kind == "bug":
                raise item
            else:  # "done"
                running -= 1

    def _encode(self, i: int, piece: int, x, n_frames: int, turn: int) -> None:
        """Keep a piece; run the encoder on its chunk once every piece of the chunk is there."""
        video = self.videos[i]
        complete = video.add(piece, x, n_frames)
        if complete is None:
            return
        chunk, pieces = complete
        n = sum(k for _, k in pieces)
        if self.prepare is not None:
            feats = self.enc.embed(np.concatenate([w for w, _ in pieces]) if len(pieces) > 1 else pieces[0][0])
        else:
            feats = self.enc(pieces[0][0], video.fps)
        video.parts[chunk] = check_features(feats, n, video.fps, self.enc, str(video.path))
        if self.progress is not None and i == turn:
            done = min(len(video.indices), sum(len(video.indices[c * video.chunk:(c + 1) * video.chunk])
                                               for c in video.parts))
            self.progress(done / video.fps, video.seconds)

    def close(self) -> None:
        """Stop the decoding threads (after the last video, an error, or a consumer that stopped early)."""
        self.stop.set()
        for t in self.threads:
            while t.is_alive():
                try:
                    self.queue.get_nowait()
                except queue.Empty:
                    t.join(timeout=0.05)
