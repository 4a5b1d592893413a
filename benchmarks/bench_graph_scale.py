"""The P²KG at scale: build, memory, load and top-5 retrieval against the number of plans.

A deterministic synthetic corpus stands in for a dataset far larger than COIN: 10,000
actions, 1,000 tasks of 8-14 steps (own steps plus shared steps drawn with Zipf weights, so
a few shared steps such as "stir" are hubs used by hundreds of tasks), and 64 variants per
task (optional steps dropped, neighbours swapped, steps repeated), drawn with skewed
frequencies. Every 10th plan is a test plan. For each size 10^3 ... --max-plans the corpus
is written to a temporary plans-JSONL file, then one fresh process per size (so the peak
memory of each size is its own) does and times:

  build  ``stream_graph`` (the streaming ``kepp graph build --no-fit``): parse, count, CSR (wall
         and CPU seconds: on a shared machine the CPU seconds compare two versions best)
  peak   the process's peak resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``,
         interpreter and numpy included; measured after build, save, load and queries)
  save   compact ``.safetensors`` form (size on disk), and JSON only up to 10^5 plans
  load   ``load_graph`` of the compact file
  query  top-5 P²KG retrieval at T=6 between endpoints of test windows, each from scratch
         (the goal's backward table rebuilt every query, no result cache), one scorer
         built once (its set-up time is printed as ``scorer``); median and p99 over the queries

Targets (docs, At scale): 10^7 plans build <= 120 s with peak <= 2 GB, load <= 2 s, retrieval
median <= 1 ms and p99 <= 10 ms.

    python benchmarks/bench_graph_scale.py [--max-plans 10000000] [--queries 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kepp_core.io import markdown_table  # noqa: E402  (light: no graph is loaded at import)

ACTIONS, TASKS, VARIANTS, SEED = 10_000, 1_000, 64, 0


def procedures(actions: int = ACTIONS, tasks: int = TASKS, variants: int = VARIANTS,
               seed: int = SEED) -> list[list[list[int]]]:
    """``out[task][variant]``: the action indices of each variant of each synthetic task."""
    rng = np.random.default_rng(seed)
    shared = actions // 10
    zipf = 1.0 / np.arange(1, shared + 1)
    zipf /= zipf.sum()
    own = np.arange(shared, actions).reshape(tasks, -1) if (actions - shared) % tasks == 0 else None
    out = []
    for t in range(tasks):
        steps = list(own[t]) if own is not None else list(rng.choice(np.arange(shared, actions), 9, replace=False))
        k = int(rng.integers(8, 15))
        steps = steps[: max(1, k - 2)]
        for s in rng.choice(shared, 2, replace=False, p=zipf):
            steps.insert(int(rng.integers(0, len(steps) + 1)), int(s))
        canon = [int(a) for a in steps]
        vs = [canon]
        while len(vs) < variants:
            v = [a for i, a in enumerate(canon) if i in (0, len(canon) - 1) or rng.random() > 0.2]
            if len(v) > 2 and rng.random() < 0.3:
                i = int(rng.integers(1, len(v) - 1))
                v[i - 1], v[i] = v[i], v[i - 1]
            if rng.random() < 0.1:
                i = int(rng.integers(0, len(v)))
                v.insert(i, v[i])
            vs.append(v)
        out.append(vs)
    return out


def write_corpus(path: Path, plans: int, seed: int = SEED, progress: bool = True) -> float:
    """Write ``plans`` deterministic plans-JSONL lines to ``path``; returns seconds taken."""
    from tqdm import tqdm  # lazy: only writing shows progress

    t0 = time.perf_counter()
    procs = procedures(seed=seed)
    steps = [[json.dumps([f"s{a}" for a in v]) for v in vs] for vs in procs]
    rng = np.random.default_rng(seed + 1)
    task_p = 1.0 / np.arange(1, TASKS + 1) ** 0.8
    task_p /= task_p.sum()
    var_p = 1.0 / np.arange(1, VARIANTS + 1) ** 1.5
    var_p /= var_p.sum()
    chunk = 200_000
    with path.open("w", encoding="utf-8") as f, tqdm(total=plans, unit="plan", unit_scale=True,
                                                    desc=f"write {plans:.0e}", disable=not progress) as bar:
        for lo in range(0, plans, chunk):
            n = min(chunk, plans - lo)
            ts, vs = rng.choice(TASKS, n, p=task_p), rng.choice(VARIANTS, n, p=var_p)
            f.write("".join(
                f'{{"video": "v{i:09d}", "task": "t{t}", "split": "{"test" if i % 10 == 9 else "train"}", '
                f'"steps": {steps[t][v]}}}\n' for i, t, v in zip(range(lo, lo + n), ts.tolist(), vs.tolist())))
            bar.update(n)
    return time.perf_counter() - t0


def endpoints(path: Path, horizon: int, count: int, seed: int = SEED) -> list[tuple[str, str]]:
    """``count`` (a_1, a_T) label pairs of test windows of ``horizon`` steps (deterministic)."""
    pairs = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            s = rec["steps"]
            if rec["split"] == "test" and len(s) >= horizon:
                pairs.append((s[0], s[horizon - 1]))
            if len(pairs) >= 20 * count:
                break
    rng = np.random.default_rng(seed + 2)
    return [pairs[i] for i in rng.choice(len(pairs), min(count, len(pairs)), replace=False)]


def measure(path: Path, queries: int, horizon: int = 6, top: int = 5) -> dict:
    """Build, save, load and query in this process (run in a fresh one per size)."""
    # lazy: imported in the measuring process only, so its peak memory includes them
    from kepp_core.graph import load_graph, make_scorer
    from kepp_core.graph.retrieval import _retrieve
    from kepp_core.graph.stream import stream_graph

    out: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    g = stream_graph(path, progress=False)
    out["build_s"], out["build_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    out.update(actions=g.num_actions, edges=g.num_edges, plans=sum(t.videos for t in g.tasks.values()),
               distinct=sum(len(t.distinct) for t in g.tasks.values()))
    compact = path.with_suffix(".safetensors")
    t0 = time.perf_counter()
    g.save(compact)
    out["save_s"] = time.perf_counter() - t0
    out["compact_mb"] = compact.stat().st_size / 2**20
    if out["plans"] <= 100_000:
        g.save(path.with_suffix(".json"))
        out["json_mb"] = path.with_suffix(".json").stat().st_size / 2**20
    del g
    t0 = time.perf_counter()
    g = load_graph(compact)
    out["load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    scorer = make_scorer(g, "p2kg")
    out["scorer_s"] = time.perf_counter() - t0
    times, fallbacks = [], 0
    for a, b in endpoints(path, horizon, queries):
        s, e = g.action_index(a), g.action_index(b)
        t0 = time.perf_counter()
        rec = _retrieve(scorer, s, e, horizon, top)
        times.append(time.perf_counter() - t0)
        fallbacks += rec.fallback
    times.sort()
    out.update(queries=len(times), fallbacks=fallbacks, median_ms=1e3 * statistics.median(times),
               p99_ms=1e3 * times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)],
               max_ms=1e3 * times[-1])
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-plans", type=int, default=10_000_000, help="largest corpus (powers of 10 up to it)")
    ap.add_argument("--queries", type=int, default=2000, help="retrieval queries per size")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: measure one corpus file
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(Path(args.one), args.queries)))
        return 0
    sizes = [10**k for k in range(3, 12) if 10**k <= args.max_plans] or [args.max_plans]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kepp-graph-scale-") as tmp:
        for n in sizes:
            path = Path(tmp) / f"plans-{n}.jsonl"
            write_s = write_corpus(path, n)
            print(f"measuring {n:,} plans ({path.stat().st_size / 2**20:.0f} MB) ...", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, __file__, "--one", str(path), "--queries", str(args.queries)],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
            if proc.returncode:
                sys.stderr.write(proc.stderr)
                return proc.returncode
            rows.append({"plans_requested": n, "write_s": write_s, **json.loads(proc.stdout.splitlines()[-1])})
            for f in Path(tmp).iterdir():
                f.unlink()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"cpu: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; "
          "peak = ru_maxrss of a fresh process per size")
    header = ["plans in file", "training plans", "distinct plans", "edges", "build s", "build CPU s", "peak MB",
              "compact MB",
              "save s", "load s", "scorer s", "T=6 top-5 median ms", "p99 ms", "max ms"]
    print(markdown_table(header, [[f"{r['plans_requested']:,}", f"{r['plans']:,}", f"{r['distinct']:,}",
                                   f"{r['edges']:,}", f"{r['build_s']:.2f}", f"{r['build_cpu_s']:.2f}",
                                   f"{r['peak_mb']:.0f}",
                                   f"{r['compact_mb']:.1f}", f"{r['save_s']:.2f}", f"{r['load_s']:.3f}",
                                   f"{r['scorer_s']:.2f}", f"{r['median_ms']:.3f}", f"{r['p99_ms']:.2f}",
                                   f"{r['max_ms']:.2f}"] for r in rows], align="r" * len(header)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
