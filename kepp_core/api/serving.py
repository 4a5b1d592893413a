"""What the app's server is started with, checked before it starts: the options a ``kepp app`` command line
and its config file give (:func:`check_options`), and the local ports (:func:`port_is_free`, :func:`free_port`).

The command that starts the server is the app's own (``app/commands.py``, plugged into ``kepp``); the checks
stand here because they open the core's files as the pages will (datasets, encoders, graphs, records).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from kepp_core.api.config import DATASET_FORMATS, ENV, PATH_KEYS, AppConfig
from kepp_core.api.workspace import Workspace
from kepp_core.errors import KeppError
from kepp_core.llm.client import is_http_url

__all__ = ["check_app_device", "check_files", "check_options", "free_port", "port_is_free"]


def check_options(opts: AppConfig) -> None:
    """Raise a KeppError, before the server starts, for anything the app could not use: a path that
    does not exist, a config file that is not one (a FIFO, nested too deeply, a wrong type), an
    encoder that does not load or does not take frames, a graph, predictions or checkpoints folder
    that its reader refuses, a port that is taken. The options and the config file's values are
    checked together, as the pages will see them."""
    if opts.dataset is not None and opts.dataset not in DATASET_FORMATS:
        raise KeppError(f"unknown dataset {opts.dataset!r} (expected one of {', '.join(DATASET_FORMATS)})")
    for name in ("root", "features", "graph", "checkpoints", "predictions", "taxonomy", "runs", "protocol", "config"):
        value = getattr(opts, name)
        if value is not None and not Path(value).exists():
            raise KeppError(f"--{name} {value}: path does not exist")
    for folder in opts.allow_roots or []:
        if not Path(folder).is_dir():
            raise KeppError(f"--allow-root {folder}: not a folder")
    for url in opts.llm_urls or []:
        if len(url) > 2000 or not url.isprintable() or not is_http_url(url):
            raise KeppError(f"--llm-url {url[:80]!r}: expected an http(s) URL (e.g. http://127.0.0.1:8080/v1)")
    # KEPP_APP_* of this environment are checked as the options are (the server takes them from the options)
    check_app_device(AppConfig.from_env({k: v for k, v in os.environ.items() if k in ENV.values()}), ENV["device"])
    check_app_device(opts)
    effective = AppConfig.from_env(opts.environment()) if opts.config is not None else opts  # reads the config
    check_app_device(effective, f"{opts.config}: device")
    check_files(effective)
    if not 0 < opts.port < 65536:
        raise KeppError(f"--port {opts.port}: expected 1..65535")
    if not port_is_free(opts.port, opts.address):
        raise KeppError(f"port {opts.port} on {opts.address} is already in use (choose another with --port)")


def check_app_device(cfg: AppConfig, where: str = "--device") -> None:
    """A device the app cannot have (no CUDA, no such GPU) is one line when the server starts, not an
    error on every page (:func:`kepp_core.devices.resolve_device`; torch loads only for a GPU)."""
    from kepp_core.devices import DEVICE_ENV, resolve_device

    if cfg.device is not None:
        resolve_device(cfg.device, where)
    elif os.environ.get(DEVICE_ENV, "").strip():  # the pages' default: $KEPP_DEVICE, which the server inherits
        resolve_device(None)


def check_files(cfg: AppConfig) -> None:
    """Open what ``cfg`` names the way the pages will, so that a bad file is a command-line error:
    every path exists, encoders load as for ``kepp features extract`` (a callable must take
    ``(frames, fps)``), the graph and the prediction records read, the checkpoints path is a folder."""
    from kepp_core.video.encoders import get_encoder

    for name in PATH_KEYS:
        value = getattr(cfg, name)
        if value is not None and not Path(value).exists():
            raise KeppError(f"{cfg.config or '--' + name}: {name} {value}: path does not exist")
    for spec in cfg.encoders:
        get_encoder(spec)
    if cfg.checkpoints is not None and not Path(cfg.checkpoints).is_dir():
        raise KeppError(f"--checkpoints {cfg.checkpoints}: not a folder (a models folder written by 'kepp train')")
    if cfg.graph is not None:
        from kepp_core.graph import load_graph

        load_graph(cfg.graph)
    if cfg.predictions is not None:  # a folder may hold none yet (playlists only): the records it holds must read
        from kepp_core.evaluation.store import read_columns

        files, skipped = Workspace(cfg).prediction_sources()
        for s in skipped:  # a file of the folder that is not records: named, with why (the pages say it too)
            print(f"kepp: {s.line()}", file=sys.stderr)
        read_columns(files)  # validated, judged and cached once: the server's pages read the cache
    if cfg.taxonomy is not None:  # the records' step names: a bad file is one line before the server starts
        from kepp_core.data.step_names import read_step_names

        read_step_names(cfg.taxonomy)


def port_is_free(port: int, address: str = "localhost") -> bool:
    """Whether nothing listens on ``port`` of ``address``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def free_port(address: str = "localhost") -> int:
    """A port nobody listens on right now (for tests and benchmarks)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])
