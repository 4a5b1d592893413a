"""The endpoint model's variants and a bound from the features, side by side on one world and horizon
(docs, Models: the endpoint model).

**The bound: how separable the actions are in the features at all.** A per-second recogniser, the
strongest cheap one tried: an MLP (two hidden layers of 512, dropout 0.2, label smoothing 0.05,
AdamW) over a 3-second window of per-second features centred on a second (the size of an
observation clip), trained on every labelled second of *every* training video (at most
``--seconds-per-step`` seconds of each step, spread over it) to name that second's action. Its
accuracy over every labelled second of the test videos is the bound printed; beside it the same
with the video's true task given (the most probable of the task's own actions). An endpoint model
sees two such clips and the steps around their boundaries, so it can pass the per-second figure
(a clip at a step's start also shows the scene the earlier steps left); the bound says how much of
the vocabulary the features tell apart, second by second.

**The variants**, each trained once by the real trainer (``train_endpoint_model``) on the same
world, horizon and preset (one torch thread), from the earlier model to today's default:

- ``pair``: the earlier model (one MLP over both clips, the episodes only; the ``endpoints-pair``
  variant's recipe);
- ``clips, episodes only``: one encoder per clip, trained on the episodes;
- ``clips + windows``: its per-clip heads also learn from every labelled window of the fit videos;
- ``clips + windows + smoothing`` (the default): label smoothing ``endpoint_smoothing`` (0.1).

For each: training seconds and CPU-minutes (wall × threads / 60; target at COIN scale: ≤ 5 per
model), episodes per second, the best validation accuracy (held-out training videos; the
hierarchical first / last step) and the test accuracy of the saved model (hierarchical, as the
``graph-ce`` and ``+jdec`` rows use it). ``--epochs N ...`` adds the default trained for N epochs
(the choice of ``endpoint_epochs``); ``--step-models`` adds KEPP's diffusion step model with and
without the auxiliary cross-entropy (slow at COIN scale).

    python benchmarks/bench_endpoints.py                                             # the demo world
    python benchmarks/bench_endpoints.py --root runs/coin-world --preset coin-world-ce   # COIN scale
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_planner import threads

BOUND_HIDDEN, BOUND_DROPOUT, BOUND_SMOOTHING, BOUND_BATCH = 512, 0.2, 0.05, 512


def labelled_seconds(ds, split: str, per_step: int | None, rng):
    """``(features [S, D], second index, its action, its task, first and last second of its video)`` of
    the labelled seconds of a split's videos (at most ``per_step`` of each step, evenly spread)."""
    from kepp_core.data.feature_files import load_features

    tasks = {t: i for i, t in enumerate(sorted(ds.tasks))}
    feats, rows, offset = [], [], 0
    for v in ds.split(split):
        if not v.has_segments or v.feature_file is None:
            continue
        f = load_features(v.feature_file)
        n = len(f)
        for s in v.steps:
            lo, hi = max(0, math.floor(s.start)), min(n, max(math.floor(s.start) + 1, math.ceil(s.end)))
            secs = np.arange(lo, hi)
            if per_step is not None and len(secs) > per_step:
                secs = secs[np.round(np.linspace(0, len(secs) - 1, per_step)).astype(int)]
            rows += [(offset + t, s.action, tasks[v.task], offset, offset + n - 1) for t in secs]
        feats.append(f)
        offset += n
    cols = np.asarray(rows, dtype=np.int64).T
    return np.concatenate(feats).astype(np.float32), *cols


