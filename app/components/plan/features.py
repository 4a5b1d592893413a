"""Where the Plan page's features come from: a dataset video's own per-second features, or the video file
encoded with the S3D encoder chosen (an upload: with it, or with the dataset's encoder)."""

from __future__ import annotations

from components.records import backend
from kepp_core import api
from kepp_core.errors import KeppError

__all__ = ["features_of"]


def features_of(cfg, enc, ctl, clip):
    """A function giving the chosen video's per-second features: a dataset video's own, or the file encoded
    with the S3D encoder chosen (an upload: with it, or with the dataset's encoder)."""
    def made_by(spec: str) -> bool:  # the dataset's features are this encoder's: read, not encoded
        try:
            return bool(enc["encoder"]) and api.encoder_spec(enc["encoder"], (spec,)) == spec
        except KeppError:
            return False

    def features():
        if ctl.s3d is not None and not (clip.video is not None and made_by(ctl.s3d)):
            return backend.encode_upload(cfg, clip.path, ctl.s3d)
        if clip.video is not None:
            return api.video_features(clip.video)
        return backend.encode_upload(cfg, clip.path, api.encoder_spec(enc["encoder"], cfg.encoders))
    return features
