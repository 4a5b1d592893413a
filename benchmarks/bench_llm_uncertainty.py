"""Uncertainty measures (NLL, KL, mode precision/recall) of sampled plans on the demo world,
for reference samplers side by side, including K samples from the SCRIPTED local LLM server.

No trained model is involved (``kepp eval --samples K`` reports the same measures for KEPP
and KEPP without the graph condition). The samplers, all given the ground-truth
``(a_1, a_T)`` of each test episode, draw ``K`` plans:

- ``oracle``: K plans drawn from the episode's own ground-truth distribution (the floor
  that sampling noise leaves);
- ``P²KG walks``: walks from ``a_1`` to ``a_T`` drawn with probability proportional to
  their P²KG score (product of edge probabilities), built from the training plans;
- ``P²KG top-1 xK``: the single best path repeated (a deterministic planner);
- ``scripted LLM``: K answers of the scripted "textbook" server of bench_llm.py (not a
  real LLM), each parsed and mapped to actions by all-MiniLM-L6-v2;
- ``uniform``: intermediate steps uniform over all actions.

    python benchmarks/bench_llm_uncertainty.py [--samples 50] [--llm-samples 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from bench_llm import TextbookServer, demo_plans, markdown  # noqa: E402
from llm_server import ScriptedChatServer  # noqa: E402

from kepp_core.data.episodes import make_episodes  # noqa: E402
from kepp_core.evaluation.uncertainty import reference_plans, uncertainty_metrics  # noqa: E402
from kepp_core.llm import ActionMapper, ChatClient, LLMConfig, MiniLMEmbedder, parse_steps, plan_prompt  # noqa: E402
from kepp_core.llm.prompts import ReplyProblem  # noqa: E402


def transition_probabilities(plans, num_actions: int) -> np.ndarray:
    counts = np.zeros((num_actions, num_actions))
    for p in plans:
        for a, b in zip(p[:-1], p[1:]):
            counts[a, b] += 1
    rows = counts.sum(1, keepdims=True)
    return np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)


def walk_sampler(prob: np.ndarray, start: int, end: int, horizon: int, k: int,
                 rng: np.random.Generator) -> list[tuple[int, ...]]:
    """K walks start -> end of ``horizon`` nodes, each drawn with probability proportional
    to the product of its edge probabilities (backward messages, then forward sampling)."""
    beta = np.zeros((horizon, prob.shape[0]))
    beta[-1, end] = 1.0
    for t in range(horizon - 2, -1, -1):
        beta[t] = prob @ beta[t + 1]
    if beta[0, start] == 0:  # no walk: the endpoint variation
        m = horizon // 2
        return [(start,) * (horizon - m) + (end,) * m] * k
    out = []
    for _ in range(k):
        plan = [start]
        for t in range(1, horizon):
            w = prob[plan[-1]] * beta[t]
            plan.append(int(rng.choice(len(w), p=w / w.sum())))
        out.append(tuple(plan))
    return out


def top1(prob: np.ndarray, start: int, end: int, horizon: int) -> tuple[int, ...]:
    """The most probable walk (Viterbi over log-probabilities; ties: smaller indices)."""
    with np.errstate(divide="ignore"):
        logp = np.log(prob)
    best = np.full((horizon, prob.shape[0]), -np.inf)
    back = np.zeros((horizon, prob.shape[0]), int)
    best[0, start] = 0.0
    for t in range(1, horizon):
        scores = best[t - 1][:, None] + logp
        back[t] = scores.argmax(0)
        best[t] = scores.max(0)
    if not np.isfinite(best[-1, end]):
        m = horizon // 2
        return (start,) * (horizon - m) + (end,) * m
    plan = [end]
    for t in range(horizon - 1, 0, -1):
        plan.append(int(back[t, plan[-1]]))
    return tuple(reversed(plan))


def llm_samples(client: ChatClient, mapper: ActionMapper, labels, start: int, end: int, horizon: int,
                k: int) -> list[tuple[int, ...]]:
    """K scripted-LLM answers mapped to actions; unusable answers become the endpoint variation."""
    prompt = plan_prompt(labels[start], labels[end], horizon)
    out = []
    for s in range(k):
        try:
            steps = parse_steps(client.ask(prompt, sample=s), horizon)
            out.append(tuple(mapper.map(steps)[0]))
        except ReplyProblem:
            m = horizon // 2
            out.append((start,) * (horizon - m) + (end,) * m)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--videos", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=50, help="K for the graph and uniform samplers")
    p.add_argument("--llm-samples", type=int, default=10, help="K for the scripted LLM (one request each)")
    args = p.parse_args()
    ds = demo_plans(args.videos, args.seed)
    prob = transition_probabilities(ds.plans("train"), ds.num_actions)
    mapper = ActionMapper(ds.actions, MiniLMEmbedder())
    rows = []
    with ScriptedChatServer(TextbookServer(ds)) as server, tempfile.TemporaryDirectory() as tmp:
        client = ChatClient(LLMConfig(server.url, "scripted-textbook", retries=0, timeout=10), tmp)
        for horizon in (3, 4, 5, 6):
            episodes = make_episodes(ds, horizon, "test")
            refs = reference_plans([e.actions for e in episodes])
            rng = np.random.default_rng(args.seed)
            k = args.samples
            samplers = {
                "oracle": lambda i, s, e: [refs[i][j] for j in rng.integers(len(refs[i]), size=k)],
                "P²KG walks": lambda i, s, e: walk_sampler(prob, s, e, horizon, k, rng),
                "P²KG top-1 xK": lambda i, s, e: [top1(prob, s, e, horizon)] * k,
                "scripted LLM": lambda i, s, e: llm_samples(client, mapper, ds.actions, s, e, horizon,
                                                            args.llm_samples),
                "uniform": lambda i, s, e: [(s, *rng.integers(ds.num_actions, size=horizon - 2), e)
                                            for _ in range(k)],
            }
            for name, sampler in samplers.items():
                t0 = time.perf_counter()
                memo: dict = {}
                samples = []
                for i, ep in enumerate(episodes):
                    key = (ep.actions[0], ep.actions[-1]) if name == "scripted LLM" else None
                    if key is not None and key in memo:
                        samples.append(memo[key])
                        continue
                    drawn = sampler(i, ep.actions[0], ep.actions[-1])
                    if key is not None:
                        memo[key] = drawn
                    samples.append(drawn)
                r = uncertainty_metrics(samples, refs, ds.num_actions)
                rows.append({"T": horizon, "sampler": name, "K": r.samples,
                             "NLL": f"{r.nll:.3f}", "KL": f"{r.kl:.3f}",
                             "ModePrec %": f"{r.mode_precision:.1f}", "ModeRec %": f"{r.mode_recall:.1f}",
                             "pred modes": f"{r.predicted_modes:.1f}", "GT modes": f"{r.truth_modes:.1f}",
                             "s": round(time.perf_counter() - t0, 2)})
    print(f"## Uncertainty of sampled plans, demo world ({args.videos} videos, seed {args.seed}), "
          f"ground-truth endpoints, softmax smoothing s=10, distinct modes\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
