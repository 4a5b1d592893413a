"""Training at COIN scale, timed on a device: the planner (``plan-graph-R1``), the structured planner
(``plan-graph-R1-struct``) and the endpoint model of ``protocols/coin-world-endpoints.toml`` (its
preset, ``coin-world-ce``, and setting) on the COIN-scale world, with the step model the planners
read. For each model: milliseconds per optimisation step (loss, backward, clipping, AdamW; the GPU
synchronised around each step; median and 90th percentile), the step of the best validation and the
wall time to it (the run's own ``metrics.jsonl``), the whole run and the peak memory (the process's
resident memory; on a GPU also the most PyTorch allocated there).

    python benchmarks/bench_train_scale.py --root runs/coin-world --device cuda          # the preset's schedule
    python benchmarks/bench_train_scale.py --root runs/coin-world --device cpu --steps 40 --endpoint-epochs 2
    python benchmarks/bench_train_scale.py --render 600 --device cpu --steps 30         # a 600-video COIN world
    python benchmarks/bench_train_scale.py --root runs/coin-world --device cuda --precision fp32 bf16 --seeds 5

The world is ``kepp data synth --from-plans ../shared/data/coin/COIN.json --out runs/coin-world --fps 2
--size 32`` (docs, At scale: 18 min on 2 cores); ``--render N`` renders N of its videos (an even spread
over COIN.json) into ``--work`` first. ``--steps`` shortens the diffusion models' schedule (validation
at half and at the end) and ``--endpoint-epochs`` the endpoint model's, for a CPU that cannot run the
preset.

``--precision bf16`` runs each loss under ``torch.autocast(dtype=torch.bfloat16)`` (weights, gradients
and AdamW stay float32). It is an option of this benchmark only, not of ``kepp train``: with two
precisions the same seeds train in both and the best validation scores are compared seed by seed
(paired sign-flip permutation test, ``kepp_core.evaluation.stats``). bf16 becomes an option of the
product only where that paired test, on a GPU, shows no loss.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPEC = REPO / "protocols" / "coin-world-endpoints.toml"
COIN_JSON = REPO.parent / "shared" / "data" / "coin" / "COIN.json"
# the models timed, in training order (the planners read the step model)
ROLES = ("step", "endpoints", "plan-graph-R1", "plan-graph-R1-struct")
PRECISIONS = ("fp32", "bf16")


def render(videos: int, out: Path) -> Path:
    """A COIN world of ``videos`` videos rendered from COIN.json (an even spread), once."""
    if (out / "meta.json").is_file() or (out / "world.json").is_file():
        return out
    cmd = [sys.executable, "-m", "kepp_core", "data", "synth", "--from-plans", str(COIN_JSON), "--videos",
           str(videos), "--fps", "2", "--size", "32", "--out", str(out)]
    subprocess.run(cmd, check=True, cwd=REPO)
    return out


class StepClock:
    """Times every optimisation step of the training loop (``kepp_core.training.loop._optimise``), the
    GPU synchronised around it, with each loss under ``precision``'s autocast."""

    def __init__(self, device: str, precision: str) -> None:
        import torch

        self.torch, self.device, self.precision = torch, torch.device(device), precision
        self.times: list[float] = []

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def installed(self):
        from kepp_core.training import loop

        real = loop._optimise

        def timed(model, net, opt, batch_loss, idx, step, lr):
            def loss(n, i):
                if self.precision == "fp32":
                    return batch_loss(n, i)
                with self.torch.autocast(self.device.type, dtype=self.torch.bfloat16):
                    return batch_loss(n, i).float()
            self.sync()
            t0 = time.perf_counter()
            out = real(model, net, opt, loss, idx, step, lr)
            self.sync()
            self.times.append(time.perf_counter() - t0)
            return out

        loop._optimise = timed
        try:
            yield self
        finally:
            loop._optimise = real


def to_best(folder: Path) -> tuple[int | None, float | None, float | None]:
    """``(step, wall seconds, score)`` of a run's best validation (its config and metrics log)."""
    cfg = json.loads((folder / "config.json").read_text())
    best = (cfg.get("training") or {}).get("best") or {}
    step = best.get("step")
    seconds = None
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("step") == step:
            seconds = rec.get("time")
    return step, seconds, best.get("score")


