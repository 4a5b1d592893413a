"""``kepp protocol SPEC.toml``: every way of using the graph, side by side, over seeds, with
confidence intervals and paired tests (docs, How to use the graph).

A spec (TOML; every key but ``out`` has a default)::

    dataset = "demo"              # a dataset name (kepp data ... --dataset); root = "..." for others
    features = "data/coin/s3d"    # optional: the feature folder (default: the dataset's own place)
    horizons = [3, 4]
    setting = "conventional"
    methods = ["graph-gt", "kepp-nograph", "kepp-R1", "kepp-R1+dec"]   # default: every method but the LLM ones
    seeds = 5                     # or a list [0, 1, 2]
    preset = "demo"               # training preset; [train] overrides its fields (train_steps = 600, ...)
    train_fractions = [1.0]       # e.g. [0.25, 0.5, 1.0]: nested subsets of the training videos
    pairs = [["kepp-R1+dec", "kepp-nograph"]]   # paired tests
    decode_samples = 1            # the +dec methods: emissions from the mean of K sampled action blocks
    encoder = "s3d:s3d/s3d_howto100m.pth"   # optional: the S3D text tower of the graph-text row (S3D features)
    out = "runs/protocol"
    models = "runs/other"         # optional: where the models live (default: out), shared between specs
    metrics = ["kepp"]            # the evaluation codes whose metrics the results report: kepp, pdpp, vpn

The **unified benchmark** (ViterbiPlanNet's fixed split lists) is a spec of the ``split-lists``
dataset whose lists name their horizon with ``{T}`` (each horizon trains and tests on its own lists)::

    dataset = "split-lists"
    train_list = "NIV/train70_{T}.json"      # relative to where kepp protocol runs, like root
    test_list = "NIV/test30_{T}.json"
    taxonomy = "NIV/niv_taxonomy.json"
    features = "NIV/processed_data"
    horizons = [3, 4, 5, 6]
    seeds = 5
    metrics = ["pdpp", "vpn"]
    benchmark = "niv"             # its published numbers, apart from the measured ones

With ``vpn`` among the metrics, the summary also holds the benchmark's own 90% interval of
ViterbiPlanNet's SR, mAcc and mIoU over the seeds (``vpn_sr_boot``, ...: the width of
:func:`~kepp_core.evaluation.stats.benchmark_bootstrap`, its ``calculate_results.py``), beside this
package's Student t half-width (``vpn_sr_ci``).

For every fraction, seed and horizon it trains the models the methods need into
``MODELS/frac<percent>/seed<s>/T<h>/`` (``MODELS``: ``models``, default ``out``; a finished
model is skipped; a killed one resumes from its saved state, the ``--resume`` machinery of
:mod:`kepp_core.training.loop`), evaluates
every method on the test episodes (the same for every seed and fraction: the test split is
the dataset's), and writes

- ``OUT/records.jsonl``: one record per (fraction, seed, horizon, test episode) in the one
  record format (:mod:`kepp_core.evaluation.records`): ground truth, each method's plan, success
  and accuracy;
- ``OUT/results.json``: the per-seed rows (with the step model's endpoint accuracy), the summary
  (mean and 90% CI half-width over seeds, Student t: :func:`~kepp_core.evaluation.stats.summarise`)
  of SR, mAcc, mIoU (per episode) and mIoU (per batch of 256), the paired tests and the time taken;
- ``OUT/results.md``: the same as Markdown tables.

**Train fractions** are nested: the fraction ``f`` subset is the first ``round(f · n)`` training
videos in the order of a hash of their ids (:func:`fraction_subset`), so the 25% set lies
inside the 50% set.

**Paired test**: a two-sided sign-flip permutation test of the mean per-episode success
difference between two methods, over every (seed, test episode) unit
(:func:`~kepp_core.evaluation.stats.paired_permutation_test`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from kepp_core.catalog.benchmark import (BENCHMARK_BOOTSTRAP_METRICS, BENCHMARK_CODE, BENCHMARK_DATASETS, DEFAULT_FAMILY,
                              LITERATURE_UNCONFIRMED, family)
from kepp_core.data import LOADERS, load_dataset
from kepp_core.data.split_lists import NAME as SPLIT_LISTS, SplitFiles
from kepp_core.data.records import Dataset, restrict_train
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.evaluation.methods import LABELS, LLM_METHODS, REGISTRY, evaluate_horizon, get_method
from kepp_core.evaluation.options import DecodeOverride, EvalOptions, parse_decode_mode
from kepp_core.graph.decoding import TOPK
from kepp_core.video.s3d_spec import S3DSpec
from kepp_core.evaluation.records import episode_records, write_records
from kepp_core.evaluation.report import ENDPOINT_MODELS, STEP_METRICS
from kepp_core.evaluation.literature import literature_rows, literature_table
from kepp_core.evaluation.stats import benchmark_bootstrap, paired_permutation_test, summarise
from kepp_core.io import atomic_write_json, atomic_write_text, markdown_table, read_json, read_text_utf8
from kepp_core.metrics import endpoint_rate, success_given_endpoints
from kepp_core.catalog import (CONFIDENCE, CONFIG_FILE, DEFAULT_SETTING, EXTRA_ROLES, MAX_HORIZON, MAX_SEED,
                               METRIC_KEYS, METRIC_NAMES, PAIRED_TEST, RECORDS_FILE, RESULTS_FILE, SETTINGS,
                               SUITE_ROLES, horizon_folder, model_folder, models_dir)
from kepp_core.models.options import TrainConfig
from kepp_core.training.config import preset
from kepp_core.training.loop import STATE_JSON
from kepp_core.training.suite import train_role

EVAL_FILE = "protocol-eval-{}.json"  # per seed, horizon and method list: reused while the models are unchanged


@dataclass
class ProtocolSpec:
    """What ``kepp protocol`` runs (see the module docstring for the TOML keys)."""

    out: str
    dataset: str = "demo"
    root: str | None = None
    features: str | None = None  # feature folder (``--features``); default: the loader's
    horizons: tuple[int, ...] = (3,)
    setting: str = DEFAULT_SETTING
    methods: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    preset: str = "demo"
    train: dict = field(default_factory=dict)
    train_fractions: tuple[float, ...] = (1.0,)
    pairs: tuple[tuple[str, str], ...] = ()
    confidence: float = CONFIDENCE
    decode: str | None = None  # the +dec methods' endpoint mode (default: chosen on validation)
    decode_weight: float | None = None
    decode_samples: int = 1  # the +dec methods: emissions from the mean of K sampled action blocks
    models: str | None = None  # where the models live (default: ``out``); specs may share them
    encoder: str | None = None  # the s3d:PATH spec of the text-grounded rows (graph-text)
    metrics: tuple[str, ...] = (DEFAULT_FAMILY,)  # the evaluation codes whose metrics the results report
    train_list: str | None = None  # split-lists: the lists ("{T}": each horizon's own), as --train-list
    test_list: str | None = None
    taxonomy: str | None = None
    benchmark: str | None = None  # a benchmark dataset: its published rows beside the measured ones

    def config(self, horizon: int, seed: int) -> TrainConfig:
        """The training config of one horizon and seed."""
        return preset(self.preset, **{**self.train, "horizon": horizon, "seed": seed, "setting": self.setting})

    def lists(self, horizon: int) -> SplitFiles | None:
        """The split lists of ``horizon`` (``{T}`` in a path: that horizon's), or None."""
        if self.train_list is None or self.test_list is None:
            return None
        at = lambda p: Path(p.replace(HORIZON_FIELD, str(horizon)))  # noqa: E731
        return SplitFiles(train=at(self.train_list), test=at(self.test_list),
                          taxonomy=at(self.taxonomy) if self.taxonomy is not None else None)

    @property
    def per_horizon(self) -> bool:
        """Each horizon has its own lists (``{T}`` in one of their paths)."""
        return any(HORIZON_FIELD in (p or "") for p in (self.train_list, self.test_list, self.taxonomy))

    @property
    def families(self) -> tuple[str, ...]:
        """The evaluation codes whose columns the rows get besides this package's."""
        return tuple(f for f in self.metrics if f != DEFAULT_FAMILY)


HORIZON_FIELD = "{T}"  # in a split list's path: the horizon
# Keys added with the field's evaluation codes: a results file names them only where a spec sets them.
_BENCHMARK_KEYS = {"metrics": (DEFAULT_FAMILY,), "train_list": None, "test_list": None, "taxonomy": None,
                   "benchmark": None}


# The spec's keys and the type each holds (a list key also takes one value); checked before anything else.
_TEXT, _WHOLE, _NUMBER = (str,), (int,), (int, float)
SPEC_SCHEMA: dict[str, tuple[tuple[type, ...], bool]] = {  # key -> (item types, may be a list)
    "out": (_TEXT, False), "dataset": (_TEXT, False), "root": (_TEXT, False), "features": (_TEXT, False),
    "models": (_TEXT, False), "encoder": (_TEXT, False), "setting": (_TEXT, False), "preset": (_TEXT, False), "decode": (_TEXT, False),
    "confidence": (_NUMBER, False), "decode_weight": (_NUMBER, False), "decode_samples": (_WHOLE, False),
    "horizons": (_WHOLE, True), "seeds": (_WHOLE, True), "methods": (_TEXT, True),
    "train_fractions": (_NUMBER, True), "train_fraction": (_NUMBER, True), "pairs": ((list,), False),
    "train": ((dict,), False), "metrics": (_TEXT, True), "train_list": (_TEXT, False), "test_list": (_TEXT, False),
    "taxonomy": (_TEXT, False), "benchmark": (_TEXT, False),
}
MAX_SEEDS = 1000  # a spec's seeds (each trains every model again)
# Training options the spec itself sets for each run (its key that does), so its [train] table may not.
SPEC_OWNED = {"horizon": "horizons", "seed": "seeds", "setting": "setting"}
MAX_DECODE_SAMPLES = 1000


def _typed(value, types: tuple[type, ...], many: bool, key: str, where: str) -> None:
    """KeppError unless ``value`` is one of ``types`` (or, for a list key, a non-empty list of them)."""
    items = value if many and isinstance(value, list) else [value]
    names = " or ".join("whole number" if t is int else "number" if t is float else "text" if t is str
                        else "table" if t is dict else "list" for t in types if not (t is int and float in types))
    ok = items and all(isinstance(v, types) and not isinstance(v, bool) for v in items)
    if not ok or any(isinstance(v, float) and not math.isfinite(v) for v in items):
        shape = f"a {names} or a non-empty list of them" if many else f"a {names}"
        raise KeppError(f"{where}: {key} = {_shown(value)}: expected {shape}")


def _shown(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _distinct(values: tuple, key: str, where: str) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise KeppError(f"{where}: {key}: {v!r} is listed twice (each would be counted again)")
        seen.add(v)


def parse_spec(data: dict, where: str = "protocol spec") -> ProtocolSpec:
    """A validated :class:`ProtocolSpec` from parsed TOML (KeppError naming the bad key): every
    key's type first, then counts and ranges, then what the values name."""
    if not isinstance(data, dict):
        raise KeppError(f"{where}: expected a table of keys")
    bad = sorted(set(data) - set(SPEC_SCHEMA))
    if bad:
        raise KeppError(f"{where}: unknown key(s) {bad} (expected some of {', '.join(sorted(SPEC_SCHEMA))})")
    if "out" not in data:
        raise KeppError(f"{where}: 'out' (the output folder) is required")
    for key, value in data.items():
        _typed(value, *SPEC_SCHEMA[key], key, where)
    d = dict(data)
    if "train_fraction" in d:
        d["train_fractions"] = d.pop("train_fraction")
    if isinstance(d.get("seeds"), int):
        if not 1 <= d["seeds"] <= MAX_SEEDS:
            raise KeppError(f"{where}: seeds = {d['seeds']}: expected at least one seed and at most {MAX_SEEDS}")
        d["seeds"] = list(range(d["seeds"]))
    for key in ("horizons", "seeds", "methods", "train_fractions", "metrics"):
        if key in d:
            d[key] = tuple(d[key] if isinstance(d[key], list) else [d[key]])
            _distinct(d[key], key, where)
    if len(d.get("seeds", ())) > MAX_SEEDS or any(not 0 <= s <= MAX_SEED for s in d.get("seeds", ())):
        raise KeppError(f"{where}: seeds: expected at most {MAX_SEEDS} seeds, each from 0 to {MAX_SEED}")
    if "train_fractions" in d:
        d["train_fractions"] = tuple(float(f) for f in d["train_fractions"])
    if "pairs" in d:
        if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(m, str) for m in p) for p in d["pairs"]):
            raise KeppError(f"{where}: pairs must be a list of [method A, method B] pairs of method names")
        d["pairs"] = tuple(tuple(p) for p in d["pairs"])
    spec = ProtocolSpec(**d)
    return _check(spec, where)


