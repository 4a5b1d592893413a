"""Where things are: the checkout's shipped files and KEPP's cache folder, defined once.

The package runs from its checkout (``make demo``, ``pip install -e .``): the demo models
(``assets/demo``) and the protocol specs (``protocols/``) lie beside ``kepp_core/``. The package
never names its clients' files (the app plugs its commands in: :mod:`kepp_core.commands.plugins`). Everything the package computes and keeps between runs lives under the cache
home, ``$KEPP_HOME`` (default ``~/.cache/kepp``), one folder per kind (:data:`CACHE_FOLDERS`).

>>> (REPO_ROOT / "kepp_core" / "paths.py").is_file()
True
>>> cache_folder("demo-world").name
'demo-world'
"""

from __future__ import annotations

import os
from pathlib import Path

from kepp_core.catalog import DEMO_MODELS_DIR
from kepp_core.errors import KeppError

REPO_ROOT = Path(__file__).resolve().parent.parent  # the checkout: kepp_core/, assets/, protocols/
PROTOCOLS_DIR = REPO_ROOT / "protocols"
DEMO_ASSETS = REPO_ROOT / DEMO_MODELS_DIR  # the shipped demo checkpoints
DEMO_TABLE_SPEC = PROTOCOLS_DIR / "demo-table.toml"  # what ``kepp demo table`` runs by default

# The cache home's folders: the generated demo world, demo models trained when the shipped ones do
# not fit it, LLM replies, the app's remembered scenes and episode maps, the graph decoding choices made
# for models folders that are not written to (kepp_core.evaluation.methods.decoded), playlists of a records
# folder that cannot hold them, records files read and judged as columns (kepp_core.evaluation.store).
CACHE_FOLDERS = ("demo-world", "demo-models", "llm-cache", "scenes", "decoding", "episode-maps", "playlists", "records")


def kepp_home() -> Path:
    """KEPP's cache folder: ``$KEPP_HOME``, else ``~/.cache/kepp``."""
    home = os.environ.get("KEPP_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "kepp"


def cache_folder(name: str) -> Path:
    """The cache home's folder ``name`` (one of :data:`CACHE_FOLDERS`; not created here)."""
    if name not in CACHE_FOLDERS:
        raise KeppError(f"unknown cache folder {name!r} (expected one of {', '.join(CACHE_FOLDERS)})")
    return kepp_home() / name


def repo_path(*parts: str) -> Path:
    """A shipped file or folder of the checkout, e.g. ``repo_path("assets", "demo")``."""
    return REPO_ROOT.joinpath(*parts)


__all__ = ["CACHE_FOLDERS", "DEMO_ASSETS", "DEMO_TABLE_SPEC", "PROTOCOLS_DIR", "REPO_ROOT", "cache_folder", "kepp_home", "repo_path"]
