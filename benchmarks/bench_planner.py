"""One plan on CPU (T=4, batch 1, demo dimensions): median latency of the default sampler
(DDPM) and the fast sampler (DDIM), side by side. Target: DDPM median ≤ 250 ms.

    python benchmarks/bench_planner.py [--runs 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def threads() -> int:
    import torch

    n = int(os.environ.get("KEPP_THREADS", "1"))
    torch.set_num_threads(n)
    return n


def demo_planner(horizon: int = 4):
    """A planner with the demo's dimensions: the shipped checkpoints when present, else the
    demo preset's networks with fresh weights (same shapes, so the same speed)."""
    from kepp_core.catalog import models_dir
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world
    from kepp_core.diffusion import ProjectedDiffusion, plan_layout, step_layout
    from kepp_core.models.options import diffusion_options
    from kepp_core.graph.build import build_graph
    from kepp_core.planner import KEPPPlanner
    from kepp_core.training import episode_tensors, preset

    ds = load_dataset("demo", ensure_world())
    test = episode_tensors(ds, horizon, "test")
    assets = REPO / "assets" / "demo"
    if (models_dir(assets, horizon) / "plan-graph-R1" / "config.json").is_file():
        return KEPPPlanner.from_models(assets, horizon, device="cpu"), ds, test, "shipped checkpoints"
    cfg = preset("demo", horizon=horizon)
    step = ProjectedDiffusion(step_layout(horizon, test.obs_dim, ds.num_actions), **diffusion_options(cfg))
    plan = ProjectedDiffusion(plan_layout(horizon, test.obs_dim, ds.num_actions), **diffusion_options(cfg))
    pc = {"sampler": {"name": cfg.sampler, "steps": cfg.sampler_steps}, "R": 1}
    return KEPPPlanner(step.eval(), plan.eval(), build_graph(ds), {}, pc), ds, test, "untrained demo-sized networks"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--horizon", type=int, default=4)
    args = ap.parse_args()
    n_threads = threads()
    planner, ds, test, what = demo_planner(args.horizon)
    print(f"planner: {what}; T={args.horizon}; {planner.step_model.n_steps} diffusion steps; "
          f"torch threads {n_threads}")
    rows = {}
    for sampler, steps in (("ddpm", None), ("ddim", 10), ("ddim", 5)):
        planner.sampler, planner.sampler_steps = sampler, steps
        lat, stages = [], {"endpoints": [], "graph": [], "plan": []}
        for i in range(args.runs + 3):
            k = i % len(test)
            t0 = time.perf_counter()
            r = planner.plan(test.obs_start[k], test.obs_goal[k])
            dt = (time.perf_counter() - t0) * 1e3
            if i >= 3:  # warm-up
                lat.append(dt)
                for s in stages:
                    stages[s].append(r.timings[s])
        name = sampler if steps is None else f"{sampler}-{steps}"
        rows[name] = statistics.median(lat)
        print(f"{name:8s} median {rows[name]:7.1f} ms  p90 {sorted(lat)[int(0.9 * len(lat))]:7.1f} ms  "
              + "  ".join(f"{s} {statistics.median(v):.1f}" for s, v in stages.items()))
    base = rows["ddpm"]
    print("ratios vs ddpm: " + ", ".join(f"{k} {base / v:.2f}x faster" for k, v in rows.items() if k != "ddpm"))
    print(f"target: ddpm median ≤ 250 ms → {'OK' if base <= 250 else 'MISSED'} ({base:.1f} ms)")


if __name__ == "__main__":
    main()
