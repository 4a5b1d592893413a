"""Importing checkpoints of the official KEPP / PDPP code into a models folder.

An official checkpoint is a ``torch.save`` dict (``model`` and ``ema`` state dicts of the
official ``GaussianDiffusion``, keys ``module.``-prefixed when saved from DDP). It is read with
``torch.load(weights_only=True)`` only (tensors and plain containers, no code). Sizes come
from tensor shapes: ``dim`` from the step embedding's first linear layer, ``dim_mults`` from
each level's first conv, the sample width from the first conv's in-channels (checked against
the last conv's out-channels) and the diffusion steps from ``betas``. The widths of the blocks
follow from the two models together: the planning model stacks graph, LLM and action rows of
``A`` each plus the observation, the step model actions plus the observation, so
``A = (plan width - step width) / 2``. The horizon is not in any shape and is given.

The models folder written is this package's layout (``OUT/T<h>/step``,
``OUT/T<h>/plan-graph-R1``, each ``model.safetensors`` + ``config.json``), its config naming
the architecture (``official``), the feature layout and where the weights came from.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from kepp_core.data.official import official_actions
from kepp_core.data.records import Dataset
from kepp_core.diffusion.official import LLM_FROM_GRAPH, SCHEDULE, OfficialDiffusion
from kepp_core.errors import KeppError
from kepp_core.graph.build import ProcedureGraph, build_graph, load_graph
from kepp_core.models.checkpoint import check_finite, dataset_fingerprint, save_checkpoint
from kepp_core.safe_load import load_torch
from kepp_core.catalog import (DEFAULT_M, DEFAULT_SETTING, GRAPH_FILE, OFFICIAL_ARCHITECTURE, SAMPLERS, ModelRole,
                               model_folder, models_dir)
from kepp_core.models.options import DEFAULT_SAMPLER_STEPS

WEIGHT_SETS = ("ema", "model")  # the official checkpoint's state dicts; the official evaluation samples with ema
PREFIX = "module."  # what DistributedDataParallel adds to every key
PLAN_ROLE = ModelRole("plan", "graph", 1)  # the official planner recommends one graph path
STEP_ROLE = ModelRole("step")


def read_official(path: str | Path, weights: str = "ema") -> tuple[dict[str, torch.Tensor], dict]:
    """The ``weights`` state dict of an official checkpoint (``module.`` stripped) and its
    ``epoch`` / ``step``; a KeppError naming the file (and key) when it is not one. The archive is
    checked before ``torch.load`` allocates anything (:func:`kepp_core.safe_load.load_torch`); the weights after:
    string keys, real floating-point tensors, finite values."""
    path = Path(path)
    if weights not in WEIGHT_SETS:
        raise KeppError(f"--weights {weights!r}: expected one of {', '.join(WEIGHT_SETS)}")
    if not os.path.lexists(path):
        raise KeppError(f"{path}: official checkpoint not found")
    ck = load_torch(path, "checkpoint", MAX_ARCHIVE_BYTES)
    if not isinstance(ck, dict) or weights not in ck:
        have = ", ".join(repr(k)[:40] for k in list(ck)[:10]) if isinstance(ck, dict) else type(ck).__name__
        raise KeppError(f"{path}: no key {weights!r} (an official checkpoint holds 'model' and 'ema'; found {have})")
    state = ck[weights]
    if not isinstance(state, dict) or not all(type(k) is str for k in state):
        raise KeppError(f"{path}: key {weights!r} is not a state dict (names of tensors as strings)")
    for k, v in state.items():
        if not isinstance(v, torch.Tensor) or not v.is_floating_point() or v.is_complex():
            kind = f"a {v.dtype} tensor" if isinstance(v, torch.Tensor) else f"a {type(v).__name__}"
            raise KeppError(f"{path}: {weights}[{k[:80]!r}] is {kind}, expected a real floating-point tensor")
    state = {(k[len(PREFIX):] if k.startswith(PREFIX) else k): v for k, v in state.items()}
    check_finite(state, path)
    return state, {k: ck[k] for k in ("epoch", "step") if type(ck.get(k)) is int and 0 <= ck[k] < 2**63}


MAX_ARCHIVE_BYTES = 2**34  # 16 GiB: official KEPP checkpoints are megabytes
MAX_DIFFUSION_STEPS = 100_000  # the official models use 200


def _shape(state: dict, key: str, where: Path, ndim: int) -> tuple[int, ...]:
    if key not in state:
        raise KeppError(f"{where}: key {key!r} missing (not an official TemporalUnet checkpoint)")
    shape = tuple(state[key].shape)
    if len(shape) != ndim:
        raise KeppError(f"{where}: key {key!r} has shape {list(shape)}, expected {ndim} dimensions")
    return shape


def network_sizes(state: dict[str, torch.Tensor], where: Path) -> dict:
    """``dim``, ``dim_mults``, the sample width and the diffusion steps read from tensor shapes."""
    four_dim, dim = _shape(state, "model.time_mlp.1.weight", where, 2)
    if four_dim != 4 * dim or dim < 2:
        raise KeppError(f"{where}: key 'model.time_mlp.1.weight' has shape [{four_dim}, {dim}], expected [4·dim, dim]")
    mults, width = [], None
    while f"model.downs.{len(mults)}.0.blocks.0.block.0.weight" in state:
        key = f"model.downs.{len(mults)}.0.blocks.0.block.0.weight"
        cout, cin, _ = _shape(state, key, where, 3)
        if cout % dim:
            raise KeppError(f"{where}: key {key!r} has {cout} out-channels, not a multiple of dim {dim}")
        width = cin if width is None else width
        mults.append(cout // dim)
    if width is None:
        raise KeppError(f"{where}: key 'model.downs.0.0.blocks.0.block.0.weight' missing "
                        f"(not an official TemporalUnet checkpoint)")
    out = _shape(state, "model.final_conv.1.weight", where, 3)
    if out[0] != width:
        raise KeppError(f"{where}: key 'model.final_conv.1.weight' gives {out[0]} channels, but the first conv "
                        f"takes {width}: not one network")
    (n_steps,) = _shape(state, "betas", where, 1)
    if not 1 <= n_steps <= MAX_DIFFUSION_STEPS:
        raise KeppError(f"{where}: key 'betas' gives {n_steps:,} diffusion steps, expected 1..{MAX_DIFFUSION_STEPS:,} "
                        f"(the official models use 200)")
    for name in SCHEDULE:
        if tuple(_shape(state, name, where, 1)) != (n_steps,):
            raise KeppError(f"{where}: key {name!r} has {state[name].shape[0]} entries, 'betas' {n_steps}")
    return {"dim": dim, "dim_mults": mults, "width": width, "n_steps": n_steps}


def block_widths(plan: dict, step: dict, plan_path: Path, step_path: Path) -> tuple[int, int]:
    """``(A, observation width)`` from the two models' sample widths (``3A + O`` and ``A + O``)."""
    diff = plan["width"] - step["width"]
    if diff <= 0 or diff % 2:
        raise KeppError(f"{plan_path} ({plan['width']} channels) and {step_path} ({step['width']} channels): "
                        f"the planning model should be 2·A wider than the step model (graph and LLM rows of A "
                        f"actions each); is --plan a planning model and --step a step model?")
    actions = diff // 2
    obs = step["width"] - actions
    if obs < 1:
        raise KeppError(f"{step_path}: {step['width']} channels leave no observation after {actions} actions")
    if plan["n_steps"] != step["n_steps"]:
        raise KeppError(f"{plan_path} has {plan['n_steps']} diffusion steps, {step_path} {step['n_steps']}: "
                        f"not trained together")
    return actions, obs


