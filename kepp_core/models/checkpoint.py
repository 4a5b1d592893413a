"""Checkpoints: ``model.safetensors`` + ``config.json`` in one folder, written atomically.

Crash consistency: every save gives the weights file and ``config.json`` the same random id
(safetensors metadata ``kepp_id`` and ``weights_id``); a kill between the two writes leaves
ids that differ, which loading reports instead of pairing new weights with an old config.

``config.json`` holds the format tag, the model kind (``step``, ``plan``, ``task-classifier``, ``endpoints``),
the network config, the dataset fingerprint (vocabulary hash, feature size, horizon,
observation setting) and the training config and metrics. Loading checks that a
checkpoint matches a dataset and horizon and turns corrupt or truncated files into
KeppErrors.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from kepp_core.data.records import Dataset
from kepp_core.diffusion import ProjectedDiffusion
from kepp_core.diffusion.official import OfficialDiffusion
from kepp_core.errors import KeppError
from kepp_core.io import atomic_path, atomic_write_json, fault_point
from kepp_core.models.classifier import TaskClassifier
from kepp_core.models.endpoints import endpoint_model_from_config
from kepp_core.catalog import CONFIG_FILE, OFFICIAL_ARCHITECTURE, WEIGHTS_FILE
from kepp_core.models.folders import FORMAT, VERSION, read_config


ID_KEY = "kepp_id"  # safetensors metadata: the id of the save that wrote the file
MAX_PARAMETERS = 2_000_000_000  # a config describing more is not one of ours (and would not fit)


def save_tensors(path: Path, tensors: dict[str, torch.Tensor], save_id: str | None = None) -> None:
    with atomic_path(path) as tmp:
        save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp),
                  metadata={ID_KEY: save_id} if save_id else None)


def tensors_id(path: Path) -> str | None:
    """The save id recorded in a safetensors file (None for files written without one)."""
    if not path.is_file():
        raise KeppError(f"{path}: checkpoint weights not found")
    try:
        with safe_open(str(path), "pt") as f:
            return (f.metadata() or {}).get(ID_KEY)
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise KeppError(f"{path}: corrupt or truncated safetensors file ({e})") from None


def new_save_id() -> str:
    return uuid.uuid4().hex


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file (a clear error when it is missing or corrupt)."""
    if not path.is_file():
        raise KeppError(f"{path}: checkpoint weights not found")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise KeppError(f"{path}: corrupt or truncated safetensors file ({e})") from None


