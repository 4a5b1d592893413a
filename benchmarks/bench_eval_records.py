"""``kepp eval --from-records FOLDER`` warm against pyarrow's floor, measured side by side.

The floor is ``pyarrow.json.read_json`` of the same JSONL files one after another, in a fresh process (its
interpreter and pyarrow's import counted, as the command's are), with pyarrow's default read options, and the
read alone inside that process (what docs/at-scale.md calls the floor). Each command runs in a fresh process
with the store's cache already filled (one run before the rounds, with the same ``KEPP_HOME``). Each round runs
the floor, then each command (the one of ``--metrics``, text unless ``--json``; and every code's runs, ``--metrics
kepp pdpp vpn --json``, unless ``--no-every-code``), then each command of ``--against``'s checkout, each with the
machine's load beside it; the ratios are each round's own.

    python benchmarks/bench_eval_records.py FOLDER                        # 3 rounds: --metrics kepp, and every code --json
    python benchmarks/bench_eval_records.py FOLDER --rounds 5 --metrics kepp pdpp --json --no-every-code
    python benchmarks/bench_eval_records.py FOLDER --against ../main   # another checkout's kepp too, each round

FOLDER: e.g. the records ``python benchmarks/bench_records_scale.py --keep OUT`` writes (``OUT/records``:
835,200 method-episode records at ``--scale 1``). Prints a table per command; no assertions (target: warm <= 2x
the floor).
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
    ap.add_argument("--every-code", nargs="+", default=["kepp", "pdpp", "vpn"], metavar="CODE",
                    help="the codes of the second command of each round, with --json (default: kepp pdpp vpn)")
    ap.add_argument("--no-every-code", action="store_true", help="only the command of --metrics")
    ap.add_argument("--against", default=None, metavar="CHECKOUT",
                    help="another checkout whose commands run in each round too (before/after)")
    args = ap.parse_args()
    other = Path(args.against).resolve() if args.against else None
    folder = Path(args.folder)
    commands = [["--metrics", *args.metrics, *(["--json"] if args.json else [])]]
    if not args.no_every_code and ["--metrics", *args.every_code, "--json"] not in commands:
        commands.append(["--metrics", *args.every_code, "--json"])
    for extra in commands:
        print(f"warming the store's cache (KEPP_HOME={os.environ.get('KEPP_HOME', 'default')}), {' '.join(extra)}: "
              f"{command(folder, extra):.2f} s, load {load()}")
        if other is not None:
            print(f"warming {other}'s: {command(folder, extra, other):.2f} s")
    floors, mine, theirs = [], [], []  # per round: the floor; per round and command: (load before, seconds)
    for _ in range(args.rounds):
        before = load()
        floors.append((before, *floor(folder)))
        mine.append([(load(), command(folder, extra)) for extra in commands])
        if other is not None:
            theirs.append([(load(), command(folder, extra, other)) for extra in commands])
    n = floors[0][3]
    for c, extra in enumerate(commands):
        _print_command(folder, extra, n, floors, [m[c] for m in mine], [t[c] for t in theirs], other)
    return 0


def _print_command(folder: Path, extra: list[str], n: int, floors: list, mine: list, theirs: list, other) -> None:
    """One command's table: each round's floor, its warm seconds and ratios (and the other checkout's), the medians."""
    print(f"\nkepp eval --from-records {folder} {' '.join(extra)}  ({n} JSONL files)")
    head = (f"{'round':>5}  {'load (1/5/15 min)':<20} {'floor, process':>14} {'floor, reads':>12} {'warm':>7} "
            f"{'warm/floor process':>18} {'warm/floor reads':>16}")
    print(head + (f" {'before':>7} {'before/floor process':>20}" if theirs else ""))
    for r, ((before, whole, reads, _), (_, warm)) in enumerate(zip(floors, mine)):
        line = (f"{r + 1:>5}  {before:<20} {whole:>14.2f} {reads:>12.2f} {warm:>7.2f} {warm / whole:>17.2f}x "
                f"{warm / reads:>15.2f}x")
        print(line + (f" {theirs[r][1]:>7.2f} {theirs[r][1] / whole:>19.2f}x" if theirs else ""))
    med = [statistics.median(c) for c in zip(*[(f[1], f[2], m[1]) for f, m in zip(floors, mine)])]
    line = (f"{'median':>5}  {'':<20} {med[0]:>14.2f} {med[1]:>12.2f} {med[2]:>7.2f} {med[2] / med[0]:>17.2f}x "
            f"{med[2] / med[1]:>15.2f}x")
    if theirs:
        old = statistics.median(t[1] for t in theirs)
        line += f" {old:>7.2f} {old / med[0]:>19.2f}x"
    print(line + "   (target: warm <= 2x the floor)")
    if theirs:
        print(f"before: {other}, run in each round after this checkout (its load: "
              f"{', '.join(t[0] for t in theirs)})")


if __name__ == "__main__":
    sys.exit(main())
