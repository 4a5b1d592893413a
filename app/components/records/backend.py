"""Cached access to ``kepp_core.api`` for the pages.

Heavy objects (dataset, graph, planner, LLM recommender) sit behind ``st.cache_resource``
keyed by the configuration values they depend on; derived tables and files behind
``st.cache_data``. Every call raises ``KeppError`` for a problem the user can fix;
:func:`guarded` turns that into a message in the page and stops only that page.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from components.graph import layout
from components.records import recorded
from components.ui.config import RECORDS_HOW, missing, start_config
from components.ui.text import dataset_caption, md
from kepp_core import api
from kepp_core.api import AppConfig
from kepp_core.catalog import DEFAULT_FAMILY
from kepp_core.catalog import DEFAULT_M, DEFAULT_SETTING, RECORDS_FILE, models_dir, parse_plan_model_id, plan_model_id
from kepp_core.errors import KeppError

if TYPE_CHECKING:
    from components.records.lookup import RecordsIndex

# The Plan page's sampler choices: the models' own (as trained and evaluated) or a fast DDIM.
SAMPLER_CHOICES = {"the model's own": (None, None), "fast (DDIM, 5 steps)": ("ddim", 5)}
# How the LLM's generated steps are matched to dataset actions (kepp_core.llm's mapper names).
LLM_MAPPERS = {"MiniLM sentence embeddings": "minilm", "lexical (no model)": "lexical"}


@contextlib.contextmanager
def guarded(stop: bool = True, link=None) -> Iterator[None]:
    """Show a KeppError as a message in the page instead of a traceback (and stop the page: through
    ``link.stop()`` where the page keeps its state in a link, which publishes it first)."""
    try:
        yield
    except KeppError as e:
        st.error(md(str(e)), icon=":material/warning:")
        if stop:
            link.stop() if link is not None else st.stop()


# --- the workspace: dataset, graph, models, records ----------------------------------------------
class RecordsKey(tuple):
    """The prediction record files of a configuration and their versions, ``(files, versions)``, with ``digest``:
    one short text for both, what the caches keyed on records hash (:data:`RECORDS_HASH`; a folder of 85 files
    would have Streamlit's hasher walk 170 texts on every call of every cached table)."""

    digest: str

    def __new__(cls, files: tuple[str, ...], versions: tuple[str, ...]):
        key = super().__new__(cls, (files, versions))
        key.digest = hashlib.blake2b(repr(key).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
        return key


# what Streamlit hashes of a RecordsKey argument of a cached function: its digest
RECORDS_HASH = {RecordsKey: lambda key: key.digest}


@st.cache_resource(show_spinner="Preparing the demo world…", max_entries=4)
def _demo_root(seed: int = 0) -> str:
    return api.demo_world_root(seed)


@st.cache_resource(show_spinner="Loading the dataset…", max_entries=4)
def _dataset(key: tuple, root: str | None, _cfg: AppConfig):
    # a path a dataset file names is as untrusted as one a visitor types: only under the allowed folders
    return api.open_dataset(_cfg, root, roots=start_config().allowed_folders())


def dataset_root(cfg: AppConfig) -> str | None:
    """The dataset path of ``cfg`` (the demo world when none is set)."""
    return api.dataset_root(cfg, _demo_root)


def dataset(cfg: AppConfig):
    """The configured dataset (the demo world by default), or the records' own where they are browsed by
    themselves (:func:`records_alone`: no world is built for them)."""
    key = records_alone(cfg)
    if key is not None:
        return _records_dataset(key, cfg.taxonomy, cfg)
    return _dataset(cfg.dataset_key(), dataset_root(cfg), cfg)


@st.cache_resource(show_spinner="Naming the records' steps…", max_entries=4, hash_funcs=RECORDS_HASH)
def _records_dataset(key: RecordsKey, taxonomy: str | None, _cfg: AppConfig):
    return api.Workspace(_cfg).records_dataset(_records_table(key))


def records_alone(cfg: AppConfig) -> tuple | None:
    """The configured records' key (:func:`records_key`) where they are browsed by themselves, records of no known
    dataset (:meth:`kepp_core.api.Workspace.records_alone`: from the store's columns, no predictions table), else
    None."""
    key = records_key(cfg)
    return key if api.Workspace(cfg).records_alone(key[0] if key is not None else ()) else None


def needs_dataset(cfg: AppConfig, what: str) -> None:
    """Stop a page that needs a dataset's videos, features or training plans (``what`` it would show) where the
    records are browsed by themselves, saying so in one line."""
    if records_alone(cfg) is not None:
        st.info(f"{what} needs a dataset (its videos, features or training plans): these records are of no dataset "
                "this app knows, so only Results and Failure cases show them. Start the app with --dataset and "
                "--root to see this page.", icon=":material/info:")
        st.stop()


def workspace(cfg: AppConfig) -> api.Workspace:
    """The configuration opened, with the cached dataset."""
    return api.Workspace(cfg, lambda: dataset(cfg))


@st.cache_resource(show_spinner="Building the knowledge graph…", max_entries=4)
def _graph(key: tuple, graph_path: str | None, _ws: api.Workspace):
    return _ws.graph()


def graph(cfg: AppConfig):
    """The P²KG of the configured dataset: loaded from ``cfg.graph`` or built from its training plans."""
    return _graph(cfg.dataset_key(), cfg.graph, workspace(cfg))


def models_root(cfg: AppConfig) -> Path:
    """The folder of trained models."""
    return workspace(cfg).models_root()


@st.cache_data(show_spinner=False, ttl=60, max_entries=16)
def _horizons(root: str, _ws: api.Workspace) -> list[int]:
    return _ws.horizons()


def planning_model(cfg: AppConfig, horizon: int):
    """The planning model the models folder plans with by default for ``horizon`` and why (its stored
    choice, else KEPP R=1: :meth:`kepp_core.api.Workspace.planning_model`)."""
    return workspace(cfg).planning_model(horizon)


def horizons(cfg: AppConfig) -> list[int]:
    """Horizons that have a trained step model."""
    ws = workspace(cfg)
    return _horizons(str(ws.models_root()), ws)




# The records table is cached as a resource, not as data: st.cache_data hands every run its own
# copy by unpickling it, 0.5 s for 20,000 records of five methods (100,000 rows) on every rerun.
# One table is shared by all sessions instead, so the pages only ever filter it, never change it.
@st.cache_resource(show_spinner="Reading prediction records…", max_entries=4, hash_funcs=RECORDS_HASH)
def _records_table(key: RecordsKey):
    return _made_of(key, api.read_predictions(key[0]))


def _made_of(key: RecordsKey, made):
    """``made`` (a table or index of ``key``'s versions of its files), noted (weakly: the caches decide how long
    it lives) to be emptied when the files change (:func:`_superseded`): what a session that showed it keeps
    for minutes then holds nothing."""
    with _lock:
        if _held.get(key[0], key[1]) == key[1]:
            _made.setdefault(key[0], []).append(weakref.ref(made))
        else:  # made of a version already superseded: emptied with the rest
            _retired.append((time.monotonic(), made))
    return made


def _read_predictions(files: tuple[str, ...], versions: tuple[str, ...]):
    """The records table of ``files`` at ``versions`` (:func:`_records_table`)."""
    return _records_table(RecordsKey(tuple(files), tuple(versions)))


def records_key(cfg: AppConfig) -> RecordsKey | None:
    """The prediction record files of the configuration and their versions (size and content hash: a cache
    key that changes with the bytes, :func:`kepp_core.api.records_version`), or None: listed and versioned once
    per run of a page (every table of the page asks). The first run that sees new versions of the files lets go
    of everything cached of the old ones (:func:`_superseded`)."""
    return _this_run(cfg)[1]


def _this_run(cfg: AppConfig) -> tuple[tuple, RecordsKey | None]:
    """The records files and those skipped (:meth:`kepp_core.api.Workspace.prediction_sources`) and their key,
    once per run of the script (a fragment's run too): a file changed since the last run is seen in this one."""
    ctx = get_script_run_ctx()
    run = ctx.cursors if ctx is not None else None  # a new dict every run (Streamlit's reset), held here till the next
    kept = _last_run.get(ctx.session_id) if ctx is not None else None
    if kept is not None and kept[0] is run and kept[1] == cfg:
        return kept[2]
    sources = workspace(cfg).prediction_sources()
    files = sources[0]
    key = RecordsKey(tuple(str(f) for f in files), tuple(api.records_version(f) for f in files)) if files else None
    if key is not None:
        _superseded(key)
    if key is not None and ctx is not None:  # a page's run (not the start's warm-up thread, which holds no table)
        with _lock:  # this run may read the table of these versions until its thread ends
            _readers[:] = [(t, at) for t, at in _readers if t.is_alive()]
            _readers.append((threading.current_thread(), time.monotonic()))
    if ctx is not None:
        if len(_last_run) > 4096:
            _last_run.clear()
        _last_run[ctx.session_id] = run, cfg, (sources, key)
    return sources, key


_last_run: dict[str, tuple] = {}  # session -> (its run, configuration, (sources, key)) of its last run


_held: dict[tuple[str, ...], tuple[str, ...]] = {}  # records files -> the versions the caches below hold


def _superseded(key: tuple) -> None:
    """Forget every table cached of older versions of ``key``'s files before the new ones are read: a whole
    records table is about a gigabyte at the field's scale, and versions no longer on disk are never asked
    for again (the caches' ``max_entries`` alone would keep up to four). Every entry of the caches keyed on
    records goes (Streamlit clears a cached function whole); those of other files are made again when asked."""
    files, versions = key
    with _lock:
        same = _held.setdefault(files, versions) == versions
        if not same:
            _held[files] = versions
            _retired.extend((time.monotonic(), old) for old in (ref() for ref in _made.pop(files, [])) if old is not None)
        emptied = _empty_retired()
    if same:
        if emptied:
            _give_back()  # outside the lock: no run waits for the system
        return
    for cached in RECORDS_CACHES:
        cached.clear()
    gc.collect()  # the old table's million tuples freed now, not at the collector's leisure
    _give_back()


def _give_back() -> None:
    """Hand the memory freed to the system: glibc keeps freed blocks in its heap (arrays of a few MB among them,
    once its mmap threshold has grown), which a server reading a new version of a gigabyte's table every edit
    would otherwise hold for good. Elsewhere than glibc, nothing."""
    global _trim
    if _trim is None:
        import ctypes
        import ctypes.util

        try:
            _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):  # not glibc
            _trim = False
    if _trim:
        _trim(0)


_trim = None  # glibc's malloc_trim, once found (False: there is none)


# A table of versions no longer on disk is still referenced by what the sessions that showed it keep until they
# end (a closed tab's session lives on for minutes, Streamlit's disconnected-session time, with its callbacks,
# deferred downloads and fragments, which hold the page's variables): the cache letting go is not enough. A
# retired table (the whole one, a method's rows of it, its index: :func:`_made_of`) is emptied in place (its
# columns dropped, an index's arrays let go: the memory freed whoever holds it) once no run that asked for the
# records before it was retired is still going (a run's script thread ends with it). So a fragment reads the
# records through this module again (records_key, predictions, run_rows), never through a table its page's full
# run held.
_made: dict[tuple[str, ...], list] = {}  # records files -> the tables and indexes the caches hold of them now
_retired: list[tuple[float, object]] = []  # (when, table or index) of superseded versions, to be emptied
_readers: list[tuple[threading.Thread, float]] = []  # the runs that asked for the records, and when
_lock = threading.Lock()


def _empty_retired() -> bool:
    """Empty the retired tables that no run still going can read (called with ``_lock`` held); whether any was."""
    me = threading.current_thread()  # this run asks for the new versions: it holds none of the old ones
    going = min((at for t, at in _readers if t is not me and t.is_alive()), default=float("inf"))
    kept = []
    for at, table in _retired:
        if at >= going:  # a run that began before it was retired may still read it
            kept.append((at, table))
        elif not hasattr(table, "attrs"):  # an index: it lets go of its arrays itself
            table.release()
        else:
            for carried in table.attrs.values():  # what it carries for every table filtered from it (its plans as arrays)
                if callable(getattr(carried, "release", None)):
                    carried.release()
            for column in list(table.columns):  # in place: every holder of the table sees it emptied
                del table[column]
            table.attrs.clear()
    emptied = len(_retired) > len(kept)
    _retired[:] = kept
    return emptied


def skipped_records(cfg: AppConfig) -> list:
    """The files of the configured records folder that are not records, each with why (one line each)."""
    return _this_run(cfg)[0][1]


def predictions(cfg: AppConfig):
    """All prediction records of the configured run as one long table (shared: read-only, one per version of
    the files, for every session), or None when there are none; KeppError when they name actions the dataset
    does not have (another dataset's records)."""
    key = records_key(cfg)
    if key is None:
        return None
    preds = _records_table(key)
    ds = dataset(cfg)
    api.check_vocabulary(preds, ds.actions, ds.name)
    return preds


@st.cache_resource(show_spinner=False, max_entries=4, hash_funcs=RECORDS_HASH)
def _records_index(key: RecordsKey) -> RecordsIndex:
    from components.records.lookup import RecordsIndex  # pandas: only where records are browsed (Home stays light)

    return _made_of(key, RecordsIndex(_records_table(key)))


def records_index(cfg: AppConfig) -> RecordsIndex | None:
    """Where rows lie in the records table, and the values the filters offer (:class:`RecordsIndex`), once per
    version of the records files; None without records."""
    key = records_key(cfg)
    return None if key is None else _records_index(key)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=RECORDS_HASH)
