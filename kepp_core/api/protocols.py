"""``kepp protocol`` results for the app's Results page (docs, How to use the graph): find protocol output folders,
read their summary (mean ± CI over seeds per fraction, horizon and method) and per-episode
records, and compute the paired test of any two methods and the data-efficiency curves.

A protocol folder holds ``results.json`` and ``records.jsonl`` as :func:`kepp_core.experiments.protocol.run_protocol`
writes them. The intervals are the protocol's own (Student t over seeds, the spec's
``confidence``); the paired test is :func:`kepp_core.evaluation.stats.paired_permutation_test`
on the per-(seed, test episode) differences of the chosen metric, recomputed from the records
for any pair, not only the spec's ``pairs``.

>>> pair_verdict({"p": 0.003, "a": "kepp-R1", "b": "kepp-nograph", "delta": 4.2, "metric": "SR"})
'p = 0.0030 < 0.05: KEPP R=1 is significantly better than KEPP without graph condition (SR +4.2 points).'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kepp_core.catalog import (CONFIDENCE, METRIC_KEYS, PAIRED_TEST, PAIR_METRICS, RECORDS_FILE, RESULTS_FILE,
                               SIGNIFICANCE, method_label)
from kepp_core.errors import KeppError
from kepp_core.evaluation.records import Records
from kepp_core.evaluation.store import ProtocolUnits, protocol_units
from kepp_core.evaluation.stats import mean_ci, paired_permutation_test
from kepp_core.io import read_json

__all__ = ["pair_table", "pair_verdict", "protocol_records", "read_protocol"]



@dataclass(frozen=True)
class ProtocolRun:
    """One protocol output folder's ``results.json``: the spec, the summary rows (``fraction``,
    ``T``, ``method``, ``seeds``, each metric and ``<metric>_ci``) and the spec's paired tests."""

    folder: str
    dataset: str
    spec: dict
    summary: list[dict]
    pairs: list[dict] = field(default_factory=list)
    episodes: dict = field(default_factory=dict)
    seconds: float | None = None
    test: str = PAIRED_TEST

    @property
    def methods(self) -> list[str]:
        """The methods of the summary, in the spec's order."""
        have = {r["method"] for r in self.summary}
        order = [m for m in self.spec.get("methods", []) if m in have]
        return order + sorted(have - set(order))

    @property
    def horizons(self) -> list[int]:
        return sorted({int(r["T"]) for r in self.summary})

    @property
    def fractions(self) -> list[float]:
        return sorted({float(r["fraction"]) for r in self.summary})

    @property
    def seeds(self) -> list[int]:
        return list(self.spec.get("seeds", []))

    @property
    def confidence(self) -> float:
        return float(self.spec.get("confidence", CONFIDENCE))

    def describe(self) -> str:
        """One line: dataset, setting, preset, seeds, interval."""
        s = self.spec
        return (f"dataset {self.dataset}, setting {s.get('setting', '?')}, preset {s.get('preset', '?')}, "
                f"{len(self.seeds)} seeds {self.seeds}; mean ± {round(self.confidence * 100)}% CI over seeds "
                f"(Student t)")

    def intervals(self, metric: str = "SR", fraction: float | None = None):
        """One row per (method, T) of the fraction (default: the largest): ``method``, ``label``,
        ``T``, ``mean``, ``ci`` (half-width, None with one seed), ``seeds``; in the spec's method order."""
        import pandas as pd

        _check_metric(metric)
        fraction = max(self.fractions) if fraction is None else float(fraction)
        order = {m: i for i, m in enumerate(self.methods)}
        rows = [{"method": r["method"], "label": method_label(r["method"]), "T": r["T"], "mean": r[metric],
                 "ci": _finite(r.get(f"{metric}_ci")), "seeds": r["seeds"]}
                for r in self.summary if r["fraction"] == fraction and metric in r]
        if not rows:
            raise KeppError(f"{self.folder}: no {metric} results for fraction {fraction:g}")
        rows.sort(key=lambda r: (order[r["method"]], r["T"]))
        return pd.DataFrame(rows, columns=["method", "label", "T", "mean", "ci", "seeds"])

    def efficiency(self, horizon: int, metric: str = "SR"):
        """The data-efficiency curves of one horizon: one row per (method, fraction) with ``mean``,
        ``ci`` and ``seeds`` (``percent``: the fraction of training videos in %)."""
        import pandas as pd

        _check_metric(metric)
        order = {m: i for i, m in enumerate(self.methods)}
        rows = [{"method": r["method"], "label": method_label(r["method"]), "fraction": r["fraction"],
                 "percent": round(r["fraction"] * 100, 1), "mean": r[metric], "ci": _finite(r.get(f"{metric}_ci")),
                 "seeds": r["seeds"]} for r in self.summary if r["T"] == horizon and metric in r]
        if not rows:
            raise KeppError(f"{self.folder}: no {metric} results for T={horizon}")
        rows.sort(key=lambda r: (order[r["method"]], r["fraction"]))
        return pd.DataFrame(rows, columns=["method", "label", "fraction", "percent", "mean", "ci", "seeds"])


