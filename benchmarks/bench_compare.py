"""Two methods episode by episode at COIN scale, on synthetic records of that size (no world needed;
the records of ``bench_slices.py``: ``--episodes`` test episodes x ``--seeds`` seeds x 2 methods):

- :func:`kepp_core.api.compare_methods` (pair the units, the 2x2 table, McNemar's exact p, three
  bootstrap intervals of 10,000 draws each: episodes drawn whole with all their seeds);
- one cell's list as the page writes it (``ABComparison.table``, step ids as text) and its CSV;
- the one-seed method x T table (:func:`kepp_core.api.method_horizon_table`), whose cells each get
  an episode-level bootstrap interval, beside the bootstrap's share of it.

    python benchmarks/bench_compare.py                   # 25,000 episodes x 3 seeds
    python benchmarks/bench_compare.py --seeds 1         # kepp eval records: one seed

Prints the timings (best of ``--repeats``); no assertions. The pages compute each once per records
file and choice (later views are cache reads), so these are the costs of a first view.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_slices import best, synthetic_records  # noqa: E402  (this folder: the same records)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=25_000, help="test episodes of one horizon")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from kepp_core import api
    from kepp_core.api import analysis

    preds = synthetic_records(args.episodes, args.seeds)
    print(f"{len(preds):,} record rows: {args.episodes:,} episodes x {args.seeds} seeds x 2 methods")
    t, c = best(lambda: api.compare_methods(preds, "kepp-R2", "kepp-nograph", 3), args.repeats)
    print(f"compare_methods: {len(c.units):,} units, cells {c.counts}, p = {c.p:.3g}, "
          f"A - B {c.delta:+.2f} {list(c.delta_interval)}: {t:.2f} s")
    t, table = best(lambda: c.table("a-only"), args.repeats)
    print(f"the A-only cell as a table ({len(table):,} rows): {t:.2f} s")
    t, data = best(lambda: c.table("a-only").to_csv(index=False).encode(), args.repeats)
    print(f"its CSV ({len(data) / 1e6:.2f} MB): {t:.2f} s")
    one = preds[preds["seed"] == 0]
    t, _ = best(lambda: api.method_horizon_table(one), args.repeats)
    boot = analysis.TABLE_RESAMPLES
    t_plain, _ = best(lambda: _without_bootstrap(api, analysis, one), args.repeats)
    print(f"one-seed method x T table (2 methods x 1 T x 3 metrics, {boot:,} draws a cell): {t:.2f} s "
          f"({t - t_plain:.2f} s of it the bootstrap)")
    return 0


def _without_bootstrap(api, analysis, preds):
    """The same table with the bootstrap replaced by a no-op, for its share of the time."""
    original = analysis.bootstrap_interval
    analysis.bootstrap_interval = lambda values, **kw: (0.0, 0.0)
    try:
        return api.method_horizon_table(preds)
    finally:
        analysis.bootstrap_interval = original


if __name__ == "__main__":
    sys.exit(main())
