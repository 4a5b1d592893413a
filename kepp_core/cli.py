"""The ``kepp`` command line: thin wrappers over the package's functions.

Each command group lives in ``kepp_core/commands/<group>.py`` and exposes
``register(subparsers)``; a user error (``KeppError``, or a file the system refuses to read
or write) prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys

from kepp_core import __version__
from kepp_core.commands._common import check_numbers, command_device, hold_outputs
from kepp_core.commands.plugins import register_plugins
from kepp_core.errors import KeppError, printable

# Command groups, in the order ``kepp --help`` lists them.
# Commands of other distributions (the app's `kepp app` and `kepp talk`) follow them, through the one plug-in
# point (kepp_core/commands/plugins.py: the `kepp.commands` entry points).
GROUPS = ["data", "features", "graph", "train", "models", "eval", "records", "plan", "protocol", "demo"]


def build_parser() -> argparse.ArgumentParser:
    """The ``kepp`` parser with every command group's sub-commands."""
    parser = argparse.ArgumentParser(
        prog="kepp", description="Knowledge-enhanced procedure planning in instructional videos.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kepp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        importlib.import_module(f"kepp_core.commands.{group}").register(sub)
    register_plugins(sub)
    return parser


class PrintableStdout(io.TextIOBase):
    """Standard output with every control character escaped (:func:`~kepp_core.errors.printable`;
    newlines and tabs kept): whatever a command prints, a label holding ESC or CSI sequences
    reaches the terminal as text. JSON output is unchanged (``json`` escapes them itself)."""

    def __init__(self, raw) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text, keep_newlines=True))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.raw, "encoding", "utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run ``kepp`` with ``argv``; returns the exit status (2 for a user error, one line on stderr)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_any", False):  # a plug-in that is not installed takes any arguments
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    stdout, sys.stdout = sys.stdout, PrintableStdout(sys.stdout)
    try:
        check_numbers(args)
        with command_device(args), hold_outputs(args):
            status = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that went away is found here, not in the interpreter's last flush
        return status
    except KeppError as e:
        print(f"kepp: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            return _reader_gone(stdout)
        if e.filename is None:  # not about a file the user named: a bug, keep the traceback
            raise
        print(f"kepp: error: {printable(str(e.filename))}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kepp: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


def _reader_gone(stdout) -> int:
    """``kepp ... | head``: the reader closed the pipe. End quietly: what is still buffered goes to
    /dev/null, so the interpreter's last flush does not print a BrokenPipeError either."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