def is_protocol_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a protocol ``results.json`` (a JSON object with a spec and a summary)."""
    path = Path(folder) / RESULTS_FILE
    if not path.is_file():
        return False
    try:
        data = read_json(path)
    except (OSError, KeppError):
        return False
    return isinstance(data, dict) and isinstance(data.get("summary"), list) and isinstance(data.get("spec"), dict)


def find_protocols(roots, dataset: str | None = None) -> list[str]:
    """Protocol folders among ``roots`` and their direct sub-folders (sorted); ``dataset``: keep
    only those whose spec names that dataset format. Unreadable folders are left out."""
    found: list[str] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for folder in [root, *sorted(p for p in root.iterdir() if p.is_dir())]:
            if is_protocol_folder(folder) and str(folder) not in found:
                if dataset is None or _spec_dataset(folder) == dataset:
                    found.append(str(folder))
    return found


def _spec_dataset(folder: Path) -> str | None:
    return read_json(folder / RESULTS_FILE, dict)["spec"].get("dataset")


def _number(row: dict, key: str, where: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KeppError(f"{where}: {key!r} must be a number (got {value!r})")
    return float(value)


def read_protocol(folder: str | Path) -> ProtocolRun:
    """Read a protocol folder's ``results.json`` (KeppError naming the file and what is wrong)."""
    folder = Path(folder)
    path = folder / RESULTS_FILE if folder.is_dir() or not folder.suffix else folder
    if not path.is_file():
        raise KeppError(f"{path}: no protocol results here (write them with 'kepp protocol SPEC.toml')")
    try:
        data = read_json(path)
    except KeppError as e:
        raise KeppError(f"{path}: not a readable JSON file ({str(e).removeprefix(str(path)).lstrip(':0123456789 ')})") from None
    if not isinstance(data, dict) or not isinstance(data.get("spec"), dict) or not isinstance(data.get("summary"), list):
        raise KeppError(f"{path}: not a protocol results file (expected an object with 'spec' and 'summary')")
    summary = []
    for i, row in enumerate(data["summary"]):
        where = f"{path}: summary row {i + 1}"
        if not isinstance(row, dict) or not isinstance(row.get("method"), str):
            raise KeppError(f"{where}: expected an object with a 'method'")
        clean = {"method": row["method"], "T": int(_number(row, "T", where)),
                 "fraction": _number(row, "fraction", where), "seeds": int(row.get("seeds") or 0)}
        for m in METRIC_KEYS:
            if m in row:
                clean[m] = _number(row, m, where)
                ci = row.get(f"{m}_ci")
                clean[f"{m}_ci"] = float(ci) if isinstance(ci, (int, float)) and not isinstance(ci, bool) else None
        summary.append(clean)
    if not summary:
        raise KeppError(f"{path}: the summary is empty (the protocol evaluated nothing)")
    return ProtocolRun(str(path.parent), str(data.get("dataset", "?")), data["spec"], summary,
                       list(data.get("pairs") or []), dict(data.get("episodes") or {}), data.get("seconds"),
                       str(data.get("test", PAIRED_TEST)))


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _check_metric(metric: str) -> None:
    if metric not in METRIC_KEYS:
        raise KeppError(f"unknown metric {metric!r} (expected one of {', '.join(METRIC_KEYS)})")


