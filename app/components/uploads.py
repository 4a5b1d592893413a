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

from kepp_core.api import save_upload

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
