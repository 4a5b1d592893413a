"""Cached access to ``kepp_core`` for the pages: dataset, graph, planner, logs, records.

Heavy objects (datasets, graphs, models) sit behind ``st.cache_resource`` keyed by the
configuration values; derived tables behind ``st.cache_data``. Every function raises
``KeppError`` for a problem the user can fix; :func:`guarded` turns that into a message
in the page and stops only that page.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import streamlit as st

from components.config import AppConfig
from components.views import md
from components.uploads import store_upload  # noqa: F401  (pages call backend.store_upload)
from kepp_core.errors import KeppError
from kepp_core.io import iter_jsonl

class MissingPart(Exception):
    """A part of kepp_core this page needs is not in this build (yet)."""


def need(module: str) -> None:
    """Raise MissingPart if ``module`` cannot be imported."""
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.startswith(e.name):
            raise MissingPart(f"`{module}` is not part of this build yet, so this view is unavailable.") from None
        raise


@contextlib.contextmanager
def guarded(stop: bool = True) -> Iterator[None]:
    """Show a KeppError (or a missing part) as a message in the page instead of a traceback."""
    try:
        yield
    except KeppError as e:
        st.error(md(str(e)), icon="⚠️")
        if stop:
            st.stop()
    except MissingPart as e:
        st.info(str(e), icon="🧩")
        if stop:
            st.stop()


# --- dataset ------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Preparing the demo world…", max_entries=4)
def _demo_root(seed: int = 0) -> str:
    from kepp_core.data.synth import ensure_world

    return str(ensure_world(seed=seed))


@st.cache_resource(show_spinner="Loading the dataset…", max_entries=4)
def _dataset(name: str, root: str | None, features: str | None, seed: int):
    from kepp_core.data import load_dataset

    return load_dataset(name, root, features=features, seed=seed)


def dataset_root(cfg: AppConfig) -> str | None:
    if cfg.root:
        return cfg.root
    if cfg.dataset == "demo":
        need("kepp_core.data.synth")
        return _demo_root()
    raise KeppError(f"dataset {cfg.dataset!r} needs a path: set 'Root' in the sidebar")


def dataset(cfg: AppConfig):
    """The configured dataset (the demo world by default)."""
    root = dataset_root(cfg)
    if root is not None and not Path(root).exists():
        raise KeppError(f"{root}: dataset path does not exist")
    return _dataset(cfg.dataset, root, cfg.features, cfg.split_seed)


def dataset_key(cfg: AppConfig) -> tuple:
    """Hashable identity of the configured dataset (for st.cache_data keys)."""
    return (cfg.dataset, cfg.root, cfg.features, cfg.split_seed)


# --- graph ----------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Building the knowledge graph…", max_entries=4)
def _graph(key: tuple, graph_path: str | None, _ds):
    from kepp_core.graph.build import build_graph, load_graph

    if graph_path:
        return load_graph(graph_path, _ds)
    return build_graph(_ds)


def graph(cfg: AppConfig):
    """The P²KG of the configured dataset: loaded from ``cfg.graph`` or built from its training plans."""
    need("kepp_core.graph")
    if cfg.graph and not Path(cfg.graph).exists():
        raise KeppError(f"{cfg.graph}: graph file does not exist")
    ds = dataset(cfg)
    return _graph(dataset_key(cfg), cfg.graph, ds)


# --- training logs -----------------------------------------------------------------------------
LOG_NAME = "metrics.jsonl"
REPO = Path(__file__).resolve().parents[2]


def runs_roots(cfg: AppConfig) -> list[Path]:
    """Folders searched for training runs: ``cfg.runs``, else the models folder and ``runs/``."""
    if cfg.runs:
        if not Path(cfg.runs).exists():
            raise KeppError(f"{cfg.runs}: folder does not exist")
        return [Path(cfg.runs)]
    try:
        models = [models_root(cfg)]
    except KeppError:
        models = []
    return [p for p in [*models, REPO / "runs"] if p.is_dir()]


@st.cache_data(show_spinner=False, ttl=30, max_entries=16)
def find_runs(roots: tuple[str, ...]) -> list[str]:
    """Run folders (holding a metrics JSONL log) under ``roots``, sorted by path."""
    found: set[str] = set()
    for root in map(Path, roots):
        if root.is_file() and root.name == LOG_NAME:
            found.add(str(root.parent))
        elif root.is_dir():
            found.update(str(p.parent) for p in root.rglob(LOG_NAME))
    return sorted(found)


@st.cache_data(show_spinner=False, ttl=30, max_entries=64)
def read_run_log(run: str, mtime: float = 0.0) -> "pd.DataFrame":
    """A run's metrics log as a table: one row per logged step; ``val`` metrics become
    ``val_<name>`` columns. Bad lines raise a KeppError naming file and line."""
    import pandas as pd

    path = Path(run) / LOG_NAME
    rows = []
    for _, rec in iter_jsonl(path, required=("step",)):
        val = rec.pop("val", None) or {}
        rec.update({f"val_{k}": v for k, v in val.items() if isinstance(v, (int, float))})
        rows.append(rec)
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, ttl=30, max_entries=64)
def read_run_config(run: str) -> dict:
    """A run's ``config.json`` (empty if missing or unreadable)."""
    import json

    path = Path(run) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


