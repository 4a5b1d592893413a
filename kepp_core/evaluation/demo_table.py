"""The demo world's evaluation: train every model for each horizon and seed, evaluate all
methods, and summarise mean ± std over seeds (``kepp demo table``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.evaluation.methods import METHODS, evaluate_horizon
from kepp_core.evaluation.report import episode_records, markdown_table, summarise, write_records
from kepp_core.io import atomic_write_json, atomic_write_text
from kepp_core.training.config import TrainConfig
from kepp_core.training.suite import MEMBERS, train_horizon

# The claim the demo world must support (issue 4 §5).
CLAIM = ("kepp-R1", "kepp-nograph", (4, 5))


def run_table(ds: Dataset, cfg: TrainConfig, out: str | Path, seeds: Sequence[int] = (0, 1, 2),
              horizons: Sequence[int] = (3, 4, 5, 6), methods: Sequence[str] = METHODS,
              setting: str = "conventional", progress: bool = True, retrain: bool = False,
              log: Callable[[str], None] = print) -> dict:
    """Train (unless already trained) and evaluate; writes ``OUT/table.json`` and ``OUT/table.md``."""
    out = Path(out)
    rows: list[dict] = []
    timings: dict[str, float] = {}
    for seed in seeds:
        root = out / f"seed{seed}"
        records: list[dict] = []
        for h in horizons:
            hdir = root / f"T{h}"
            todo = [m for m in MEMBERS if retrain or not (hdir / m / "config.json").is_file()]
            t0 = time.time()
            if todo:
                train_horizon(ds, replace(cfg, horizon=h, seed=seed, setting=setting), root, todo, progress, log)
            timings[f"seed{seed}/T{h}/train"] = round(time.time() - t0, 1)
            t0 = time.time()
            ev = evaluate_horizon(ds, root, h, setting, methods, seed=seed, log=log)
            timings[f"seed{seed}/T{h}/eval"] = round(time.time() - t0, 1)
            for r in ev.rows():
                if ev.step_accuracy:
                    r.update(ev.step_accuracy)
                rows.append({**r, "seed": seed})
            records += episode_records(ev, ds.actions, seed=seed)
        write_records(root / "predictions.jsonl", records)
    summary = summarise(rows)
    result = {"dataset": ds.name, "seeds": list(seeds), "horizons": list(horizons), "setting": setting,
              "train": cfg.to_dict(), "rows": rows, "summary": summary, "timings_s": timings,
              "claim": check_claim(summary)}
    atomic_write_json(out / "table.json", result)
    atomic_write_text(out / "table.md", markdown_table(summary, list(horizons)) + "\n")
    return result


def check_claim(summary: list[dict]) -> dict:
    """Whether KEPP R=1 beats KEPP without the graph condition in mean SR at T=4 and T=5."""
    a, b, hs = CLAIM
    by = {(r["method"], r["T"]): r["SR"] for r in summary}
    per = {str(h): {a: by.get((a, h)), b: by.get((b, h))} for h in hs}
    ok = all(v[a] is not None and v[b] is not None and v[a] > v[b] for v in per.values())
    return {"holds": ok, "per_horizon": per}


def load_table(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