def _check(spec: ProtocolSpec, where: str) -> ProtocolSpec:
    """Methods, pairs, fractions, horizons and the training options make sense."""
    if not spec.methods:  # every method but the LLM ones (and the text-grounded ones without a text tower)
        spec.methods = tuple(n for n in REGISTRY if n not in LLM_METHODS
                             and (spec.encoder is not None or not REGISTRY[n].entry.text))
    if spec.encoder is not None:
        try:
            S3DSpec.parse(spec.encoder)
        except KeppError as e:
            raise KeppError(f"{where}: encoder = {spec.encoder!r}: {e}") from None
    for name in spec.methods:
        get_method(name)
        if name in LLM_METHODS:
            raise KeppError(f"{where}: {name!r} needs an LLM endpoint; the protocol runs methods without one")
        if get_method(name).entry.text and spec.encoder is None:
            raise KeppError(f"{where}: {name!r} needs the S3D text tower: add encoder = \"s3d:PATH\" (the network "
                            "that made the dataset's features)")
    for a, b in spec.pairs:
        for name in (a, b):
            if name not in spec.methods:
                raise KeppError(f"{where}: pair [{a!r}, {b!r}]: {name!r} is not among the spec's methods")
    if any(not 0 < f <= 1 for f in spec.train_fractions):
        raise KeppError(f"{where}: train_fractions must lie in (0, 1] (got {list(spec.train_fractions)})")
    if any(not 2 <= h <= MAX_HORIZON for h in spec.horizons):
        raise KeppError(f"{where}: horizons must lie in 2..{MAX_HORIZON} (got {list(spec.horizons)})")
    if not 0 < spec.confidence < 1:
        raise KeppError(f"{where}: confidence must lie in (0, 1)")
    if spec.setting not in SETTINGS:
        raise KeppError(f"{where}: setting = {spec.setting!r}: expected one of {', '.join(SETTINGS)}")
    if spec.dataset not in LOADERS:
        raise KeppError(f"{where}: {unknown_name_error('dataset', spec.dataset, LOADERS)}")
    if spec.decode_weight is not None and spec.decode_weight < 0:
        raise KeppError(f"{where}: decode_weight must be a number >= 0 (got {spec.decode_weight})")
    if spec.decode is not None:
        parse_decode_mode(spec.decode)
    if isinstance(spec.decode_samples, bool) or not isinstance(spec.decode_samples, int) \
            or not 1 <= spec.decode_samples <= MAX_DECODE_SAMPLES:
        raise KeppError(f"{where}: decode_samples must be a whole number from 1 to {MAX_DECODE_SAMPLES} "
                        f"(got {spec.decode_samples!r})")
    owned = [k for k in SPEC_OWNED if k in spec.train]
    if owned:  # the spec's own horizons, seeds and setting decide these: [train] never overrides them
        keys = ", ".join(SPEC_OWNED[k] for k in owned)
        raise KeppError(f"{where}: [train] {', '.join(owned)}: set by the spec itself ({keys}), not by its "
                        f"training options; remove it from [train]")
    try:  # a bad preset or training option fails now, not after training
        spec.config(spec.horizons[0], spec.seeds[0])
    except KeppError as e:
        raise KeppError(f"{where}: [train]: {e}") from None
    _check_benchmark(spec, where)
    return spec