def protocol_records(folder: str | Path) -> ProtocolUnits:
    """A protocol folder's ``records.jsonl`` as the units of its paired tests, read through the records store
    (:func:`~kepp_core.evaluation.store.protocol_units`: validated once per version of the file, as columns;
    KeppError naming the file and record)."""
    path = Path(folder) / RECORDS_FILE
    if not path.is_file():
        raise KeppError(f"{path}: no per-episode records (the paired test needs the protocol's records.jsonl)")
    units = protocol_units(path)  # a file that is not a protocol's fails here, not at the first test
    if not units.units():
        raise KeppError(f"{path}: no records")
    return units


def pair_differences(records: Records | ProtocolUnits, a: str, b: str, horizon: int, fraction: float,
                     metric: str = "SR") -> tuple[np.ndarray, np.ndarray]:
    """Per-unit differences ``A − B`` of ``metric`` (SR: success 0/1; mAcc: step accuracy in
    [0, 1]) over every (seed, test episode) of ``(fraction, T)``, and each unit's seed."""
    if metric not in PAIR_METRICS:
        raise KeppError(f"the paired test compares {' or '.join(PAIR_METRICS)} (got {metric!r})")
    g = records.units().get((float(fraction), int(horizon)))
    if g is None:
        raise KeppError(f"{records.path}: no records for T={horizon} at fraction {fraction:g}")
    part = g[PAIR_METRICS[metric]]
    for m in (a, b):
        if m not in part or np.isnan(part[m]).any():
            raise KeppError(f"{records.path}: method {m!r} is not recorded for every episode of T={horizon} "
                            f"at fraction {fraction:g}")
    return part[a] - part[b], g["seed"]


def pair_test(records: Records | ProtocolUnits, a: str, b: str, horizon: int, fraction: float, metric: str = "SR",
              confidence: float = CONFIDENCE, permutations: int = 20_000) -> dict:
    """The paired test of ``A − B``: mean difference (points), its ``confidence`` CI over seeds
    (Student t of the per-seed differences; None with one seed), wins / losses / ties over the
    units, the two-sided sign-flip permutation p-value and whether ``p < SIGNIFICANCE``."""
    d, seeds = pair_differences(records, a, b, horizon, fraction, metric)
    per_seed = [float(d[seeds == s].mean() * 100) for s in sorted(set(seeds.tolist()))]
    _, half = mean_ci(per_seed, confidence)
    p = paired_permutation_test(d, permutations)
    return {"a": a, "b": b, "T": int(horizon), "fraction": float(fraction), "metric": metric, "units": int(d.size),
            "seeds": len(per_seed), "delta": float(d.mean() * 100), "delta_ci": _finite(half),
            "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "ties": int((d == 0).sum()),
            "p": float(p), "significant": bool(p < SIGNIFICANCE)}


def pair_table(records: Records | ProtocolUnits, a: str, b: str, fraction: float, metric: str = "SR",
               confidence: float = CONFIDENCE):
    """:func:`pair_test` of ``A − B`` at every horizon of ``fraction`` that records both, as a table."""
    import pandas as pd

    rows = [pair_test(records, a, b, h, fraction, metric, confidence)
            for (f, h) in sorted(records.units()) if f == float(fraction)
            and {a, b} <= set(records.methods(f, h))]
    return pd.DataFrame(rows)


def _p_text(p: float) -> str:
    return f"p = {p:.4f}" if p >= 1e-4 else f"p = {p:.1e}"


def pair_verdict(result: dict) -> str:
    """One plain sentence: is the difference significant (``p < 0.05``), and which way."""
    a, b = method_label(result["a"]), method_label(result["b"])
    p, delta = result["p"], result["delta"]
    if p < SIGNIFICANCE:
        way = "better" if delta > 0 else "worse"
        return (f"{_p_text(p)} < {SIGNIFICANCE}: {a} is significantly {way} than {b} "
                f"({result['metric']} {delta:+.1f} points).")
    return (f"{_p_text(p)} ≥ {SIGNIFICANCE}: no significant difference between {a} and {b} "
            f"({result['metric']} {delta:+.1f} points could be chance).")