def per_second_bound(ds, epochs: int, per_step: int, seed: int = 0, context: int = 1) -> dict:
    """Train the per-second recogniser (module docstring) and return its test accuracy (%), with and
    without the true task given, and its training seconds."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    from kepp_core.models.endpoint_probs import task_actions_mask

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    x_tr, sec_tr, y_tr, _, lo_tr, hi_tr = labelled_seconds(ds, "train", per_step, rng)
    x_te, sec_te, y_te, k_te, lo_te, hi_te = labelled_seconds(ds, "test", None, rng)
    x_tr, x_te = torch.from_numpy(x_tr), torch.from_numpy(x_te)
    mean, std = x_tr.mean(0), x_tr.std(0).clamp_min(1e-3)
    offsets = np.arange(-context, context + 1)

    def windows(x, sec, lo, hi, i):
        idx = np.clip(sec[i, None] + offsets[None], lo[i, None], hi[i, None])
        return ((x[torch.from_numpy(idx)] - mean) / std).flatten(1)

    width = x_tr.shape[1] * len(offsets)
    net = nn.Sequential(nn.Linear(width, BOUND_HIDDEN), nn.ReLU(), nn.Dropout(BOUND_DROPOUT),
                        nn.Linear(BOUND_HIDDEN, BOUND_HIDDEN), nn.ReLU(), nn.Dropout(BOUND_DROPOUT),
                        nn.Linear(BOUND_HIDDEN, ds.num_actions))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)
    labels = torch.from_numpy(y_tr)
    t0 = time.time()
    for _ in range(epochs):
        for b in np.array_split(rng.permutation(len(y_tr)), max(1, len(y_tr) // BOUND_BATCH)):
            loss = F.cross_entropy(net(windows(x_tr, sec_tr, lo_tr, hi_tr, b)), labels[b],
                                   label_smoothing=BOUND_SMOOTHING)
            opt.zero_grad()
            loss.backward()
            opt.step()
    seconds = time.time() - t0
    mask = torch.from_numpy(task_actions_mask(ds))  # each task's training actions
    net.eval()
    hits = hits_task = 0
    with torch.no_grad():
        for b in np.array_split(np.arange(len(y_te)), max(1, len(y_te) // 8192)):
            z = net(windows(x_te, sec_te, lo_te, hi_te, b))
            truth = torch.from_numpy(y_te[b])
            hits += int((z.argmax(-1) == truth).sum())
            given = z.masked_fill(~mask[torch.from_numpy(k_te[b])], -torch.inf)
            hits_task += int((given.argmax(-1) == truth).sum())
    return {"acc": 100 * hits / len(y_te), "acc_task_given": 100 * hits_task / len(y_te), "seconds": seconds,
            "train_seconds": len(y_tr), "test_seconds": len(y_te)}


def test_accuracy(folder: Path, test, kind: str) -> tuple[float, float]:
    """First- and last-step accuracy (%) of the saved model on the test episodes (an endpoint model's
    hierarchical distribution; a step model's sampled endpoints)."""
    from kepp_core.diffusion.sampling import predict_endpoints
    from kepp_core.models.checkpoint import load_checkpoint
    from kepp_core.models.spec import ModelSpec

    model, cfg = load_checkpoint(folder, kind)
    if kind == "step":
        spec = ModelSpec.from_config(cfg, folder)
        ends = predict_endpoints(model, test.obs_start, test.obs_goal, spec.sampler, spec.sampler_steps, seed=0)[0].numpy()
    else:
        ends = model.endpoint_log_probs(test.obs_start, test.obs_goal).argmax(-1)
    gt = test.actions.numpy()
    return float((ends[:, 0] == gt[:, 0]).mean() * 100), float((ends[:, 1] == gt[:, -1]).mean() * 100)


def main() -> None:
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world
    from kepp_core.training import episode_tensors, preset, train_endpoint_model, train_step_model
    from kepp_core.training.suite import ENDPOINT_VARIANTS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=None, help="a rendered world (kepp data synth --out); default: the demo world")
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bound-epochs", type=int, default=None, help="the recogniser's epochs (default: 40, or 8 "
                                                                     "above 100,000 labelled seconds)")
    ap.add_argument("--seconds-per-step", type=int, default=8, help="training seconds taken from each step")
    ap.add_argument("--skip-bound", action="store_true")
    ap.add_argument("--only", nargs="+", default=None, help="run only these variants (by number, 1-based)")
    ap.add_argument("--epochs", type=int, nargs="+", default=[],
                    help="also the default variant trained for each of these numbers of epochs (endpoint_epochs)")
    ap.add_argument("--step-models", action="store_true", help="also KEPP's diffusion step model (slow at COIN scale)")
    args = ap.parse_args()
    n_threads = threads()
    ds = load_dataset("demo", Path(args.root) if args.root else ensure_world())
    base = replace(preset(args.preset), horizon=args.horizon, seed=args.seed)
    test = episode_tensors(ds, args.horizon, "test")
    print(f"{ds.name} world at {args.root or 'the default demo root'}: {ds.num_actions} actions, {len(ds.tasks)} tasks; "
          f"T={args.horizon}, preset {args.preset}, seed {args.seed}, {len(test)} test episodes; torch threads "
          f"{n_threads}, load average {os.getloadavg()[0]:.1f}", flush=True)
    if not args.skip_bound:
        rng = np.random.default_rng(0)
        n = len(labelled_seconds(ds, "train", args.seconds_per_step, rng)[1])
        epochs = args.bound_epochs or (8 if n > 100_000 else 40)
        b = per_second_bound(ds, epochs, args.seconds_per_step, args.seed)
        print(f"\nbound: per-second recogniser ({b['train_seconds']:,} training seconds, {epochs} epochs, "
              f"{b['seconds'] / 60 * n_threads:.1f} CPU-min): test accuracy {b['acc']:.1f}% over "
              f"{b['test_seconds']:,} labelled test seconds; {b['acc_task_given']:.1f}% with the true task given",
              flush=True)
    variants = {"pair (the earlier model)": ENDPOINT_VARIANTS["pair"],
                "clips, episodes only": {"endpoint_windows": False, "endpoint_smoothing": 0.0},
                "clips + windows": {"endpoint_smoothing": 0.0},
                f"clips + windows + smoothing {base.endpoint_smoothing:g} (default)": {}}
    chosen = [name for i, name in enumerate(variants, 1) if args.only is None or str(i) in args.only]
    for n in args.epochs:
        variants[f"default, {n} epochs"] = {"endpoint_epochs": n}
        chosen.append(f"default, {n} epochs")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(chosen):
            out = Path(tmp) / f"v{i}"
            cfg = replace(base, **variants[name])
            s = train_endpoint_model(ds, cfg, out, progress=False)
            best = s["best"]
            rows.append((name, s["seconds"], s["steps"] * cfg.batch_size / s["seconds"],
                         (best["hier_first_acc"], best["hier_last_acc"]), test_accuracy(out, test, "endpoints")))
            print(f"  trained {name}: {s['seconds']:.0f} s", flush=True)
        if args.step_models:
            for name, weight in (("step model (diffusion)", 0.0), ("step model + aux CE 0.5", 0.5)):
                out = Path(tmp) / name.replace(" ", "-")
                s = train_step_model(ds, replace(base, aux_ce_weight=weight), out, progress=False)
                best = s["best"]
                rows.append((name, s["seconds"], s["steps"] * base.batch_size / s["seconds"],
                             (best["first_acc"], best["last_acc"]), test_accuracy(out, test, "step")))
    print("\n| variant | CPU-min | episodes/s | best val first / last % | test first / last % |")
    print("|---|---|---|---|---|")
    for name, sec, eps, (vf, vl), (tf, tl) in rows:
        print(f"| {name} | {sec * n_threads / 60:.2f} | {eps:,.0f} | {vf:.1f} / {vl:.1f} | {tf:.1f} / {tl:.1f} |")


if __name__ == "__main__":
    main()