def _check_benchmark(spec: ProtocolSpec, where: str) -> None:
    """The evaluation codes, the split lists and the benchmark make sense."""
    for m in spec.metrics:
        try:
            family(m)
        except KeppError as e:
            raise KeppError(f"{where}: metrics: {e}") from None
    given = [k for k in ("train_list", "test_list", "taxonomy") if getattr(spec, k) is not None]
    if given and spec.dataset != SPLIT_LISTS:
        raise KeppError(f"{where}: {given[0]} goes with dataset = \"{SPLIT_LISTS}\" (not {spec.dataset!r})")
    if given and (spec.train_list is None or spec.test_list is None):
        raise KeppError(f"{where}: {'test_list' if spec.train_list is not None else 'train_list'} is missing "
                        "(the split lists come in pairs)")
    for k in given:
        if "{" in getattr(spec, k).replace(HORIZON_FIELD, "") or "}" in getattr(spec, k).replace(HORIZON_FIELD, ""):
            raise KeppError(f"{where}: {k} = {getattr(spec, k)!r}: the only field a list's path may hold is "
                            f"{HORIZON_FIELD} (the horizon)")
    if spec.dataset == SPLIT_LISTS and not given and spec.root is None:
        raise KeppError(f"{where}: dataset \"{SPLIT_LISTS}\" needs train_list and test_list (or root, a split file)")
    if spec.benchmark is not None and spec.benchmark not in BENCHMARK_DATASETS:
        raise KeppError(f"{where}: benchmark: {unknown_name_error('benchmark dataset', spec.benchmark, BENCHMARK_DATASETS)}")


