"""The records cache proves what it returns: a cached table is used only when it carries the identity of the
records file being read (size, hash, a probe of its bytes, layout, schema) and its bytes match their checksum.
Another file's table (copied over, linked, named by a remembered hash), changed bytes, another Arrow file, and in
place of an entry a link, a FIFO, a device, a folder or an oversized file are ignored, said once on stderr, and the
table made again from the records file: the records file's own numbers, never a traceback, never a hang. Two
processes filling the cache at once, a writer killed with SIGKILL mid-write, a read-only and a full cache home leave
a cache that reads back right."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from kepp_core import api
from kepp_core.evaluation.records import write_records
from kepp_core.evaluation.store import cache, version
from kepp_core.paths import DEMO_ASSETS, REPO_ROOT
from tests.helpers.cli import run_kepp
from tests.helpers.records_oracle import differences, oracle_rows

RECORD = {"seed": 0, "T": 3, "episode": "t/v/0:3", "video": "v", "task": "t", "setting": "conventional",
          "gt": [1, 2, 1], "endpoints": [1, 3], "endpoint_scores": [0.5, 0.25], "paths": [[1, 2, 1], [1, 4, 1]],
          "path_scores": [0.5, 0.1], "plans": {"kepp-R1": [1, 2, 1], "pdpp": [3, 2, 1], "random": [5, 5, 5]},
          "success": {"kepp-R1": 1, "pdpp": 0, "random": 0}, "acc": {"kepp-R1": 1.0, "pdpp": 2 / 3, "random": 0.0}}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KEPP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(version, "SETTLED_NS", 0)  # every file counts as settled: its hash is kept in the home
    new_process()
    yield tmp_path / "home"
    new_process()


def new_process() -> None:
    """Forget what this process read and said, as a new process finds the cache home."""
    version._versions.clear()
    version._said.clear()
    cache._opened.clear()


@pytest.fixture
def pair(tmp_path, home):
    """Records A and B of the same size (B: every method right where A has it wrong), each read once: each has its
    cached table and its kept hash."""
    a = write_records(tmp_path / "a.jsonl", [RECORD, {**RECORD, "episode": "t/v/1:3"}])
    right = {m: [1, 2, 1] if m != "random" else [5, 5, 5] for m in RECORD["plans"]}
    b = write_records(tmp_path / "b.jsonl", [{**RECORD, "plans": right}, {**RECORD, "episode": "t/v/1:3"}])
    assert a.stat().st_size == b.stat().st_size
    for f in (a, b):
        api.read_predictions([f])
    new_process()
    return a, b


def entry_of(path: Path) -> Path:
    return home_folder() / f"{version.file_version(path).key}.arrow"


def home_folder() -> Path:
    return Path(os.environ["KEPP_HOME"]) / "records"


def hash_entry(path: Path) -> Path:
    return version._status_file(os.stat(path), str(path))


def reads_right(path: Path, capsys, *words: str) -> str:
    """``path`` read in a fresh process's state equals the record-by-record oracle of ``path`` itself, and stderr
    says why the cache was not used, once (a second read says nothing more); what it said."""
    new_process()
    assert differences(api.read_predictions([path]), oracle_rows([path])) == []
    assert differences(api.read_predictions([path]), oracle_rows([path])) == []
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kepp: ") and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# --- another file's table -------------------------------------------------------------------------------------------
def test_b_cache_copied_over_a_cache_is_not_read_as_a(pair, capsys):
    a, b = pair
    shutil.copyfile(entry_of(b), entry_of(a))
    reads_right(a, capsys, str(entry_of(a)), "another records file")


def test_a_cache_that_is_a_symlink_to_b_cache_is_not_followed(pair, capsys):
    a, b = pair
    target = entry_of(b)
    entry_of(a).unlink()
    entry_of(a).symlink_to(target)
    reads_right(a, capsys, "symbolic link")
    assert differences(api.read_predictions([b]), oracle_rows([b])) == []  # B's cache untouched


def test_a_hash_entry_holding_b_digest_never_gives_b_numbers(pair, capsys):
    a, b = pair
    hash_entry(a).write_text(version.file_version(b).digest, encoding="ascii")
    new_process()
    assert version.known_version(a).digest == version.file_version(b).digest  # the entry lies
    reads_right(a, capsys, "another records file")


def test_the_cli_prints_a_numbers_with_b_cache_copied_over_a(pair, home):
    a, b = pair
    shutil.copyfile(entry_of(b), entry_of(a))
    hash_entry(a).write_text(version.file_version(b).digest, encoding="ascii")
    env = {"KEPP_HOME": str(home)}
    got, want = (run_kepp("eval", "--from-records", f, "--json", env=env) for f in (a, b))
    assert got.returncode == 0 and want.returncode == 0, got.stderr + want.stderr
    assert "Traceback" not in got.stderr and got.stdout != want.stdout
    shutil.rmtree(home)  # A's numbers read with no cache at all
    fresh = run_kepp("eval", "--from-records", a, "--json", env=env)
    assert json.loads(fresh.stdout) == json.loads(got.stdout)


# --- changed bytes, another table -------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_changed_bytes_inside_a_cache_file_are_found_and_the_table_made_again(pair, capsys, where):
    a, _ = pair
    data = bytearray(entry_of(a).read_bytes())
    data[int(len(data) * where)] ^= 0x5A
    entry_of(a).write_bytes(bytes(data))
    reads_right(a, capsys, "checksum")


def test_a_valid_arrow_file_of_another_schema_is_not_taken(pair, capsys):
    a, _ = pair
    other = pa.table({"record": [0, 1], "x": ["a", "b"]})
    with pa.OSFile(str(entry_of(a)), "wb") as sink, pa.ipc.new_file(sink, other.schema) as w:
        w.write_table(other)
    reads_right(a, capsys, str(entry_of(a)))


def test_a_table_with_a_valid_checksum_but_another_schema_or_source_is_not_taken(pair, capsys):
    """What a cache writer of another version would leave: checksummed, but of another layout or source."""
    a, b = pair
    table = cache._cached(entry_of(b), version.file_version(b))
    ident = json.loads(table.schema.metadata[b"kepp.source"])
    for change, words in (({"layout": 4}, "layout"), ({"schema": "0" * 32}, "another"),
                          ({"size": ident["size"] + 1}, "another records file")):
        forged = cache.Identity(**{**ident, **change})
        entry_of(a).unlink()
        cache._write(entry_of(a), table.replace_schema_metadata({}), forged)
        reads_right(a, capsys, words)


# --- what is not a regular file ---------------------------------------------------------------------------------------
def make_fifo(p: Path) -> None:
    p.unlink(missing_ok=True)
    os.mkfifo(p)


def make_device(p: Path) -> None:
    p.unlink(missing_ok=True)
    try:
        os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    except PermissionError:
        pytest.skip("no permission to make a device node here")


def make_folder(p: Path) -> None:
    p.unlink(missing_ok=True)
    p.mkdir()
    (p / "x").write_text("x")


def make_zero_link(p: Path) -> None:
    p.unlink(missing_ok=True)
    p.symlink_to("/dev/zero")


def make_oversized(p: Path) -> None:
    with open(p, "r+b") as f:
        f.truncate(2**40)  # sparse: a terabyte that takes no room


@pytest.mark.parametrize("make, words", [(make_fifo, "FIFO"), (make_device, "device"), (make_folder, "folder"),
                                         (make_zero_link, "symbolic link"), (make_oversized, "oversized")])
@pytest.mark.parametrize("which", ["cache file", "hash entry"])
def test_an_entry_that_is_not_a_regular_file_of_its_size_is_ignored_without_reading_it(pair, capsys, make, words,
                                                                                      which):
    a, _ = pair
    make(entry_of(a) if which == "cache file" else hash_entry(a))
    start = time.monotonic()
    reads_right(a, capsys, words)
    assert time.monotonic() - start < 60  # nothing read from /dev/zero, no wait on a FIFO


def test_a_fifo_in_place_of_the_hash_entry_does_not_hang_the_command(pair, home):
    a, _ = pair
    make_fifo(hash_entry(a))
    r = run_kepp("eval", "--from-records", a, env={"KEPP_HOME": str(home)}, timeout=120)
    assert r.returncode == 0 and "FIFO" in r.stderr and "Traceback" not in r.stderr, r.stderr


# --- the cache home under load, killed writers, no room ---------------------------------------------------------------
def big_records(tmp_path: Path, copies: int = 4) -> Path:
    """The demo's records, ``copies`` times over (new episode ids): a cold read long enough to be caught mid-write."""
    lines = (DEMO_ASSETS / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for c in range(copies):
        for line in lines:
            rec = json.loads(line)
            rec["episode"] = f"{rec['episode']}#{c}"
            out.append(json.dumps(rec))
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


READ = ("import sys, hashlib; from kepp_core import api; t = api.read_predictions([sys.argv[1]]); "
        "print(len(t), hashlib.blake2b(t.drop(columns=['source']).to_json().encode()).hexdigest())")


def reader(path: Path, home: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "KEPP_HOME": str(home), "KEPP_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", READ, str(path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def tables_in(home: Path) -> list[Path]:
    """The cache files under their own names (a killed writer's temporary files left aside)."""
    return sorted(p for p in (home / "records").glob("*.arrow") if not p.name.startswith(".")) \
        if (home / "records").is_dir() else []


@pytest.mark.slow
def test_two_processes_filling_the_cache_at_once_and_a_writer_killed_mid_write_leave_a_cache_that_reads_right(
        tmp_path):
    path = big_records(tmp_path)
    want = reader(path, tmp_path / "alone").communicate(timeout=600)[0]  # its own cache home: the reference
    # two processes fill one cache home at once
    home = tmp_path / "home"
    both = [reader(path, home) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in both]
    assert [p.returncode for p in both] == [0, 0], [e for _, e in outs]
    assert [o for o, _ in outs] == [want, want] and len(tables_in(home)) == 1
    assert reader(path, home).communicate(timeout=600)[0] == want  # and it reads back right
    # a writer killed with SIGKILL while its temporary cache file is there
    killed = tmp_path / "killed"
    p = reader(path, killed)
    caught = False
    while p.poll() is None:
        if (killed / "records").is_dir() and any((killed / "records").glob(".*kepp-tmp*")):
            p.send_signal(signal.SIGKILL)
            caught = True
            break
        time.sleep(0.001)
    p.wait(timeout=60)
    assert caught and p.returncode == -signal.SIGKILL, "the writer finished before its write could be caught"
    assert tables_in(killed) == []  # nothing half-written under the cache's own name
    again = reader(path, killed).communicate(timeout=600)
    assert again[0] == want and "Traceback" not in again[1]
    assert len(tables_in(killed)) == 1 and reader(path, killed).communicate(timeout=600)[0] == want


@pytest.mark.parametrize("blocked", ["read-only", "a file"])
def test_a_cache_home_that_cannot_be_written_reads_the_records_and_says_they_are_not_cached(tmp_path, monkeypatch,
                                                                                          capsys, blocked):
    if blocked == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes through read-only modes")
    path = write_records(tmp_path / "a.jsonl", [RECORD])
    home = tmp_path / "home"
    home.mkdir()
    if blocked == "a file":
        (home / "records").write_text("not a folder")
    else:
        (home / "records").mkdir()
        (home / "records").chmod(0o500)
    monkeypatch.setenv("KEPP_HOME", str(home))
    new_process()
    try:
        reads_right(path, capsys, "not cached")
    finally:
        if blocked == "read-only":
            (home / "records").chmod(0o700)


def test_a_full_cache_home_reads_the_records_and_leaves_no_half_written_table(tmp_path):
    """``ulimit -f`` as the cache home's room: the cache file cannot be written whole."""
    path = big_records(tmp_path, copies=1)
    home = tmp_path / "home"
    env = {"KEPP_HOME": str(home)}
    r = run_kepp("eval", "--from-records", path, "--json", env=env, fsize=64 * 1024)
    assert r.returncode == 0 and "not cached" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert tables_in(home) == [] and not list((home / "records").glob(".*kepp-tmp*"))
    again = run_kepp("eval", "--from-records", path, "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(r.stdout) and tables_in(home)
