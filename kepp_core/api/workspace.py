"""A workspace: what an :class:`~kepp_core.api.config.AppConfig` points at, opened.

The dataset (the demo world by default) with its features, the models folder and the model
specs in it, the prediction records of ``kepp eval`` and the training runs of ``kepp train``.
Everything raises a :class:`~kepp_core.errors.KeppError` for a problem the user can fix
(a path that does not exist, no models for this dataset). Heavy parts load lazily: listing
a workspace's files does not import torch.

>>> ws = Workspace(AppConfig(dataset="plans", root="/nowhere/plans.jsonl"))
>>> ws.dataset
Traceback (most recent call last):
...
kepp_core.errors.KeppError: /nowhere/plans.jsonl: dataset path does not exist
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from kepp_core.api.analysis import read_predictions
from kepp_core.api.protocols import find_protocols
from kepp_core.api.config import AppConfig
from kepp_core.catalog import CONFIG_FILE, DEFAULT_SETTING, LOG_FILE, RESULTS_FILE, ModelRole, models_dir
from kepp_core.data import Dataset, load_dataset
from kepp_core.data.feature_files import features_manifest
from kepp_core.data.step_names import read_step_names, records_dataset
from kepp_core.data.synth import ensure_world, world_ready
from kepp_core.data.synth.procedures import TASKS as DEMO_TASKS
from kepp_core.errors import KeppError
from kepp_core.evaluation.records import RECORD_SUFFIXES
from kepp_core.evaluation.store import Skipped, folder_records, recorded_step_names, recorded_tasks
from kepp_core.graph import build_graph, load_graph
from kepp_core.io import has_suffix, iter_jsonl, remembered_json
from kepp_core.models import folders
from kepp_core.models.folders import read_config
from kepp_core.paths import DEMO_ASSETS, REPO_ROOT, cache_folder
# the deck's output rule and seal, for the app's export (kepp talk export, the Playlists page's Export deck)
from kepp_core.evaluation.playlists import PlaylistStore, check_deck_output, sealed_deck  # noqa: F401

__all__ = [
    "Workspace", "dataset_root", "demo_world_root", "episode_map", "open_dataset", "read_run_config", "read_run_log",
    "remembered",
]

PLAYLISTS = "playlists"  # the folder of playlists, beside the records or in the cache home


def demo_world_root(seed: int = 0, make: bool = True) -> str | None:
    """The demo world's folder, generated into the cache the first time (``make=False``: None while it is
    not built, and nothing generated)."""
    if not make and not world_ready(seed=seed):
        return None
    return str(ensure_world(seed=seed))


def dataset_root(cfg: AppConfig, demo_root: Callable[[], str] = demo_world_root) -> str | None:
    """The dataset path of ``cfg``: its ``root``, else the demo world (``demo_root()``)."""
    if cfg.root:
        return cfg.root
    if cfg.dataset == "demo":
        return demo_root()
    raise KeppError(f"dataset {cfg.dataset!r} needs a path: set 'Root' in the sidebar")


def open_dataset(cfg: AppConfig, root: str | None = None, roots: tuple[Path, ...] | None = None) -> Dataset:
    """The configured dataset with its features (``root``: the resolved :func:`dataset_root`).
    ``roots``: the folders a browser visitor may open (:meth:`~kepp_core.api.config.AppConfig.allowed_folders`);
    every file the dataset's files name must lie under them (the app passes them, commands do not)."""
    root = root if root is not None else dataset_root(cfg)
    if root is not None and not Path(root).exists():
        raise KeppError(f"{root}: dataset path does not exist")
    return load_dataset(cfg.dataset, root, features=cfg.features, seed=cfg.split_seed, roots=roots)


def _demo_model_folders() -> list[Path]:
    """Where demo models live: shipped in ``assets/demo``, or trained once by ``kepp demo`` into
    the cache beside the demo world."""
    return [DEMO_ASSETS, cache_folder("demo-models")]


def planning_model(root: str | Path, horizon: int):
    """The planning model ``ROOT/T<horizon>`` plans with by default, and why
    (:func:`kepp_core.evaluation.planning_model.stored_planning_model`: chosen on validation episodes and
    stored beside the models, else KEPP R=1); reads JSON and the checkpoints' configs only (no torch)."""
    from kepp_core.evaluation.planning_model import stored_planning_model

    return stored_planning_model(models_dir(root, horizon))


