"""Difficulty proxy for the synthetic world: how well can a small classifier tell the first and
last step of an episode from its start/goal observation windows?

The step model of KEPP (a diffusion model) should land between 60% and 85% first/last-step
accuracy on the default world, as on real data. This script trains, per difficulty, a linear
softmax classifier and a one-hidden-layer MLP (torch, a few seconds on the CPU) on the
observations of ``make_episodes(ds, T, "train")`` and reports test accuracy of ``a_1`` (from
the start window) and ``a_T`` (from the goal window), side by side for easy/default/hard.

    python benchmarks/bench_difficulty.py                      # 300 videos per difficulty
    python benchmarks/bench_difficulty.py --videos 150 --difficulty default
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kepp_core.data import load_dataset, make_episodes, observations  # noqa: E402
from kepp_core.data.synth import generate_world  # noqa: E402


def fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, classes: int,
                hidden: int = 0, epochs: int = 300, seed: int = 0) -> np.ndarray:
    """Full-batch Adam on standardised inputs; returns test predictions."""
    torch.manual_seed(seed)
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-4
    xt = torch.from_numpy((x_train - mu) / sd)
    xs = torch.from_numpy((x_test - mu) / sd)
    yt = torch.from_numpy(y_train)
    d = xt.shape[1]
    if hidden:
        net = torch.nn.Sequential(torch.nn.Dropout(0.2), torch.nn.Linear(d, hidden), torch.nn.ReLU(),
                                  torch.nn.Dropout(0.2), torch.nn.Linear(hidden, classes))
    else:
        net = torch.nn.Sequential(torch.nn.Dropout(0.2), torch.nn.Linear(d, classes))
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-2)
    for _ in range(epochs):
        net.train()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xt), yt)
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        return net(xs).argmax(1).numpy()


def proxy_accuracy(root: Path, horizon: int = 3, setting: str = "conventional") -> dict:
    ds = load_dataset("demo", root)
    train, test = make_episodes(ds, horizon, "train", setting), make_episodes(ds, horizon, "test", setting)
    s_tr, g_tr = observations(train)
    s_te, g_te = observations(test)
    a1_tr = np.array([e.actions[0] for e in train])
    aT_tr = np.array([e.actions[-1] for e in train])
    a1_te = np.array([e.actions[0] for e in test])
    aT_te = np.array([e.actions[-1] for e in test])
    out = {"train_episodes": len(train), "test_episodes": len(test), "actions": ds.num_actions}
    for name, hidden in (("linear", 0), ("mlp", 256)):
        p1 = fit_predict(s_tr, a1_tr, s_te, ds.num_actions, hidden)
        pT = fit_predict(g_tr, aT_tr, g_te, ds.num_actions, hidden)
        out[f"{name}_a1"] = float((p1 == a1_te).mean() * 100)
        out[f"{name}_aT"] = float((pT == aT_te).mean() * 100)
    # chance level of guessing the most frequent training label
    out["majority_a1"] = float((a1_te == np.bincount(a1_tr).argmax()).mean() * 100)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=300)
    ap.add_argument("--difficulty", nargs="*", default=["easy", "default", "hard"])
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="folder to keep the worlds in (default: a temporary one)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kepp-difficulty-"))
    rows = []
    for diff in args.difficulty:
        t0 = time.perf_counter()
        root = generate_world(base / diff, seed=args.seed, videos=args.videos, difficulty=diff, progress=False)
        built = time.perf_counter() - t0
        r = proxy_accuracy(root, args.horizon)
        rows.append((diff, r, built))
    print(f"difficulty proxy: {args.videos} videos, T={args.horizon}, conventional windows, "
          f"test accuracy (%) of a_1 from the start window and a_T from the goal window")
    print(f"{'difficulty':<10} {'episodes tr/te':>15} {'linear a1':>10} {'linear aT':>10} {'mlp a1':>8} "
          f"{'mlp aT':>8} {'majority':>9} {'build s':>8}")
    for diff, r, built in rows:
        print(f"{diff:<10} {r['train_episodes']:>7}/{r['test_episodes']:<7} {r['linear_a1']:>10.1f} "
              f"{r['linear_aT']:>10.1f} {r['mlp_a1']:>8.1f} {r['mlp_aT']:>8.1f} {r['majority_a1']:>9.1f} {built:>8.1f}")


if __name__ == "__main__":
    main()
