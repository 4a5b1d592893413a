"""`kepp train` into a folder: options given by --set, --skip-finished against other options, and one
writer at a time (a lock that a killed run does not leave held). Real command lines, fresh processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp

pytestmark = pytest.mark.slow  # every test here trains, or runs several commands in fresh processes

REPO = REPO_ROOT
THREADS = {"KEPP_THREADS": "1"}


def kepp(*args: str):
    return run_kepp(*args, env=THREADS)


FAST = ["--train-steps", "2", "--no-progress"]


@pytest.fixture(scope="module")
def world(demo_t3):
    return str(demo_t3[1])


def step(world: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return kepp("train", "step", "--dataset", "demo", "--root", world, "-T", "3", "--out", str(out), *FAST, *extra)


@pytest.mark.parametrize("option", ["lr=0.001", "seed=3", "sampler=\"ddim\"", "warmup=1", "setting=\"pdpp\"",
                                    "log_every=1", "val_every=1"])
def test_set_takes_options_that_also_have_their_own_flag(tmp_path, world, option):
    r = step(world, tmp_path / "m", "--set", option)
    assert r.returncode == 0, r.stderr[-2000:]
    import json

    key, _, value = option.partition("=")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["train"][key] == json.loads(value)


@pytest.mark.parametrize("flag, option", [("--lr", "lr=0.001"), ("--seed", "seed=3"), ("--warmup", "warmup=2"),
                                          ("--sampler", "sampler=\"ddim\""), ("--log-every", "log_every=2")])
def test_an_option_given_by_flag_and_by_set_is_refused(tmp_path, world, flag, option):
    value = {"--lr": "0.002", "--seed": "1", "--warmup": "1", "--sampler": "ddpm", "--log-every": "1"}[flag]
    r = step(world, tmp_path / "m", flag, value, "--set", option)
    assert_one_line_error(r, option.partition("=")[0], "given twice")
    assert not (tmp_path / "m").exists()


@pytest.fixture(scope="module")
def finished_model(world, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "step"
    r = step(world, out, "--lr", "0.001", "--seed", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.mark.parametrize("extra, differs", [
    (["--lr", "0.002", "--seed", "1"], "lr=0.001 (asked: 0.002)"),
    (["--lr", "0.001", "--seed", "2"], "seed=1 (asked: 2)"),
    (["--lr", "0.001", "--seed", "1", "--dim", "16"], "dim=32 (asked: 16)"),
    (["--lr", "0.001", "--seed", "1", "--diffusion-steps", "7"], "n_steps=20 (asked: 7)"),
    (["--lr", "0.001", "--seed", "1", "--set", "mults=[1, 2, 2]"], "mults=[1, 2] (asked: [1, 2, 2])"),
])
def test_skip_finished_refuses_a_finished_model_trained_with_other_options(world, finished_model, extra, differs):
    before = (finished_model / "config.json").read_bytes()
    r = step(world, finished_model, "--skip-finished", *extra)
    assert_one_line_error(r, str(finished_model), differs)
    assert (finished_model / "config.json").read_bytes() == before


def test_skip_finished_skips_a_model_finished_with_the_same_options(world, finished_model):
    r = step(world, finished_model, "--skip-finished", "--lr", "0.001", "--seed", "1",
             "--log-every", "1")  # how often it logs does not change the model
    assert r.returncode == 0 and "already trained" in r.stdout, r.stderr[-2000:]


def _start_long_run(world: str, out: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "kepp_core", "train", "step", "--dataset", "demo", "--root", world, "-T", "3",
            "--out", str(out), "--train-steps", "100000", "--no-progress"]
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "KEPP_THREADS": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not (out / "metrics.jsonl").is_file():  # training has started: the lock is held
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.2)
    return proc


def test_a_second_run_into_the_same_folder_is_refused_naming_the_holder_and_a_killed_run_frees_it(tmp_path, world):
    out = tmp_path / "m"
    first = _start_long_run(world, out)
    try:
        for _ in range(2):
            r = step(world, out)
            assert_one_line_error(r, str(out), f"pid {first.pid}", "another training run")
        r = kepp("train", "task-classifier", "--dataset", "demo", "--root", world, "-T", "3", "--out", str(out), *FAST)
        assert_one_line_error(r, f"pid {first.pid}")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    r = step(world, out)  # the kernel dropped the killed run's lock
    assert r.returncode == 0, r.stderr[-2000:]
    from kepp_core.io import lock_file

    assert not lock_file(out).exists()


@pytest.mark.parametrize("option, words", [
    ("mults=[0]", "mults=[0]"), ("mults=[]", "mults=[]"), ("mults=[-1]", "mults=[-1]"),
    ("mults=[100000]", "mults=[100000]"), ("mults=[1, 1, 1, 1, 1, 1, 1]", "must hold 1 to 6 values"),
    ("val_sampler=bogus", "val_sampler='bogus'"), ('sampler="x"', "sampler='x'"),
    ('setting="zz"', "setting='zz'"), ("lr=-1", "lr=-1.0 must be positive"), ("dim=100000", "dim=100000"),
])
def test_set_values_are_checked_before_any_training_time_is_spent(tmp_path, world, option, words):
    r = step(world, tmp_path / "m", "--set", option)
    assert_one_line_error(r, words)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("option, words", [
    ("lr=1e999", "--set lr: the number 1e999"), ("lr=NaN", "--set lr: NaN"), ("lr=-Infinity", "--set lr: -Infinity"),
    ("seed=" + "9" * 500, "--set seed: an integer of 500 digits"),
    ("mults=" + "[" * 5000 + "]" * 5000, "--set mults: JSON nested too deeply"),
])
def test_json_values_of_set_are_read_by_the_one_json_reader(tmp_path, world, option, words):
    r = step(world, tmp_path / "m", "--set", option)
    assert_one_line_error(r, words)
    assert not (tmp_path / "m").exists()
