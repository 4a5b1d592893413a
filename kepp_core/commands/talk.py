"""``kepp talk export``: a playlist's slides as one self-contained HTML file (a deck that needs no server).

The deck is drawn by the app's components (``app/components/talk/deck.py``, the same slides the live pages show),
so the command runs the app's worker ``app/export_deck.py`` with the start configuration in the
``KEPP_APP_*`` variables, as ``kepp app`` starts the server."""

from __future__ import annotations

import os
import subprocess
import sys

from kepp_core.api import AppConfig
from kepp_core.commands._common import add_command, writes
from kepp_core.data import LOADERS
from kepp_core.errors import KeppError
from kepp_core.paths import APP_DIR, REPO_ROOT
from kepp_core.evaluation.playlists import check_deck_output

__all__ = ["EXPORT_SCRIPT", "export_command", "register"]

EXPORT_SCRIPT = APP_DIR / "export_deck.py"
EXAMPLES = ("  kepp talk export 'my talk' --out talk.html\n"
            "  kepp talk export playlists/talk.json --out talk.html --predictions runs/predictions.jsonl --force")


def register(sub) -> None:
    """Add ``kepp talk export``."""
    p = sub.add_parser("talk", help="talks: a playlist as a deck that needs no server")
    tsub = p.add_subparsers(dest="talk_command", metavar="SUBCOMMAND", required=True)
    e = add_command(tsub, "export", "a playlist's slides (frames, plan, truth, verdict, graph, notes) as one "
                    "self-contained HTML file: open it from disk; P opens the presenter view", EXAMPLES, _export)
    e.add_argument("playlist", metavar="PLAYLIST",
                   help="a playlist of the workspace (its name, as the Playlists page lists it) or a playlist .json file "
                        "(the built-in scenes: Save a copy on the Playlists page first)")
    e.add_argument("--out", required=True, metavar="FILE", help="the deck to write (.html)")
    e.add_argument("--dataset", default=None, choices=sorted(LOADERS), help="dataset format (default: demo)")
    for name, text in (("root", "dataset folder or annotation file"),
                       ("features", "folder of per-second .npy features"), ("graph", "P²KG JSON file"),
                       ("checkpoints", "folder of trained models (its records and playlists are found beside it)"),
                       ("predictions", "prediction records (JSONL/Parquet) or a folder of them"),
                       ("config", "TOML file with any of the options above (as kepp app reads it)")):
        e.add_argument(f"--{name}", default=None, help=text)
    writes(e, kinds={"out": "deck"}, reads=("playlist", "predictions"))


def export_command(args) -> tuple[list[str], dict[str, str]]:
    """The worker's command line and environment for parsed ``kepp talk export`` arguments."""
    cfg = AppConfig.from_args(type(args)(**{k: getattr(args, k) for k in
                                            ("dataset", "root", "features", "graph", "checkpoints", "predictions",
                                             "config")}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEPP_APP_")}
    env.update(cfg.environment())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, str(EXPORT_SCRIPT), args.playlist, args.out, *(["--force"] if args.force else [])]
    return argv, env


def _export(args) -> int:
    check_deck_output(args.out, args.force)  # before the worker opens the dataset (it checks again as it writes)
    if not EXPORT_SCRIPT.is_file():
        raise KeppError(f"{EXPORT_SCRIPT}: the app is not part of this installation (run from a source checkout)")
    argv, env = export_command(args)
    sys.stdout.flush()
    done = subprocess.run(argv, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode == 2 and done.stderr.startswith("kepp: error: "):
        raise KeppError(done.stderr.strip().splitlines()[-1].removeprefix("kepp: error: "))
    if done.returncode:
        sys.stderr.write(done.stderr)
        return done.returncode
    print(done.stdout.strip())
    return 0
