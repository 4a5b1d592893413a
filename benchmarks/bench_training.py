"""Training everything the demo needs for one horizon (step model, KEPP R=1 and R=2, the
no-graph ablation) with the demo preset on the default world, timed per model; also the
table's extra models (PDPP + task classifier). Target: demo members ≤ 600 s on 2 cores.

    python benchmarks/bench_training.py [--horizon 4] [--all]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace

from bench_planner import threads


def main() -> None:
    from kepp_core.commands.demo import DEMO_MEMBERS
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world
    from kepp_core.training import preset
    from kepp_core.training.suite import MEMBERS, train_horizon

    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=int, default=4)
    ap.add_argument("--all", action="store_true", help="also the PDPP models of the table")
    args = ap.parse_args()
    n_threads = threads()
    ds = load_dataset("demo", ensure_world())
    cfg = replace(preset("demo"), horizon=args.horizon)
    members = MEMBERS if args.all else DEMO_MEMBERS
    print(f"T={args.horizon}, preset demo ({cfg.train_steps} steps, batch {cfg.batch_size}, dim {cfg.dim}), "
          f"torch threads {n_threads}, load average {os.getloadavg()[0]:.1f}")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m in members:
            t0 = time.perf_counter()
            train_horizon(ds, cfg, tmp, (m,) if m == "step" or "step" in times else ("step", m), progress=False,
                          log=lambda s: None)
            times[m] = time.perf_counter() - t0
            print(f"{m:16s} {times[m]:7.1f} s")
    demo = sum(v for k, v in times.items() if k in DEMO_MEMBERS)
    print(f"demo members total {demo:.1f} s (target ≤ 600 s → {'OK' if demo <= 600 else 'MISSED'}); "
          f"all measured {sum(times.values()):.1f} s; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
