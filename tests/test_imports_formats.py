"""Import formats as objects (kepp_core.evaluation.imports.FORMATS): each format one object with its reader, help
and example; ``kepp records import``'s choices, help and examples read the registry, so a format added there
is offered, explained and read with no other edit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kepp_core.cli import build_parser
from kepp_core.data.split_lists import listed_episode_ids, read_split_list
from kepp_core.evaluation.imports import FORMATS, ImportFormat
from kepp_core.evaluation.records import read_records
from tests.helpers.cli import in_process
from tests.helpers.split_lists import write_lists

RECORDS_COMMAND = Path(__file__).resolve().parent.parent / "kepp_core" / "commands" / "records.py"


def _tab_plans(path, episodes, list_name, taxonomy=None):
    """A made-up format read in the test: one line per entry, its steps separated by tabs."""
    rows = [[int(s) for s in line.split("\t")] for line in Path(path).read_text().splitlines()]
    assert len(rows) == len(episodes), list_name
    return rows


TABS = ImportFormat(name="tabs", help="one line per entry, steps separated by tabs", read=_tab_plans,
                    example="  kepp records import --format tabs --predictions plans.tsv --split test.json ...")


def test_every_format_is_one_object_named_by_its_key_with_a_reader_help_and_example():
    assert set(FORMATS) == {"vpn", "plain"}
    for name, form in FORMATS.items():
        assert isinstance(form, ImportFormat) and form.name == name
        assert callable(form.read) and form.help and f"--format {name}" in form.example


def test_the_records_command_names_no_format_itself():
    strings = {n.value for n in ast.walk(ast.parse(RECORDS_COMMAND.read_text())) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)}
    assert not any(name in s.split() or s == name for s in strings for name in FORMATS), strings & set(FORMATS)


def test_a_format_added_to_the_registry_is_offered_explained_and_read_by_kepp_records_import(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(FORMATS, TABS.name, TABS)
    lists = write_lists(tmp_path / "lists")
    episodes = read_split_list(lists["test"])
    plans = [list(reversed(ep.plan)) for ep in episodes]
    tsv = tmp_path / "plans.tsv"
    tsv.write_text("".join("\t".join(map(str, p)) + "\n" for p in plans))

    with pytest.raises(SystemExit):
        build_parser().parse_args(["records", "import", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps its help
    assert "tabs: one line per entry, steps separated by tabs" in shown
    assert "kepp records import --format tabs --predictions plans.tsv" in shown
    assert "{vpn,plain,tabs}" in shown

    code, err = in_process(capsys, "records", "import", "--format", "tabs", "--predictions", tsv, "--split",
                           lists["test"], "--method", "tab-run", "--out", tmp_path / "tabs.jsonl")
    assert code == 0, err
    recs = read_records(tmp_path / "tabs.jsonl")
    assert [r["plans"]["tab-run"] for r in recs] == plans
    assert [r["episode"] for r in recs] == listed_episode_ids(episodes)
    assert {r["imported"]["tab-run"] for r in recs} == {"plans.tsv"}


def test_a_format_not_in_the_registry_is_refused_naming_the_choices(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["records", "import", "--format", "tabs", "--predictions", "p", "--split", "s",
                                   "--method", "m", "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "invalid choice: 'tabs' (choose from 'vpn', 'plain')" in err, err
