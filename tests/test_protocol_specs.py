"""A protocol spec is checked whole before anything runs: every key's type, counts and ranges, names
it refers to; each problem is one `kepp: error:` line naming the file and the key, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kepp_core.cli import main
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT
GOOD = 'out = "OUT"\nmethods = ["random", "graph-gt"]\nhorizons = [3]\n'


def with_line(line: str) -> str:
    """The good spec with ``line`` replacing (or adding) its key."""
    key = line.split(" ")[0]
    return "\n".join(x for x in GOOD.splitlines() if not x.startswith(key + " ")) + "\n" + line + "\n"


def run(capsys, tmp_path: Path, text: str | bytes) -> tuple[int, str]:
    spec = tmp_path / "spec.toml"
    (spec.write_bytes if isinstance(text, bytes) else spec.write_text)(
        text.replace("OUT", str(tmp_path / "out")) if isinstance(text, str) else text)
    code = main(["protocol", str(spec), "--print-commands"])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("line, words", [
    ('confidence = "0.9"', ["confidence", "expected a number"]),
    ("root = 5", ["root = 5", "expected a text"]),
    ('train_fractions = ["0.5"]', ["train_fractions", "number"]),
    ("horizons = \"3\"", ["horizons", "whole number"]),
    ("methods = [1, 2]", ["methods", "text"]),
    ("decode_samples = 1e9", ["decode_samples", "whole number"]),
    ("decode_samples = 100000000", ["decode_samples", "1 to"]),
    ("dataset = 3", ["dataset", "text"]),
    ("train = 5", ["train = 5", "table"]),
    ("pairs = [[1, 2]]", ["pairs", "method names"]),
    ('setting = "bogus"', ["setting", "conventional"]),
    ('dataset = "bogus"', ["dataset", "bogus"]),
    ("confidence = inf", ["confidence"]),
    ("decode_weight = -1", ["decode_weight", ">= 0"]),
])
def test_a_value_of_the_wrong_type_or_range_names_the_key(capsys, tmp_path, line, words):
    code, err = run(capsys, tmp_path, with_line(line))
    assert code == 2 and err.count("\n") == 1 and err.startswith("kepp: error: "), err
    assert "spec.toml" in err and all(w in err for w in words), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("line, words", [
    ("seeds = [0, 0, 0]", ["seeds", "0 is listed twice"]),
    ("seeds = [1, 2, 1]", ["seeds", "1 is listed twice"]),
    ("horizons = [3, 4, 3]", ["horizons", "3 is listed twice"]),
    ('methods = ["random", "random"]', ["methods", "'random' is listed twice"]),
    ("train_fractions = [0.5, 0.5]", ["train_fractions", "listed twice"]),
])
def test_a_value_listed_twice_is_refused_instead_of_counted_twice(capsys, tmp_path, line, words):
    code, err = run(capsys, tmp_path, with_line(line))
    assert code == 2 and all(w in err for w in words), err


@pytest.mark.parametrize("line, words", [
    ("seeds = 100000000", ["seeds = 100000000", "at most 1000"]),
    ("seeds = 0", ["seeds = 0", "at least one seed"]),
    ("seeds = [4294967296]", ["seeds", "4294967295"]),
    ("seeds = [-1]", ["seeds", "from 0"]),
    ("horizons = [3, 1000]", ["horizons", "2..64"]),
])
def test_absurd_counts_are_refused_before_any_allocation(capsys, tmp_path, line, words):
    code, err = run(capsys, tmp_path, with_line(line))
    assert code == 2 and all(w in err for w in words), err


def test_a_spec_that_is_not_utf8_names_the_file_and_line(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_bytes(GOOD.encode() + b'dataset = "d\xff"\n')
    r = subprocess.run([sys.executable, "-m", "kepp_core", "protocol", str(spec), "--print-commands"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == f"kepp: error: {spec}:4: not valid UTF-8 text (byte 0xff)"