def _run_rows(key: RecordsKey, method: str, horizon: int):
    return _made_of(key, _records_table(key).iloc[_records_index(key).rows_of(method, horizon)])


def run_rows(cfg: AppConfig, method: str, horizon: int):
    """The rows of ``method`` at ``horizon`` (in the table's order; shared, read-only), once per records version."""
    return _run_rows(records_key(cfg), method, int(horizon))


def episode_rows(cfg: AppConfig, episode: str, horizon: int):
    """The rows of ``episode`` at ``horizon``: every method and seed (in the table's order)."""
    key = records_key(cfg)
    return _records_table(key).iloc[_records_index(key).episode_rows(episode, int(horizon))]


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=RECORDS_HASH)
def _method_names(key: tuple) -> dict[str, str]:
    return recorded.display_names(_records_table(key))


def method_names(cfg: AppConfig) -> dict[str, str]:
    """Every method of the records with its display name (an imported method's with its predictions
    file: :func:`components.ui.names.method_name`), once per records files; empty without readable records
    (the records pages say why)."""
    try:
        key = records_key(cfg)
        return {} if key is None else _method_names(key)
    except KeppError:
        return {}


@st.cache_resource(show_spinner="Computing the metrics…", max_entries=8, hash_funcs=RECORDS_HASH)
def _method_table(key: tuple, metrics: str):
    return api.method_horizon_table(_records_table(key), metrics, _method_names(key))


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=RECORDS_HASH)
def _metrics_table(key: tuple, metrics: str):
    return api.metrics_table(_records_table(key), metrics)


