"""Outputs that are not regular files, thread counts and full disks: one `kepp: error:` line, exit 2,
nothing written or replaced; dataset strings reach a terminal with their control characters escaped,
and a closed pipe ends a command quietly. Every case runs the real command line in a fresh process."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error
from tests.helpers.cli import run_kepp as kepp
import sys
from tests.helpers import hostile
from tests.helpers.cli import run_kepp

REPO = REPO_ROOT
PLANS_LINES = ['{"video": "v%d", "task": "t", "split": "%s", "steps": ["a", "b", "c"]}' % (i, "train" if i % 3 else "test")
               for i in range(30)]


@pytest.fixture
def plans(tmp_path) -> Path:
    p = tmp_path / "plans.jsonl"
    p.write_text("\n".join(PLANS_LINES) + "\n")
    return p


@pytest.fixture
def video(tmp_path) -> Path:
    from kepp_core.video.write import write_video

    frames = np.zeros((16, 32, 32, 3), np.uint8)
    frames[:, :, :, 0] = np.arange(16)[:, None, None] * 15
    return write_video(tmp_path / "clip.mp4", frames, fps=8)


def _special(tmp_path: Path, kind: str) -> Path:
    """A non-regular file in the scratch folder (never a real device path: we run as root)."""
    p = tmp_path / f"out-{kind}"
    if kind == "chardev":
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # same numbers as /dev/null
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "link-to-chardev":
        target = _special(tmp_path, "chardev")
        p.symlink_to(target)
    elif kind == "link-to-fifo":
        target = _special(tmp_path, "fifo")
        p.symlink_to(target)
    return p


KINDS = {"chardev": "a character device", "fifo": "a FIFO", "socket": "a socket",
         "link-to-chardev": "a character device", "link-to-fifo": "a FIFO"}


def _unchanged(p: Path, before: os.stat_result) -> None:
    after = os.lstat(p)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_graph_build_never_replaces_a_non_regular_output(tmp_path, plans, kind):
    if kind == "chardev" and os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    out = _special(tmp_path, kind)
    before = os.lstat(out)
    r = kepp("graph", "build", "--dataset", "plans", "--root", str(plans), "--out", str(out))
    assert_one_line_error(r, str(out), KINDS[kind], "not a regular file")
    _unchanged(out, before)
    assert not [p for p in tmp_path.iterdir() if ".kepp-tmp-" in p.name]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "socket", "link-to-fifo", "chardev", "link-to-chardev"])
def test_features_encode_and_eval_refuse_non_regular_outputs_before_any_work(tmp_path, video, kind):
    if "chardev" in kind and os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    out = _special(tmp_path, kind)
    before = os.lstat(out)
    assert_one_line_error(kepp("features", "encode", str(video), "--out", str(out)), str(out), KINDS[kind])
    # eval refuses before it looks at the models (which do not exist here): no time spent
    assert_one_line_error(kepp("eval", "--models", str(tmp_path / "no-models"), "--out", str(out)), str(out))
    assert_one_line_error(kepp("eval", "--models", str(tmp_path / "no-models"), "--records", str(out)), str(out))
    _unchanged(out, before)


def test_a_compact_graph_next_to_a_fifo_is_refused_before_the_json_is_written(tmp_path, plans):
    from kepp_core.graph.build import COMPACT_SUFFIX

    os.mkfifo(tmp_path / f"g{COMPACT_SUFFIX}")
    r = kepp("graph", "build", "--dataset", "plans", "--root", str(plans), "--out", str(tmp_path / "g.json"), "--compact")
    assert_one_line_error(r, f"g{COMPACT_SUFFIX}", "a FIFO")
    assert not (tmp_path / "g.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("value", ["100000", "9999", "0", "-1", "2147483648"])
def test_thread_counts_beyond_the_machine_are_refused(tmp_path, value):
    most = max(4, (os.cpu_count() or 2) * 4)
    r = kepp("eval", "--models", str(tmp_path), "--threads", value)
    assert_one_line_error(r, f"threads {value}", f"1 to {most}")
    r = kepp("eval", "--models", str(tmp_path), env={"KEPP_THREADS": value})
    assert_one_line_error(r, f"KEPP_THREADS='{value}'", f"1 to {most}")


@contextlib.contextmanager
def small_disk(tmp_path: Path, kib: int):
    """A tmpfs of ``kib`` KiB where the test may mount one (root, mount allowed), else None."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    ok = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(mnt)],
                                               capture_output=True).returncode == 0
    try:
        yield mnt if ok else None
    finally:
        if ok:
            subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["graph-json", "graph-compact", "features", "eval-out", "eval-records"])
