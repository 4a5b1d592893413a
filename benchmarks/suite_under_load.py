"""Is the suite green under load? The test suite (or a part of it) run with CPU-bound processes
beside it, started and stopped by this script; wall time and pass/fail of each run.

    python benchmarks/suite_under_load.py                      # the whole suite as `make test` runs it, one core hogged
    python benchmarks/suite_under_load.py --both               # idle first, then with the hog: both times
    python benchmarks/suite_under_load.py --no-hog             # idle only (the baseline)
    python benchmarks/suite_under_load.py --hogs 2 tests/test_e2e_slides.py
    python benchmarks/suite_under_load.py --repeat 5 --workers 0 \\
        tests/test_e2e_slides.py::test_a_failure_from_failure_cases_is_that_failure_on_its_slide
    python benchmarks/suite_under_load.py tests/test_docs.py -- -x -k links   # after --: more pytest options

A hog is ``python -c "while True: pass"``: one core busy, at this script's priority, for as long as
the runs last (the hog's CPU seconds are reported, so a hog that did not run is seen). Each run is a
fresh ``pytest`` process (``-n WORKERS --dist loadgroup``, as ``make test``; ``--workers 0``: one
process), its output kept in a log file whose failures are printed. ``--repeat N`` runs it N times
in a row (a flaky test shows as a run that failed), all under the same hogs. Exits 1 when any run
failed or was stopped at ``--timeout``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app import cpu_seconds, load_average  # noqa: E402

HOG = "while True: pass"


class Hogs:
    """``n`` CPU-bound processes for the length of a ``with`` block; their CPU seconds afterwards."""

    def __init__(self, n: int):
        self.n, self.procs, self.cpu, self.wall = n, [], 0.0, 0.0

    def __enter__(self) -> Hogs:
        self.t0 = time.monotonic()
        self.procs = [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(self.n)]
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.monotonic() - self.t0
        self.cpu = sum(cpu_seconds(p.pid) for p in self.procs)
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def pytest_argv(args) -> list[str]:
    """The pytest command of one run."""
    workers = ["-n", "0"] if args.workers == 0 else ["-n", str(args.workers), "--dist", "loadgroup"]
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, *args.tests, *args.pytest]


def run_once(argv: list[str], log: Path, timeout: float) -> tuple[int, float, str, list[str]]:
    """One pytest run: its exit status (-9 when stopped at ``timeout``), wall seconds, summary line
    and the FAILED/ERROR lines of its log."""
    t0 = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # pytest and its workers: the group this script started
            proc.wait()
            rc = -9
    wall = time.monotonic() - t0
    lines = log.read_text(errors="replace").splitlines()
    summary = next((ln.strip("= ") for ln in reversed(lines) if " in " in ln and ("passed" in ln or "failed" in ln
                                                                                or "error" in ln)), "(no summary)")
    failed = [ln for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    return rc, wall, summary, failed


def series(args, hogs: int, logs: Path) -> list[dict]:
    """``--repeat`` runs with ``hogs`` hogs beside them."""
    argv = pytest_argv(args)
    runs = []
    with Hogs(hogs) as h:
        for k in range(args.repeat):
            log = logs / f"{'hog' if hogs else 'idle'}-{k + 1}.log"
            load = load_average()
            rc, wall, summary, failed = run_once(argv, log, args.timeout)
            runs.append({"hogs": hogs, "run": k + 1, "rc": rc, "wall_s": wall, "summary": summary, "failed": failed,
                         "log": str(log), "load_before": load})
            print(f"  run {k + 1}/{args.repeat}, {hogs} hog(s): exit {rc}, {wall:.1f} s: {summary}", flush=True)
            for ln in failed[:20]:
                print(f"    {ln}")
    if hogs:
        print(f"  the hogs used {h.cpu:.0f} CPU s in {h.wall:.0f} s ({h.cpu / max(h.wall, 1e-9) / hogs:.0%} of a core each)")
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*", help="test files or ids (default: the whole suite)")
    ap.add_argument("--hogs", type=int, default=1, help="CPU-bound processes beside the runs (default 1)")
    ap.add_argument("--no-hog", action="store_true", help="no hog: the idle baseline")
    ap.add_argument("--both", action="store_true", help="the runs idle first, then with the hogs")
    ap.add_argument("--repeat", type=int, default=1, help="runs in a row (default 1)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers, 0 for one process (default 2, as make test)")
    ap.add_argument("--timeout", type=float, default=3 * 3600, help="seconds one run may take (default 3 h)")
    ap.add_argument("--logs", type=Path, default=None, help="folder for the runs' logs (default: a new temporary one)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.pytest = extra
    if args.repeat < 1 or args.hogs < 0 or args.workers < 0 or args.timeout <= 0:
        ap.error("--repeat at least 1, --hogs and --workers at least 0, --timeout positive")
    logs = args.logs or Path(tempfile.mkdtemp(prefix="kepp-under-load-"))
    logs.mkdir(parents=True, exist_ok=True)
    plans = [0, args.hogs] if args.both else [0] if args.no_hog else [args.hogs]
    print(f"pytest: {' '.join(pytest_argv(args)[1:])}; {os.cpu_count()} CPUs; load (1/5/15 min) {load_average()}; "
          f"logs {logs}", flush=True)
    runs = []
    for hogs in plans:
        runs += series(args, hogs, logs)
    print(f"\n{'hogs':>4} {'run':>4} {'exit':>5} {'wall s':>8}  {'load before':<20} summary")
    for r in runs:
        print(f"{r['hogs']:4d} {r['run']:4d} {r['rc']:5d} {r['wall_s']:8.1f}  {r['load_before']:<20} {r['summary']}")
    for hogs in plans:
        mine = [r for r in runs if r["hogs"] == hogs]
        print(f"{hogs} hog(s): {sum(r['rc'] == 0 for r in mine)} of {len(mine)} runs green, "
              f"wall {min(r['wall_s'] for r in mine):.1f}-{max(r['wall_s'] for r in mine):.1f} s")
    print(f"load after (1/5/15 min): {load_average()}")
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