def method_table(cfg: AppConfig, metrics: str = DEFAULT_FAMILY):
    """The method × T table of the records in the evaluation code ``metrics``'s family and the best
    method per column, once per records files and code."""
    return _method_table(records_key(cfg), metrics)


def metrics_table(cfg: AppConfig, metrics: str = DEFAULT_FAMILY):
    """Every metric of the code ``metrics``'s family per method, horizon and setting, once per records files
    and code."""
    return _metrics_table(records_key(cfg), metrics)


@st.cache_resource(show_spinner="Grouping the records…", max_entries=16, hash_funcs=RECORDS_HASH)
def _group_table(key: tuple, by: tuple[str, ...]):
    return api.group_table(_records_table(key), list(by))


def group_table(cfg: AppConfig, by: tuple[str, ...]):
    """The records grouped by the columns ``by`` (:func:`kepp_core.api.group_table`), once per records files and
    grouping (read-only: shared by every session)."""
    return _group_table(records_key(cfg), tuple(by))


@st.cache_resource(show_spinner="Indexing the records for the gallery…", max_entries=4, hash_funcs=RECORDS_HASH)
def _browse(key: tuple):
    from components.records import gallery  # numpy and pandas: only the Gallery asks (Home stays light)

    preds = _records_table(key)
    return gallery.Browse.of(preds, api.row_columns(preds))