def save_checkpoint(folder: str | Path, model: torch.nn.Module, config: dict) -> Path:
    """Write weights then config, both stamped with one new save id (see the module docstring)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_id = new_save_id()
    save_tensors(folder / WEIGHTS_FILE, model.state_dict(), save_id)
    fault_point("checkpoint-weights")
    atomic_write_json(folder / CONFIG_FILE, {"format": FORMAT, "version": VERSION, **config, "weights_id": save_id})
    fault_point("checkpoint-config")
    return folder


def load_checkpoint(folder: str | Path, kind: str | None = None,
                    device: str | torch.device = "cpu") -> tuple[torch.nn.Module, dict]:
    """Load a checkpoint folder into its model (eval mode) and return ``(model, config)``."""
    folder = Path(folder)
    cfg = read_config(folder)
    if kind is not None and cfg.get("kind") != kind:
        raise KeppError(f"{folder}: a {cfg.get('kind')!r} checkpoint, expected a {kind!r} one")
    check_model_size(cfg, folder / CONFIG_FILE, folder / WEIGHTS_FILE)
    try:
        model = build_model(cfg)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise KeppError(f"{folder / CONFIG_FILE}: incomplete model config ({e})") from None
    if cfg.get("weights_id") is not None and tensors_id(folder / WEIGHTS_FILE) != cfg["weights_id"]:
        raise KeppError(f"{folder}: {WEIGHTS_FILE} and {CONFIG_FILE} come from different saves (a run was stopped "
                        f"between writing them): continue it with 'kepp train ... --resume' or train again")
    state = load_tensors(folder / WEIGHTS_FILE)
    check_finite(state, folder / WEIGHTS_FILE)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        first = str(e).splitlines()[0] if str(e) else "mismatch"
        raise KeppError(f"{folder / WEIGHTS_FILE}: weights do not match {CONFIG_FILE} ({first})") from None
    return model.to(device).eval(), cfg


def check_finite(state: dict[str, torch.Tensor], where: Path) -> None:
    """Refuse weights holding NaN or infinity: such a model plans nothing and would evaluate to a
    table of zeros with exit 0 (a diverged run saved, or a damaged file)."""
    for name, t in state.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            raise KeppError(f"{where}: tensor {name!r} holds {bad:,} non-finite values (NaN or infinity); "
                            f"the checkpoint is unusable, train again")


def check_model_size(cfg: dict, where: Path, weights: Path | None = None) -> int:
    """Count the parameters ``cfg`` describes without allocating them (on the meta device);
    a KeppError if the config is malformed, absurdly large, or larger than the weights file."""
    try:
        with torch.device("meta"):
            n = sum(t.numel() for t in build_model(cfg).state_dict().values())
    except KeppError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, OverflowError, MemoryError) as e:
        first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise KeppError(f"{where}: invalid model config ({first})") from None
    if n > MAX_PARAMETERS:
        raise KeppError(f"{where}: the model config describes {n:,} parameters (dim "
                        f"{cfg.get('model', {}).get('dim')!r}), more than {MAX_PARAMETERS:,}: not a kepp model")
    if weights is not None and weights.is_file() and n * 2 > weights.stat().st_size + 1_000_000:
        raise KeppError(f"{where}: the model config describes {n:,} parameters, but {weights.name} holds "
                        f"only {weights.stat().st_size:,} bytes: config and weights do not match")
    return n


def build_model(cfg: dict) -> torch.nn.Module:
    """The (untrained) network a checkpoint config describes: this package's own, or the official
    KEPP network and sampler for a config whose ``architecture`` is ``official`` (imported)."""
    if cfg["kind"] in ("step", "plan") and cfg.get("architecture") == OFFICIAL_ARCHITECTURE:
        return OfficialDiffusion.from_config(cfg["model"])
    if cfg["kind"] in ("step", "plan"):
        return ProjectedDiffusion.from_config(cfg["model"])
    if cfg["kind"] == "task-classifier":
        return TaskClassifier.from_config(cfg["model"])
    if cfg["kind"] == "endpoints":
        return endpoint_model_from_config(cfg["model"])
    raise KeppError(f"unknown checkpoint kind {cfg['kind']!r}")


def dataset_fingerprint(dataset: Dataset, obs_dim: int, horizon: int, setting: str, m: int) -> dict:
    return {"name": dataset.name, "vocabulary_hash": dataset.vocabulary_hash(),
            "num_actions": dataset.num_actions, "obs_dim": obs_dim, "m": m,
            "feature_dim": obs_dim // m, "horizon": horizon, "setting": setting,
            "tasks": sorted(dataset.tasks)}


def check_compatible(cfg: dict, dataset: Dataset, horizon: int | None = None, obs_dim: int | None = None,
                     where: str = "checkpoint", setting: str | None = None) -> None:
    """KeppError unless the checkpoint was trained on this vocabulary, feature size and horizon."""
    fp = cfg.get("dataset", {})
    if fp.get("vocabulary_hash") != dataset.vocabulary_hash():
        raise KeppError(f"{where}: trained on a vocabulary of {fp.get('num_actions')} actions "
                        f"({fp.get('name')!r}, hash {fp.get('vocabulary_hash')}), but dataset "
                        f"{dataset.name!r} has {dataset.num_actions} actions (hash {dataset.vocabulary_hash()})")
    if obs_dim is not None and fp.get("obs_dim") != obs_dim:
        raise KeppError(f"{where}: expects observations of size {fp.get('obs_dim')} "
                        f"({fp.get('m')} × {fp.get('feature_dim')}), the dataset gives {obs_dim}")
    if horizon is not None and fp.get("horizon") != horizon:
        raise KeppError(f"{where}: trained for horizon T={fp.get('horizon')}, not T={horizon}")
    if setting is not None and fp.get("setting") != setting:
        raise KeppError(f"{where}: trained with the {fp.get('setting')!r} observation setting, not {setting!r}")