# --- videos ------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=256)
def video_meta(path: str) -> dict:
    """fps, frames, duration, width, height of a video file."""
    from kepp_core.video import video_info

    info = video_info(path)
    return {"fps": info.fps, "frames": info.frames, "duration": info.duration,
            "width": info.width, "height": info.height}


@st.cache_data(show_spinner=False, max_entries=1024)
def thumbnail_png(path: str, t: float, size: int = 160) -> bytes:
    """A PNG thumbnail of the frame at ``t`` seconds."""
    import io

    from kepp_core.video import thumbnail

    buf = io.BytesIO()
    thumbnail(path, t, size).save(buf, format="PNG")
    return buf.getvalue()


def feature_encoder(ds) -> dict:
    """The encoder that made the dataset's features (from the feature cache manifest):
    ``{"encoder": name or None, "dim": D or None, "folder": path or None}``."""
    from kepp_core.video.encode import read_manifest

    files = [v.feature_file for v in ds.videos if v.feature_file is not None]
    if not files:
        return {"encoder": None, "dim": None, "folder": None}
    folder = files[0].parent
    manifest = read_manifest(folder) or {}
    return {"encoder": manifest.get("encoder"), "dim": manifest.get("dim"), "folder": str(folder)}


@st.cache_data(show_spinner="Encoding the video…", max_entries=16)
def encode_upload(path: str, encoder: str) -> "np.ndarray":
    """Per-second features of an uploaded video with the dataset's encoder."""
    from kepp_core.video import encode_video

    return encode_video(path, encoder)


# --- models and planning ---------------------------------------------------------------------
DEMO_MODELS = REPO / "assets" / "demo"


def demo_model_folders() -> list[Path]:
    """Where demo models live: shipped in ``assets/demo``, or trained once by ``kepp demo`` into
    the cache beside the demo world."""
    from kepp_core.data.synth import default_world_root

    return [DEMO_MODELS, default_world_root().parent / "demo-models"]


def models_root(cfg: AppConfig) -> Path:
    """The folder of trained models (``T<h>/step``, ``T<h>/plan-graph-R<R>``, ...)."""
    if cfg.checkpoints:
        root = Path(cfg.checkpoints)
        if not root.is_dir():
            raise KeppError(f"{root}: checkpoints folder does not exist")
        return root
    if cfg.dataset != "demo" or cfg.root:
        raise KeppError("no checkpoints folder set for this dataset: set 'Checkpoints' in the sidebar "
                        "(a folder written by 'kepp train')")
    import json

    vocabulary = dataset(cfg).vocabulary_hash()
    found = [p for p in demo_model_folders() if p.is_dir() and any(p.glob("T*/step/config.json"))]
    for p in found:  # the folder trained on this very world, as `kepp demo` chooses
        config = next(p.glob("T*/step/config.json"))
        try:  # plain JSON: the home page should not wait for torch to import
            if json.loads(config.read_text(encoding="utf-8"))["dataset"]["vocabulary_hash"] == vocabulary:
                return p
        except (OSError, ValueError, KeyError, TypeError):
            continue
    if found:
        return found[0]
    raise KeppError(f"no demo models in {DEMO_MODELS} yet (run 'kepp demo --no-app' to train them)")


