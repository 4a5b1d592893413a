"""The real ``kepp`` command line in a fresh process (or in several, as a launcher starts ranks), and the
check every bad-input test makes: exit 2, exactly one ``kepp: error:`` line on stderr holding the given
words, no traceback."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path

from kepp_core.paths import REPO_ROOT


def run_kepp(*args, env: dict | None = None, fsize: int | None = None, cwd: str | Path = REPO_ROOT,
             timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m kepp_core ARGS`` with this checkout first on the path (``fsize``: a ``ulimit -f``
    in bytes for the process)."""
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    environ = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kepp_core", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=environ, preexec_fn=limit if fsize is not None else None, timeout=timeout)


# Runs the command it is given as its own child and writes that child's peak resident memory (ru_maxrss, KiB)
# to the file named by KEPP_TEST_PEAK_FILE; ends as the child ended (its exit code, or its signal). A process
# keeps the largest resident size its parent had when it was forked (Linux records the old memory's high-water
# mark at exec), so a command started straight from a big test process reads as big as that process: this
# small launcher, itself a fresh interpreter, forks the command from its own small memory.
_PEAK_LAUNCHER = """
import os, signal, subprocess, sys
p = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(p.pid, 0)
with open(os.environ['KEPP_TEST_PEAK_FILE'], 'w') as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
"""


def run_kepp_measured(*args, env: dict | None = None, timeout: float = 300) -> tuple[subprocess.CompletedProcess, int]:
    """``python -m kepp_core ARGS`` in a fresh process, as :func:`run_kepp`, and the process's peak
    resident memory in bytes (its own ``ru_maxrss``, read by a small launcher: :data:`_PEAK_LAUNCHER`): a
    command that allocates what a file's header claims shows it here even when it then fails. A process
    killed by a signal (a segmentation fault) has a negative return code, as ``subprocess`` reports it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        peak_file = Path(tmp) / "peak"
        environ = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {}), "KEPP_TEST_PEAK_FILE": str(peak_file)}
        proc = subprocess.Popen([sys.executable, "-c", _PEAK_LAUNCHER, sys.executable, "-m", "kepp_core",
                                 *map(str, args)], stdout=out, stderr=err, cwd=REPO_ROOT, env=environ,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise subprocess.TimeoutExpired(args, timeout) from None
        out.seek(0)
        err.seek(0)
        text = (out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))
        peak = int(peak_file.read_text()) * 1024
    return subprocess.CompletedProcess(args, proc.returncode, *text), peak


def assert_one_line_error(r: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, stderr exactly one ``kepp: error:`` line holding every word, no traceback; the line."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("kepp: error: "), r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def run_ranks(world: int, *args, env: dict | None = None, timeout: float = 300) -> list[subprocess.CompletedProcess]:
    """``kepp ARGS`` as ``world`` processes with the variables torchrun sets (``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` of a free local port), one thread each."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(world):
        environ = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1", **(env or {})}
        procs.append(subprocess.Popen([sys.executable, "-m", "kepp_core.cli", *map(str, args)], env=environ,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def in_process(capsys, *argv) -> tuple[int, str]:
    """``kepp ARGV`` through ``main`` in this process (an uncaught exception fails the test): the exit
    code and what went to stderr."""
    from kepp_core.cli import main

    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_error(code: int, err: str, *words: str) -> str:
    """As :func:`assert_one_line_error` for an in-process run: exit 2, one ``kepp: error:`` line holding
    every word, no traceback; the line."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("kepp: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def start_kepp_app(port: int, cwd: str | Path, ignore_sigint: bool = False) -> subprocess.Popen:
    """``kepp app --port PORT`` in a fresh process, returned once its server answers ``/_stcore/health``
    (``ignore_sigint``: started as a shell starts a background job, ``cmd &``, with SIGINT ignored). Its
    stderr goes to ``cwd/kepp-app.log`` (a pipe would stay open as long as a server that outlived it)."""
    import time
    import urllib.request

    def background() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    log = Path(cwd) / "kepp-app.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kepp_core", "app", "--port", str(port)], cwd=cwd, env=env,
                                stdout=subprocess.DEVNULL, stderr=err, preexec_fn=background if ignore_sigint else None)
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"kepp app ended before serving: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return proc
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError("the server did not start within 120 s") from None
            time.sleep(0.3)


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux: read from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
