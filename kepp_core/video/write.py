"""Writing frames to an H.264 ``.mp4`` with PyAV, reproducibly and atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from kepp_core.io import atomic_path

__all__ = ["write_video"]

# Fixed x264 settings: one thread and a fixed preset make the encoded stream, and therefore
# the decoded frames, identical from run to run. Short GOPs keep seeking cheap.
X264_OPTIONS = {"preset": "ultrafast", "crf": "23", "threads": "1", "g": "32", "bf": "0"}


def write_video(path: str | os.PathLike, frames: np.ndarray | Iterable[np.ndarray], fps: float,
                options: dict[str, str] | None = None) -> Path:
    """Encode RGB uint8 frames (``[N, H, W, 3]``, even ``H`` and ``W``) to ``path`` with
    libx264/yuv420p; the file appears only once complete.

    >>> write_video("/tmp/kepp-doc.mp4", np.zeros((8, 32, 32, 3), np.uint8), fps=8)  # doctest: +SKIP
    """
    import av

    path = Path(path)
    frames = iter(frames)
    first = next(frames, None)
    if first is None:
        raise ValueError("write_video needs at least one frame")
    h, w = first.shape[:2]
    if h % 2 or w % 2:
        raise ValueError(f"frame size {w}x{h} must be even for yuv420p")
    with atomic_path(path, suffix=".mp4") as tmp:
        with av.open(str(tmp), "w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=int(round(fps)) if float(fps).is_integer() else fps)
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.codec_context.thread_count = 1
            stream.options = dict(options or X264_OPTIONS)
            for frame in _chain(first, frames):
                vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame, dtype=np.uint8), format="rgb24")
                for packet in stream.encode(vf):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
    return path


def _chain(first, rest):
    yield first
    yield from rest