def browse(cfg: AppConfig):
    """The records' columns as codes per row for the Gallery (:class:`components.records.gallery.Browse`), once per
    version of the records files (read-only: shared by every session)."""
    return _browse(records_key(cfg))


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=RECORDS_HASH)
def _browse_order(key: tuple, sort: str | None, descending: bool):
    return _browse(key).order(sort, descending)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=RECORDS_HASH)
def _gallery_rows(key: tuple, filters: tuple, sort: str | None, descending: bool):
    return _browse(key).rows(dict(filters), sort, descending, _browse_order(key, sort, descending))


def gallery_rows(cfg: AppConfig, filters: dict, sort: str | None, descending: bool):
    """The positions (in the predictions table) of the rows the Gallery's ``filters`` keep, sorted by ``sort``: once
    per records version and view (an order once per sort), shared read-only."""
    frozen = tuple(sorted((k, tuple(v)) for k, v in filters.items() if v))
    return _gallery_rows(records_key(cfg), frozen, sort, bool(descending))


@st.cache_resource(show_spinner="Classifying the failures…", max_entries=32, hash_funcs=RECORDS_HASH)
def _failure_stats(key: tuple, method: str, horizon: int):
    preds = _records_table(key)
    return api.failure_analysis(preds[(preds["method"] == method) & (preds["horizon"] == horizon)])[1]


