"""Uploaded videos: one private temporary folder per browser session, removed with the session.

Uploads never go to a shared, fixed folder: each session gets its own ``mkdtemp`` folder
(mode 0700) that holds only its latest upload and is deleted when the session's state is
dropped (the browser tab closed) or the server exits.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

import streamlit as st

from components.plan import decision
from kepp_core import api
from kepp_core.api import save_upload
from kepp_core.errors import KeppError

STATE_KEY = "kepp_upload_folder"


class UploadFolder:
    """A private temporary folder, deleted when this object is garbage-collected or at exit."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="kepp-upload-"))
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)

    def remove(self) -> None:
        """Delete the folder now."""
        self._remove()

    @property
    def removed(self) -> bool:
        """Whether the folder was deleted."""
        return not self._remove.alive


def session_folder() -> UploadFolder:
    """This session's upload folder (made on first use)."""
    folder = st.session_state.get(STATE_KEY)
    if folder is None or folder.removed or not folder.path.is_dir():
        folder = UploadFolder()
        st.session_state[STATE_KEY] = folder
    return folder


def store_upload(data: bytes, name: str) -> str:
    """Save an uploaded video in this session's folder and check that it decodes; returns its
    path. Earlier uploads of the session are deleted. A file that is not a video raises a
    KeppError naming it."""
    return save_upload(session_folder().path, data, name)


EXAMPLE_KEY = "kepp_upload_example"


def store_example(video_file, name: str) -> str:
    """A dataset video's file stored as this session's upload (the upload scene): its bytes go
    through :func:`store_upload` like a user's file; kept until another upload replaces it."""
    kept = st.session_state.get(EXAMPLE_KEY)
    if kept and kept["name"] == name and Path(kept["path"]).is_file():
        return kept["path"]
    if video_file is None or not Path(video_file).is_file():
        raise KeppError(f"example upload {name!r}: the dataset has no video file for it")
    path = store_upload(Path(video_file).read_bytes(), name)
    st.session_state[EXAMPLE_KEY] = {"name": name, "path": path}
    return path


def refused(cfg, ds, s3d_label: str | None = None, width_error: str | None = None):
    """Why an upload cannot be offered on ``ds`` (:func:`components.plan.decision.upload_refused`: it needs an
    encoder the models accept; None: it can): the encoder the dataset's features name, whether this app may
    load it, and the S3D encoder chosen with the models' word on its features."""
    encoder, not_allowed = api.Workspace(cfg, ds).feature_encoder()["encoder"], None
    if encoder and s3d_label is None:
        try:
            api.encoder_spec(encoder, cfg.encoders)
        except KeppError as e:
            not_allowed = str(e)
    return decision.upload_refused(encoder, not_allowed, s3d_label, width_error)
