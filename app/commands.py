"""The app's commands, plugged into ``kepp`` from the app's side: ``kepp app`` (start the Streamlit server) and
``kepp talk export`` (a playlist's slides as one self-contained HTML deck). The project's ``pyproject.toml``
declares them as ``kepp.commands`` entry points (:mod:`kepp_core.commands.plugins`, the one plug-in point):
``kepp_core`` never names this folder nor runs its code.

The deck is made in this process by the functions that draw the live slides (:func:`components.talk.deck.export`).
Every path a user types is read relative to the folder the command runs in.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

from kepp_core.api import AppConfig
from kepp_core.api.config import BENCHMARKS, DATASET_FORMATS
from kepp_core.api.serving import check_options
from kepp_core.errors import KeppError, printable

APP = Path(__file__).resolve().parent  # this folder: Home.py, pages/, components/, serve.py
APP_SCRIPT = APP / "Home.py"
APP_SERVER = APP / "serve.py"  # streamlit run, the dataset opened while it starts
CHECKOUT = APP.parent  # where the server runs (its .streamlit/ settings) and kepp_core is found uninstalled
__all__ = ["add_app_args", "app_command", "components", "export_deck", "launch_app", "register_app",
           "register_talk", "start_app", "stop_server"]


def components():
    """The app's ``components`` package (``app/components``), imported as its pages import it, so that the deck
    this process makes is drawn by the very modules the live pages run. Streamlit puts a page's folder on the
    path; a ``kepp`` process imports the package from its folder here instead (nothing is added to the path)."""
    here = APP / "components"
    found = sys.modules.get("components")
    if found is not None:
        if Path(next(iter(found.__path__), "")).resolve() != here:
            raise KeppError(f"another package named 'components' is imported ({found.__path__}): the app's is {here}")
        return found
    spec = importlib.util.spec_from_file_location("components", here / "__init__.py",
                                                  submodule_search_locations=[str(here)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["components"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["components"]
        raise
    return module


# --- kepp app ------------------------------------------------------------------------------------------------

# How long a session whose browser tab went away is kept for it to come back (Streamlit's default: 120 s). Such a
# session holds its page's variables (its callbacks, deferred downloads and fragments refer to them): tens of MB
# at the field's scale, for every reload of a tab. A network blip shorter than this resumes the same session;
# after it the tab's next connection starts a new one from its address (every view is a link), as a reload does.
DISCONNECTED_S = 30


def app_command(opts: AppConfig) -> tuple[list[str], dict[str, str]]:
    """The command line (``streamlit run`` through ``app/serve.py``, which opens the dataset while
    the server starts) and environment that start the app (the configuration's paths made absolute:
    :meth:`AppConfig.environment`).

    >>> argv, env = app_command(AppConfig(port=8600))
    >>> Path(argv[1]).name, argv[2], Path(argv[3]).name, "--server.port=8600" in argv
    ('serve.py', 'run', 'Home.py', True)
    """
    argv = [sys.executable, str(APP_SERVER), "run", str(APP_SCRIPT),
            "--server.headless=true", f"--server.port={opts.port}", f"--server.address={opts.address}",
            "--browser.gatherUsageStats=false", "--server.fileWatcherType=none",
            "--global.developmentMode=false", f"--server.disconnectedSessionTTL={DISCONNECTED_S}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEPP_APP_")}
    env.update(opts.environment())
    # The server imports kepp_core from this checkout even when the package is not installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CHECKOUT), env.get("PYTHONPATH", "")) if p)
    # Few threads: the planner runs single episodes, and the CPU is often shared.
    env.setdefault("OMP_NUM_THREADS", "2")
    return argv, env


def _check(opts: AppConfig) -> None:
    check_options(opts)
    for script in (APP_SCRIPT, APP_SERVER):
        if not script.is_file():
            raise KeppError(f"{script}: the app's files are missing from this installation")


def start_app(opts: AppConfig, quiet: bool = True) -> subprocess.Popen:
    """Start the server in the background and return the process (the caller stops it)."""
    _check(opts)
    argv, env = app_command(opts)
    out = subprocess.DEVNULL if quiet else None
    return subprocess.Popen(argv, env=env, cwd=CHECKOUT, stdout=out, stderr=out)


def launch_app(opts: AppConfig | argparse.Namespace) -> int:
    """Run the app in the foreground until interrupted; returns the server's exit status (``kepp app``, and
    ``kepp demo`` through it)."""
    if isinstance(opts, argparse.Namespace):
        opts = AppConfig.from_args(opts)
    _check(opts)
    argv, env = app_command(opts)
    print(f"KEPP app: http://{opts.address}:{opts.port}  (Ctrl+C stops it)", file=sys.stderr)
    # Set before the server starts, whatever this process inherited: a shell starts a background job
    # with SIGINT ignored, and a service manager stops it with SIGTERM (or SIGHUP when the terminal goes).
    previous = {s: signal.signal(s, _stop) for s in STOP_SIGNALS}
    try:
        proc = subprocess.Popen(argv, env=env, cwd=CHECKOUT)
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


def add_app_args(p: argparse.ArgumentParser, device_help: str = "") -> None:
    """The options ``kepp app`` and ``kepp demo`` share."""
    p.add_argument("--dataset", default=None, choices=DATASET_FORMATS,
                   help="dataset format (default: demo, the synthetic world)")
    p.add_argument("--root", default=None, help="dataset folder or annotation file")
    p.add_argument("--features", default=None, help="folder of per-second .npy features")
    p.add_argument("--graph", default=None, help="P²KG JSON file (default: built from the training plans)")
    p.add_argument("--checkpoints", default=None, help="folder of trained step/planning models")
    p.add_argument("--predictions", default=None, help="prediction records (JSONL/Parquet) or a folder of them")
    p.add_argument("--taxonomy", default=None, metavar="FILE",
                   help="step names of records of no known dataset, browsed by themselves: JSON {\"17\": \"whisk "
                        "eggs\"} (or ViterbiPlanNet's taxonomy) or CSV 'id,name' (default: the records' own names, "
                        "else 'step 17')")
    p.add_argument("--runs", default=None, help="folder of training runs (metrics JSONL logs)")
    p.add_argument("--protocol", default=None,
                   help="a 'kepp protocol' output folder (results.json, records.jsonl) or a folder of them "
                        "(default: the ones under runs/)")
    p.add_argument("--benchmark", default=None, choices=BENCHMARKS,
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
    p.add_argument("--device", default=None, metavar="DEVICE", help=device_help or None)
    p.add_argument("--port", type=int, default=8501, help="local port of the server")
    p.add_argument("--address", default="localhost", help="address the server listens on")


def register_app(host) -> None:
    """Add ``kepp app`` (the ``kepp.commands`` entry point ``app``; ``host``: :class:`kepp_core.commands.plugins.CommandHost`)."""
    p = host.add_command("app", "Start the KEPP Streamlit app (headless; open the printed URL).",
                         examples="  kepp app\n"
                                  "  kepp app --dataset plans --root ../shared/data/niv/plans.jsonl --port 8502\n"
                                  "  kepp app --config app.toml --presentation\n"
                                  "  kepp app --checkpoints models/official --encoder s3d:s3d/s3d_howto100m.pth",
                         func=launch_app)
    add_app_args(p, host.device_help)


# --- kepp talk export ----------------------------------------------------------------------------------------

TALK_EXAMPLES = ("  kepp talk export 'my talk' --out talk.html\n"
                 "  kepp talk export playlists/talk.json --out talk.html --predictions preds.jsonl --force")
# The start configuration's options `kepp talk export` takes (as `kepp app` does), with their help.
TALK_OPTIONS = (("root", "dataset folder or annotation file"),
                ("features", "folder of per-second .npy features"), ("graph", "P²KG JSON file"),
                ("checkpoints", "folder of trained models (its records and playlists are found beside it)"),
                ("predictions", "prediction records (JSONL/Parquet) or a folder of them"),
                ("config", "TOML file with any of the options above (as kepp app reads it)"))


def register_talk(host) -> None:
    """Add ``kepp talk export`` (the ``kepp.commands`` entry point ``talk``)."""
    p = host.add_command("talk", "talks: a playlist as a deck that needs no server")
    tsub = p.add_subparsers(dest="talk_command", metavar="SUBCOMMAND", required=True)
    e = host.add_command("export", "a playlist's slides (frames, plan, truth, verdict, graph, notes) as one "
                         "self-contained HTML file: open it from disk; P opens the presenter view", TALK_EXAMPLES,
                         export_deck, sub=tsub)
    e.add_argument("playlist", metavar="PLAYLIST",
                   help="a playlist of the workspace (its name, as the Playlists page lists it) or a playlist .json file "
                        "(the built-in scenes: Save a copy on the Playlists page first)")
    e.add_argument("--out", required=True, metavar="FILE", help="the deck to write (.html; with --pdf, .pdf)")
    e.add_argument("--allow-missing", action="store_true",
                   help="write the deck even where an item names an episode, seed or method the records lack (each "
                        "is warned about and its slide says what is missing); without it such a playlist is refused")
    e.add_argument("--pdf", action="store_true",
                   help="write the deck printed to PDF (one slide a page) instead of its HTML: needs Chromium "
                        "(chromium on the PATH, /usr/bin/chromium or KEPP_CHROMIUM) and Playwright for Python")
    e.add_argument("--dataset", default=None, choices=DATASET_FORMATS, help="dataset format (default: demo)")
    for name, text in TALK_OPTIONS:
        e.add_argument(f"--{name}", default=None, help=text)
    host.writes(e, kinds={"out": "deck"}, reads=("playlist", "predictions"))


def export_deck(args: argparse.Namespace) -> int:
    """Run ``kepp talk export``: the deck of ``args.playlist`` written to ``args.out`` (both relative to the
    folder the command runs in) by :func:`components.talk.deck.export`, in this process."""
    from kepp_core.api.workspace import check_deck_output

    if not args.pdf:
        check_deck_output(args.out, args.force)  # before the dataset is opened (the store checks again as it writes)
    cfg = AppConfig.from_args(argparse.Namespace(**{k: getattr(args, k) for k in
                                                    ("dataset", *(name for name, _ in TALK_OPTIONS))}))
    components()
    from components.talk import deck
    if args.pdf:
        from components.talk.deck_pdf import chromium

        chromium()  # no Chromium: said before the dataset is opened

    def warn(line: str) -> None:
        print(f"kepp: warning: {printable(line)}", file=sys.stderr)

    try:
        out = deck.export(cfg, args.playlist, args.out, force=args.force, allow_missing=args.allow_missing,
                          warn=warn, pdf=args.pdf)
    except deck.MissingItems as e:
        for line in e.lines:  # one line per item, then the refusal
            print(f"kepp: error: {printable(line)}", file=sys.stderr)
        raise
    print(f"wrote {out}")
    return 0