def failure_stats(cfg: AppConfig, method: str, horizon: int):
    """The paper's failure statistics of one method and horizon, once per records files."""
    return _failure_stats(records_key(cfg), method, int(horizon))



@st.cache_resource(show_spinner="Computing the slices…", max_entries=32, hash_funcs=RECORDS_HASH)
def _slice_table(key: tuple, method: str, by: str, reference: str | None, horizon: int | None):
    return api.slice_table(_records_table(key), method, by, reference, horizon)


def slice_table(cfg: AppConfig, method: str, by: str, reference: str | None, horizon: int | None):
    """``method``'s episodes by slice against ``reference`` (:func:`kepp_core.api.slice_table`),
    once per records files and choice (read-only: shared by every session)."""
    return _slice_table(records_key(cfg), method, by, reference, None if horizon is None else int(horizon))


@st.cache_resource(show_spinner="Comparing the two methods episode by episode…", max_entries=32, hash_funcs=RECORDS_HASH)
def _ab_comparison(key: tuple, a: str, b: str, horizon: int):
    return api.compare_methods(_records_table(key), a, b, horizon)


def ab_comparison(cfg: AppConfig, a: str, b: str, horizon: int):
    """Methods ``a`` and ``b`` at ``horizon`` episode by episode (:func:`kepp_core.api.compare_methods`),
    once per records files and choice (read-only: shared by every session)."""
    return _ab_comparison(records_key(cfg), a, b, int(horizon))


@st.cache_resource(show_spinner="Finding the episodes through it…", max_entries=16, hash_funcs=RECORDS_HASH)
def _episodes_through(key: RecordsKey, node: int | None, edge: tuple[int, int] | None):
    return api.episodes_through(_records_table(key), node, edge)


