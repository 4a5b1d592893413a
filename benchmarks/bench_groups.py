"""The records grouped by any columns (:func:`kepp_core.api.group_table`, the Groups page's first view of a grouping)
at the field's scale: a records folder (``--records``, e.g. the 835,200 method-episode records that
``python benchmarks/bench_records_scale.py --keep DIR`` writes) read once, then each grouping timed, with the
machine's load beside each figure (the pages compute a grouping once per records files; later views are cache reads).

    python benchmarks/bench_groups.py --records /path/to/records
    python benchmarks/bench_groups.py --records /path/to/records --by method,T task,pattern,seed

Prints the timings (best of ``--repeats``: wall-clock seconds, and the process's CPU seconds, which the other
processes of a shared machine disturb less) and the groups; no assertions. The first grouping of a run also counts
the records' set IoUs (kept for the later ones, as the pages do).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GROUPINGS = ("method,T", "method,T,seed", "task,pattern,seed", "first_right,last_right,method", "source")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", required=True, help="a records file or folder")
    ap.add_argument("--by", nargs="+", default=list(GROUPINGS), help="groupings, each comma-separated columns")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()

    from kepp_core import api
    from kepp_core.evaluation.store import records_in

    files, _ = records_in(Path(args.records))
    t = time.perf_counter()
    preds = api.read_predictions(files)
    print(f"read {len(preds):,} rows of {len(files)} files in {time.perf_counter() - t:.2f} s "
          f"(load {os.getloadavg()[0]:.1f})")
    print(f"{'group by':<32} {'groups':>7} {'seconds':>8} {'cpu s':>6} {'load':>6}")
    for by in args.by:
        times, cpu = [], []
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            table = api.group_table(preds, by.split(","))
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print(f"{by:<32} {len(table):>7,} {min(times):>8.2f} {min(cpu):>6.2f} {os.getloadavg()[0]:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
