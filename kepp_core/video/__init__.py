"""Video decoding (decord), clips and thumbnails, feature encoders and the feature cache."""

from kepp_core.video.decode import (VIDEO_SUFFIXES, VideoInfo, find_videos, open_video, read_clip,
                                    read_frames, thumbnail, video_info)
from kepp_core.video.encoders import (BuiltinEncoder, CallableEncoder, FeatureEncoder, TorchScriptEncoder,
                                      get_encoder, seconds_of)
from kepp_core.video.features import ExtractSummary, encode_video, extract_features, save_features
from kepp_core.video.write import write_video

__all__ = [
    "VIDEO_SUFFIXES", "BuiltinEncoder", "CallableEncoder", "ExtractSummary", "FeatureEncoder",
    "TorchScriptEncoder", "VideoInfo", "encode_video", "extract_features", "find_videos",
    "get_encoder", "open_video", "read_clip", "read_frames", "save_features", "seconds_of",
    "thumbnail", "video_info", "write_video",
]
