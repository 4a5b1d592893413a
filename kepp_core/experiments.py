"""Experiments: training then evaluation, in one place.

- :func:`run_table`: the demo world's evaluation table (``kepp demo table``): train every
  model for each horizon and seed, evaluate every method, summarise mean ± std over seeds;
- :func:`train_demo_models`: the models the app shows (``kepp demo models``, what
  ``assets/demo`` ships), evaluated and recorded in ``manifest.json``;
- :func:`ensure_demo_models`: the shipped checkpoints when they match the world, else models
  trained once into the cache (``kepp demo``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.data.synth import default_world_root, world_fingerprint
from kepp_core.errors import KeppError
from kepp_core.evaluation.methods import METHODS, EvalOptions, evaluate_horizon
from kepp_core.evaluation.report import episode_records, markdown_table, summarise, write_records
from kepp_core.io import atomic_write_json, atomic_write_text
from kepp_core.models.checkpoint import CONFIG
from kepp_core.catalog import (CONFIG_FILE, DEMO_METHODS, DEMO_MODELS_DIR, DEMO_ROLES, GRAPH_FILE, LOG_FILE,
                               MANIFEST_FILE, WEIGHTS_FILE, model_folder)
from kepp_core.models.spec import load_spec
from kepp_core.training.config import TrainConfig, preset
from kepp_core.training.suite import MEMBERS, train_horizon

REPO = Path(__file__).resolve().parents[1]
DEMO_ASSETS = REPO / DEMO_MODELS_DIR  # the shipped demo checkpoints
DEMO_HORIZONS = (3, 4, 5, 6)
DEMO_MEMBERS = tuple(model_folder(r) for r in DEMO_ROLES)  # what the app shows for each horizon
SHIPPED_FILES = (WEIGHTS_FILE, CONFIG_FILE, GRAPH_FILE, LOG_FILE)  # no resume state
# The claim the demo world must support (issue 4 §5): method a beats method b in mean SR at these horizons.
CLAIM = ("kepp-R1", "kepp-nograph", (4, 5))


def run_table(ds: Dataset, cfg: TrainConfig, out: str | Path, seeds: Sequence[int] = (0, 1, 2),
              horizons: Sequence[int] = DEMO_HORIZONS, methods: Sequence[str] = METHODS,
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
            todo = [m for m in MEMBERS if retrain or not (hdir / m / CONFIG).is_file()]
            t0 = time.time()
            if todo:
                train_horizon(ds, replace(cfg, horizon=h, seed=seed, setting=setting), root, todo, progress, log)
            timings[f"seed{seed}/T{h}/train"] = round(time.time() - t0, 1)
            t0 = time.time()
            ev = evaluate_horizon(ds, root, h, methods, EvalOptions(setting=setting, seed=seed), log=log)
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
    """Whether KEPP R=1 beats KEPP without the graph condition in mean SR at T=4 and T=5.

    >>> rows = [{"method": "kepp-R1", "T": 4, "SR": 30.0}, {"method": "kepp-nograph", "T": 4, "SR": 25.0}]
    >>> check_claim(rows)["holds"]  # no T=5 rows
    False
    """
    a, b, hs = CLAIM
    by = {(r["method"], r["T"]): r["SR"] for r in summary}
    per = {str(h): {a: by.get((a, h)), b: by.get((b, h))} for h in hs}
    ok = all(v[a] is not None and v[b] is not None and v[a] > v[b] for v in per.values())
    return {"holds": ok, "per_horizon": per}


def copy_models(source: str | Path, out: str | Path, horizon: int, members: Sequence[str] = DEMO_MEMBERS) -> None:
    """Copy trained ``members`` of one horizon (their :data:`SHIPPED_FILES`) from one models folder to another."""
    for m in members:
        src, dst = Path(source) / f"T{horizon}" / m, Path(out) / f"T{horizon}" / m
        if not (src / CONFIG).is_file():
            raise KeppError(f"{src}: no trained model to copy")
        dst.mkdir(parents=True, exist_ok=True)
        for f in SHIPPED_FILES:
            if (src / f).is_file():
                shutil.copyfile(src / f, dst / f)


def train_demo_models(ds: Dataset, out: str | Path, horizons: Sequence[int] = DEMO_HORIZONS, seed: int = 0,
                      source: str | Path | None = None) -> dict:
    """Train the demo members for ``horizons`` (or copy them from ``source``, a models folder such
    as one seed of ``kepp demo table``), evaluate them and record the metrics in ``manifest.json``."""
    cfg = preset("demo", seed=seed)
    out = Path(out)
    metrics, records = {}, []
    for h in horizons:
        if source is None:
            train_horizon(ds, replace(cfg, horizon=h), out, DEMO_MEMBERS)
        else:
            copy_models(source, out, h)
        ev = evaluate_horizon(ds, out, h, DEMO_METHODS, EvalOptions(seed=seed))
        metrics[f"T{h}"] = {r["method"]: {k: r[k] for k in ("SR", "mAcc", "mIoU")} for r in ev.rows()}
        metrics[f"T{h}"]["step"] = ev.step_accuracy
        records += episode_records(ev, ds.actions, seed=seed)
    write_records(out / "predictions.jsonl", records)
    manifest = {"world": str(ds.root.name) if ds.root else None,
                "world_fingerprint": world_fingerprint(ds.root) if ds.root else None,
                "vocabulary_hash": ds.vocabulary_hash(), "seed": seed, "horizons": list(horizons),
                "members": list(DEMO_MEMBERS), "metrics": metrics,
                "made_by": f"kepp demo models --out {out.relative_to(REPO) if out.is_relative_to(REPO) else out}"}
    atomic_write_json(out / MANIFEST_FILE, manifest)
    return manifest


def demo_models_usable(ds: Dataset, root: str | Path, horizons: Sequence[int] = DEMO_HORIZONS) -> bool:
    """Whether ``root`` holds every demo member for ``horizons``, trained on ``ds``'s vocabulary."""
    try:
        return all(load_spec(Path(root) / f"T{h}" / m).vocabulary_hash == ds.vocabulary_hash()
                   for h in horizons for m in DEMO_MEMBERS)
    except KeppError:
        return False


def ensure_demo_models(ds: Dataset, horizons: Sequence[int] = DEMO_HORIZONS) -> tuple[Path, str]:
    """The shipped checkpoints when they match the world, else models trained once into the cache."""
    if demo_models_usable(ds, DEMO_ASSETS, horizons):
        return DEMO_ASSETS, "shipped checkpoints"
    cache = default_world_root().parent / "demo-models"
    if demo_models_usable(ds, cache, horizons):
        return cache, "trained earlier"
    train_demo_models(ds, cache, horizons)
    return cache, "trained now"


__all__ = ["CLAIM", "DEMO_ASSETS", "DEMO_HORIZONS", "DEMO_MEMBERS", "DEMO_METHODS", "SHIPPED_FILES", "check_claim",
           "copy_models", "demo_models_usable", "ensure_demo_models", "run_table", "train_demo_models"]
