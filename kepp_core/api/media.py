"""Videos for the app: their facts, frame thumbnails, saving and checking an upload, and
encoding one with the dataset's encoder (only an encoder the person running the app allowed)."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_bytes
from kepp_core.video import encode_video, thumbnail, video_info
from kepp_core.video.encoders import trusted_encoder_spec


def video_meta(path: str | Path) -> dict:
    """fps, frames, duration, width, height of a video file (KeppError if it does not decode)."""
    info = video_info(str(path))
    return {"fps": info.fps, "frames": info.frames, "duration": info.duration,
            "width": info.width, "height": info.height}


def thumbnail_png(path: str | Path, t: float, size: int = 160) -> bytes:
    """A PNG thumbnail of the frame at ``t`` seconds."""
    buf = io.BytesIO()
    thumbnail(str(path), t, size).save(buf, format="PNG")
    return buf.getvalue()


def save_upload(folder: str | Path, data: bytes, name: str) -> str:
    """Save an uploaded video as the only file of ``folder`` (named by its content) and check that
    it decodes; returns its path. A file that is not a video is removed and raises a KeppError naming it."""
    suffix = Path(name).suffix.lower()
    if not re.fullmatch(r"\.[a-z0-9]{1,8}", suffix):
        suffix = ".mp4"
    folder = Path(folder)
    path = folder / f"{hashlib.sha1(data).hexdigest()[:16]}{suffix}"
    for old in folder.iterdir():
        if old != path:
            old.unlink(missing_ok=True)
    if not path.is_file():
        atomic_write_bytes(path, data)
    try:
        video_meta(path)
    except KeppError as e:
        path.unlink(missing_ok=True)
        raise KeppError(f"upload {name!r}: {str(e).split(': ', 1)[-1]}") from None
    return str(path)


def encoder_spec(name: str, trusted: tuple[str, ...] = ()) -> str:
    """The ``get_encoder`` spec of an encoder named in a feature manifest (``builtin-v1`` → ``builtin``):
    only the built-in one or one the person running the app allowed (``kepp app --encoder``)."""
    return trusted_encoder_spec(name, trusted)


def encode_clip_video(path: str | Path, encoder: str = "builtin") -> np.ndarray:
    """Per-second features ``[seconds, D]`` of a video file with an encoder spec (see :func:`encoder_spec`)."""
    return encode_video(str(path), encoder)
