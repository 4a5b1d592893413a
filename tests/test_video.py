"""Decoding real mp4 files with decord: metadata, frames at times, clips, thumbnails, bad files."""

from __future__ import annotations

import numpy as np
import pytest

from kepp_core.errors import KeppError
from kepp_core.video import read_clip, read_frames, thumbnail, video_info, write_video

COLOURS = np.array([[220, 30, 30], [30, 220, 30], [30, 30, 220], [230, 230, 40]], np.uint8)


@pytest.fixture(scope="module")
def colour_video(tmp_path_factory):
    """4 seconds at 8 fps, 48×32 pixels; second k is filled with COLOURS[k]."""
    frames = np.repeat(COLOURS, 8, axis=0)[:, None, None, :] * np.ones((1, 32, 48, 1), np.uint8)
    return write_video(tmp_path_factory.mktemp("video") / "colours.mp4", frames, fps=8)


def test_video_info_reports_fps_frames_duration_and_size(colour_video):
    info = video_info(colour_video)
    assert (info.fps, info.frames, info.duration, info.width, info.height) == (8.0, 32, 4.0, 48, 32)


def test_read_frames_at_times_returns_the_frames_shown_then(colour_video):
    frames = read_frames(colour_video, times=[0.1, 1.5, 2.0, 3.9, 99.0])
    assert frames.shape == (5, 32, 48, 3) and frames.dtype == np.uint8
    means = frames.reshape(5, -1, 3).mean(1)
    expected = COLOURS[[0, 1, 2, 3, 3]]
    assert np.abs(means - expected).max() < 12  # lossy H.264, solid colours survive closely


def test_read_frames_without_times_returns_every_frame(colour_video):
    assert read_frames(colour_video).shape == (32, 32, 48, 3)


def test_read_frames_can_resize_while_decoding(colour_video):
    assert read_frames(colour_video, [0.0], size=(24, 16)).shape == (1, 16, 24, 3)


def test_read_clip_covers_the_range_at_native_or_given_rate(colour_video):
    assert len(read_clip(colour_video, 1.0, 3.0)) == 16
    clip = read_clip(colour_video, 1.0, 3.0, fps=2)
    assert len(clip) == 4
    assert np.abs(clip.reshape(4, -1, 3).mean(1) - COLOURS[[1, 1, 2, 2]]).max() < 12
    assert len(read_clip(colour_video, 3.5, 10.0)) == 4  # clamped to the video's end
    with pytest.raises(KeppError, match="invalid"):
        read_clip(colour_video, 3.0, 1.0)


def test_thumbnail_keeps_aspect_ratio_and_shows_the_frame(colour_video):
    img = thumbnail(colour_video, 2.5, 24)
    assert img.size == (24, 16)
    assert np.abs(np.asarray(img).reshape(-1, 3).mean(0) - COLOURS[2]).max() < 12


def test_missing_video_raises_naming_the_file(tmp_path):
    with pytest.raises(KeppError, match="nothere.mp4: video file not found"):
        video_info(tmp_path / "nothere.mp4")


def test_empty_video_raises_naming_the_file(tmp_path):
    path = tmp_path / "empty.mp4"
    path.write_bytes(b"")
    with pytest.raises(KeppError, match=r"empty\.mp4: video file is empty"):
        read_frames(path)


def test_corrupt_video_raises_naming_the_file(tmp_path):
    path = tmp_path / "garbage.mp4"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    with pytest.raises(KeppError, match=r"garbage\.mp4: cannot decode video"):
        video_info(path)


def test_truncated_video_raises_naming_the_file(tmp_path, colour_video):
    path = tmp_path / "cut.mp4"
    path.write_bytes(colour_video.read_bytes()[: colour_video.stat().st_size // 2])
    with pytest.raises(KeppError, match=r"cut\.mp4"):
        read_frames(path)


def test_unsupported_file_raises_naming_the_file(tmp_path):
    path = tmp_path / "notes.mp4"
    path.write_text("this is a text file, not a video\n" * 20)
    with pytest.raises(KeppError, match=r"notes\.mp4: cannot decode video"):
        read_frames(path, [0.0])


def test_write_video_rejects_odd_frame_sizes(tmp_path):
    with pytest.raises(ValueError, match="even"):
        write_video(tmp_path / "odd.mp4", np.zeros((2, 15, 16, 3), np.uint8), fps=8)
    assert not list(tmp_path.iterdir())  # nothing half-written
