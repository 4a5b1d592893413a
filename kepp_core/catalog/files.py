"""The names of folders and files: a models root's horizon folders (``ROOT/T<h>``: the only code
that names or reads one) and the file names every writer and reader shares."""

from __future__ import annotations

from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.io import whole_number

__all__ = [
    "CONFIG_FILE", "DECODING_FILE", "DEMO_MODELS_DIR", "GRAPH_FILE", "GRAPH_PAIR", "LOG_FILE", "MANIFEST_FILE",
    "RECORDS_FILE", "RESULTS_FILE", "WEIGHTS_FILE", "horizon_folder", "models_dir", "models_horizon",
    "parse_horizon_folder", "PLANNER_FILE",
]

_HORIZON = "T"


def horizon_folder(horizon: int) -> str:
    """The folder of one horizon's models in a models root (``T3``); :func:`parse_horizon_folder` is
    its inverse, the only code that reads one.

    >>> horizon_folder(3), parse_horizon_folder("T12"), parse_horizon_folder("T1x"), parse_horizon_folder("step")
    ('T3', 12, None, None)
    """
    return f"{_HORIZON}{int(horizon)}"


def parse_horizon_folder(name: str) -> int | None:
    """The horizon a folder name says (``T4`` → 4), None for another name."""
    digits = str(name)[len(_HORIZON):]
    return whole_number(digits, 6) if str(name).startswith(_HORIZON) and digits == digits.strip() else None


def models_dir(root: str | Path, horizon: int) -> Path:
    """``ROOT/T<horizon>``: the folder of one horizon's models."""
    return Path(root) / horizon_folder(horizon)


def models_horizon(hdir: str | Path) -> int:
    """The horizon of a models folder ``ROOT/T<h>`` (KeppError for a folder not named so)."""
    horizon = parse_horizon_folder(Path(hdir).name)
    if horizon is None:
        raise KeppError(f"{hdir}: not a horizon's models folder (expected ROOT/{_HORIZON}<h>, e.g. {horizon_folder(3)})")
    return horizon


# --- file names -------------------------------------------------------------------------------------------
RESULTS_FILE = "results.json"  # a protocol folder's summary (kepp protocol)
RECORDS_FILE = "records.jsonl"  # a protocol folder's per-episode records
DECODING_FILE = "decoding.json"  # ROOT/T<h>/decoding.json: the +dec rows' choices of λ and endpoint mode
PLANNER_FILE = "planner.json"  # ROOT/T<h>/planner.json: the planning model chosen on validation episodes
LOG_FILE = "metrics.jsonl"  # a training run's log
CONFIG_FILE = "config.json"  # a checkpoint's config
WEIGHTS_FILE = "model.safetensors"  # a checkpoint's weights
GRAPH_FILE = "graph.json"  # the P²KG a planning model was trained with, saved beside it
GRAPH_PAIR = (".json", ".safetensors")  # a graph file's two forms, JSON and compact, written together by --compact
MANIFEST_FILE = "manifest.json"  # the demo models' manifest
DEMO_MODELS_DIR = "assets/demo"  # the shipped demo checkpoints, relative to the repository