def override_spec(spec: ProtocolSpec, where: str, **over) -> ProtocolSpec:
    """``spec`` with the keys ``over`` replaced (a command line's options), validated again;
    ``None`` values keep the spec's.

    >>> spec = parse_spec({"out": "runs/x", "methods": ["random"], "horizons": [3, 4]})
    >>> override_spec(spec, "cli", seeds=2, horizons=None).seeds
    (0, 1)
    """
    over = {k: v for k, v in over.items() if v is not None}
    if not over:
        return spec
    data = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(spec).items() if v is not None}
    data["pairs"] = [list(p) for p in spec.pairs]
    return parse_spec({**data, **over}, where)


def load_protocol(path: str | Path) -> ProtocolSpec:
    """Read a protocol spec from a TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(read_text_utf8(path))
    except tomllib.TOMLDecodeError as e:
        raise KeppError(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise KeppError(f"{path}: not a protocol spec (nested too deeply to read)") from None
    return parse_spec(data, str(path))


def fraction_subset(ds: Dataset, fraction: float) -> Dataset:
    """``ds`` with ``round(fraction · n)`` of its ``n`` training videos (at least one): the first
    ones in the order of a hash of their ids, so a smaller fraction's set lies inside a larger one's."""
    if fraction >= 1:
        return ds
    keys = sorted((f"{v.task}_{v.id}" for v in ds.split("train")), key=lambda k: (_unit(k), k))
    if not keys:
        raise KeppError(f"train fraction {fraction}: the dataset has no training video")
    return restrict_train(ds, set(keys[:max(1, round(fraction * len(keys)))]))


def _unit(key: str) -> float:
    """A video key's position in [0, 1) (the order in which fractions take videos)."""
    return int(hashlib.sha1(f"fraction:{key}".encode()).hexdigest()[:12], 16) / 16 ** 12