@st.cache_data(show_spinner=False, ttl=60, max_entries=16)
def _horizons(root: str) -> list[int]:
    from kepp_core.models import trained_horizons

    return trained_horizons(root)


def horizons(cfg: AppConfig) -> list[int]:
    """Horizons that have a trained step model."""
    need("kepp_core.planner")
    return _horizons(str(models_root(cfg)))


def plan_variants(cfg: AppConfig, horizon: int) -> dict[str, tuple[str, int]]:
    """Planning models trained for ``horizon``: label -> (condition, R)."""
    hdir = models_root(cfg) / f"T{horizon}"
    out = {}
    for p in sorted(hdir.glob("plan-*")):
        if not (p / "config.json").is_file():
            continue
        name = p.name[len("plan-"):]
        if name.startswith("graph-R") and name[7:].isdigit():
            out[f"KEPP (P²KG condition, trained with R={name[7:]})"] = ("graph", int(name[7:]))
        elif name == "none":
            out["KEPP without the graph condition"] = ("none", 1)
    return out


# Samplers the Plan page offers: the models' own (as trained and evaluated) or a fast DDIM.
SAMPLERS = {"the model's own": (None, None), "fast (DDIM, 5 steps)": ("ddim", 5)}


@st.cache_resource(show_spinner="Loading the models…", max_entries=12)
def _planner(root: str, horizon: int, condition: str, trained_r: int, method: str, graph_path: str | None,
             sampler: str | None, sampler_steps: int | None):
    from kepp_core.planner import KEPPPlanner
    from kepp_core.training.loop import set_cpu_threads

    # One plan is a batch of one through a small network: extra intra-op threads only fight the
    # server's other work (on 2 busy cores, 2 threads made a plan 20x slower than 1).
    set_cpu_threads()
    planner = KEPPPlanner.from_models(root, horizon, R=trained_r, condition=condition, graph=graph_path,
                                      sampler=sampler, sampler_steps=sampler_steps)
    planner.method = method
    return planner


def planner(cfg: AppConfig, horizon: int, condition: str, trained_r: int, method: str, ds,
            sampler: str = "the model's own"):
    """The KEPP planner for a horizon, checked against the loaded dataset."""
    from kepp_core.models.checkpoint import check_compatible

    root = models_root(cfg)
    p = _planner(str(root), horizon, condition, trained_r, method, cfg.graph, *SAMPLERS[sampler])
    check_compatible(p.plan_config, ds, horizon, where=f"{root}/T{horizon}")
    return p


def clip_observation(feats: "np.ndarray", start: float, end: float, m: int, which: str) -> "np.ndarray":
    """The ``[m, D]`` per-second features of a clip ``[start, end)`` seconds: the ``m`` seconds
    at its centre. A clip shorter than ``m`` seconds raises a KeppError.

    >>> import numpy as np
    >>> clip_observation(np.arange(10.0)[:, None], 2.0, 7.0, 3, "start")[:, 0].tolist()
    [3.0, 4.0, 5.0]
    """
    import math

    first, last = max(0, math.floor(start + 1e-6)), min(len(feats), math.ceil(end - 1e-6))
    n = last - first
    if n < m:
        raise KeppError(f"the {which} clip covers {max(n, 0)} s of features ({start:.1f}–{end:.1f} s), "
                        f"shorter than the model's observation window of {m} s: widen it")
    lo = first + (n - m) // 2
    return feats[lo:lo + m]


