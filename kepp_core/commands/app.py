"""``kepp app``: start the Streamlit app (``app/Home.py``) headless on a local port.

The app reads its starting configuration from environment variables set here
(``KEPP_APP_*``, the schema in :mod:`kepp_core.api.config`), so every page of the multipage
app sees the same values; the sidebar can change them afterwards. ``kepp demo`` calls
:func:`launch_app` with its own options.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from kepp_core.api import AppConfig, Workspace
from kepp_core.api.config import ENV, PATH_KEYS
from kepp_core.commands._common import DEVICE_HELP, add_command
from kepp_core.data import LOADERS
from kepp_core.errors import KeppError
from kepp_core.llm.client import is_http_url
from kepp_core.paths import APP_DIR, REPO_ROOT

APP_SCRIPT = APP_DIR / "Home.py"
APP_SERVER = APP_DIR / "serve.py"  # streamlit run, the dataset opened while it starts
__all__ = ["add_app_args", "app_command", "check_options", "free_port", "launch_app", "port_is_free",
           "start_app"]


def check_options(opts: AppConfig) -> None:
    """Raise a KeppError, before the server starts, for anything the app could not use: a path that
    does not exist, a config file that is not one (a FIFO, nested too deeply, a wrong type), an
    encoder that does not load or does not take frames, a graph, predictions or checkpoints folder
    that its reader refuses, a port that is taken. The options and the config file's values are
    checked together, as the pages will see them."""
    if opts.dataset is not None and opts.dataset not in LOADERS:
        raise KeppError(f"unknown dataset {opts.dataset!r} (expected one of {', '.join(sorted(LOADERS))})")
    for name in ("root", "features", "graph", "checkpoints", "predictions", "runs", "protocol", "config"):
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
    for script in (APP_SCRIPT, APP_SERVER):
        if not script.is_file():
            raise KeppError(f"{script}: the app is not part of this installation (run from a source checkout)")


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


def app_command(opts: AppConfig) -> tuple[list[str], dict[str, str]]:
    """The command line (``streamlit run`` through ``app/serve.py``, which opens the dataset while
    the server starts) and environment that start the app.

    >>> argv, env = app_command(AppConfig(port=8600))
    >>> Path(argv[1]).name, argv[2], Path(argv[3]).name, "--server.port=8600" in argv
    ('serve.py', 'run', 'Home.py', True)
    """
    argv = [sys.executable, str(APP_SERVER), "run", str(APP_SCRIPT),
            "--server.headless=true", f"--server.port={opts.port}", f"--server.address={opts.address}",
            "--browser.gatherUsageStats=false", "--server.fileWatcherType=none",
            "--global.developmentMode=false"]
    env = {k: v for k, v in os.environ.items() if k not in ENV.values()}
    env.update(opts.environment())
    # The app imports kepp_core from this checkout even when the package is not installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    # Few threads: the planner runs single episodes, and the CPU is often shared.
    env.setdefault("OMP_NUM_THREADS", "2")
    return argv, env


def start_app(opts: AppConfig, quiet: bool = True) -> subprocess.Popen:
    """Start the server in the background and return the process (the caller stops it)."""
    check_options(opts)
    argv, env = app_command(opts)
    out = subprocess.DEVNULL if quiet else None
    return subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=out, stderr=out)


def launch_app(opts: AppConfig | argparse.Namespace) -> int:
    """Run the app in the foreground until interrupted; returns the server's exit status.

    ``kepp demo`` calls this after it has made sure the demo world and models exist.
    """
    if isinstance(opts, argparse.Namespace):
        opts = AppConfig.from_args(opts)
    check_options(opts)
    argv, env = app_command(opts)
    print(f"KEPP app: http://{opts.address}:{opts.port}  (Ctrl+C stops it)", file=sys.stderr)
    # Set before the server starts, whatever this process inherited: a shell starts a background job
    # with SIGINT ignored, and a service manager stops it with SIGTERM (or SIGHUP when the terminal goes).
    previous = {s: signal.signal(s, _stop) for s in STOP_SIGNALS}
    try:
        proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT)
        try:
            return proc.wait()
        except _Stopped:
            for s in STOP_SIGNALS:  # a second signal must not cut the server's shutdown short
                signal.signal(s, signal.SIG_IGN)
            stop_server(proc)
            return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # what ends `kepp app` and its server
STOP_WAIT_S = 10  # the server's own shutdown before it is killed (Streamlit may hang after "Stopping...")


class _Stopped(BaseException):
    """A stop signal arrived (raised in the main thread, as KeyboardInterrupt is for Ctrl+C)."""


def _stop(signum, frame) -> None:
    raise _Stopped(signum)


def stop_server(proc: subprocess.Popen, wait_s: float = STOP_WAIT_S) -> None:
    """End the server ``proc``: SIGTERM (Streamlit closes its sessions and the port), then SIGKILL if it
    has not ended within ``wait_s`` seconds; returns once it has ended."""
    proc.terminate()
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def add_app_args(p: argparse.ArgumentParser) -> None:
    """The options ``kepp app`` and ``kepp demo`` share."""
    p.add_argument("--dataset", default=None, choices=sorted(LOADERS),
                   help="dataset format (default: demo, the synthetic world)")
    p.add_argument("--root", default=None, help="dataset folder or annotation file")
    p.add_argument("--features", default=None, help="folder of per-second .npy features")
    p.add_argument("--graph", default=None, help="P²KG JSON file (default: built from the training plans)")
    p.add_argument("--checkpoints", default=None, help="folder of trained step/planning models")
    p.add_argument("--predictions", default=None, help="prediction records (JSONL/Parquet) or a folder of them")
    p.add_argument("--runs", default=None, help="folder of training runs (metrics JSONL logs)")
    p.add_argument("--protocol", default=None,
                   help="a 'kepp protocol' output folder (results.json, records.jsonl) or a folder of them "
                        "(default: the ones under runs/)")
    p.add_argument("--benchmark", default=None, choices=AppConfig.BENCHMARKS,
                   help="the benchmark dataset the loaded dataset is: Results shows that dataset's published numbers "
                        "(read from the papers) apart from the measured ones")
    p.add_argument("--config", default=None, help="TOML file with any of the options above")
    p.add_argument("--presentation", action="store_true", help="start in presentation mode (large type)")
    p.add_argument("--encoder", dest="encoders", action="append", default=None, metavar="SPEC",
                   help="an encoder the app may load to encode videos ('s3d:PATH', the S3D network of the "
                        "official models' features, also offered in the Plan page's sidebar with its step timeline; "
                        "'module:function' or a TorchScript .pt file; repeatable). A dataset's features.json never "
                        "makes the app load one itself")
    p.add_argument("--allow-root", dest="allow_roots", action="append", default=None, metavar="DIR",
                   help="a folder whose files a browser visitor may open from the sidebar (repeatable; the start "
                        "paths and KEPP's cache home are always allowed, nothing else is)")
    p.add_argument("--llm-url", dest="llm_urls", action="append", default=None, metavar="URL",
                   help="an OpenAI-compatible LLM endpoint the Plan page may ask (repeatable; KEPP_LLM_URL is one "
                        "too): the only endpoints the server calls, and the only ones KEPP_LLM_API_KEY is sent to")
    p.add_argument("--device", default=None, metavar="DEVICE", help=DEVICE_HELP)
    p.add_argument("--port", type=int, default=8501, help="local port of the server")
    p.add_argument("--address", default="localhost", help="address the server listens on")


def register(sub) -> None:
    """Add ``kepp app`` to the command line."""
    p = add_command(sub, "app", "Start the KEPP Streamlit app (headless; open the printed URL).",
                    examples="  kepp app\n"
                             "  kepp app --dataset plans --root ../shared/data/niv/plans.jsonl --port 8502\n"
                             "  kepp app --config app.toml --presentation\n"
                             "  kepp app --checkpoints models/official --encoder s3d:s3d/s3d_howto100m.pth",
                    func=launch_app)
    add_app_args(p)