def load_official(path: Path, kind: str, sizes: dict, horizon: int, obs: int, actions: int,
                  state: dict) -> OfficialDiffusion:
    """The official model of ``kind`` with the checkpoint's weights (a KeppError naming the file
    and key when they do not fit)."""
    rows = actions if kind == "plan" else 0
    model = OfficialDiffusion(kind, horizon, obs, actions, n_steps=sizes["n_steps"], dim=sizes["dim"],
                              dim_mults=tuple(sizes["dim_mults"]), graph_dim=rows, llm_dim=rows,
                              llm_rows=LLM_FROM_GRAPH)
    mine = model.state_dict()
    extra = sorted(set(state) - set(mine))
    missing = sorted(set(mine) - set(state))
    if extra or missing:
        key = (extra or missing)[0]
        raise KeppError(f"{path}: key {key!r} {'is not part of' if extra else 'missing from'} the official "
                        f"network read from its shapes ({len(extra)} unexpected, {len(missing)} missing keys)")
    for key, value in state.items():
        if tuple(value.shape) != tuple(mine[key].shape):
            raise KeppError(f"{path}: key {key!r} has shape {list(value.shape)}, the network read from the "
                            f"other shapes needs {list(mine[key].shape)}")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model.eval()


def import_official(plan_path: str | Path, step_path: str | Path, out: str | Path, horizon: int,
                    weights: str = "ema", dataset: Dataset | None = None, graph: str | Path | None = None,
                    sampler: str = "ddpm", seconds: int = DEFAULT_M, setting: str = DEFAULT_SETTING) -> dict:
    """Write ``OUT/T<horizon>/step`` and ``OUT/T<horizon>/plan-graph-R1`` from official checkpoints.

    ``dataset``: the dataset the official models were trained on (its vocabulary is recorded;
    default: the official action ids ``0 .. A-1``); ``graph``: a graph file to store beside the
    planning model (default: built from ``dataset`` when given); ``seconds``: the observation
    length ``M`` (the observation width is ``M × D``). Returns a summary.
    """
    plan_path, step_path, out = Path(plan_path), Path(step_path), Path(out)
    if sampler not in SAMPLERS:
        raise KeppError(f"--sampler {sampler!r}: expected one of {', '.join(SAMPLERS)}")
    pstate, pmeta = read_official(plan_path, weights)
    sstate, smeta = read_official(step_path, weights)
    psize, ssize = network_sizes(pstate, plan_path), network_sizes(sstate, step_path)
    actions, obs = block_widths(psize, ssize, plan_path, step_path)
    if seconds < 1 or obs % seconds:
        raise KeppError(f"observation width {obs} is not a multiple of --seconds {seconds} "
                        f"(the seconds per observation the official features used)")
    if dataset is None:
        dataset = Dataset("official", official_actions(actions), {}, [])
    elif dataset.num_actions != actions:
        raise KeppError(f"dataset {dataset.name!r} has {dataset.num_actions} actions, the official checkpoints "
                        f"{actions}")
    g = _graph_for(graph, dataset)
    fp = dataset_fingerprint(dataset, obs, horizon, setting, seconds)
    folders = {}
    for role, path, state, size, meta in ((STEP_ROLE, step_path, sstate, ssize, smeta),
                                          (PLAN_ROLE, plan_path, pstate, psize, pmeta)):
        model = load_official(path, role.kind, size, horizon, obs, actions, state)
        folder = models_dir(out, horizon) / model_folder(role)
        config = {"kind": role.kind, "architecture": OFFICIAL_ARCHITECTURE, "model": model.config(),
                  "feature_layout": model.feature_layout, "dataset": fp,
                  "sampler": {"name": sampler, "steps": DEFAULT_SAMPLER_STEPS},
                  "source": {"imported_from": str(path), "weights": weights, **meta}}
        if role.kind == "plan":
            config.update({"condition": "graph", "R": 1, "recommend": "p2kg"})
        save_checkpoint(folder, model, config)
        if role.kind == "plan" and g is not None:
            g.save(folder / GRAPH_FILE)
        folders[role.kind] = str(folder)
    return {"step": folders["step"], "plan": folders["plan"], "horizon": horizon, "actions": actions,
            "observation": obs, "seconds": seconds, "dim": psize["dim"], "dim_mults": psize["dim_mults"],
            "n_steps": psize["n_steps"], "weights": weights, "sampler": sampler,
            "graph": str(Path(folders["plan"]) / GRAPH_FILE) if g is not None else None}


