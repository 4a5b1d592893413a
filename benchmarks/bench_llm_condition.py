"""The LLM condition row on the demo world, answered by the SCRIPTED local server of
bench_llm.py (a "textbook" that answers from training plans, paraphrased, with a few
refusals and malformed replies): NOT an LLM, so the numbers say that the wiring works and
what a plan row from an imperfect source does, not how a real LLM compares.

For each horizon it trains ``plan-llm`` (LLM row alone) and ``plan-graph-llm`` (P²KG row
and LLM row) with the shipped models' hyper-parameters, beside copies of the shipped
``step``, ``plan-graph-R1`` and ``plan-none``, then evaluates ``kepp-nograph``, ``kepp-R1``,
``kepp-llm`` and ``kepp-graph-llm`` (with ``--samples K``: the uncertainty measures too).
Replies are mapped to actions by all-MiniLM-L6-v2 and cached under OUT/llm-cache.

    python benchmarks/bench_llm_condition.py --out runs/llm-demo [--horizons 3 4 5 6] [--samples 10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from bench_llm import TextbookServer, markdown  # noqa: E402
from llm_server import ScriptedChatServer  # noqa: E402

from kepp_core.catalog import models_dir  # noqa: E402
from kepp_core.data import load_dataset  # noqa: E402
from kepp_core.data.synth import ensure_world  # noqa: E402
from kepp_core.evaluation.methods import LABELS, EvalOptions, evaluate_horizon  # noqa: E402
from kepp_core.llm import ChatClient, LLMConfig, LLMRecommender  # noqa: E402
from kepp_core.models.options import TrainConfig  # noqa: E402
from kepp_core.training import train_plan_model  # noqa: E402

SHIPPED = ROOT / "assets" / "demo"
METHODS = ("kepp-nograph", "kepp-R1", "kepp-llm", "kepp-graph-llm")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/llm-demo", help="models folder to fill (copies of the shipped ones)")
    p.add_argument("--horizons", type=int, nargs="+", default=[3, 4, 5, 6])
    p.add_argument("--samples", type=int, default=10, help="K sampled plans per episode (0: none)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    ds = load_dataset("demo", ensure_world())
    rows, timing = [], []
    with ScriptedChatServer(TextbookServer(ds)) as server:
        client = ChatClient(LLMConfig(server.url, "scripted-textbook", retries=0, timeout=10), out / "llm-cache")
        llm = LLMRecommender(client, ds, "minilm")
        for h in args.horizons:
            hdir = models_dir(out, h)
            for name in ("step", "plan-graph-R1", "plan-none"):
                if not (hdir / name).is_dir():
                    shutil.copytree(models_dir(SHIPPED, h) / name, hdir / name)
            shipped = json.loads((models_dir(SHIPPED, h) / "plan-graph-R1" / "config.json").read_text())
            cfg = TrainConfig.from_dict(shipped["train"])
            for condition, folder in (("llm", "plan-llm"), ("graph+llm", "plan-graph-llm")):
                t0, asked, cached = time.perf_counter(), client.requests, client.cache_hits
                s = train_plan_model(ds, replace(cfg, condition=condition), hdir / folder, hdir / "step",
                                     progress=False, llm=llm)["llm"]
                timing.append({"T": h, "model": folder, "train_s": round(time.perf_counter() - t0, 1),
                               "train LLM plans": s["llm"], "train fallbacks": s["fallback"],
                               "requests": client.requests - asked, "cached replies": client.cache_hits - cached})
                print(f"T={h} {folder}: {timing[-1]}", flush=True)
            ev = evaluate_horizon(ds, out, h, METHODS, EvalOptions(samples=args.samples, strict=True), llm,
                                  log=lambda m: print(m, flush=True))
            for r in ev.rows():
                row = {"method": LABELS[r["method"]], "T": h, "SR": f"{r['SR']:.1f}", "mAcc": f"{r['mAcc']:.1f}",
                       "mIoU": f"{r['mIoU']:.1f}"}
                if args.samples:
                    row.update({"NLL": f"{r['NLL']:.2f}", "KL": f"{r['KL']:.2f}",
                                "ModePrec": f"{r['ModePrec']:.1f}", "ModeRec": f"{r['ModeRec']:.1f}"})
                row["LLM plans / fallback"] = (f"{r['llm_plans']} / {r['llm_fallbacks']}" if "llm_plans" in r
                                               else "")
                rows.append(row)
    print(f"\n## LLM condition row, demo world, SCRIPTED LOCAL SERVER (not an LLM), K={args.samples}\n")
    print(markdown(rows))
    print()
    print(markdown(timing))


if __name__ == "__main__":
    main()
