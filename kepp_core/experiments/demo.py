"""Experiments: training then evaluation, in one place.

- :func:`run_table`: the demo world's evaluation table (``kepp demo table``): the protocol
  :data:`DEMO_TABLE_SPEC` run by the protocol runner (:func:`~kepp_core.experiments.protocol.run_protocol`:
  models, records and intervals), summarised as mean ± std over seeds;
- :func:`train_demo_models`: the models the app shows (``kepp demo models``, what
  ``assets/demo`` ships), evaluated and recorded in ``manifest.json``;
- :func:`ensure_demo_models`: the shipped checkpoints when they match the world, else models
  trained once into the cache (``kepp demo``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.data.synth import default_world_root, world_fingerprint
from kepp_core.errors import KeppError
from kepp_core.catalog import (CONFIG_FILE, DEMO_HORIZONS, DEMO_RECORDED, DEMO_ROLES, GRAPH_FILE, LOG_FILE,
                               MANIFEST_FILE, METRIC_KEYS, WEIGHTS_FILE, horizon_folder, model_folder, models_dir)
from kepp_core.evaluation.methods import DecodeOverride, EvalOptions, evaluate_horizon
from kepp_core.evaluation.records import episode_records, write_records
from kepp_core.evaluation.report import STEP_METRICS, horizon_table
from kepp_core.evaluation.stats import summarise
from kepp_core.io import atomic_write_json, atomic_write_text, read_json
from kepp_core.models.spec import load_spec
from kepp_core.paths import DEMO_ASSETS, DEMO_TABLE_SPEC, REPO_ROOT, cache_folder
from kepp_core.experiments.protocol import ProtocolSpec, run_protocol
from kepp_core.training.config import preset
from kepp_core.training.suite import train_horizon

DEMO_MEMBERS = tuple(model_folder(r) for r in DEMO_ROLES)  # what the app shows for each horizon
SHIPPED_FILES = (WEIGHTS_FILE, CONFIG_FILE, GRAPH_FILE, LOG_FILE)  # no resume state
# The claim the demo world must support (docs, Models and training: the demo): method a beats method b in mean SR at these horizons.
CLAIM = ("kepp-R1", "kepp-nograph", (4, 5))


def run_table(spec: ProtocolSpec, retrain: bool = False, log: Callable[[str], None] = print) -> dict:
    """The demo table of a protocol ``spec``: :func:`~kepp_core.experiments.protocol.run_protocol` trains what
    is missing (``retrain``: everything) into ``OUT/frac100/seed<s>/T<h>/``, evaluates and writes
    its records and results; the per-seed rows are then summarised as mean ± std over seeds into
    ``OUT/table.json`` and ``OUT/table.md`` (with the check of :data:`CLAIM`)."""
    if len(spec.train_fractions) != 1:
        raise KeppError(f"the demo table summarises one train fraction (the spec has {list(spec.train_fractions)}); "
                        "run several with 'kepp protocol'")
    res = run_protocol(spec, log, retrain)
    summary = summarise(res["rows"], METRIC_KEYS + STEP_METRICS, ("method", "T", "setting"), "std")
    result = {"dataset": res["dataset"], "seeds": list(spec.seeds), "horizons": list(spec.horizons),
              "setting": spec.setting, "train": preset(spec.preset, **spec.train).to_dict(), "rows": res["rows"],
              "summary": summary, "timings_s": res["timings"], "claim": check_claim(summary)}
    atomic_write_json(Path(spec.out) / "table.json", result)
    atomic_write_text(Path(spec.out) / "table.md", horizon_table(summary, list(spec.horizons)) + "\n")
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
    """Copy trained ``members`` of one horizon (their :data:`SHIPPED_FILES`) from one models folder to
    another (nothing to copy when they are the same folder: its models are evaluated again)."""
    if Path(source).resolve() == Path(out).resolve():
        return
    for m in members:
        src, dst = models_dir(source, horizon) / m, models_dir(out, horizon) / m
        if not (src / CONFIG_FILE).is_file():
            raise KeppError(f"{src}: no trained model to copy")
        dst.mkdir(parents=True, exist_ok=True)
        for f in SHIPPED_FILES:
            if (src / f).is_file():
                shutil.copyfile(src / f, dst / f)


def train_demo_models(ds: Dataset, out: str | Path, horizons: Sequence[int] = DEMO_HORIZONS, seed: int = 0,
                      source: str | Path | None = None) -> dict:
    """Train the demo members for ``horizons`` (or copy them from ``source``, a models folder such
    as one seed of ``kepp demo table``, or ``out`` itself), evaluate every method they can run
    (:data:`~kepp_core.catalog.DEMO_RECORDED`) into ``predictions.jsonl``, keep the ``+dec`` rows'
    decoding choice in ``T<h>/decoding.json`` and record the metrics in ``manifest.json``."""
    cfg = preset("demo", seed=seed)
    out = Path(out)
    metrics, records = {}, []
    for h in horizons:
        if source is None:
            train_horizon(ds, replace(cfg, horizon=h), out, DEMO_MEMBERS)
        else:
            copy_models(source, out, h)
        ev = evaluate_horizon(ds, out, h, DEMO_RECORDED, EvalOptions(seed=seed, strict=True,
                                                                     decode=DecodeOverride(save=True)))
        metrics[horizon_folder(h)] = {r["method"]: {k: r[k] for k in ("SR", "mAcc", "mIoU")} for r in ev.rows()}
        metrics[horizon_folder(h)]["step"] = ev.step_accuracy
        records += episode_records(ev, ds.actions, seed=seed)
    write_records(out / "predictions.jsonl", records)
    manifest = {"world": str(ds.root.name) if ds.root else None,
                "world_fingerprint": world_fingerprint(ds.root) if ds.root else None,
                "vocabulary_hash": ds.vocabulary_hash(), "seed": seed, "horizons": list(horizons),
                "members": list(DEMO_MEMBERS), "metrics": metrics,
                "made_by": f"kepp demo models --out {_shown(out)}"}
    if source is not None and Path(source).resolve() == out.resolve():  # evaluated again, not retrained
        try:
            manifest["made_by"] = read_json(out / MANIFEST_FILE, dict)["made_by"]
        except (KeppError, KeyError):
            pass
        manifest["evaluated_by"] = f"kepp demo models --from {_shown(out)} --out {_shown(out)}"
    atomic_write_json(out / MANIFEST_FILE, manifest)
    return manifest


def _shown(path: Path) -> str:
    """A path as the manifest names it: relative to the checkout when inside it."""
    return str(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path)


def demo_models_usable(ds: Dataset, root: str | Path, horizons: Sequence[int] = DEMO_HORIZONS) -> bool:
    """Whether ``root`` holds every demo member for ``horizons``, trained on ``ds``'s vocabulary."""
    try:
        return all(load_spec(models_dir(root, h) / m).vocabulary_hash == ds.vocabulary_hash()
                   for h in horizons for m in DEMO_MEMBERS)
    except KeppError:
        return False


def ensure_demo_models(ds: Dataset, horizons: Sequence[int] = DEMO_HORIZONS) -> tuple[Path, str]:
    """The shipped checkpoints when they match the world, else models trained once into the cache."""
    if demo_models_usable(ds, DEMO_ASSETS, horizons):
        return DEMO_ASSETS, "shipped checkpoints"
    cache = cache_folder("demo-models")
    if demo_models_usable(ds, cache, horizons):
        return cache, "trained earlier"
    train_demo_models(ds, cache, horizons)
    return cache, "trained now"


__all__ = ["CLAIM", "DEMO_MEMBERS", "SHIPPED_FILES",
           "check_claim", "copy_models", "demo_models_usable", "ensure_demo_models", "run_table", "train_demo_models"]
