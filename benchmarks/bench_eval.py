"""Batched evaluation throughput (episodes/s) and accuracy for the default sampler (DDPM) and
the fast sampler (DDIM), on the demo world's test episodes, side by side.

    python benchmarks/bench_eval.py [--horizon 4]
"""

from __future__ import annotations

import argparse
import time

from bench_planner import demo_planner, threads


def main() -> None:
    from kepp_core.metrics import mean_accuracy, success_rate

    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=1024)
    args = ap.parse_args()
    n_threads = threads()
    planner, ds, test, what = demo_planner(args.horizon)
    gt = test.actions.tolist()
    print(f"planner: {what}; T={args.horizon}; {len(test)} test episodes; torch threads {n_threads}")
    rows = {}
    for sampler, steps in (("ddpm", None), ("ddim", 10), ("ddim", 5)):
        planner.sampler, planner.sampler_steps = sampler, steps
        t0 = time.perf_counter()
        b = planner.plan_batch(test.obs_start, test.obs_goal, batch_size=args.batch_size)
        dt = time.perf_counter() - t0
        name = sampler if steps is None else f"{sampler}-{steps}"
        rows[name] = len(test) / dt
        pred = b.plans.tolist()
        print(f"{name:8s} {rows[name]:8.1f} episodes/s  ({dt:.2f} s)  SR {success_rate(pred, gt):.2f}  "
              f"mAcc {mean_accuracy(pred, gt):.2f}  stages ms: "
              + ", ".join(f"{k} {v:.0f}" for k, v in b.timings.items()))
    print("ratios vs ddpm: " + ", ".join(f"{k} {v / rows['ddpm']:.2f}x" for k, v in rows.items() if k != "ddpm"))


if __name__ == "__main__":
    main()
