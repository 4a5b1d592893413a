"""``kepp app``: start the Streamlit app (``app/Home.py``) headless on a local port.

The app reads its starting configuration from environment variables set here
(``KEPP_APP_*``), so every page of the multipage app sees the same values; the sidebar
can change them afterwards. ``kepp demo`` calls :func:`launch_app` with its own options.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from kepp_core.commands._common import add_command
from kepp_core.data import LOADERS
from kepp_core.errors import KeppError
from kepp_core.video.encoders import encoder_name

REPO = Path(__file__).resolve().parents[2]
APP_SCRIPT = REPO / "app" / "Home.py"

# Option name -> environment variable the app reads (app/components/config.py).
ENV = {
    "dataset": "KEPP_APP_DATASET",
    "root": "KEPP_APP_ROOT",
    "features": "KEPP_APP_FEATURES",
    "graph": "KEPP_APP_GRAPH",
    "checkpoints": "KEPP_APP_CHECKPOINTS",
    "predictions": "KEPP_APP_PREDICTIONS",
    "runs": "KEPP_APP_RUNS",
    "config": "KEPP_APP_CONFIG",
    "presentation": "KEPP_APP_PRESENTATION",
    "encoders": "KEPP_APP_ENCODERS",  # one encoder spec per line
}


@dataclass
class AppOptions:
    """Where the app starts: dataset, artefacts, server port. ``None`` = the app's default."""

    dataset: str | None = None
    root: str | None = None
    features: str | None = None
    graph: str | None = None
    checkpoints: str | None = None
    predictions: str | None = None
    runs: str | None = None
    config: str | None = None
    presentation: bool = False
    encoders: list[str] | None = None  # encoder specs the app may load for uploads (besides the built-in one)
    port: int = 8501
    address: str = "localhost"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AppOptions:
        """Options from a parsed ``kepp app``/``kepp demo`` namespace (missing fields keep defaults)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in vars(args).items() if k in names and v is not None})


def check_options(opts: AppOptions) -> None:
    """Raise a KeppError for paths that do not exist or a port that is taken."""
    if opts.dataset is not None and opts.dataset not in LOADERS:
        raise KeppError(f"unknown dataset {opts.dataset!r} (expected one of {', '.join(sorted(LOADERS))})")
    for name in ("root", "features", "graph", "checkpoints", "predictions", "runs", "config"):
        value = getattr(opts, name)
        if value is not None and not Path(value).exists():
            raise KeppError(f"--{name} {value}: path does not exist")
    if opts.config is not None:
        read_app_config(opts.config)  # fail here, not in the browser
    for spec in opts.encoders or []:
        encoder_name(spec)  # a TorchScript file must exist
    if not 0 < opts.port < 65536:
        raise KeppError(f"--port {opts.port}: expected 1..65535")
    if not port_is_free(opts.port, opts.address):
        raise KeppError(f"port {opts.port} on {opts.address} is already in use (choose another with --port)")
    if not APP_SCRIPT.is_file():
        raise KeppError(f"{APP_SCRIPT}: the app is not part of this installation (run from a source checkout)")


PATH_KEYS = ("root", "features", "graph", "checkpoints", "predictions", "runs")


def read_app_config(path: str | Path) -> dict:
    """Read an app config file (TOML; keys at top level or under ``[app]``).

    Relative paths are resolved against the file's folder. Unknown keys and wrong types
    raise a KeppError naming the file and the key.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "app.toml"
    >>> _ = f.write_text('dataset = "plans"\\nroot = "plans.jsonl"\\n')
    >>> cfg = read_app_config(f); cfg["dataset"], cfg["root"] == str(f.parent / "plans.jsonl")
    ('plans', True)
    """
    import tomllib

    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KeppError(f"{path}: config file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise KeppError(f"{path}: not a valid TOML file ({e})") from None
    if isinstance(raw.get("app"), dict):
        raw = raw["app"]
    known = set(PATH_KEYS) | {"dataset", "presentation", "split_seed", "encoders"}
    out: dict = {}
    for key, value in raw.items():
        if key not in known:
            raise KeppError(f"{path}: unknown key {key!r} (expected some of {', '.join(sorted(known))})")
        if key == "presentation":
            if not isinstance(value, bool):
                raise KeppError(f"{path}: 'presentation' must be true or false, got {value!r}")
        elif key == "split_seed":
            if not isinstance(value, int):
                raise KeppError(f"{path}: 'split_seed' must be an integer, got {value!r}")
        elif key == "encoders":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise KeppError(f"{path}: 'encoders' must be a list of encoder specs, got {value!r}")
            value = [_resolve_encoder(v, path.parent) for v in value]
        elif not isinstance(value, str):
            raise KeppError(f"{path}: {key!r} must be a string, got {value!r}")
        elif key == "dataset" and value not in LOADERS:
            raise KeppError(f"{path}: dataset {value!r} is not one of {', '.join(sorted(LOADERS))}")
        elif key in PATH_KEYS:
            value = str((path.parent / value) if not Path(value).is_absolute() else Path(value))
        out[key] = value
    return out


def _resolve_encoder(spec: str, base: Path) -> str:
    """A TorchScript spec as an absolute path (relative to ``base``); other specs as they are."""
    if spec.endswith((".pt", ".pth", ".ts")) and not Path(spec).is_absolute():
        return str((base / spec).resolve())
    return spec


def port_is_free(port: int, address: str = "localhost") -> bool:
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


def app_command(opts: AppOptions) -> tuple[list[str], dict[str, str]]:
    """The ``streamlit run`` command line and environment that start the app.

    >>> argv, env = app_command(AppOptions(port=8600))
    >>> argv[1:4], "--server.port=8600" in argv
    (['-m', 'streamlit', 'run'], True)
    """
    argv = [sys.executable, "-m", "streamlit", "run", str(APP_SCRIPT),
            "--server.headless=true", f"--server.port={opts.port}", f"--server.address={opts.address}",
            "--browser.gatherUsageStats=false", "--server.fileWatcherType=none",
            "--global.developmentMode=false"]
    env = dict(os.environ)
    for name, var in ENV.items():
        env.pop(var, None)
        value = getattr(opts, name)
        if value in (None, False, []):
            continue
        if name == "encoders":
            env[var] = "\n".join(_resolve_encoder(v, Path.cwd()) for v in value)
            continue
        env[var] = "1" if value is True else str(Path(value).resolve()) if name not in ("dataset",) else value
    # The app imports kepp_core from this checkout even when the package is not installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    # Few threads: the planner runs single episodes, and the CPU is often shared.
    env.setdefault("OMP_NUM_THREADS", "2")
    return argv, env


def start_app(opts: AppOptions, quiet: bool = True) -> subprocess.Popen:
    """Start the server in the background and return the process (the caller stops it)."""
    check_options(opts)
    argv, env = app_command(opts)
    out = subprocess.DEVNULL if quiet else None
    return subprocess.Popen(argv, env=env, cwd=REPO, stdout=out, stderr=out)


def launch_app(opts: AppOptions | argparse.Namespace) -> int:
    """Run the app in the foreground until interrupted; returns the server's exit status.

    ``kepp demo`` calls this after it has made sure the demo world and models exist.
    """
    if isinstance(opts, argparse.Namespace):
        opts = AppOptions.from_args(opts)
    check_options(opts)
    argv, env = app_command(opts)
    print(f"KEPP app: http://{opts.address}:{opts.port}  (Ctrl+C stops it)", file=sys.stderr)
    proc = subprocess.Popen(argv, env=env, cwd=REPO)

    def stop(signum, frame):  # SIGTERM to `kepp app` stops the server too
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    p.add_argument("--config", default=None, help="TOML file with any of the options above")
    p.add_argument("--presentation", action="store_true", help="start in presentation mode (large type)")
    p.add_argument("--encoder", dest="encoders", action="append", default=None, metavar="SPEC",
                   help="an encoder the app may load to encode uploads ('module:function' or a TorchScript "
                        ".pt file; repeatable). A dataset's features.json never makes the app load one itself")
    p.add_argument("--port", type=int, default=8501, help="local port of the server")
    p.add_argument("--address", default="localhost", help="address the server listens on")


def register(sub) -> None:
    p = add_command(sub, "app", "Start the KEPP Streamlit app (headless; open the printed URL).",
                    examples="  kepp app\n"
                             "  kepp app --dataset plans --root ../shared/data/niv/plans.jsonl --port 8502\n"
                             "  kepp app --config app.toml --presentation",
                    func=launch_app)
    add_app_args(p)