def find_runs(roots: tuple[str, ...] | list[str]) -> list[str]:
    """Run folders (holding a metrics JSONL log) under ``roots``, sorted by path."""
    found: set[str] = set()
    for root in map(Path, roots):
        if root.is_file() and root.name == LOG_FILE:
            found.add(str(root.parent))
        elif root.is_dir():
            found.update(str(p.parent) for p in root.rglob(LOG_FILE))
    return sorted(found)


def read_run_log(run: str | Path):
    """A run's metrics log as a DataFrame: one row per logged step; ``val`` metrics become
    ``val_<name>`` columns. Bad lines raise a KeppError naming file and line."""
    import pandas as pd

    rows = []
    for _, rec in iter_jsonl(Path(run) / LOG_FILE, required=("step",)):
        val = rec.pop("val", None) or {}
        rec.update({f"val_{k}": v for k, v in val.items() if isinstance(v, (int, float))})
        rows.append(rec)
    return pd.DataFrame(rows)


def read_run_config(run: str | Path) -> dict:
    """A run's ``config.json``, checked by the checkpoint config's schema (empty if missing,
    unreadable or refused by it: the page shows the run's log without it)."""
    try:
        return read_config(run)
    except (OSError, KeppError):
        return {}


class Workspace:
    """A configuration opened: dataset, graph, models, prediction records and training runs.

    ``dataset`` may be given (a loaded dataset, or a function returning one, e.g. a cached
    loader); otherwise it is loaded on first use with :func:`open_dataset`.
    """
    def __init__(self, config: AppConfig, dataset: Dataset | Callable[[], Dataset] | None = None) -> None:
        self.config = config
        self._dataset = dataset

    @property
    def dataset(self) -> Dataset:
        """The configured dataset (loaded on first use)."""
        if self._dataset is None:
            self._dataset = open_dataset(self.config)
        elif callable(self._dataset) and not isinstance(self._dataset, Dataset):
            self._dataset = self._dataset()
        return self._dataset

    def graph(self):
        """The P²KG: loaded from ``config.graph`` or built from the training plans."""
        if self.config.graph and not Path(self.config.graph).exists():
            raise KeppError(f"{self.config.graph}: graph file does not exist")
        if self.config.graph:
            return load_graph(self.config.graph, self.dataset)
        return build_graph(self.dataset)

    def models_root(self) -> Path:
        """The folder of trained models (``T<h>/step``, ``T<h>/plan-graph-R<R>``, ...)."""
        cfg = self.config
        if cfg.checkpoints:
            root = Path(cfg.checkpoints)
            if not root.is_dir():
                raise KeppError(f"{root}: checkpoints folder does not exist")
            return root
        if cfg.dataset != "demo" or cfg.root:
            raise KeppError("no checkpoints folder set for this dataset: set 'Checkpoints' in the sidebar "
                            "(a folder written by 'kepp train')")
        found = [p for p in _demo_model_folders() if p.is_dir() and any(p.glob("T*/step/config.json"))]
        vocabulary = self.dataset.vocabulary_hash() if found else None
        for p in found:  # the folder trained on this very world, as `kepp demo` chooses
            try:  # the config alone: the home page should not wait for torch to import
                config = read_config(next(p.glob(f"T*/step/{CONFIG_FILE}")).parent)
                if config["dataset"]["vocabulary_hash"] == vocabulary:
                    return p
            except (OSError, StopIteration, KeppError):
                continue
        if found:
            return found[0]
        raise KeppError(f"no demo models in {DEMO_ASSETS} yet (run 'kepp demo --no-app' to train them)")

    def horizons(self) -> list[int]:
        """Horizons that have a trained step model under the models folder (``ROOT/T<h>/step``); reads
        the folders only (no torch)."""
        return folders.trained_horizons(self.models_root())

    def plan_variants(self, horizon: int) -> dict[str, ModelRole]:
        """Planning models the KEPP planner can use for ``horizon``: label -> role (graph-conditioned
        first, the one trained with the structured loss among them, then the no-graph ablation)."""
        out = {}
        for role in folders.planning_models(models_dir(self.models_root(), horizon)):
            if role.condition == "graph":
                tail = ", structured training" if role.structured else ""
                out[f"KEPP (P²KG condition, trained with R={role.R}{tail})"] = role
            elif role.condition == "none" and not role.structured:
                out["KEPP without the graph condition"] = role
        return out

    def planning_model(self, horizon: int):
        """The planning model the models folder plans with by default for ``horizon``, and why
        (:func:`planning_model`)."""
        return planning_model(self.models_root(), horizon)

    def prediction_files(self) -> list[Path]:
        """Prediction record files: ``config.predictions`` (a file, or every records file of a folder, whatever
        its name), else those in the models folder (:meth:`prediction_sources`)."""
        return self.prediction_sources()[0]

    def prediction_sources(self) -> tuple[list[Path], list[Skipped]]:
        """The prediction record files and the files skipped, each with why: ``config.predictions`` as a file,
        or a folder read whole (every ``.jsonl`` / ``.parquet`` in it that reads as records,
        :func:`~kepp_core.evaluation.store.folder_records`); without it, the models folder's files named as
        records (``*pred*``, ``*record*``: beside checkpoints and training logs)."""
        if self.config.predictions:
            base = Path(self.config.predictions)
            if not base.exists():
                raise KeppError(f"{base}: predictions path does not exist")
            return ([base], []) if base.is_file() else folder_records(base)
        try:
            base = self.models_root()
        except KeppError:
            return [], []
        if base.is_file():
            return [base], []
        return sorted(q for q in base.rglob("*") if has_suffix(q, *RECORD_SUFFIXES)
                      and ("pred" in q.name or "record" in q.name)), []

    def predictions(self):
        """All prediction records as one long table (see :func:`~kepp_core.api.analysis.read_predictions`), or None."""
        files = self.prediction_files()
        return read_predictions(files) if files else None

    def records_alone(self, files: Sequence[str | Path]) -> bool:
        """Whether the configured records (``files``: the records files it reads) are browsed by themselves, with
        no dataset: a taxonomy names their steps (``taxonomy``), or the configuration names records
        (``predictions``) and no dataset (the demo world by default) and none of their tasks is the demo world's
        (read from the store's columns, :func:`~kepp_core.evaluation.store.recorded_tasks`: no predictions table,
        no pandas). Decided without building the world."""
        cfg = self.config
        if cfg.taxonomy:
            return True
        if cfg.dataset != "demo" or cfg.root or not cfg.predictions or not files:
            return False
        tasks = recorded_tasks(files)
        return bool(tasks) and not tasks & {t.id for t in DEMO_TASKS}

    def records_dataset(self, preds) -> Dataset:
        """The dataset of records by themselves (:func:`~kepp_core.data.step_names.records_dataset`): their tasks and
        every action id they name, steps named by the taxonomy file (``taxonomy``), else by the records' own labels,
        else by their id; no videos."""
        cfg = self.config
        names = (read_step_names(cfg.taxonomy, cfg.allowed_folders()) if cfg.taxonomy
                 else recorded_step_names(self.prediction_files()))
        top = preds.attrs.get("actions", (0, -1))[1] if preds is not None else -1
        tasks = {str(t): 0 for t in sorted(preds["task"].dropna().astype(str).unique())} if preds is not None else {}
        return records_dataset(tasks, names, size=max(top + 1, *(a + 1 for a in names), 0))

    def runs_roots(self) -> list[Path]:
        """Folders searched for training runs: ``config.runs``, else the models folder and ``runs/``."""
        if self.config.runs:
            if not Path(self.config.runs).exists():
                raise KeppError(f"{self.config.runs}: folder does not exist")
            return [Path(self.config.runs)]
        try:
            models = [self.models_root()]
        except KeppError:
            models = []
        return [p for p in [*models, REPO_ROOT / "runs"] if p.is_dir()]

    def runs(self) -> list[str]:
        """The training runs: folders holding a metrics JSONL log under :meth:`runs_roots`, sorted by path."""
        return find_runs(self.runs_roots())

    def protocol_folders(self) -> list[str]:
        """``kepp protocol`` output folders: ``config.protocol`` (one such folder, its
        ``results.json``, or a folder of them), else those under ``runs/`` whose spec names this
        dataset format."""
        if not self.config.protocol:
            return find_protocols([REPO_ROOT / "runs"], dataset=self.config.dataset)
        base = Path(self.config.protocol)
        if not base.exists():
            raise KeppError(f"{base}: protocol folder does not exist")
        if base.is_file():
            base = base.parent
        if (base / RESULTS_FILE).is_file():
            return [str(base)]  # read_protocol names what is wrong with it, if anything
        found = find_protocols([base])
        if not found:
            raise KeppError(f"{base}: no protocol results in it or its sub-folders (results.json, written by "
                            "'kepp protocol SPEC.toml')")
        return found

    def feature_encoder(self) -> dict:
        """The encoder that made the dataset's features (from the feature cache manifest):
        ``{"encoder": name or None, "dim": D or None, "folder": path or None}``."""
        return features_manifest(self.dataset)

    def playlists_folder(self) -> Path:
        """Where this workspace's playlists live: ``playlists/`` beside the prediction records (the
        records file's folder, or the records folder), else beside the models; in the cache home
        (``playlists/<12 hex digits of that folder's path>``) when that folder cannot be written,
        is the shipped demo models' (the checkout stays clean) or there is none."""
        base = None
        if self.config.predictions:
            p = Path(self.config.predictions)
            base = p.parent if p.is_file() else p
        else:
            try:
                base = self.models_root()
            except KeppError:
                base = None
        if base is not None and base.is_dir():
            real = Path(os.path.realpath(base))
            own = real / PLAYLISTS
            shipped = real == Path(os.path.realpath(DEMO_ASSETS)) or real.is_relative_to(os.path.realpath(DEMO_ASSETS))
            if not shipped and (own.is_dir() and os.access(own, os.W_OK | os.X_OK)
                                or not own.exists() and os.access(real, os.W_OK | os.X_OK)):
                return base / PLAYLISTS
        key = str(Path(os.path.realpath(base)) if base is not None else self.config.dataset_key())
        return cache_folder(PLAYLISTS) / hashlib.sha1(key.encode()).hexdigest()[:12]

    def playlists(self, start: AppConfig | None = None, folder: str | Path | None = None) -> PlaylistStore:
        """This workspace's playlists (:class:`kepp_core.evaluation.playlists.PlaylistStore` in
        :meth:`playlists_folder`; ``folder``: another folder's, e.g. a playlist file's given by its path). With
        ``start`` (the configuration the server started with), every
        playlist file read or written must lie under a folder it allows
        (:meth:`~kepp_core.api.config.AppConfig.check_allowed`, symlinks resolved): a browser visitor reads and
        writes playlists only where the person running the server allowed."""
        check = None if start is None else start.check_allowed
        return PlaylistStore(self.playlists_folder() if folder is None else Path(folder), check)