def train_one(ds, cfg, role_name: str, hdir: Path, device: str, precision: str) -> dict:
    """Train one model of the protocol on ``device`` and time it."""
    import torch

    from kepp_core.catalog import parse_model_folder
    from kepp_core.devices import using
    from kepp_core.training.suite import train_role

    clock = StepClock(device, precision)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    with using(device), clock.installed():
        summary = train_role(ds, cfg, parse_model_folder(role_name), hdir, progress=False)
    wall = time.perf_counter() - t0
    step, seconds, score = to_best(hdir / role_name)
    times = sorted(clock.times)
    return {"model": role_name, "device": device, "precision": precision, "steps": len(times),
            "ms_per_step": 1e3 * statistics.median(times) if times else None,
            "ms_p90": 1e3 * times[max(0, math.ceil(0.9 * len(times)) - 1)] if times else None,
            "best_step": step, "seconds_to_best": seconds, "best_score": score, "run_seconds": wall,
            "train_seconds": summary.get("seconds"),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gpu_peak_mb": torch.cuda.max_memory_allocated(device) / 2**20 if device.startswith("cuda") else None}


def config(args, seed: int):
    """The protocol's training config at T=``args.horizon`` and ``seed``, shortened as asked."""
    from dataclasses import replace

    from kepp_core.experiments.protocol import load_protocol

    cfg = load_protocol(SPEC).config(args.horizon, seed)
    if args.steps:
        half = max(1, args.steps // 2)
        cfg = replace(cfg, train_steps=args.steps, val_every=half, log_every=max(1, min(cfg.log_every, half)),
                      warmup=min(cfg.warmup, half), decay=[(max(1, args.steps * 4 // 5), 0.5)])
    if args.endpoint_epochs:
        cfg = replace(cfg, endpoint_epochs=args.endpoint_epochs)
    return cfg


def run(args) -> list[dict]:
    from kepp_core.catalog import models_dir
    from kepp_core.data import load_dataset
    from kepp_core.training.loop import set_cpu_threads

    set_cpu_threads(args.threads)
    root = Path(args.root) if args.root else render(args.render, Path(args.work) / f"coin-world-{args.render}")
    ds = load_dataset("demo", root)
    print(f"world {root}: {len(ds.videos)} videos, {ds.num_actions} actions, {len(ds.tasks)} tasks; T={args.horizon}, "
          f"device {args.device}, {args.threads or 'default'} CPU threads, load average {os.getloadavg()[0]:.1f}",
          flush=True)
    rows = []
    for seed in range(args.seeds):
        for precision in args.precision:
            hdir = models_dir(Path(args.work) / f"{args.device.replace(':', '')}-{precision}" / f"seed{seed}",
                              args.horizon)
            for role in ROLES:
                row = train_one(ds, config(args, seed), role, hdir, args.device, precision)
                rows.append({**row, "seed": seed})
                print(f"  seed {seed} {precision} {role}: {row['ms_per_step']:.1f} ms/step over {row['steps']} steps, "
                      f"best at step {row['best_step']} after {row['seconds_to_best']} s", flush=True)
    return rows


def report(rows: list[dict], precisions) -> None:
    print(f"\n{'model':<22} {'device':<7} {'prec':<5} {'steps':>6} {'ms/step':>8} {'p90 ms':>8} {'best step':>9} "
          f"{'s to best':>9} {'best score':>10} {'run s':>7} {'RSS MB':>7} {'GPU MB':>7}")
    for r in rows:
        gpu = f"{r['gpu_peak_mb']:.0f}" if r["gpu_peak_mb"] is not None else "-"
        best = f"{r['best_score']:.2f}" if r["best_score"] is not None else "-"
        print(f"{r['model']:<22} {r['device']:<7} {r['precision']:<5} {r['steps']:>6} {r['ms_per_step']:>8.1f} "
              f"{r['ms_p90']:>8.1f} {str(r['best_step']):>9} {str(r['seconds_to_best']):>9} {best:>10} "
              f"{r['run_seconds']:>7.1f} {r['peak_rss_mb']:>7.0f} {gpu:>7}")
    if len(precisions) == 2:
        paired(rows, *precisions)


def paired(rows: list[dict], a: str, b: str) -> None:
    """Best validation score of ``b`` minus ``a``, seed by seed, per model, with a paired permutation test."""
    from kepp_core.evaluation.stats import paired_permutation_test

    print(f"\npaired by seed: best validation score, {b} - {a} (higher is better; a loss is a negative mean)")
    for role in ROLES:
        by = {(r["seed"], r["precision"]): r for r in rows if r["model"] == role}
        diffs = [by[s, b]["best_score"] - by[s, a]["best_score"] for s, p in by if p == a and (s, b) in by]
        if diffs:
            p = paired_permutation_test(diffs)
            print(f"  {role:<22} mean {statistics.mean(diffs):+.3f} over {len(diffs)} seeds "
                  f"(per seed {', '.join(f'{d:+.2f}' for d in diffs)}), p = {p:.3f}, "
                  f"speed-up {time_ratio(rows, role, a, b):.2f}x")


def time_ratio(rows: list[dict], role: str, a: str, b: str) -> float:
    ms = {p: statistics.median(r["ms_per_step"] for r in rows if r["model"] == role and r["precision"] == p)
          for p in (a, b)}
    return ms[a] / ms[b]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="the COIN-scale world (runs/coin-world)")
    ap.add_argument("--render", type=int, default=None, help="render this many COIN videos instead of --root")
    ap.add_argument("--work", default="runs/bench-train-scale", help="where the models (and a rendered world) go")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None, help="the diffusion models' steps (default: the preset's)")
    ap.add_argument("--endpoint-epochs", type=int, default=None, help="the endpoint model's (default: the preset's)")
    ap.add_argument("--precision", nargs="+", default=["fp32"], choices=PRECISIONS)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args()
    if (args.root is None) == (args.render is None):
        ap.error("give --root (the COIN-scale world) or --render N")
    from kepp_core.devices import resolve_device

    args.device = resolve_device(args.device)
    rows = run(args)
    report(rows, args.precision)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
