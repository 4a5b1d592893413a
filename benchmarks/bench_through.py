"""The Graph page's list of the records through a step or a transition, at the field's scale.

Reads a records folder (``bench_records_scale.py --keep DIR`` writes one of about 835,000 method-episode rows)
with :func:`kepp_core.api.read_predictions` (warm after its first run: the store's cache), then times
:func:`kepp_core.api.episodes_through` (the store's ``[n, T]`` arrays, horizon by horizon) for the step and the
transition the most records pass through, first call and again, beside the same question asked record by record
in Python (the oracle: each plan and truth checked one by one), and checks that both give the same rows.

    python benchmarks/bench_through.py --records /work/scale/records

Prints seconds with the machine's load beside them; the target (docs/app.md, "A step opens its graph"): the
list of one step or transition within 1 s at 835k records on a loaded 2-core machine (the app then keeps it per
records version and choice); no assertions but the oracle's.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _oracle(preds, node=None, edge=None):
    """Each record's plan and truth checked one by one (what the arrays must agree with)."""
    def holds(p):
        return node in p if edge is None else any((x, y) == edge for x, y in zip(p, p[1:]))
    return [k for k, (p, t) in enumerate(zip(preds["plan"], preds["truth"])) if holds(p) or holds(t)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", required=True, help="a records folder or file (relative to here)")
    args = parser.parse_args(argv)
    from kepp_core import api

    path = Path(args.records)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    preds, read_s = _timed(lambda: api.read_predictions(files))
    print(f"{len(preds):,} records from {len(files)} files read in {read_s:.1f} s (load {os.getloadavg()[0]:.1f})")
    truths = preds["truth"].to_numpy()
    sample = truths[:: max(1, len(truths) // 20_000)]
    steps = collections.Counter(a for t in sample for a in t)
    pairs = collections.Counter(p for t in sample for p in zip(t, t[1:]))
    node, edge = steps.most_common(1)[0][0], pairs.most_common(1)[0][0]
    print(f"{'question':<28}{'records':>10}{'first s':>10}{'again s':>10}{'oracle s':>10}{'x':>8}{'load':>7}")
    for name, kw in ((f"node {node}", {"node": node}), (f"edge {edge[0]}-{edge[1]}", {"edge": edge})):
        hits, first = _timed(lambda: api.episodes_through(preds, **kw))
        _, again = _timed(lambda: api.episodes_through(preds, **kw))
        rows, oracle = _timed(lambda: _oracle(preds, **kw))
        if hits["row"].tolist() != rows:
            print(f"{name}: the arrays and the oracle disagree", file=sys.stderr)
            return 1
        print(f"{name:<28}{len(hits):>10,}{first:>10.3f}{again:>10.3f}{oracle:>10.3f}{oracle / again:>8.1f}"
              f"{os.getloadavg()[0]:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