def remembered(kind: str, key: str, compute: Callable[[], object]) -> object:
    """``compute()`` (JSON-ready), remembered across runs in KEPP's cache home under ``kind`` (a
    folder name) and ``key`` (a string saying everything the value depends on): the app's
    derived views (the demo scenes, the episode map) are computed once, not at every start.
    A damaged or unwritable cache is computed again (:func:`kepp_core.io.remembered_json`)."""
    return remembered_json(cache_folder(kind), key, compute, kind)


def episode_map(dataset: Dataset, horizon: int, setting: str = DEFAULT_SETTING) -> dict:
    """The 2-D map of ``dataset``'s test episodes of ``horizon``
    (:func:`kepp_core.evaluation.episode_map.episode_coordinates`: ids, ``x``, ``y``, the variance
    the two components explain), computed once per dataset and remembered in the cache home
    (:func:`remembered`). The key is the dataset's name, root, vocabulary and test split, and
    each test video's feature file with its size and modification time, so a changed feature
    file is mapped again."""
    from kepp_core.evaluation.episode_map import episode_coordinates  # numpy work: only when a page asks

    stamps = []
    for v in dataset.split("test"):
        f = v.feature_file
        stat = f.stat() if f is not None and f.is_file() else None
        stamps.append([v.id, str(f), stat.st_size if stat else None, stat.st_mtime_ns if stat else None])
    digest = hashlib.sha1(json.dumps(stamps).encode()).hexdigest()
    key = json.dumps([dataset.name, str(dataset.root), dataset.vocabulary_hash(), int(horizon), setting, digest])
    return remembered("episode-maps", key, lambda: episode_coordinates(dataset, int(horizon), setting))
