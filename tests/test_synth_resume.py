"""A partial render resumes (docs, At scale): ``kepp data synth --from-plans COIN.json`` killed part-way
(the whole process group, workers included) and run again finishes the world without redoing
the videos that were done, and the result equals a render that was never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kepp_core.data.synth.world import MARKER

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("coin-world")]

ARGS = ["--videos", "24", "--fps", "2", "--size", "32", "--workers", "2", "--seed", "3"]


def synth(coin_json: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kepp_core", "data", "synth", "--from-plans", str(coin_json),
                             "--out", str(out), *ARGS], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "world.json"}


def test_killed_render_resumes_and_equals_an_uninterrupted_one(coin_json, tmp_path):
    whole = tmp_path / "whole"
    p = synth(coin_json, whole)
    assert p.wait(timeout=600) == 0, p.stderr.read().decode()[-2000:]

    part = tmp_path / "part"
    p = synth(coin_json, part)
    deadline = time.time() + 300
    while len(list((part / "features").glob("*.npy"))) < 6 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, "the render finished before it could be killed"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = {f: f.stat().st_mtime_ns for f in (part / "features").glob("*.npy")}
    assert 6 <= len(done) < 24
    assert not (part / MARKER).exists(), "a killed render must not look complete"

    p = synth(coin_json, part)
    assert p.wait(timeout=600) == 0, p.stderr.read().decode()[-2000:]
    assert {f: f.stat().st_mtime_ns for f in done} == done, "finished videos were rendered again"
    assert files(part) == files(whole)
