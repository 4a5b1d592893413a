"""Two ``kepp graph build`` runs writing one graph pair (``g.json`` and its compact ``g.safetensors``)
at once: the second is refused naming the first, and the pair reads (two real processes). A pair
torn between two builds is still refused at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from kepp_core.io import lock_file
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp
import shutil
from tests.helpers.data import write_small_plans

ACTIONS = [f"step {k}" for k in range(12)]


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """A plans-JSONL corpus large enough that a streamed build takes a few seconds."""
    path = tmp_path_factory.mktemp("plans") / "plans.jsonl"
    with open(path, "w") as f:
        for k in range(200_000):
            steps = [ACTIONS[(k + j * (1 + k % 5)) % len(ACTIONS)] for j in range(3 + k % 4)]
            f.write(json.dumps({"video": f"v{k}", "task": f"t{k % 7}", "steps": steps}) + "\n")
    return path


def _build(plans, out, *extra) -> list[str]:
    return [sys.executable, "-m", "kepp_core", "graph", "build", "--dataset", "plans", "--root", str(plans),
            "--out", str(out), "--no-fit", *extra]


def _reads(path) -> None:
    r = run_kepp("graph", "paths", "--graph", path, "--start", ACTIONS[0], "--goal", ACTIONS[1], "-T", 3)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_two_builds_of_one_pair_at_once_refuse_the_second_and_leave_files_that_read(plans, tmp_path):
    """``graph build --compact --out g.json`` holds the locks of both names of the pair while it runs, so
    ``graph build --out g.safetensors`` started meanwhile is refused naming it (both used to exit 0,
    leaving a g.json whose companion came from the other build: unreadable)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    first = subprocess.Popen(_build(plans, tmp_path / "g.json", "--compact"), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not lock_file(tmp_path / "g.json").exists():  # the first build is under way
            assert first.poll() is None and time.monotonic() < deadline, "the first build never held its lock"
            time.sleep(0.02)
        second = subprocess.run(_build(plans, tmp_path / "g.safetensors"), env=env, capture_output=True, text=True,
                                timeout=300)
    finally:
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert_one_line_error(second, "g.safetensors", "another kepp graph build", "is writing into it")
    for name in ("g.json", "g.safetensors"):
        _reads(tmp_path / name)


@pytest.mark.slow
def test_a_pair_torn_between_two_builds_is_still_refused(plans, tmp_path):
    """What the pair's build id is for: g.json of one --compact build beside g.safetensors of another."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        assert subprocess.run(_build(plans, folder / "g.json", "--compact"), capture_output=True).returncode == 0
    (second / "g.safetensors").replace(first / "g.safetensors")
    r = run_kepp("graph", "paths", "--graph", first / "g.json", "--start", ACTIONS[0], "--goal", ACTIONS[1], "-T", 3)
    assert_one_line_error(r, "g.safetensors next to it comes from a different build")


# --- a JSON + compact pair from different builds ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("stale,read", [("g.safetensors", "g.json"), ("g.safetensors", "g.safetensors"),
                                        ("g.json", "g.json"), ("g.json", "g.safetensors"),
                                        ("unstamped", "g.json")])
def test_a_compact_pair_from_two_builds_is_refused_at_load(tmp_path, stale, read):
    write_small_plans(tmp_path / "plans.jsonl")
    build = ("graph", "build", "--dataset", "plans", "--root", "plans.jsonl", "--out", "g.json", "--no-fit")
    if stale == "unstamped":  # a compact file written alone, next to a stamped JSON
        assert run_kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        assert run_kepp(*build[:-2], "g.safetensors", "--no-fit", cwd=tmp_path).returncode == 0
    else:
        assert run_kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        shutil.copy(tmp_path / stale, tmp_path / "old")
        assert run_kepp(*build, "--compact", cwd=tmp_path).returncode == 0
        for f in ("g.json", "g.safetensors"):  # both still load while they match
            assert run_kepp("graph", "subgraph", "--graph", f, "--action", "a", cwd=tmp_path).returncode == 0
        shutil.copy(tmp_path / "old", tmp_path / stale)  # as a stop between the two renames leaves them
    r = run_kepp("graph", "subgraph", "--graph", read, "--action", "a", cwd=tmp_path)
    assert_one_line_error(r, read, "different build")
