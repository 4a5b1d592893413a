"""Video decoding (decord), clips and thumbnails, feature encoders and the feature cache."""

from kepp_core.video.decode import (VIDEO_SUFFIXES, VideoInfo, find_videos, open_video, read_clip,
                                    read_frames, thumbnail, video_info)
from kepp_core.video.encoders import (BuiltinEncoder, CallableEncoder, FeatureEncoder, TorchScriptEncoder,
                                      get_encoder, seconds_of)
from kepp_core.video.encode import encode_video, read_manifest, save_features, write_manifest
from kepp_core.video.write import write_video

__all__ = [
    "VIDEO_SUFFIXES", "BuiltinEncoder", "CallableEncoder", "FeatureEncoder",
    "TorchScriptEncoder", "VideoInfo", "encode_video", "find_videos",
    "get_encoder", "open_video", "read_clip", "read_frames", "read_manifest", "save_features", "seconds_of",
    "thumbnail", "video_info", "write_manifest", "write_video",
]
