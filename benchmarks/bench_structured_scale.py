"""The structured planner's training step at COIN scale: where its time goes, before and after the
sparse forward algorithm (docs, At scale: the structured planner at COIN scale).

One optimisation step of the KEPP R = 1 planning model as ``kepp train plan`` takes it (diffusion
loss, backward, gradient clipping, AdamW) with the ``coin-world`` preset's network (width 32,
mults 1-2, 20 diffusion steps, batch 256; observations of 3 seconds × 256 builtin features) over
COIN's 768 actions and the P²KG of COIN's training plans (``COIN.json``), three ways, interleaved
round by round so that load from other processes hits all alike:

- ``plain``: the diffusion loss alone (the plain planner);
- ``structured, dense``: plus ``weight ×`` the chain NLL by the dense ``O(T·A²)`` forward
  algorithm (``chain_log_partition``: a logsumexp over ``[B, A, A]`` per step; the code before);
- ``structured, sparse``: plus the same NLL by the sparse ``O(T·(A + E))`` forward algorithm
  (``StructuredLoss``: what ``kepp train plan --structured-weight`` runs now).

It prints the median milliseconds per step of each, the ratio to ``plain`` (target: structured
<= 3x plain) and the two losses' difference (they must agree). The training batches are real
COIN episodes' plans (the values do not change the cost).

    python benchmarks/bench_structured_scale.py [--coin ../shared/data/coin/COIN.json] [--steps 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

TARGET_RATIO = 3.0
FEATURES, M = 256, 3  # the builtin encoder's values per second, seconds per observation


def dense_nll(emissions, plans, transitions, scale):
    """The chain NLL as the code before the sparse form computed it (dense logsumexp recursion)."""
    from kepp_core.training.structured import chain_log_partition, chain_score

    trans = scale * transitions
    return (chain_log_partition(emissions, trans) - chain_score(emissions, trans, plans)).mean()


def main() -> int:
    from kepp_core.data import load_dataset
    from kepp_core.data.episodes import make_episodes
    from kepp_core.diffusion import ProjectedDiffusion, plan_layout
    from kepp_core.graph.build import build_graph
    from kepp_core.training import preset
    from kepp_core.training.structured import StructuredLoss, graph_transitions
    from kepp_core.training.suite import DEFAULT_STRUCTURED_WEIGHT
    from kepp_core.training.trainers import STRUCTURED_SCALE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coin", default="../shared/data/coin/COIN.json", help="COIN.json (its training plans)")
    ap.add_argument("--horizons", type=int, nargs="+", default=[3, 4])
    ap.add_argument("--steps", type=int, default=5, help="optimisation steps per variant and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("KEPP_THREADS", "1")))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds = load_dataset("coin", Path(args.coin))
    graph = build_graph(ds, "train")
    cfg = preset("coin-world")
    weight = DEFAULT_STRUCTURED_WEIGHT
    chain = StructuredLoss(graph, learn_scale=False)
    dense = graph_transitions(graph)
    print(f"COIN: {ds.num_actions} actions, graph of {graph.counts.nnz} edges ({len(chain.edge_src)} above the "
          f"floor); coin-world network (width {cfg.dim}, mults {list(cfg.mults)}), batch {cfg.batch_size}, "
          f"structured weight {weight}; {args.threads} thread(s), load average {os.getloadavg()[0]:.1f}; "
          f"median of {args.steps} steps x {args.rounds} interleaved rounds")
    ok = True
    for horizon in args.horizons:
        torch.manual_seed(0)
        eps = make_episodes(ds, horizon, "train")
        pick = torch.randperm(len(eps))[:cfg.batch_size]
        plans = torch.tensor([eps[i].actions for i in pick.tolist()])
        obs = FEATURES * M
        model = ProjectedDiffusion(plan_layout(horizon, obs, ds.num_actions, "graph"), n_steps=cfg.n_steps,
                                   dim=cfg.dim, mults=cfg.mults)
        cond = {"graph": torch.nn.functional.one_hot(plans, ds.num_actions).float()}
        tpl = model.template(torch.randn(len(plans), obs), torch.randn(len(plans), obs), cond)
        x0 = model.layout.with_actions(tpl, plans)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

        def step(kind: str) -> float:
            t0 = time.perf_counter()
            loss, pred = model(x0, tpl, return_prediction=True)
            if kind != "plain":
                emissions = pred[:, :, model.layout.action_start:] * STRUCTURED_SCALE
                nll = dense_nll(emissions, plans, dense, chain.scale) if kind == "dense" else chain(emissions, plans)
                loss = loss + weight * nll
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return (time.perf_counter() - t0) * 1e3

        kinds = {"plain": "plain", "dense": "structured, dense (before)", "sparse": "structured, sparse (now)"}
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for kind in kinds:  # warm-up: the optimiser's state, the allocator
            step(kind)
        for _ in range(args.rounds):
            for kind in kinds:
                times[kind] += [step(kind) for _ in range(args.steps)]
        with torch.no_grad():
            _, pred = model(x0, tpl, return_prediction=True)
            emissions = pred[:, :, model.layout.action_start:] * STRUCTURED_SCALE
            gap = abs(float(dense_nll(emissions.double(), plans, dense.double(), 1.0))
                      - float(chain(emissions.double(), plans)))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"\nT={horizon}: the two NLLs differ by {gap:.2e} (float64)")
        for kind, label in kinds.items():
            print(f"  {label:28s} {med[kind]:9.1f} ms/step  ({med[kind] / med['plain']:5.2f}x plain)")
        ratio = med["sparse"] / med["plain"]
        ok &= ratio <= TARGET_RATIO and gap < 1e-6
        print(f"  sparse vs dense: {med['dense'] / med['sparse']:.1f}x faster; target structured <= "
              f"{TARGET_RATIO:g}x plain: {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