# --- graph views (kepp_core.graph) -----------------------------------------------------------------
def subgraph_view(graph, centre: int, depth: int, min_probability: float, task: str | None):
    """Nodes and edges around ``centre`` (depth, minimum P²KG probability, optional task filter)."""
    need("kepp_core.graph.explore")
    from kepp_core.graph.explore import subgraph

    sg = subgraph(graph, centre, depth=depth, min_probability=min_probability, task=task)
    return set(sg.nodes) | {centre}, [(e.source, e.target) for e in sg.edges]


def expert_view(graph, task: str):
    """Nodes, edges and per-edge counts of a task's training plans."""
    need("kepp_core.graph.explore")
    from kepp_core.graph.explore import expert_trajectories

    df = expert_trajectories(graph, task)
    freq = {(int(u), int(v)): int(n) for u, v, n in zip(df["source"], df["target"], df["count"])}
    nodes = sorted({a for e in freq for a in e})
    return nodes, list(freq), freq


def heatmap_order(ds, task: str, plans) -> list[int]:
    """The task's own actions first, then any other action the plans use (first appearance)."""
    order = list(ds.task_actions(task))
    seen = set(order)
    for p in plans:
        for a in p:
            if a not in seen:
                seen.add(a)
                order.append(int(a))
    return order


def transitions(plans, order: list[int], labels: list[str]):
    """Row-normalised transition matrix of ``plans`` in ``order`` (a DataFrame from kepp_core.graph)."""
    need("kepp_core.graph.explore")
    from kepp_core.graph.explore import transition_matrix

    df = transition_matrix(plans, order)
    df.index, df.columns = list(labels), list(labels)
    return df


# --- prediction records ---------------------------------------------------------------------------
RECORD_COLUMNS = ["episode", "task", "video", "horizon", "setting", "seed", "method", "truth", "plan", "endpoints",
                  "endpoint_scores", "paths", "path_scores", "success", "patterns", "pattern", "start_time",
                  "goal_time", "source"]


def predictions_sources(cfg: AppConfig) -> list[Path]:
    """Prediction record files: ``cfg.predictions`` (file or folder), else those in the models folder."""
    if cfg.predictions:
        p = Path(cfg.predictions)
        if not p.exists():
            raise KeppError(f"{p}: predictions path does not exist")
        base = [p]
    else:
        try:
            base = [models_root(cfg)]
        except KeppError:
            return []
    files: list[Path] = []
    for p in base:
        if p.is_file():
            files.append(p)
        else:
            files.extend(sorted(q for q in p.rglob("*") if q.suffix in (".jsonl", ".parquet")
                                and ("pred" in q.name or "record" in q.name)))
    return files


def predictions(cfg: AppConfig):
    """All prediction records of the configured run as one long table (one row per episode and
    method), or None when there are none."""
    files = predictions_sources(cfg)
    if not files:
        return None
    return _read_predictions(tuple(str(f) for f in files), tuple(f.stat().st_mtime for f in files))


