"""Videos for the app: their facts, frame thumbnails, saving and checking an upload, encoding one
with the dataset's encoder (only an encoder the person running the app allowed), and the S3D
text-video network."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

import numpy as np

from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING
from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_bytes, suffix_of
from kepp_core.video import encode_video, thumbnail, video_info
from kepp_core.video.encoders import get_encoder, trusted_encoder_spec

__all__ = ["encode_clip_video", "encoder_spec", "save_upload", "text_grounding", "thumbnail_png", "video_meta"]


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
    suffix = suffix_of(name)
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


def encode_clip_video(path: str | Path, encoder: str = "builtin", device: str | None = None) -> np.ndarray:
    """Per-second features ``[seconds, D]`` of a video file with an encoder spec (see :func:`encoder_spec`);
    an S3D network on ``device`` where its spec names none."""
    return encode_video(str(path), get_encoder(encoder, device))


def text_grounding(encoder: str, steps=None, dataset=None, horizon: int = 3, setting: str = DEFAULT_SETTING,
                   m: int = DEFAULT_M, *, device: str | None = None):
    """Zero-shot step grounding with the S3D text tower of ``encoder`` (an ``s3d:PATH`` spec) for
    ``steps`` (names; default: ``dataset``'s actions): a
    :class:`~kepp_core.video.grounding.TextEndpoints` whose ``.timeline(features)`` gives each
    second's most similar steps and whose ``.endpoint_log_probs(start, goal)`` the distributions of
    a start clip's first and a goal clip's last step. With a ``dataset`` whose features are that
    network's ``video_embedding``, the temperature is fitted on its training episodes of
    ``horizon`` steps (observations of ``m`` seconds, ``setting``); otherwise it is 1. The network runs on
    the spec's ``device=``, else ``device``, else the command's (:func:`kepp_core.devices.chosen`)."""
    from kepp_core.data.feature_files import features_manifest
    from kepp_core.training.data import episode_tensors
    from kepp_core.video.grounding import StepTexts, TextEndpoints
    from kepp_core.video.s3d import S3D
    from kepp_core.video.s3d_spec import S3DSpec, check_text_features

    spec = S3DSpec.parse(encoder)
    if steps is None:
        if dataset is None:
            raise KeppError("text grounding needs step names: a list, or a dataset whose actions to use")
        steps = dataset.actions
    grounding = TextEndpoints(StepTexts.embed(S3D.load(spec.weights, spec.dictionary, spec.device or device), steps))
    if dataset is None or list(steps) != list(dataset.actions):
        return grounding
    try:
        check_text_features(spec, features_manifest(dataset)["encoder"], f"dataset {dataset.name}")
        train = episode_tensors(dataset, horizon, "train", setting, m)
    except KeppError:
        return grounding  # features of another encoder (or no training episodes): the untuned temperature
    if not len(train.actions):
        return grounding
    return grounding.fitted(train.obs_start, train.obs_goal, train.actions[:, 0], train.actions[:, -1])