def imported_from(cfg: dict) -> str | None:
    """Where an imported model's weights came from, in one line (None for this package's own models).

    >>> imported_from({"source": {"imported_from": "plan.pth.tar", "weights": "ema", "epoch": 3}})
    'plan.pth.tar (ema weights, epoch 3)'
    """
    src = cfg.get("source") or {}
    if "imported_from" not in src:
        return None
    epoch = f", epoch {src['epoch']}" if "epoch" in src else ""
    return f"{src['imported_from']} ({src.get('weights', 'ema')} weights{epoch})"


def _graph_for(graph: str | Path | None, dataset: Dataset) -> ProcedureGraph | None:
    """The graph to store beside the planning model: the file given (its vocabulary checked),
    else one built from the dataset's training plans, else none."""
    if graph is not None:
        g = load_graph(graph)
        if g.vocabulary_hash() != dataset.vocabulary_hash():
            raise KeppError(f"{graph}: a graph of {g.num_actions} actions whose vocabulary is not the models' "
                            f"({dataset.num_actions} actions of {dataset.name!r})")
        return g
    if dataset.videos:
        return build_graph(dataset)
    return None


__all__ = ["WEIGHT_SETS", "block_widths", "import_official", "imported_from", "load_official", "network_sizes", "read_official"]
