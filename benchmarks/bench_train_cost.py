"""What one optimisation step of the paper's presets costs, measured on this CPU, for the GPU
recipe in the README (docs, At scale): no GPU is available here, so GPU memory and time are
ESTIMATED from what this script measures.

For the networks of ``kepp train`` with real-feature shapes (S3D: 512 values per second,
``M = 3`` seconds per observation, so 1,536 per observation; CrossTask 105 actions and 18
tasks, COIN 768 actions and 180 tasks), for each preset's U-Net (width 128, mults 1-2-4, batch
256) and each model kind (step, KEPP plan with the P²KG row, no-graph plan, PDPP task row):

- parameters and the bytes of weights + gradients + AdamW state (16 bytes per parameter);
- FLOPs of one training step (forward + backward, ``torch.utils.flop_counter``);
- operators dispatched per forward + backward (each one CUDA kernel or more on a GPU);
- bytes of the tensors autograd saves for the backward pass (the activations a GPU holds);
- CPU milliseconds per optimisation step (loss, backward, clipping, AdamW; median of
  ``--steps``), with ``--threads`` torch threads;
- CPU milliseconds of one forward + backward of the same network shrunk to width 8 and a batch
  of one (the same operators, almost no arithmetic): the host's cost of dispatching them,
  which bounds a GPU step of a network this small from below (the host issues every kernel
  and the training loop waits for each step's loss).

    KEPP_THREADS=1 python benchmarks/bench_train_cost.py [--steps 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

# (dataset, preset, actions, tasks, horizons)
CASES = (("crosstask-s3d", "crosstask-s3d", 105, 18, (3, 4, 5, 6)), ("coin-s3d", "coin", 768, 180, (3, 4)))
FEATURE_DIM, M = 512, 3
KINDS = ("step", "plan-graph-R1", "plan-none", "plan-task")


def network(kind: str, horizon: int, actions: int, tasks: int, cfg, feature_dim: int = FEATURE_DIM):
    """The diffusion model ``kepp train`` builds for ``kind`` (fresh weights)."""
    from kepp_core.diffusion import ProjectedDiffusion
    from kepp_core.diffusion.layout import plan_layout, step_layout

    obs = feature_dim * M
    if kind == "step":
        lay = step_layout(horizon, obs, actions)
    else:
        cond = {"plan-graph-R1": "graph", "plan-none": "none", "plan-task": "task"}[kind]
        lay = plan_layout(horizon, obs, actions, cond, tasks if cond == "task" else None)
    return ProjectedDiffusion(lay, n_steps=cfg.n_steps, dim=cfg.dim, mults=cfg.mults)


def batch(model, size: int):
    """A random training batch in the model's layout (values do not change the cost)."""
    lay = model.layout
    tpl = torch.randn(size, lay.horizon, lay.channels)
    x0 = tpl.clone()
    x0[:, :, lay.action_start:] = torch.nn.functional.one_hot(
        torch.randint(0, lay.num_actions, (size, lay.horizon)), lay.num_actions).float()
    return x0, tpl


def counts(model, x0, tpl) -> dict:
    """FLOPs, dispatched operators and saved-activation bytes of one forward + backward."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    flops = FlopCounterMode(display=False)
    with flops, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x0, tpl).backward()
    with Count():
        model(x0, tpl).backward()
    return {"flops": flops.get_total_flops(), "ops": Count.n, "saved_bytes": saved[0]}


def step_ms(model, x0, tpl, cfg, steps: int) -> float:
    """Median CPU milliseconds of one optimisation step as the training loop takes it."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        loss = model(x0, tpl)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times[1:])  # the first step allocates the optimiser state


def dispatch_ms(kind: str, horizon: int, cfg, repeats: int = 30) -> tuple[float, int]:
    """Median CPU milliseconds of one forward + backward of ``kind``'s network at width 8, 12
    observation values, 5 actions and a batch of one (the same operators as the real one, almost
    no arithmetic), and the number of operators it dispatches."""
    from dataclasses import replace

    model = network(kind, horizon, 5, 3, replace(cfg, dim=8), feature_dim=4)
    x0, tpl = batch(model, 1)
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        model(x0, tpl).backward()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times[1:]), counts(model, x0, tpl)["ops"]


def main() -> None:
    from kepp_core.training import preset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("KEPP_THREADS", "1")))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for name, preset_name, actions, tasks, horizons in CASES:
        cfg = preset(preset_name)
        for h in horizons:
            for kind in KINDS:
                model = network(kind, h, actions, tasks, cfg)
                x0, tpl = batch(model, cfg.batch_size)
                params = sum(p.numel() for p in model.parameters())
                c = counts(model, x0, tpl)
                floor, floor_ops = dispatch_ms(kind, h, cfg)
                rows.append({"case": name, "T": h, "model": kind, "channels": model.layout.channels,
                             "params_M": round(params / 1e6, 2), "weights_adam_MB": round(params * 16 / 2**20, 1),
                             "GFLOP_step": round(c["flops"] / 1e9, 2), "ops_fwd_bwd": c["ops"],
                             "saved_MB": round(c["saved_bytes"] / 2**20, 1),
                             "cpu_ms_step": round(step_ms(model, x0, tpl, cfg, args.steps), 1),
                             "cpu_ms_dispatch": round(floor, 2), "ops_check": floor_ops == c["ops"]})
                print(json.dumps(rows[-1]) if args.json else
                      " ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    print(f"torch threads {args.threads}, batch 256, load average {os.getloadavg()[0]:.1f} "
          f"(the machine is shared: CPU times are upper bounds)")


if __name__ == "__main__":
    main()