def members_for(methods) -> list[str]:
    """The model folders the methods need, in training order (the step model first)."""
    need = {model_folder(r) for name in methods for r in get_method(name).requires}
    return [model_folder(r) for r in SUITE_ROLES + EXTRA_ROLES if model_folder(r) in need]


def finished(folder: Path) -> bool:
    """A model whose training ran to its end (its config holds the run summary)."""
    try:
        return "training" in read_json(folder / CONFIG_FILE, dict)
    except (OSError, ValueError, KeppError):
        return False


def train_missing(ds: Dataset, cfg: TrainConfig, root: Path, members: list[str],
                  log: Callable[[str], None], retrain: bool = False) -> list[str]:
    """Train the members of one horizon that are not finished (resuming killed runs; with
    ``retrain``, every member again from scratch); returns what was trained."""
    hdir = models_dir(root, cfg.horizon)
    done = []
    for role in SUITE_ROLES + EXTRA_ROLES:
        name = model_folder(role)
        if name not in members or (finished(hdir / name) and not retrain):
            continue
        resume = not retrain and (hdir / name / STATE_JSON).is_file()
        t0 = time.time()
        train_role(ds, cfg, role, hdir, progress=False, resume=resume)
        log(f"  trained {hdir / name}{' (resumed)' if resume else ''} in {time.time() - t0:.1f}s")
        done.append(name)
    return done


def eval_file(methods, decode_samples: int = 1, encoder: str | None = None) -> str:
    """The name of the evaluation cache of one method list (several specs can share models),
    mean-of-K decoding (``K > 1`` gets its own cache) and the text-grounded rows' S3D encoder (the
    name its weights file records: another network gets its own cache)."""
    key = "\n".join(methods) + (f"\n@K{decode_samples}" if decode_samples > 1 else "")
    key += f"\n@{S3DSpec.parse(encoder).name}" if encoder is not None else ""
    return EVAL_FILE.format(hashlib.sha1(key.encode()).hexdigest()[:10])


