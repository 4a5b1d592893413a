"""Run a run list (``kepp protocol SPEC --print-commands --stage N``: one ``kepp train`` command
per line) in ``--slots`` parallel processes and measure each run: wall seconds and the peak
resident memory of its process (``os.wait4``'s ``ru_maxrss`` of that child alone). Prints a
table per horizon and model and writes the measurements as JSON (docs, At scale: the ``coin-world``
preset's time per model and peak memory).

    kepp protocol protocols/coin-world.toml --print-commands --stage 1 > stage1.txt
    python benchmarks/bench_run_list.py stage1.txt --slots 2 --json runs/coin-stage1.json

Same as ``xargs -P 2`` over the lines, plus the measurements. Lines starting with ``#`` and
empty lines are skipped; a failed run is reported and makes the script exit non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def run_lines(lines: list[str], slots: int, threads: int) -> list[dict]:
    """Run ``lines`` with at most ``slots`` at a time; one record per line, in line order."""
    env = dict(os.environ, KEPP_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    pending = list(enumerate(lines))
    running: dict[int, tuple] = {}
    done: dict[int, dict] = {}
    while pending or running:
        while pending and len(running) < slots:
            i, line = pending.pop(0)
            err = tempfile.TemporaryFile()  # a file, not a pipe: a chatty run never blocks
            p = subprocess.Popen(shlex.split(line), env=env, stdout=subprocess.DEVNULL, stderr=err)
            running[p.pid] = (i, line, time.perf_counter(), err)
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        i, line, t0, errfile = running.pop(pid)
        errfile.seek(0)
        err = errfile.read().decode(errors="replace").strip().splitlines()
        errfile.close()
        code = os.waitstatus_to_exitcode(status)
        done[i] = {"line": line, "seconds": round(time.perf_counter() - t0, 1),
                   "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": code,
                   "error": err[-1] if code and err else None, "out": _flag(line, "--out")}
        print(f"[{len(done)}/{len(lines)}] {done[i]['out']}: {done[i]['seconds']} s, "
              f"{done[i]['peak_rss_mb']} MB" + (f", FAILED: {done[i]['error']}" if code else ""), flush=True)
    return [done[i] for i in range(len(lines))]


def _flag(line: str, name: str) -> str | None:
    parts = shlex.split(line)
    return parts[parts.index(name) + 1] if name in parts else None


def table(records: list[dict]) -> str:
    """Markdown: per model folder and horizon, median seconds and peak MB over seeds."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        m = re.search(r"(T\d+)/([^/]+)$", r["out"] or "")
        groups[(m.group(1), m.group(2)) if m else ("?", r["out"] or "?")].append(r)
    rows = ["| T | model | runs | seconds (each) | peak RSS MB (max) |", "|---|---|---|---|---|"]
    for (h, model), rs in sorted(groups.items()):
        rows.append(f"| {h} | {model} | {len(rs)} | {', '.join(str(r['seconds']) for r in rs)} | "
                    f"{max(r['peak_rss_mb'] for r in rs)} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_list", help="file with one command per line")
    ap.add_argument("--slots", type=int, default=2, help="runs at a time")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run")
    ap.add_argument("--json", default=None, help="write the measurements here")
    args = ap.parse_args()
    lines = [ln.strip() for ln in Path(args.run_list).read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        print(f"{args.run_list}: no commands", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    records = run_lines(lines, max(1, args.slots), args.threads)
    wall = round(time.perf_counter() - t0, 1)
    print(table(records))
    print(f"{len(records)} runs, {args.slots} at a time: {wall} s wall, "
          f"{round(sum(r['seconds'] for r in records), 1)} s summed; peak {max(r['peak_rss_mb'] for r in records)} MB")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"wall_seconds": wall, "slots": args.slots, "runs": records}, indent=1),
                                   encoding="utf-8")
    return 1 if any(r["exit"] for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
