"""The slice table and the episode map at COIN scale, on synthetic records and features of that
size (no world needed):

- the slice table (:func:`kepp_core.api.slice_table`) of one method against a reference for every
  cut, over records of ``--episodes`` test episodes × ``--seeds`` seeds × 2 methods (the COIN-world
  protocol: 180 tasks, 3 seeds), paired p-values included;
- the episode map's PCA (:func:`kepp_core.evaluation.episode_map.pca_2d`) of ``--episodes`` start
  and goal windows of ``--dim`` features (2 windows × M=3 × D), beside numpy's full SVD on the same
  matrix for the ratio;
- the map's points and figure for the page (``app/components/records/episode_map``: join, sample at the
  cap, hover text) and the size of the figure sent to the browser.

    python benchmarks/bench_slices.py                        # 25,000 episodes x 3 seeds, D=256
    python benchmarks/bench_slices.py --episodes 5000 --seeds 1 --no-full-svd

Prints the timings (best of ``--repeats``); no assertions. The page computes each table and the
map once per records file (and the map once per dataset, remembered on disk), so these are the
costs of a first view; later views are cache reads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "app"))


def synthetic_records(episodes: int, seeds: int, tasks: int = 180, actions: int = 768, seed: int = 0):
    """A predictions table (the columns of :func:`kepp_core.api.read_predictions`) of two methods."""
    import pandas as pd

    from kepp_core.catalog import PATTERNS

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, actions, size=(episodes, 3))
    ids = [f"task{i % tasks}/v{i}/0:3" for i in range(episodes)]
    rows = []
    for s in range(seeds):
        for method, noise in (("kepp-R2", 0.3), ("kepp-nograph", 0.45)):
            wrong = rng.random((episodes, 3)) < noise
            plan = np.where(wrong, rng.integers(0, actions, size=(episodes, 3)), truth)
            ok = (plan == truth).all(axis=1)
            pattern = np.where(ok, "", np.array(PATTERNS)[rng.integers(0, len(PATTERNS), episodes)])
            rows.append(pd.DataFrame({"episode": ids, "task": [f"task{i % tasks}" for i in range(episodes)],
                                      "video": [f"v{i}" for i in range(episodes)], "horizon": 3,
                                      "setting": "conventional", "seed": s, "method": method,
                                      "truth": [tuple(t) for t in truth.tolist()], "plan": [tuple(p) for p in plan.tolist()],
                                      "success": ok, "pattern": pattern}))
    return pd.concat(rows, ignore_index=True)


def best(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=25_000, help="test episodes of one horizon")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--dim", type=int, default=256, help="feature size D of one second")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-full-svd", action="store_true", help="skip numpy's full SVD (minutes at COIN scale)")
    args = ap.parse_args()

    from kepp_core import api
    from kepp_core.catalog import SLICE_BY
    from kepp_core.evaluation.episode_map import pca_2d

    preds = synthetic_records(args.episodes, args.seeds)
    print(f"{len(preds):,} record rows: {args.episodes:,} episodes x {args.seeds} seeds x 2 methods, 180 tasks")
    for by in SLICE_BY:
        t, result = best(lambda: api.slice_table(preds, "kepp-R2", by, "kepp-nograph", 3), args.repeats)
        print(f"slice table by {by:9s} ({len(result.table):3d} slices, p-values: {result.table['p'].notna().all()}): "
              f"{t:.2f} s")
    x = np.random.default_rng(1).standard_normal((args.episodes, 2 * 3 * args.dim)).astype(np.float32)
    t, _ = best(lambda: pca_2d(x), args.repeats)
    print(f"PCA of {x.shape[0]:,} x {x.shape[1]:,} windows (randomised subspace iteration): {t:.2f} s")
    if not args.no_full_svd:
        t_full, _ = best(lambda: np.linalg.svd(x - x.mean(axis=0), full_matrices=False), 1)
        print(f"numpy's full SVD of the same matrix: {t_full:.2f} s ({t_full / t:.1f}x)")

    from components.records.episode_map import MAP_CAP, map_figure, map_points

    xy = np.random.default_rng(2).standard_normal((args.episodes, 2))
    coords = {"episodes": list(preds["episode"].iloc[: args.episodes]), "x": xy[:, 0].tolist(), "y": xy[:, 1].tolist()}
    rows = preds[preds["method"] == "kepp-R2"]
    names = {f"task{i}": f"task {i}" for i in range(180)}
    t, (points, total) = best(lambda: map_points(coords, rows, lambda plan: [str(a) for a in plan], names), args.repeats)
    print(f"map points: {total:,} episodes joined, {len(points):,} drawn (cap {MAP_CAP:,}): {t:.2f} s")
    for colour in ("success", "task"):
        t, fig = best(lambda: map_figure(points, colour), args.repeats)
        size = len(fig.to_json())
        print(f"map figure by {colour}: {t:.2f} s, {size / 1e6:.2f} MB of JSON to the browser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
