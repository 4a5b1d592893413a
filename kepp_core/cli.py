"""The ``kepp`` command line: thin wrappers over the package's functions.

Each command group lives in ``kepp_core/commands/<group>.py`` and exposes
``register(subparsers)``; a user error (``KeppError``, or a file the system refuses to read
or write) prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kepp_core import __version__
from kepp_core.errors import KeppError

# Command groups, in the order ``kepp --help`` lists them.
GROUPS = ["data", "features", "graph", "train", "models", "eval", "plan", "protocol", "demo", "app"]


def build_parser() -> argparse.ArgumentParser:
    """The ``kepp`` parser with every command group's sub-commands."""
    parser = argparse.ArgumentParser(
        prog="kepp", description="Knowledge-enhanced procedure planning in instructional videos.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kepp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        importlib.import_module(f"kepp_core.commands.{group}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``kepp`` with ``argv``; returns the exit status (2 for a user error, one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeppError as e:
        print(f"kepp: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.filename is None:  # not about a file the user named: a bug, keep the traceback
            raise
        print(f"kepp: error: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kepp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
