"""Which endpoint model learns fastest per CPU-minute: KEPP's diffusion step model (with and
without the auxiliary cross-entropy on its x_0 action block) against the discriminative
endpoint model (cross-entropy heads; its flat and hierarchical distributions), each trained
once on the same world and horizon, side by side in one run (docs, Models: the endpoint model).

For each model it prints the training throughput (examples per second: optimisation steps
only, validation excluded), the CPU-minutes of optimisation until the validation endpoint
accuracy (mean of first- and last-step accuracy on the held-out training videos) first reaches
``--target``, the best validation accuracy, and the final first/last-step accuracy on the test
episodes. CPU-minutes = wall seconds × torch threads / 60.

    python benchmarks/bench_endpoints.py                               # the demo world
    python benchmarks/bench_endpoints.py --root /tmp/niv-world --target 50   # a rendered world
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from bench_planner import threads

VAL_ROUNDS = 20  # validations over each run (the accuracy curve)


def curve(folder: Path, first: str = "first_acc", last: str = "last_acc") -> tuple[list[tuple[float, float]], float]:
    """``[(optimisation seconds, validation accuracy)]`` from a run's log (each step logged), and
    the seconds per optimisation step: the log's time excludes the validation of its own record,
    so the gap after a validated record is dropped."""
    recs = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    clock, points, gaps, prev = 0.0, [], [], None
    for r in recs:
        if prev is not None and "val" not in prev:
            gap = r["time"] - prev["time"]
            gaps.append(gap / max(1, r["step"] - prev["step"]))
            clock += gap
        elif prev is None:
            clock = r["time"]
        else:  # skip the validation; count this stretch at the typical step time
            per = sorted(gaps)[len(gaps) // 2] if gaps else 0.0
            clock += per * (r["step"] - prev["step"])
        if "val" in r:
            points.append((clock, (r["val"][first] + r["val"][last]) / 2))
        prev = r
    return points, (sum(gaps) / len(gaps) if gaps else float("nan"))


def reach(points: list[tuple[float, float]], target: float) -> float | None:
    return next((t for t, acc in points if acc >= target), None)


def test_accuracy(folder: Path, test, kind: str, hierarchical: bool = True) -> tuple[float, float]:
    """First- and last-step accuracy (%) of the saved model on the test episodes."""
    from kepp_core.diffusion.sampling import predict_endpoints
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.models.spec import ModelSpec

    model, cfg = load_checkpoint(folder, kind)
    if kind == "step":
        spec = ModelSpec.from_config(cfg, folder)
        ends, _ = predict_endpoints(model, test.obs_start, test.obs_goal, spec.sampler, spec.sampler_steps, seed=0)
        ends = ends.numpy()
    else:
        ends = model.endpoint_log_probs(test.obs_start, test.obs_goal, hierarchical).argmax(-1)
    gt = test.actions.numpy()
    return float((ends[:, 0] == gt[:, 0]).mean() * 100), float((ends[:, 1] == gt[:, -1]).mean() * 100)


def main() -> None:
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world
    from kepp_core.training import episode_tensors, preset, train_endpoint_model, train_step_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=None, help="a rendered world (kepp data synth --out); default: the demo world")
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--target", type=float, default=60.0, help="validation endpoint accuracy to reach (%%)")
    ap.add_argument("--aux-ce-weight", type=float, default=0.5, help="the step model's auxiliary CE weight")
    args = ap.parse_args()
    n_threads = threads()
    ds = load_dataset("demo", Path(args.root) if args.root else ensure_world())
    base = replace(preset(args.preset), horizon=args.horizon, log_every=1)
    step_cfg = replace(base, val_every=max(1, base.train_steps // VAL_ROUNDS))
    test = episode_tensors(ds, args.horizon, "test")
    print(f"{ds.name} world at {args.root or 'the default demo root'}: {ds.num_actions} actions, {len(ds.tasks)} tasks; "
          f"T={args.horizon}, preset {args.preset}, {len(test)} test episodes; torch threads {n_threads}, "
          f"load average {os.getloadavg()[0]:.1f}; target validation accuracy {args.target:g}%")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = {"step (diffusion)": lambda o: train_step_model(ds, step_cfg, o, progress=False),
                f"step + aux CE {args.aux_ce_weight:g}":
                    lambda o: train_step_model(ds, replace(step_cfg, aux_ce_weight=args.aux_ce_weight), o,
                                               progress=False),
                "endpoints (CE)": lambda o: train_endpoint_model(ds, base, o, progress=False, val_rounds=VAL_ROUNDS)}
        for i, (name, train) in enumerate(runs.items()):
            out = tmp / f"m{i}"
            summary = train(out)
            kind = "endpoints" if name.startswith("endpoints") else "step"
            bsz = base.batch_size
            variants = [("flat", "first_acc", "last_acc", False), ("hierarchical", "hier_first_acc",
                                                                   "hier_last_acc", True)] if kind == "endpoints" \
                else [("", "first_acc", "last_acc", True)]
            for label, first, last, hier in variants:
                points, per_step = curve(out, first, last)
                t = reach(points, args.target)
                acc = test_accuracy(out, test, kind, hier)
                rows.append((f"{name} {label}".strip(), bsz / per_step, t, max(a for _, a in points),
                             summary["steps"], acc))
    print(f"\n| model | examples/s | CPU-min to ≥ {args.target:g}% val | best val % | steps | "
          f"test first / last / mean % |")
    print("|---|---|---|---|---|---|")
    for name, eps, t, best, steps, (f, la) in rows:
        when = f"{t * n_threads / 60:.2f}" if t is not None else "not reached"
        print(f"| {name} | {eps:,.0f} | {when} | {best:.1f} | {steps} | {f:.1f} / {la:.1f} / {(f + la) / 2:.1f} |")


if __name__ == "__main__":
    main()