@pytest.mark.parametrize("limit", ["tmpfs", "fsize"])
def test_a_full_disk_names_the_file_and_leaves_no_partial_file(tmp_path, plans, video, command, limit, request):
    big_plans = tmp_path / "big.jsonl"
    big_plans.write_text("\n".join(
        '{"video": "v%d", "task": "t%d", "split": "train", "steps": [%s]}'
        % (i, i % 50, ", ".join(f'"s{(i * 7 + k) % 400}"' for k in range(6))) for i in range(3000)) + "\n")
    with small_disk(tmp_path, 8) as disk:
        if limit == "tmpfs" and disk is None:
            pytest.skip("cannot mount a tmpfs here; the RLIMIT_FSIZE case covers the class")
        folder = disk if limit == "tmpfs" else tmp_path / "out"
        folder.mkdir(exist_ok=True)
        fsize = None if limit == "tmpfs" else 4096
        world, models = request.getfixturevalue("demo_t3")[1:] if command.startswith("eval") else (None, None)
        argv = {
            "graph-json": ["graph", "build", "--dataset", "plans", "--root", str(big_plans), "--out", str(folder / "g.json")],
            "graph-compact": ["graph", "build", "--dataset", "plans", "--root", str(big_plans), "--out",
                              str(folder / "g.json"), "--compact"],
            "features": ["features", "encode", str(video), "--out", str(folder / "f.npy")],
            "eval-out": ["eval", "--root", str(world), "--models", str(models), "--horizons", "3", "--methods",
                         "random", "--out", str(folder / "table.json")],
            "eval-records": ["eval", "--root", str(world), "--models", str(models), "--horizons", "3", "--methods",
                             "random", "--records", str(folder / "records.jsonl")],
        }[command]
        if not command.startswith("graph"):  # small outputs: a smaller limit, a disk filled first
            fsize = None if fsize is None else 100
            if disk is not None:
                with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
                    f.write(b"\0" * (8 * 1024))
        r = kepp(*argv, fsize=fsize, env={"KEPP_THREADS": "1"})
        assert_one_line_error(r, str(folder), "cannot write")
        assert not [p for p in folder.iterdir() if ".kepp-tmp-" in p.name]
        assert not [p for p in folder.iterdir() if p.name != "filler"]


@pytest.mark.parametrize("argv, words", [
    (["eval", "--models", "{models}", "-T", "3", "--methods", "random", "--samples", "1000000000"], ["--samples 1000000000", "2 to"]),
    (["eval", "--models", "{models}", "-T", "3", "--methods", "random", "--seed", "4294967296"], ["--seed 4294967296", "0..4294967295"]),
    (["data", "synth", "--out", "{tmp}/w", "--videos", "1", "--step-max", "1e9"], ["step_max=1000000000.0", "600"]),
    (["data", "synth", "--out", "{tmp}/w", "--videos", "1", "--idle", "inf"], ["idle=inf", "finite"]),
    (["data", "synth", "--out", "{tmp}/w", "--videos", "1", "--seed", "99999999999"], ["--seed 99999999999", "0..4294967295"]),
    (["train", "step", "--dataset", "demo", "-T", "3", "--out", "{tmp}/m", "--seed", "99999999999"], ["--seed 99999999999", "0..4294967295"]),
])
@pytest.mark.slow
def test_absurd_sizes_and_seeds_are_refused_before_any_work(tmp_path, demo_t3, argv, words):
    models = demo_t3[2]
    r = kepp(*[a.format(models=models, tmp=tmp_path) for a in argv], env={"KEPP_THREADS": "1"})
    assert_one_line_error(r, *words)
    assert not (tmp_path / "w").exists() and not (tmp_path / "m").exists()


@pytest.mark.parametrize("name, make", [
    ("garbage.mp4", lambda video: b"not a video at all\n"),
    ("garbage.webm", lambda video: b"not a video at all\n"),
    ("garbage.mkv", lambda video: b"\x1aE\xdf\xa3 broken matroska"),
    ("truncated.mp4", lambda video: video.read_bytes()[:500]),
    ("image.mp4", lambda video: b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
])
@pytest.mark.slow
def test_a_bad_video_is_one_error_line_without_the_decoders_log(tmp_path, video, name, make):
    bad = tmp_path / name
    bad.write_bytes(make(video))
    r = kepp("features", "encode", str(bad), "--out", str(tmp_path / "f.npy"))
    assert_one_line_error(r, str(bad), "cannot decode video")  # exactly one stderr line: no FFmpeg/decord log
    assert not (tmp_path / "f.npy").exists()


# --- terminal output ----------------------------------------------------------------------------------
class TestTerminalOutput:
    """Dataset strings reach a terminal with their control characters escaped; a closed pipe ends
    a command quietly."""

    LABEL = "stir\u001b[2J\u001b]0;pwned\u0007\u009b31m"

    @pytest.fixture
    def plans(self, tmp_path):
        p = tmp_path / "plans.jsonl"
        p.write_text(hostile.plans_lines(*[{"video": f"v{i}", "task": "t", "split": "train",
                                            "steps": ["boil", self.LABEL, "pour"]} for i in range(4)]))
        return p

    @pytest.mark.parametrize("argv", [
        ["graph", "paths", "--start", "boil", "--goal", "pour", "-T", "3"],
        ["graph", "subgraph", "--action", "boil"],
        ["graph", "paths", "--start", LABEL, "--goal", "pour", "-T", "2"],  # the label in the table's title
    ])
    def test_control_characters_are_escaped(self, plans, argv):
        r = run_kepp(*argv, "--dataset", "plans", "--root", plans)
        out = r.stdout + r.stderr
        assert "\u001b" not in out and "\u0007" not in out and "\u009b" not in out, out
        assert "\\x1b[2J" in out, out

    def test_a_closed_pipe_ends_quietly(self, plans):
        from kepp_core.paths import REPO_ROOT

        cmd = (f"{sys.executable} -m kepp_core graph paths --dataset plans --root {plans} --start boil --goal pour "
               f"-T 3 --top 100 --json | head -c 1")
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        assert r.stdout == "{" and "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