def _evaluate(spec: ProtocolSpec, ds: Dataset, root: Path, horizon: int, seed: int, fraction: float,
              log: Callable[[str], None]) -> tuple[list[dict], list[dict]]:
    """Rows and per-episode records of one seed and horizon (reused from ``EVAL_FILE`` when
    the same methods were evaluated on the same models)."""
    text = spec.encoder if any(get_method(m).entry.text for m in spec.methods) else None
    path = models_dir(root, horizon) / eval_file(spec.methods, spec.decode_samples, text)
    try:
        cached = read_json(path, dict) if path.is_file() else {}
    except KeppError:
        cached = {}  # a damaged cache is remade
    if cached.get("methods") == list(spec.methods):
        return _with_decomposition(cached["rows"], cached["records"]), cached["records"]
    mode, k = parse_decode_mode(spec.decode) if spec.decode is not None else (None, TOPK)
    # the protocol trained these models: their decoding choice is kept with them
    decode = DecodeOverride(mode, spec.decode_weight, k, spec.decode_samples, save=True)
    options = EvalOptions(setting=spec.setting, seed=seed, strict=True, decode=decode, encoder=spec.encoder)
    ev = evaluate_horizon(ds, root, horizon, spec.methods, options, log=log)
    rows = [{**r, **(ev.step_accuracy or {}), "seed": seed, "fraction": fraction} for r in ev.rows()]
    records = episode_records(ev, seed=seed, fraction=fraction)
    atomic_write_json(path, {"methods": list(spec.methods), "rows": rows, "records": records})
    return rows, records


def _with_decomposition(rows: list[dict], records: list[dict]) -> list[dict]:
    """Rows of an evaluation cache written before the failure decomposition (``ends``,
    ``SR_ends``) with it added from the cache's own per-episode records."""
    for r in rows:
        if "ends" not in r:
            mine = [rec for rec in records if r["method"] in rec["plans"]]
            plans, gts = [rec["plans"][r["method"]] for rec in mine], [rec["gt"] for rec in mine]
            r["ends"], r["SR_ends"] = endpoint_rate(plans, gts), success_given_endpoints(plans, gts)
    return rows


def run_protocol(spec: ProtocolSpec, log: Callable[[str], None] = print, retrain: bool = False) -> dict:
    """Train what is missing (with ``retrain``: every model again), evaluate every seed, and
    write records, results and the tables."""
    t_start = time.time()
    out = Path(spec.out)
    datasets = protocol_datasets(spec)
    ds = datasets[spec.horizons[0]]
    members = members_for(spec.methods)
    rows, records, timings = [], [], {}
    for fraction in spec.train_fractions:
        subsets = {h: fraction_subset(d, fraction) for h, d in datasets.items()}
        for seed in spec.seeds:
            root = Path(spec.models or spec.out) / f"frac{round(fraction * 100)}" / f"seed{seed}"
            for h in spec.horizons:
                dsf = subsets[h]
                t0 = time.time()
                trained = train_missing(dsf, spec.config(h, seed), root, members, log, retrain)
                if trained:
                    for stale in models_dir(root, h).glob(EVAL_FILE.format("*")):
                        stale.unlink(missing_ok=True)
                t1 = time.time()
                r, rec = _evaluate(spec, dsf, root, h, seed, fraction, log)
                rows += with_families(r, rec, spec.families)
                records += rec
                timings[f"frac{round(fraction * 100)}/seed{seed}/{horizon_folder(h)}"] = {"train_s": round(t1 - t0, 1),
                                                                           "eval_s": round(time.time() - t1, 1)}
                log(f"fraction {fraction:g} seed {seed} T={h}: trained {len(trained)} model(s) in {t1 - t0:.0f}s, "
                    f"evaluated in {time.time() - t1:.0f}s")
    columns = tuple(c for f in spec.families for c in family(f).columns)
    summary = summarise(rows, METRIC_KEYS + STEP_METRICS + columns, ("fraction", "T", "method"), "ci", spec.confidence)
    if BENCHMARK_CODE in spec.metrics:
        add_benchmark_interval(summary, rows)
    pairs = paired_tests(records, spec.pairs)
    shown = {f.name: getattr(spec, f.name) for f in fields(ProtocolSpec)
             if f.name not in _BENCHMARK_KEYS or getattr(spec, f.name) != _BENCHMARK_KEYS[f.name]}
    result = {"spec": shown, "dataset": ds.name,
              "episodes": {str(h): sum(1 for r in records if r["T"] == h) // max(1, len(spec.seeds) *
                                                                                 len(spec.train_fractions))
                           for h in spec.horizons},
              "rows": rows, "summary": summary, "pairs": pairs, "timings": timings,
              "seconds": round(time.time() - t_start, 1), "test": PAIRED_TEST}
    write_records(out / RECORDS_FILE, records)
    atomic_write_json(out / RESULTS_FILE, result)
    atomic_write_text(out / "results.md", markdown(result) + "\n")
    return result