def episodes_through(cfg: AppConfig, node: int | None, edge: tuple[int, int] | None):
    """The records whose plan or truth passes through the step ``node`` or the transition ``edge``
    (:func:`kepp_core.api.episodes_through`: their positions in :func:`predictions`' table, and which passes),
    once per records files and choice (read-only: shared by every session)."""
    return _episodes_through(records_key(cfg), None if node is None else int(node),
                             None if edge is None else (int(edge[0]), int(edge[1])))


@st.cache_data(show_spinner="Mapping the test episodes…", max_entries=8)
def _episode_map(key: tuple, horizon: int, setting: str, _ds) -> dict:
    return api.episode_map(_ds, horizon, setting)


def episode_map(cfg: AppConfig, ds, horizon: int, setting: str = DEFAULT_SETTING) -> dict:
    """The 2-D map of the dataset's test episodes of ``horizon`` (:func:`kepp_core.api.episode_map`:
    remembered on disk per dataset and feature files; here also in memory per dataset)."""
    return _episode_map(cfg.dataset_key(), int(horizon), setting, ds)

@st.cache_resource(show_spinner=False, max_entries=16)
def _typical_positions(key: tuple, task: str | None, _ds) -> list[float]:
    plans = [v.plan for v in _ds.split("train") if task is None or v.task == task]
    return layout.typical_positions(plans, _ds.num_actions)


def typical_positions(cfg: AppConfig, ds, task: str | None = None) -> list[float]:
    """Each action's typical place in the training plans (of ``task``; all by default), from 0 (first)
    to 1 (last): where the Graph page draws it (:func:`components.graph.layout.typical_positions`)."""
    return _typical_positions((cfg.dataset_key(), id(ds)), task, ds)


@st.cache_resource(show_spinner=False, max_entries=16)
def _playable_videos(key: tuple, horizon: int, _ds) -> list:
    return api.playable_videos(_ds, horizon)


def playable_videos(cfg: AppConfig, ds, horizon: int) -> list:
    """The dataset's videos the Plan page can open at ``horizon`` (test videos first), computed once
    per dataset and horizon (read-only: shared by every session)."""
    return _playable_videos((cfg.dataset_key(), id(ds)), horizon, ds)


# --- training runs ----------------------------------------------------------------------------------
@st.cache_data(show_spinner=False, ttl=30, max_entries=16)
def _runs(roots: tuple[str, ...], _ws: api.Workspace) -> list[str]:
    return _ws.runs()


def runs(cfg: AppConfig) -> tuple[list[Path], list[str]]:
    """The folders searched for training runs and the run folders (holding a metrics JSONL log) under them."""
    ws = workspace(cfg)
    roots = ws.runs_roots()
    return roots, _runs(tuple(str(r) for r in roots), ws)


@st.cache_data(show_spinner=False, ttl=30, max_entries=64)
def read_run_log(run: str, mtime: float = 0.0):
    """A run's metrics log as a table (``mtime`` keys the cache)."""
    return api.read_run_log(run)


@st.cache_data(show_spinner=False, ttl=30, max_entries=64)
def read_run_config(run: str) -> dict:
    """A run's ``config.json`` (empty if missing or unreadable)."""
    return api.read_run_config(run)


# --- videos --------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=256)
def video_meta(path: str) -> dict:
    """fps, frames, duration, width, height of a video file."""
    return api.video_meta(path)


@st.cache_data(show_spinner=False, max_entries=1024)
def thumbnail_png(path: str, t: float, size: int = 160) -> bytes:
    """A PNG thumbnail of the frame at ``t`` seconds."""
    return api.thumbnail_png(path, t, size)


@st.cache_data(show_spinner="Encoding the video…", max_entries=16)
def _encode_upload(path: str, encoder: str, device: str | None):
    return api.encode_clip_video(path, encoder, device)


def encode_upload(cfg: AppConfig, path: str, encoder: str):
    """Per-second features of an uploaded (or a dataset's) video with an allowed encoder spec, on the
    app's device (an S3D spec's own ``device=`` goes first)."""
    return _encode_upload(path, encoder, cfg.device)


