"""``kepp eval --from-records FOLDER`` warm against pyarrow's floor, measured side by side.

The floor is ``pyarrow.json.read_json`` of the same JSONL files one after another, in a fresh process (its
interpreter and pyarrow's import counted, as the command's are), with pyarrow's default read options, and the
read alone inside that process (what docs/at-scale.md calls the floor). The command runs in a fresh process
with the store's cache already filled (one run before the rounds, with the same ``KEPP_HOME``). Floor and
command alternate, round after round, each with the machine's load beside it; the ratios are each round's own.

    python benchmarks/bench_eval_records.py FOLDER                        # 3 rounds, --metrics kepp (text)
    python benchmarks/bench_eval_records.py FOLDER --rounds 5 --metrics kepp pdpp vpn --json
    python benchmarks/bench_eval_records.py FOLDER --against ../main   # another checkout's kepp too, each round

FOLDER: e.g. the records ``python benchmarks/bench_records_scale.py --keep OUT`` writes (``OUT/records``:
835,200 method-episode records at ``--scale 1``). Prints a table; no assertions (target: warm <= 2x the floor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FLOOR = """
import sys, time
from pathlib import Path
import pyarrow.json as pj
files = sorted(p for p in Path(sys.argv[1]).iterdir() if p.suffix == ".jsonl")
t = time.perf_counter()
for f in files:
    pj.read_json(str(f))
print(time.perf_counter() - t, len(files))
"""


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _env(repo: Path = REPO) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # warm: the interpreter's own caches filled as a user's are
    return env


def floor(folder: Path) -> tuple[float, float, int]:
    """(whole process, the reads alone, files read) of the floor, in a fresh process."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(folder)], capture_output=True, text=True, check=True,
                         env=_env()).stdout.split()
    return time.perf_counter() - t, float(out[0]), int(out[1])


def command(folder: Path, extra: list[str], repo: Path = REPO) -> float:
    """Seconds of ``kepp eval --from-records FOLDER EXTRA`` of the checkout ``repo`` in a fresh process (its
    output discarded)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kepp_core", "eval", "--from-records", str(folder.resolve()), *extra],
                   stdout=subprocess.DEVNULL, check=True, env=_env(repo), cwd=repo)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a folder of records files")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--metrics", nargs="+", default=["kepp"])
    ap.add_argument("--json", action="store_true", help="the command with --json (every run's numbers)")
    ap.add_argument("--against", default=None, metavar="CHECKOUT",
                    help="another checkout whose command runs in each round too (before/after)")
    args = ap.parse_args()
    other = Path(args.against).resolve() if args.against else None
    folder = Path(args.folder)
    extra = ["--metrics", *args.metrics, *(["--json"] if args.json else [])]
    print(f"warming the store's cache (KEPP_HOME={os.environ.get('KEPP_HOME', 'default')}): "
          f"{command(folder, extra):.2f} s, load {load()}")
    if other is not None:
        print(f"warming {other}'s: {command(folder, extra, other):.2f} s")
    rows, theirs = [], []
    for r in range(args.rounds):
        before = load()
        whole, reads, n = floor(folder)
        warm = command(folder, extra)
        rows.append((r + 1, before, whole, reads, warm))
        if other is not None:
            theirs.append((load(), command(folder, extra, other)))
    print(f"\nkepp eval --from-records {folder} {' '.join(extra)}  ({n} JSONL files)")
    print(f"{'round':>5}  {'load (1/5/15 min)':<20} {'floor, process':>14} {'floor, reads':>12} {'warm':>7} "
          f"{'warm/floor process':>18} {'warm/floor reads':>16}")
    for r, before, whole, reads, warm in rows:
        print(f"{r:>5}  {before:<20} {whole:>14.2f} {reads:>12.2f} {warm:>7.2f} {warm / whole:>17.2f}x "
              f"{warm / reads:>15.2f}x")
    med = [statistics.median(c) for c in zip(*[(w, rd, wm) for _, _, w, rd, wm in rows])]
    print(f"{'median':>5}  {'':<20} {med[0]:>14.2f} {med[1]:>12.2f} {med[2]:>7.2f} {med[2] / med[0]:>17.2f}x "
          f"{med[2] / med[1]:>15.2f}x   (target: warm <= 2x the floor)")
    for (r, _, whole, reads, warm), (before, t) in zip(rows, theirs):
        print(f"round {r}, {other}: {t:.2f} s (load {before}): {t / whole:.2f}x the floor's process, "
              f"{t / warm:.2f}x this checkout's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
