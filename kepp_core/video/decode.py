"""Video decoding with decord: metadata, frames at given times, clips and thumbnails.

Every reader checks the file first, so a missing, empty, corrupt or unsupported file raises
a ``KeppError`` naming it instead of crashing inside the decoder.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import has_suffix

__all__ = [
    "VIDEO_SUFFIXES", "VideoInfo", "find_videos", "open_video", "read_clip", "read_frames", "thumbnail", "video_info",
]

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v")


@dataclass(frozen=True)
class VideoInfo:
    """What a video file holds: frame rate, number of frames, duration (s) and frame size."""

    path: Path
    fps: float
    frames: int
    duration: float
    width: int
    height: int


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Send what native libraries write to file descriptor 2 (FFmpeg's "moov atom not found",
    decord's "ERROR opening ...") to /dev/null for the block: the caller turns a failure into one
    ``kepp: error:`` line, and those lines would come before it. Python's own ``sys.stderr`` is
    flushed first and written as usual afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def open_video(path: str | os.PathLike, size: tuple[int, int] | None = None):
    """A decord ``VideoReader`` for ``path`` (one decoding thread), optionally resizing frames
    to ``size = (width, height)`` while decoding."""
    import decord

    path = Path(path)
    if not path.is_file():
        raise KeppError(f"{path}: video file not found")
    if path.stat().st_size == 0:
        raise KeppError(f"{path}: video file is empty (0 bytes)")
    kwargs = {"ctx": decord.cpu(0), "num_threads": 1}
    if size is not None:
        kwargs.update(width=int(size[0]), height=int(size[1]))
    try:
        with native_stderr_silenced():
            reader = decord.VideoReader(str(path), **kwargs)
    except Exception as e:  # decord raises its own error types (DECORDError, RuntimeError)
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise KeppError(f"{path}: cannot decode video (corrupt or unsupported format: {reason[:160]})") from None
    if len(reader) == 0:
        raise KeppError(f"{path}: video has no frames")
    reader._kepp_size = tuple(size) if size is not None else None
    fps = float(reader.get_avg_fps())
    if not math.isfinite(fps) or fps <= 0:
        raise KeppError(f"{path}: video has no usable frame rate (got {fps})")
    return reader


def video_info(path: str | os.PathLike) -> VideoInfo:
    """Metadata of a video file.

    >>> video_info("videos/tea_0000.mp4")  # doctest: +SKIP
    VideoInfo(path=..., fps=8.0, frames=248, duration=31.0, width=96, height=96)
    """
    reader = open_video(path)
    n = len(reader)
    fps = float(reader.get_avg_fps())
    h, w = reader[0].shape[:2]
    return VideoInfo(path=Path(path), fps=fps, frames=n, duration=n / fps, width=int(w), height=int(h))


def decode_frames(reader, indices: Sequence[int], path) -> np.ndarray:
    """Frames ``indices`` of an open reader ``[N, H, W, 3]`` uint8 (PyAV where decord fails on a frame size)."""
    indices = list(indices)
    try:
        return reader.get_batch(indices).asnumpy()
    except Exception as e:
        first_error = e
    # decord 0.6 fails to copy frames of some widths (e.g. 48 px, a padded row size); PyAV
    # decodes those files correctly, at the size decord was asked for
    try:
        return _pyav_frames(path, indices, size=getattr(reader, "_kepp_size", None))
    except Exception:
        raise KeppError(f"{path}: decoding failed (corrupt video data: "
                        f"{str(first_error).strip()[:160]})") from None


def _pyav_frames(path, indices: Sequence[int], size: tuple[int, int] | None) -> np.ndarray:
    import av

    wanted = sorted(set(indices))
    got: dict[int, np.ndarray] = {}
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_count = 1
        for k, frame in enumerate(container.decode(stream)):
            if k > wanted[-1]:
                break
            if k in wanted:
                if size is not None:
                    frame = frame.reformat(width=size[0], height=size[1])
                got[k] = frame.to_ndarray(format="rgb24")
    last = max(got)
    return np.stack([got[min(i, last)] for i in indices])


def frame_indices(n_frames: int, fps: float, times: Sequence[float]) -> list[int]:
    """Indices of the frames shown at ``times`` (seconds), clamped to the video.

    >>> frame_indices(80, 8.0, [0.0, 0.2, 9.99, 50])
    [0, 1, 79, 79]
    """
    return [min(max(int(math.floor(t * fps + 1e-6)), 0), n_frames - 1) for t in times]


def read_frames(path: str | os.PathLike, times: Sequence[float] | None = None,
                size: tuple[int, int] | None = None) -> np.ndarray:
    """Frames ``[N, H, W, 3]`` uint8: all of them (``times=None``) or those shown at ``times``
    (seconds). ``size=(width, height)`` resizes while decoding."""
    reader = open_video(path, size)
    n = len(reader)
    if times is None:
        indices = list(range(n))
    else:
        indices = frame_indices(n, float(reader.get_avg_fps()), times)
    if not indices:
        return np.zeros((0, *reader[0].shape), np.uint8)
    return decode_frames(reader, indices, path)


def read_clip(path: str | os.PathLike, start: float, end: float, fps: float | None = None,
              size: tuple[int, int] | None = None) -> np.ndarray:
    """Frames of the time range ``[start, end)`` seconds, at the video's own rate or resampled
    to ``fps`` (nearest frame). The range is clamped to the video."""
    if end < start:
        raise KeppError(f"clip range [{start}, {end}] is invalid (expected start <= end)")
    reader = open_video(path, size)
    n, native = len(reader), float(reader.get_avg_fps())
    duration = n / native
    start, end = max(0.0, float(start)), min(float(end), duration)
    if end <= start:
        return np.zeros((0, *reader[0].shape), np.uint8)
    rate = native if fps is None else float(fps)
    if rate <= 0:
        raise KeppError(f"clip fps must be positive, got {fps}")
    count = max(1, int(math.ceil((end - start) * rate - 1e-6)))
    times = [start + k / rate for k in range(count)]
    return decode_frames(reader, frame_indices(n, native, times), path)


def thumbnail(path: str | os.PathLike, t: float = 0.0, size: int | tuple[int, int] = 128):
    """A ``PIL.Image`` of the frame at ``t`` seconds, fitted into ``size`` (longest side, or a
    ``(width, height)`` box) keeping the aspect ratio."""
    from PIL import Image

    frame = read_frames(path, [t])[0]
    img = Image.fromarray(frame)
    box = (size, size) if isinstance(size, int) else tuple(size)
    scale = min(box[0] / img.width, box[1] / img.height)
    new = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
    return img.resize(new, Image.Resampling.BILINEAR)


def find_videos(folder: str | os.PathLike) -> list[Path]:
    """Video files directly inside ``folder`` (sorted)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if has_suffix(p, *VIDEO_SUFFIXES) and p.is_file())
