"""``kepp ... --help``: every option of every command and sub-command states its default at most
once, never as ``(default: None)``, and an on/off flag never as ``(default: False)``."""

from __future__ import annotations

import argparse
import re

import pytest

from kepp_core.cli import build_parser
from tests.helpers.cli import run_kepp


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("kepp",)):
    """(command words, parser) of ``parser`` and of every sub-command below it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, path + (name,))


COMMANDS = list(_commands(build_parser()))


def _option_helps(parser: argparse.ArgumentParser):
    """(option, help as ``--help`` prints it, before wrapping) of every documented argument."""
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.help is argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        yield "/".join(action.option_strings) or action.dest, formatter._expand_help(action)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_walk_reaches_every_group_and_the_sub_commands_below_them():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"kepp app", "kepp eval", "kepp protocol", "kepp data stats", "kepp graph zero-shot",
            "kepp train plan", "kepp models import", "kepp demo table"} <= names


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_states_its_default_at_most_once(path, parser):
    helps = list(_option_helps(parser))
    assert helps[0][0] == "-h/--help", path  # this parser's own options, --help first
    for option, help in helps:
        assert help.count("(default:") <= 1, (path, option, help)
        assert "(default: None)" not in help, (path, option, help)
        assert "(default: ==SUPPRESS==)" not in help, (path, option, help)
    for action in parser._actions:
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            assert "(default:" not in parser._get_formatter()._expand_help(action), (path, action.option_strings)
    text = _one_line(parser.format_help())  # the whole help, whatever the loops above saw
    assert [dud for dud in ("(default: None)", "(default: False)", "(default: ==SUPPRESS==") if dud in text] == [], path


def test_a_default_the_help_does_not_state_is_still_shown():
    helps = {" ".join(path): dict(_option_helps(p)) for path, p in COMMANDS}
    assert helps["kepp data stats"]["--split-seed"].endswith("(default: 0)")
    assert helps["kepp data stats"]["--dataset"].endswith("(default: demo)")
    assert helps["kepp app"]["--port"].endswith("(default: 8501)")
    assert helps["kepp app"]["--dataset"] == "dataset format (default: demo, the synthetic world)"


def test_the_real_kepp_app_help_prints_the_dataset_default_once():
    r = run_kepp("app", "--help", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    text = _one_line(r.stdout)
    assert "dataset format (default: demo, the synthetic world) --root" in text, text
    assert "(default: None)" not in text and "(default: False)" not in text