@st.cache_data(show_spinner="Reading prediction records…", max_entries=8)
def _read_predictions(files: tuple[str, ...], mtimes: tuple[float, ...]):
    import pandas as pd

    from kepp_core.evaluation.failures import PATH_METHODS, failure_patterns, outcome_from_record, read_records

    rows = []
    for f in files:
        for rec in read_records(f):
            base = {"episode": rec["episode"], "task": rec.get("task"), "video": rec.get("video"),
                    "horizon": int(rec.get("T") or len(rec["gt"])), "setting": rec.get("setting"),
                    "seed": rec.get("seed"), "start_time": rec.get("start_time"),
                    "goal_time": rec.get("goal_time"), "source": Path(f).name}
            for method in rec["plans"]:
                o = outcome_from_record(rec, method)
                k = PATH_METHODS.get(method, 0)
                pats = failure_patterns(o)
                rows.append({**base, "method": method, "truth": o.truth, "plan": o.plan, "endpoints": o.endpoints,
                             "endpoint_scores": rec.get("endpoint_scores") if o.endpoints is not None else None,
                             "paths": [tuple(p) for p in (rec.get("paths") or [])[:k]],
                             "path_scores": (rec.get("path_scores") or [])[:k], "success": o.success,
                             "patterns": ", ".join(pats), "pattern": pats[0] if pats else ""})
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def metrics_table(preds):
    """SR, mAcc and both mIoU variants per method and horizon (kepp_core.metrics)."""
    import pandas as pd

    need("kepp_core.metrics")
    from kepp_core.evaluation.methods import LABELS
    from kepp_core.metrics import mean_accuracy, miou_per_batch, miou_per_episode, success_rate

    rows = []
    for (method, horizon, setting), g in preds.groupby(["method", "horizon", "setting"], sort=True, dropna=False):
        pred, gt = [list(p) for p in g["plan"]], [list(t) for t in g["truth"]]
        rows.append({"method": method, "name": LABELS.get(method, method), "T": int(horizon),
                     "setting": setting, "episodes": len(g),
                     "SR": round(float(success_rate(pred, gt)), 2), "mAcc": round(float(mean_accuracy(pred, gt)), 2),
                     "mIoU (episode)": round(float(miou_per_episode(pred, gt)), 2),
                     "mIoU (batch 256)": round(float(miou_per_batch(pred, gt)), 2)})
    return pd.DataFrame(rows)


def default_method(methods: list[str]) -> int:
    """Index of the method a page shows first: KEPP if it was evaluated."""
    for m in ("kepp-R2", "kepp-R1", "kepp-gt"):
        if m in methods:
            return methods.index(m)
    return 0


def encoder_spec(name: str, trusted: tuple[str, ...] = ()) -> str:
    """The ``get_encoder`` spec of an encoder named in a feature manifest (``builtin-v1`` → ``builtin``):
    only the built-in one or one the person running the app allowed (``kepp app --encoder``)."""
    from kepp_core.video.encoders import trusted_encoder_spec

    return trusted_encoder_spec(name, trusted)


# --- LLM recommendation and sampled plans (Plan page) ---------------------------------------------
LLM_MAPPERS = {"MiniLM sentence embeddings": "minilm", "lexical (no model)": "lexical"}


def llm_defaults() -> dict[str, str]:
    """The LLM endpoint the Plan page starts with: ``KEPP_LLM_URL`` / ``KEPP_LLM_MODEL``."""
    from kepp_core.llm.client import ENV_MODEL, ENV_URL

    return {"url": os.environ.get(ENV_URL, ""), "model": os.environ.get(ENV_MODEL, "")}


@st.cache_resource(show_spinner=False, max_entries=4)
def _llm_recommender(url: str, model: str, mapper: str, labels: tuple[str, ...]):
    from kepp_core.data.synth import default_world_root
    from kepp_core.llm import ChatClient, LLMConfig, LLMRecommender

    # the key stays in the environment (KEPP_LLM_API_KEY); replies are cached beside the demo world
    client = ChatClient(LLMConfig.from_env(base_url=url, model=model, timeout=30.0, retries=1),
                        default_world_root().parent / "llm-cache")
    return LLMRecommender(client, list(labels), mapper)


def llm_recommendation(url: str, model: str, mapper: str, ds, start: int, end: int, horizon: int):
    """The LLM's plan (voted, checked, mapped; or the reported fallback) for ``(â_1, â_T, T)``."""
    need("kepp_core.llm")
    rec = _llm_recommender(url.strip(), model.strip(), LLM_MAPPERS.get(mapper, mapper), tuple(ds.actions))
    return rec(start, end, horizon)


def sampled_plans(planner, v_start, v_goal, k: int, R: int, seed: int = 0) -> "pd.DataFrame":
    """``k`` plans drawn from the planning model for one query: distinct plans, count, frequency."""
    import pandas as pd

    rows = [{"plan": list(p), "count": c, "frequency": c / k} for p, c in planner.sample(v_start, v_goal, k, R, seed)]
    return pd.DataFrame(rows)