def protocol_datasets(spec: ProtocolSpec) -> dict[int, Dataset]:
    """The dataset of each horizon: one for all, or each horizon's own split lists (``{T}``)."""
    if not spec.per_horizon:
        ds = load_dataset(spec.dataset, spec.root, features=spec.features, lists=spec.lists(spec.horizons[0]))
        return {h: ds for h in spec.horizons}
    return {h: load_dataset(spec.dataset, spec.root, features=spec.features, lists=spec.lists(h))
            for h in spec.horizons}


def with_families(rows: list[dict], records: list[dict], families) -> list[dict]:
    """Rows of one seed and horizon with each evaluation code's columns of ``families`` (``pdpp_sr``,
    ...), computed from the records' plans in the episodes' order."""
    for r in rows:
        if not families:
            break
        mine = [rec for rec in records if r["method"] in rec["plans"]]
        plans, gts = [rec["plans"][r["method"]] for rec in mine], [rec["gt"] for rec in mine]
        for f in families:
            r.update(family(f).columns_of(plans, gts))
    return rows


def add_benchmark_interval(summary: list[dict], rows: list[dict]) -> None:
    """Add to each summary row the unified benchmark's own 90% interval width of ViterbiPlanNet's SR,
    mAcc and mIoU over its seeds (``vpn_sr_boot``, ...; :func:`~kepp_core.evaluation.stats.benchmark_bootstrap`,
    the seeds in ascending order)."""
    code = family(BENCHMARK_CODE)
    columns = [next(m.column for m in code.metrics if m.key == k) for k in BENCHMARK_BOOTSTRAP_METRICS]
    for s in summary:
        mine = sorted((r for r in rows if (r["fraction"], r["T"], r["method"]) == (s["fraction"], s["T"], s["method"])),
                      key=lambda r: r["seed"])
        widths = benchmark_bootstrap([[r[c] for r in mine] for c in columns])
        s.update({f"{c}_boot": w for c, w in zip(columns, widths)})


def paired_tests(records: list[dict], pairs) -> list[dict]:
    """For each pair and (fraction, T): mean SR difference (points) and the permutation p-value."""
    out = []
    keys = sorted({(r["fraction"], r["T"]) for r in records})
    fractions, horizons = np.array([r["fraction"] for r in records]), np.array([r["T"] for r in records])
    for a, b in pairs:
        # each record's difference once, then every (fraction, T) as a mask (not a pass over the records each)
        every = np.array([r["success"][a] - r["success"][b] for r in records], dtype=np.float64)
        for fraction, horizon in keys:
            d = every[(fractions == fraction) & (horizons == horizon)]
            out.append({"a": a, "b": b, "fraction": fraction, "T": horizon, "units": len(d),
                        "delta_SR": float(d.mean() * 100), "wins": int((d > 0).sum()), "losses": int((d < 0).sum()),
                        "p": paired_permutation_test(d)})
    return out