# --- planning ---------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Loading the models (and their graph decoding)…", max_entries=12)
def _planner(root: str, horizon: int, model_id: str, method: str, graph_path: str | None, sampler: str | None,
             sampler_steps: int | None, dataset_key: tuple, device: str | None, _ds):
    return api.load_planner(root, horizon, parse_plan_model_id(model_id), scorer=method, graph=graph_path,
                            sampler=sampler, sampler_steps=sampler_steps, dataset=_ds, device=device)


def planner(cfg: AppConfig, horizon: int, role, method: str, ds, sampler: str = "the model's own"):
    """The KEPP planner for a horizon, checked against the loaded dataset; it decodes its plans with
    the graph (the models folder's stored choice, else one chosen on ``ds``'s validation videos
    and kept in KEPP's cache home)."""
    root = models_root(cfg)
    p = _planner(str(root), horizon, plan_model_id(role), method, cfg.graph, *SAMPLER_CHOICES[sampler],
                 cfg.dataset_key(), cfg.device, ds)
    p.check_dataset(ds, where=str(models_dir(root, horizon)))
    return p


@st.cache_resource(show_spinner="Loading the S3D network and fitting its text endpoints…", max_entries=8)
def _text_planner(encoder: str, horizon: int, setting: str, m: int, dataset_key: tuple, graph_path: str | None,
                  device: str | None, _graph, _ds):
    return api.text_planner(encoder, _graph, _ds, horizon, m, setting, device=device)


def text_planner(cfg: AppConfig, encoder: str, ds, horizon: int, setting: str = DEFAULT_SETTING, m: int = DEFAULT_M):
    """Graph + text endpoints (no trained model): the dataset's P²KG and the S3D text tower of
    ``encoder`` (an allowed ``s3d:`` spec), its temperature fitted on the dataset's training episodes
    where its features are that network's."""
    return _text_planner(encoder, int(horizon), setting, int(m), cfg.dataset_key(), cfg.graph, cfg.device, graph(cfg),
                         ds)


@st.cache_resource(show_spinner="Loading the S3D text tower…", max_entries=8)
def _grounding(encoder: str, steps: tuple[str, ...], dataset_key: tuple, horizon: int, setting: str, m: int,
               device: str | None, _ds):
    return api.text_grounding(encoder, list(steps), _ds, horizon, setting, m, device=device)


def grounding(cfg: AppConfig, encoder: str, steps, ds, horizon: int, setting: str = DEFAULT_SETTING,
              m: int = DEFAULT_M):
    """The S3D text tower of ``encoder`` grounding ``steps`` (the step timeline), once per choice."""
    return _grounding(encoder, tuple(steps), cfg.dataset_key(), int(horizon), setting, int(m), cfg.device, ds)


@st.cache_resource(show_spinner=False, max_entries=4)
def _llm_recommender(url: str, model: str, mapper: str, labels: tuple[str, ...], allowed: tuple[str, ...]):
    return api.llm_recommender(url, model, mapper, labels, allowed)


def llm_recommendation(url: str, mapper: str, ds, start: int, end: int, horizon: int):
    """The LLM's plan (voted, checked, mapped; or the reported fallback) for ``(â_1, â_T, T)``, from one
    of the endpoints the server was started with (``kepp app --llm-url``, ``KEPP_LLM_URL``: the app's
    ``llm_urls``) and the model it was started with (``KEPP_LLM_MODEL``): any other URL is refused before
    a connection is made, so no visitor chooses where the server sends a request or its key."""
    model = api.llm_defaults()["model"]
    if not model:
        raise KeppError("no LLM model is configured for this app (KEPP_LLM_MODEL where it was started)")
    rec = _llm_recommender(url.strip(), model.strip(), LLM_MAPPERS.get(mapper, mapper), tuple(ds.actions),
                           start_config().llm_urls)
    return rec(start, end, horizon)


