"""A models folder read without torch: a checkpoint folder's ``config.json`` and the horizons
that have a trained step model (``ROOT/T<h>/step``). The app's first page asks which horizons
are trained; answering must not wait for torch to load (2 s)."""

from __future__ import annotations

from pathlib import Path

from kepp_core.catalog import CONFIG_FILE, STEP, WEIGHTS_FILE, model_folder, parse_horizon_folder
from kepp_core.errors import KeppError
from kepp_core.io import parse_json, read_text_utf8

FORMAT = "kepp-checkpoint"
VERSION = 1
WEIGHTS, CONFIG = WEIGHTS_FILE, CONFIG_FILE


def read_config(folder: str | Path) -> dict:
    """A checkpoint folder's config, checked for the kepp format and version."""
    folder = Path(folder)
    path = folder / CONFIG
    if not folder.is_dir():
        raise KeppError(f"{folder}: checkpoint folder not found")
    if not path.is_file():
        raise KeppError(f"{path}: not found (a checkpoint folder holds {WEIGHTS} and {CONFIG})")
    cfg = parse_json(read_text_utf8(path), f"{path}: corrupt checkpoint config", lines=False)
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        raise KeppError(f"{path}: not a kepp checkpoint config (expected format {FORMAT!r})")
    if cfg.get("version") != VERSION:
        raise KeppError(f"{path}: checkpoint version {cfg.get('version')} is not supported (expected {VERSION})")
    return cfg


def trained_horizons(root: str | Path) -> list[int]:
    """Horizons with a step model under a models folder (``ROOT/T<h>/step``)."""
    root = Path(root)
    out = []
    for p in sorted(root.glob(f"*/{model_folder(STEP)}")):
        horizon = parse_horizon_folder(p.parent.name)
        if horizon is None:
            continue
        try:
            read_config(p)
        except KeppError:
            continue
        out.append(horizon)
    return sorted(out)
