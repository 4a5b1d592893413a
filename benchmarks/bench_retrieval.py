"""Top-R path retrieval on the COIN graph: exact k-best search vs enumeration of walks, side by side.

For T = 3..6 and R = 5, every distinct endpoint pair (a_1, a_T) of the test episodes is
answered, in one run, by
  (a) ``retrieve`` from scratch: no result cache, the goal's backward table is rebuilt for
      every query (this is the timed "DP" column and the speed-up);
  (b) the search alone (``scorer.k_best``: best-first search and exact ordering, no
      ``Recommendation``) with the goal's backward table taken from a per-(a_T, T) cache, as
      ``Retriever`` does during evaluation ("DP goal-cached": paths still computed per query);
  (c) the oracle: every walk of T nodes from a_1 enumerated depth-first along out-edges,
      kept if it ends at a_T, scored exactly (``Fraction``) and sorted.
All three must return the same ranked paths ("agree"). Each query is timed ``--repeat`` times
per side and the minimum is kept (as ``timeit`` does); all DP queries run before all oracle
queries so neither side runs in the other's cold caches. Targets: DP median <= 2 ms per query
at T=6 and >= 100x faster than enumeration.

    python benchmarks/bench_retrieval.py [--root ../shared/data/coin/COIN.json] [--queries 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kepp_core.data import load_dataset, make_episodes  # noqa: E402
from kepp_core.graph import build_graph, make_scorer, retrieve  # noqa: E402


def enumerate_top(scorer, start: int, goal: int, horizon: int, top: int):
    """Every walk of ``horizon`` nodes from ``start`` by depth-first search, ranked exactly.
    Returns the best ``top`` paths and the number of walks enumerated."""
    succ = scorer.graph.successors
    found = []
    stack = [(start,)]
    walks = 0
    while stack:
        path = stack.pop()
        if len(path) == horizon:
            walks += 1
            if path[-1] == goal:
                found.append((scorer.exact(path), path))
            continue
        stack.extend(path + (v,) for v in succ[path[-1]])
    found.sort(key=lambda c: (-c[0], c[1]))
    return [p for _, p in found[:top]], walks


def timed(repeat: int, fn, *args):
    """``(result, best seconds)`` of ``repeat`` calls of ``fn(*args)``."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_root = Path(__file__).resolve().parents[2] / "shared" / "data" / "coin" / "COIN.json"
    ap.add_argument("--dataset", default="coin", help="dataset format (coin, plans, crosstask, demo)")
    ap.add_argument("--root", default=str(default_root), help="annotation file or folder")
    ap.add_argument("--queries", type=int, default=0, help="endpoint pairs per horizon (0: all distinct test pairs)")
    ap.add_argument("--top", type=int, default=5, help="R")
    ap.add_argument("--scorer", default="p2kg", help="path scorer of the DP side (p2kg or pkg)")
    ap.add_argument("--repeat", type=int, default=3, help="timings per query and side (the minimum is kept)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample when --queries is set")
    ap.add_argument("--horizons", type=int, nargs="+", default=[3, 4, 5, 6], help="horizons T")
    args = ap.parse_args(argv)
    if not Path(args.root).exists():
        print(f"skipped: {args.root} not found", file=sys.stderr)
        return 0

    ds = load_dataset(args.dataset, args.root)
    graph = build_graph(ds)
    scorer = make_scorer(graph, args.scorer)
    rng = random.Random(args.seed)
    print(f"{ds.name} graph: {graph.num_actions} actions, {graph.num_edges} edges; R={args.top}, "
          f"scorer={args.scorer}; min of {args.repeat} timings per query and side; no result cache: "
          f"every DP query computes its paths (and, in the DP column, its goal table) from scratch")
    print(f"{'T':>2} {'queries':>7} {'DP median ms':>12} {'DP p95 ms':>9} {'DP goal-cached ms':>17} "
          f"{'enum median ms':>14} {'speed-up (median)':>17} {'speed-up (total)':>16} {'walks (median)':>14} "
          f"{'agree':>9}")
    for horizon in args.horizons:
        pairs = sorted({(e.actions[0], e.actions[-1]) for e in make_episodes(ds, horizon, "test")})
        if args.queries:
            pairs = rng.sample(pairs, min(args.queries, len(pairs)))
        dp, dp_cached, recs = [], [], []
        tables = {g: scorer.prepare(g, horizon) for _, g in pairs}
        for s, g in pairs:
            rec, t = timed(args.repeat, retrieve, graph, s, g, horizon, args.top, scorer)
            cached, tc = timed(args.repeat, scorer.k_best, s, g, horizon, args.top, tables[g])
            dp.append(t)
            dp_cached.append(tc)
            recs.append((rec, [p for p, _ in cached]))
        enum, walks, agree = [], [], 0
        for (s, g), (rec, cached) in zip(pairs, recs):
            (ranked, n_walks), t = timed(args.repeat, enumerate_top, scorer, s, g, horizon, args.top)
            enum.append(t)
            walks.append(n_walks)
            agree += list(rec.paths[: rec.found]) == ranked == cached
        dp_med, en_med = statistics.median(dp), statistics.median(enum)
        p95 = sorted(dp)[int(0.95 * (len(dp) - 1))]
        print(f"{horizon:>2} {len(pairs):>7} {1e3 * dp_med:>12.3f} {1e3 * p95:>9.3f} "
              f"{1e3 * statistics.median(dp_cached):>17.3f} {1e3 * en_med:>14.3f} {en_med / dp_med:>16.1f}x "
              f"{sum(enum) / sum(dp):>15.1f}x {statistics.median(walks):>14.0f} {agree:>4}/{len(pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
