"""Commands that plug into ``kepp`` from outside the core: the one way in (the ``kepp.commands`` entry points).

A distribution adds its commands to ``kepp`` by declaring, in its ``pyproject.toml``::

    [project.entry-points."kepp.commands"]
    talk = "some.module:register_talk"   # the command's name = the entry point's name

Each entry point names a function ``register(host)`` that adds the command of that name with
:meth:`CommandHost.add_command` (its options with plain ``argparse``; what it writes with
:meth:`CommandHost.writes`, so ``kepp`` guards and locks its outputs as it does its own). The core never
imports a plug-in by name and never knows where one lives: this checkout's app declares its commands
(``kepp app``, ``kepp talk export``) in the project's ``pyproject.toml`` (docs/architecture.md, "The app's
commands"). An entry point whose module cannot be imported (the app not installed, or its libraries
missing) is still a command: running it says why in one ``kepp: error:`` line.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from importlib import metadata

from kepp_core.commands._common import DEVICE_HELP, add_command, add_device_option, writes
from kepp_core.errors import KeppError

GROUP = "kepp.commands"
__all__ = ["GROUP", "CommandHost", "plugin_entry_points", "register_plugins", "run_plugin"]


@dataclass(frozen=True)
class CommandHost:
    """What a plug-in is handed to add its command: the ``kepp`` sub-command table and the helpers every
    ``kepp`` command is built with."""

    sub: argparse._SubParsersAction
    device_help: str = DEVICE_HELP

    def add_command(self, name: str, help: str, examples: str = "", func=None, sub=None) -> argparse.ArgumentParser:
        """Add the sub-command ``name`` (to ``sub``, a sub-command table of a plug-in's own command, else to
        ``kepp``'s) with its one-line help, an ``examples:`` epilog and ``func(args) -> int`` to run."""
        return add_command(self.sub if sub is None else sub, name, help, examples, func)

    @staticmethod
    def writes(p: argparse.ArgumentParser, **declared) -> None:
        """Declare the files and folders the command writes, as every ``kepp`` command does
        (:func:`kepp_core.commands._common.writes`: ``kinds``, ``folders``, ``reads``, ...)."""
        writes(p, **declared)

    @staticmethod
    def add_device_option(p: argparse.ArgumentParser) -> None:
        """``--device`` (:func:`kepp_core.commands._common.add_device_option`)."""
        add_device_option(p)


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The ``kepp.commands`` entry points of the installed distributions, by name (one per name: the first
    found on the path, as :mod:`importlib.metadata` finds distributions)."""
    seen: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=GROUP):
        seen.setdefault(ep.name, ep)
    return [seen[name] for name in sorted(seen)]


def register_plugins(sub, only: str | None = None) -> None:
    """Add every plug-in's command (``only``: just the one of that name) to the sub-command table ``sub``."""
    host = CommandHost(sub)
    for ep in plugin_entry_points():
        if only is not None and ep.name != only:
            continue
        try:
            register = ep.load()
        except ImportError as e:  # the plug-in's code or its libraries are not installed: the command says so
            _missing(host, ep, e)
            continue
        register(host)


def _missing(host: CommandHost, ep: metadata.EntryPoint, error: ImportError) -> None:
    dist = ep.dist.name if ep.dist is not None else "its distribution"
    why = f"{ep.value} cannot be imported ({type(error).__name__}: {error})"

    def refuse(args) -> int:
        raise KeppError(f"kepp {ep.name}: not installed: {why}; it comes with {dist}'s app "
                        "(a source checkout on the path, with its extras: pip install -e '.[app]')")

    host.add_command(ep.name, f"(not installed: {ep.value})", func=refuse).set_defaults(takes_any=True)


def run_plugin(name: str, argv: list[str]) -> int | None:
    """Run the plug-in command ``name`` with ``argv`` in this process, as ``kepp NAME ARGV...`` would (its
    exit status), or None where no plug-in declares a command of that name. ``kepp demo`` starts the app
    this way, knowing it only as the command ``app``."""
    if name not in {ep.name for ep in plugin_entry_points()}:
        return None
    parser = argparse.ArgumentParser(prog="kepp")
    register_plugins(parser.add_subparsers(dest="command"), only=name)
    args = parser.parse_args([name, *argv])
    return int(args.func(args) or 0)