def _pvalue(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def _cell(row: dict, m: str) -> str:
    if row.get(m) is None:  # a metric the rows do not have (results written before it existed)
        return "—"
    ci = row.get(f"{m}_ci")
    return f"{row[m]:.1f}" + ("" if ci is None or ci != ci else f" ± {ci:.1f}")


def _method_cell(r: dict) -> str:
    return f"{LABELS.get(r['method'], r['method'])} (`{r['method']}`)"


def benchmark_markdown(spec: dict, rows: list[dict], horizon: int) -> list[str]:
    """The Markdown lines of one horizon's other evaluation codes: a table per code (its headers name
    it; mean ± Student t half-width over seeds), ViterbiPlanNet's with the benchmark's own interval
    beside it, and with a benchmark the published numbers of that dataset, horizon and code, apart."""
    lines = []
    bench = spec.get("benchmark")
    for name in (f for f in spec.get("metrics", ()) if f != DEFAULT_FAMILY):
        f = family(name)
        lines += [f"{f.label}'s metrics ({f.source}); mean ± {round(spec['confidence'] * 100)}% CI over seeds "
                  "(Student t):", "", markdown_table(["method", *(m.header for m in f.metrics)],
                                                     [[_method_cell(r), *(_cell(r, m.column) for m in f.metrics)]
                                                      for r in rows]), ""]
        if name == BENCHMARK_CODE:
            boot = [m for k in BENCHMARK_BOOTSTRAP_METRICS for m in f.metrics if m.key == k]
            lines += ["The benchmark's own 90% interval (ViterbiPlanNet's calculate_results.py: mean ± the width "
                      "between the 5th and 95th percentiles of 1,000 bootstrap means over the seeds):", "",
                      markdown_table(["method", *(m.header for m in boot)],
                                     [[_method_cell(r), *(_boot_cell(r, m.column) for m in boot)] for r in rows]), ""]
        cited = literature_rows(bench, horizon, name) if bench else []
        published = literature_table(cited, name)
        if published:
            head = list(published[0])
            lines += [f"Published numbers of {bench}, T={horizon}, with {f.label}'s code (read from the papers; not "
                      "measured here, never averaged with the rows above):", "",
                      markdown_table(head, [[str(p[c]) for c in head] for p in published]), ""]
            lines += [] if all(r.confirmed for r in cited) else [LITERATURE_UNCONFIRMED + ".", ""]
    return lines


def _boot_cell(row: dict, column: str) -> str:
    width = row.get(f"{column}_boot")
    if row.get(column) is None or width is None:
        return "—"
    return f"{row[column]:.2f} ± {width:.2f}"


def markdown(result: dict) -> str:
    """The results as Markdown: one table per (fraction, T), the paired tests, and (with several
    fractions) SR against the fraction of training videos."""
    spec, summary = result["spec"], result["summary"]
    conf = round(spec["confidence"] * 100)
    lines = [f"Dataset {result['dataset']}, setting {spec['setting']}, preset {spec['preset']}, "
             f"seeds {list(spec['seeds'])}; mean ± {conf}% CI over seeds (Student t).", ""]
    for fraction in spec["train_fractions"]:
        for h in spec["horizons"]:
            rows = [r for r in summary if r["fraction"] == fraction and r["T"] == h]
            lines += [f"**T={h}**, {fraction:.0%} of the training videos, {result['episodes'][str(h)]} test episodes", ""]
            if DEFAULT_FAMILY in spec.get("metrics", (DEFAULT_FAMILY,)):
                lines += [markdown_table(["method", *(METRIC_NAMES[m] for m in METRIC_KEYS)],
                                         [[_method_cell(r), *(_cell(r, m) for m in METRIC_KEYS)] for r in rows]), ""]
            lines += benchmark_markdown(spec, rows, h)
            ends = [f"{name} {_cell(rows[0], a)} / {_cell(rows[0], b)}" for name, (a, b) in ENDPOINT_MODELS.items()
                    if rows and rows[0].get(a) is not None]
            if ends:
                lines += ["Endpoint accuracy on the test episodes, first / last step (%): " + "; ".join(ends) + ".", ""]
    if result["pairs"]:
        lines += [f"Paired tests ({PAIRED_TEST}):", "",
                  markdown_table(["A", "B", "fraction", "T", "ΔSR (A − B)", "A better / worse", "p"],
                                 [[f"`{p['a']}`", f"`{p['b']}`", f"{p['fraction']:.0%}", p["T"],
                                   f"{p['delta_SR']:+.1f}", f"{p['wins']} / {p['losses']}", _pvalue(p["p"])]
                                  for p in result["pairs"]]), ""]
    if len(spec["train_fractions"]) > 1:
        fr = spec["train_fractions"]
        by = {(r["method"], r["T"], r["fraction"]): r for r in summary}
        lines += ["SR against the fraction of training videos (mean ± CI):", "",
                  markdown_table(["method", "T", *(f"{f:.0%}" for f in fr)],
                                 [[f"`{m}`", h, *(_cell(by[(m, h, f)], "SR") if (m, h, f) in by else "" for f in fr)]
                                  for h in spec["horizons"] for m in spec["methods"]])]
    return "\n".join(lines)


__all__ = ["ProtocolSpec", "add_benchmark_interval", "benchmark_markdown", "fraction_subset", "load_protocol", "markdown",
           "members_for", "override_spec", "paired_tests", "parse_spec", "protocol_datasets", "run_protocol",
           "train_missing", "with_families"]