# --- protocol results (kepp protocol) --------------------------------------------------------------------
def protocol_folders(cfg: AppConfig) -> list[str]:
    """``kepp protocol`` output folders of the configuration (``cfg.protocol``, else under ``runs/``)."""
    return _protocol_folders(cfg.protocol, cfg.dataset)


@st.cache_data(show_spinner=False, ttl=30, max_entries=16)
def _protocol_folders(protocol: str | None, dataset: str) -> list[str]:
    return api.Workspace(AppConfig(dataset=dataset, protocol=protocol)).protocol_folders()


def _mtime(path: Path) -> float:
    return path.stat().st_mtime if path.exists() else 0.0


@st.cache_data(show_spinner=False, max_entries=16)
def _protocol_run(folder: str, mtime: float):
    return api.read_protocol(folder)


def protocol_run(folder: str):
    """A protocol folder's results (summary, spec, the spec's pairs)."""
    return _protocol_run(folder, _mtime(Path(folder) / "results.json"))


@st.cache_data(show_spinner="Reading the protocol's per-episode records…", max_entries=4)
def _protocol_records(folder: str, mtime: float):
    return api.protocol_records(folder)


@st.cache_data(show_spinner="Running the paired permutation tests…", max_entries=64)
def _pair_table(folder: str, mtime: float, a: str, b: str, fraction: float, metric: str, confidence: float):
    return api.pair_table(_protocol_records(folder, mtime), a, b, fraction, metric, confidence)


@st.cache_resource(show_spinner="Reading the protocol's per-episode records…", max_entries=4)
def _protocol_predictions(folder: str, mtime: float):
    return api.read_predictions([Path(folder) / RECORDS_FILE])


@st.cache_resource(show_spinner="Comparing the two methods episode by episode…", max_entries=32)
def _protocol_comparison(folder: str, mtime: float, a: str, b: str, horizon: int, fraction: float):
    return api.compare_methods(_protocol_predictions(folder, mtime), a, b, horizon, fraction)


def protocol_comparison(folder: str, a: str, b: str, horizon: int, fraction: float):
    """Methods ``a`` and ``b`` episode by episode over the protocol's (seed, test episode) units of
    ``(fraction, T)`` (:func:`kepp_core.api.compare_methods` on the folder's records)."""
    return _protocol_comparison(folder, _mtime(Path(folder) / RECORDS_FILE), a, b, int(horizon), float(fraction))


def pair_table(folder: str, a: str, b: str, fraction: float, metric: str, confidence: float):
    """The paired test of ``A − B`` at every horizon of ``fraction`` (from the folder's records)."""
    return _pair_table(folder, _mtime(Path(folder) / RECORDS_FILE), a, b, fraction, metric, confidence)


# The caches keyed on the records' versions (:func:`records_key`): emptied when the files change (:func:`_superseded`).
RECORDS_CACHES = (_records_table, _records_index, _run_rows, _method_names, _method_table, _metrics_table, _failure_stats, _slice_table,
                  _ab_comparison, _group_table, _browse, _browse_order, _gallery_rows, _episodes_through, _records_dataset)


def records_page(cfg: AppConfig, lacking: str):
    """A records page's opening (Failure cases, Results): the dataset and its line, then the prediction
    records; where there are none, says so (``lacking``: what the page cannot show without them) and how
    the person running the app adds them. ``(dataset, records or None)``."""
    with guarded():
        ds = dataset(cfg)
        skipped = skipped_records(cfg)
        for s in skipped:  # a file of the folder that is not records: named, with why
            st.warning(md(s.line()), icon=":material/warning:")
        preds = predictions(cfg)
    if not cfg.presentation:
        st.caption(dataset_caption(cfg, ds))
    if preds is None or not len(preds):
        if skipped:
            missing(f"No readable prediction records: {len(skipped)} file(s) of the records folder were skipped "
                    f"(named above, each with why), {lacking}", RECORDS_HOW)
        else:
            missing("No prediction records found: this app was started without the evaluation's per-episode "
                    f"records, {lacking}", RECORDS_HOW)
        return ds, None
    return ds, preds
