"""``kepp eval``: the methods table (SR, mAcc, mIoU) for some horizons and observation settings;
``kepp eval compare``: two methods of the records it wrote, episode by episode."""

from __future__ import annotations

import sys
from pathlib import Path

from kepp_core import catalog
from kepp_core.catalog.benchmark import BENCHMARK_DATASETS, DEFAULT_FAMILY, FAMILIES, LITERATURE_UNCONFIRMED, codes_named, family
from kepp_core.commands._common import (DATASET_INPUTS, add_command, add_dataset_args, add_device_option, check_outputs,
                                        dataset_from_args, emit_json, print_table, set_threads, writes)
from kepp_core.errors import KeppError, printable
from kepp_core.io import whole_number

EXAMPLES = """  kepp eval --dataset demo --models models --horizons 3 4 5 6
  kepp eval --dataset demo --models models -T 4 --methods kepp-R1 kepp-nograph --sampler ddim --sampler-steps 10
  kepp eval --dataset demo --models models --settings conventional pdpp --records runs/preds.jsonl --out runs/table.json
  kepp eval --dataset demo --models assets/demo --methods kepp-R1 kepp-nograph --samples 20 --out runs/unc.json
  kepp eval --dataset demo --models models -T 4 --methods kepp-R1+dec --save-decoding
  (the +dec rows' λ and endpoint mode: read from MODELS/T<h>/decoding.json, else from KEPP's cache home, else
   chosen on validation videos and kept in the cache home; --save-decoding keeps it in the models folder)
  (--samples K: K sampled plans per episode → NLL, KL, mode precision/recall next to SR/mAcc/mIoU)
  kepp eval --dataset demo --models models --methods kepp-R1 kepp-llm kepp-graph-llm \\
      --llm-url http://127.0.0.1:8080/v1 --llm-model llama --llm-cache runs/llm-cache
  (kepp-llm / kepp-graph-llm need MODELS/T<h>/plan-llm, plan-graph-llm and an LLM endpoint; replies are cached)
  (for --settings pdpp the models come from MODELS/pdpp/ when that folder exists)
  kepp eval --dataset crosstask --root data/crosstask --models models -T 3 --methods graph-text graph-pred \\
      --encoder s3d:s3d/s3d_howto100m.pth
  (graph-text: the P²KG's zero-shot plan between the steps the S3D text tower grounds in the start and goal
   clips; the dataset's features must be that network's, from 'kepp features extract --encoder s3d:PATH')
  kepp eval --dataset crosstask --root data/crosstask --models models -T 3 --methods kepp-R1+jdec-text \\
      --encoder s3d:s3d/s3d_howto100m.pth
  (+jdec-text: the +jdec row decoded jointly with the text tower's distributions instead of the endpoint model's)
  kepp eval --dataset split-lists --train-list NIV/train70_3.json --test-list NIV/test30_3.json \\
      --taxonomy NIV/niv_taxonomy.json --features NIV/processed_data --models models -T 3 \\
      --metrics pdpp vpn --benchmark niv
  (--metrics: the columns of each evaluation code, named in every header (the default: {default}; {codes});
   --benchmark: the published numbers of that dataset, horizon and code printed under the table, apart from the
   measured rows)
  kepp eval --from-records runs/compare --metrics kepp pdpp vpn --benchmark niv
  (no models: the recorded plans of a records file or folder, imported methods' included, one table per code)
  kepp eval compare runs/preds.jsonl --a kepp-R2 --b kepp-nograph   (two methods of the records, episode by episode)"""

COMPARE_EXAMPLES = """  kepp eval compare runs/preds.jsonl --a kepp-R2 --b kepp-nograph
  kepp eval compare runs/preds.jsonl --a kepp-R2 --b pdpp -T 3 --cell a-only --episodes runs/r2-not-pdpp.csv
  kepp eval compare runs/graph-protocol --a kepp-R1 --b kepp-nograph --fraction 1 --json
  (per T: the 2x2 table of the episodes both methods planned (both right, A only, B only, neither), McNemar's
   exact test of the discordant ones, each method's SR and A - B with percentile-bootstrap intervals; a 'kepp
   protocol' folder: its records.jsonl over (seed, test episode) units, the intervals drawing whole episodes
   with all their seeds; --episodes: the episodes with both plans side by side, as CSV)"""


_EVAL_READS = (*DATASET_INPUTS, "from_records")


def _run_keys(args) -> set[tuple]:
    """The ``(method, seed, T, imported from)`` of the records this evaluation writes (its own earlier
    records are replaced; others' are kept only with --append)."""
    methods, horizons = args.methods or _default_methods(), args.horizons or catalog.TABLE_HORIZONS
    return {(m, args.seed, h, None) for m in methods for h in horizons}


def _default_methods() -> tuple[str, ...]:
    """The methods ``kepp eval`` runs when ``--methods`` is left out."""
    return tuple(m.name for m in catalog.methods() if m.default and not m.llm)


def _run_defaults(args) -> None:
    """A run of models: ``-T`` and ``--methods`` left out are the table's horizons and the default methods
    (left None until here so that ``--from-records`` can tell a filter given from a default)."""
    if args.horizons is None:
        args.horizons = list(catalog.TABLE_HORIZONS)
    if args.methods is None:
        args.methods = list(_default_methods())


def register(sub) -> None:
    """Add ``kepp eval`` (its ``--methods`` choices come from the method catalogue)."""
    from kepp_core.commands.llm_args import add_llm_args

    defaults = _default_methods()
    others = tuple(m.name for m in catalog.methods() if not m.default and not m.llm) + _llm_methods()

    p = add_command(sub, "eval", "evaluate KEPP and the baselines on the test split",
                    EXAMPLES.format(default=DEFAULT_FAMILY, codes=codes_named()), _eval)
    add_dataset_args(p)
    p.add_argument("--models", default=None, help="models folder (MODELS/T<h>/step, plan-graph-R1, ...; required "
                                                  "unless --from-records)")
    p.add_argument("--from-records", default=None, metavar="FILE|FOLDER",
                   help="score recorded plans instead of running models: a records file or a folder of them "
                        "(as 'kepp eval compare' and the app read them; imported methods' too), one table per --metrics "
                        "code, mean over seeds per method and T")
    p.add_argument("-T", "--horizons", type=int, nargs="+", default=None,
                   help=f"horizons (default: {' '.join(map(str, catalog.TABLE_HORIZONS))}; with --from-records: "
                        "only these horizons' records, default all)")
    p.add_argument("--settings", nargs="+", choices=list(catalog.SETTINGS), default=[catalog.DEFAULT_SETTING])
    p.add_argument("--methods", nargs="+", default=None,
                   help=f"subset of: {' '.join(defaults + others)} (default: {' '.join(defaults)}; with "
                        "--from-records: only these methods' records, default all)")
    p.add_argument("--sampler", choices=["ddpm", "ddim"], default=None, help="override the models' sampler")
    p.add_argument("--sampler-steps", type=int, default=None, help="DDIM steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, metavar="K",
                   help="draw K plans per test episode and report NLL, KL, mode precision and recall")
    p.add_argument("--strict", action="store_true", help="fail instead of skipping methods without models")
    p.add_argument("--records", default=None, help="per-episode predictions (.jsonl or .parquet)")
    p.add_argument("--out", default=None, help="write the table rows as JSON")
    writes(p, kinds={"out": "table", "records": "records"}, reads=_EVAL_READS, reads_records=("from_records",),
           run_keys=_run_keys)
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    # scoring records (--from-records, 'kepp eval compare') places no network: torch is not imported for it
    add_device_option(p, no_network=lambda a: a.from_records is not None or a.eval_command is not None)
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--metrics", nargs="+", choices=list(FAMILIES), default=[DEFAULT_FAMILY], metavar="CODE",
                   help=f"the evaluation codes whose metrics the table shows: {', '.join(FAMILIES)} "
                        f"(default: {DEFAULT_FAMILY}, this package's)")
    p.add_argument("--benchmark", choices=list(BENCHMARK_DATASETS), default=None,
                   help="print the published numbers of this dataset (its horizons, the chosen codes) under the table")
    p.add_argument("--decode", default=None, metavar="MODE",
                   help="endpoints of the +dec methods: free, pinned, topk or topk:K; a +jdec method keeps its joint "
                        "decoding (default: chosen on validation videos and kept in KEPP's cache home, or read from "
                        "MODELS/T<h>/decoding.json)")
    p.add_argument("--decode-weight", default=None, metavar="LAMBDA",
                   help="transition weight λ >= 0 of the +dec and +jdec methods (default: chosen on validation)")
    p.add_argument("--decode-samples", default=None, metavar="K",
                   help="the +dec and +jdec methods decode the mean of K sampled action blocks (batched) instead of one "
                        "(default 1)")
    p.add_argument("--encoder", default=None, metavar="s3d:PATH",
                   help="the S3D network whose text tower grounds the step names for graph-text and the +jdec-text "
                        "methods (the one that made the dataset's features)")
    p.add_argument("--save-decoding", action="store_true",
                   help="store a choice of the +dec and +jdec methods made on validation in MODELS/T<h>/decoding.json "
                        "(never written there otherwise: the models folder may be read-only)")
    add_llm_args(p)
    _register_compare(p.add_subparsers(dest="eval_command", metavar="SUBCOMMAND"))


def _register_compare(sub) -> None:
    """Add ``kepp eval compare``."""
    c = add_command(sub, "compare", "two methods of prediction records episode by episode: the 2x2 table, McNemar's "
                    "exact test, paired-bootstrap intervals of SR", COMPARE_EXAMPLES, _compare)
    c.add_argument("records", nargs="+", help="records files (.jsonl or .parquet, 'kepp eval --records', 'kepp "
                                              "records import') or folders of them (a 'kepp protocol' output folder, "
                                              "a folder the app reads: files whose names hold 'pred' or 'record')")
    c.add_argument("--a", required=True, metavar="METHOD", help="method A")
    c.add_argument("--b", required=True, metavar="METHOD", help="method B")
    c.add_argument("-T", "--horizons", type=int, nargs="+", default=None,
                   help="horizons (default: every T both methods were evaluated at)")
    c.add_argument("--fraction", type=float, default=None,
                   help="a protocol's training fraction (default: its largest)")
    c.add_argument("--resamples", type=int, default=catalog.BOOTSTRAP_RESAMPLES, help="bootstrap draws")
    c.add_argument("--confidence", type=float, default=catalog.CONFIDENCE, help="the intervals' two-sided level")
    c.add_argument("--seed", type=int, default=0, help="the bootstrap's random seed")
    c.add_argument("--cell", choices=list(catalog.AB_CELLS), default=None,
                   help="--episodes holds only this cell's episodes (default: every episode both planned)")
    c.add_argument("--episodes", default=None, metavar="CSV",
                   help="write the episodes with both methods' plans and verdicts side by side (CSV)")
    c.add_argument("--json", action="store_true", help="print the rows as JSON")
    writes(c, kinds={"episodes": "episodes"}, reads=("records",), reads_records=("records",))


def _eval(args) -> int:
    if args.from_records is not None:  # before the run's imports: scoring records loads no torch
        return _from_records(args)
    from kepp_core.evaluation.methods import UNCERTAINTY_COLUMNS, EvalOptions, evaluate_horizon
    from kepp_core.evaluation.options import MAX_SAMPLES
    from kepp_core.commands._outputs import write_records_output
    from kepp_core.evaluation.records import episode_records
    from kepp_core.io import atomic_write_json

    _run_defaults(args)
    if args.models is None:
        raise KeppError("--models is required: the models folder to evaluate (MODELS/T<h>/step, plan-graph-R1, ...), "
                        "or --from-records FILE|FOLDER to score recorded plans")
    set_threads(args)
    check_outputs(args.out, args.records)
    if args.samples and not 2 <= args.samples <= MAX_SAMPLES:
        raise KeppError(f"--samples {args.samples}: expected K from 2 to {MAX_SAMPLES} plans per episode")
    decode = _decode_override(args)
    ds = dataset_from_args(args)
    llm = _recommender(args, ds)
    models = Path(args.models)
    if not models.is_dir():
        raise KeppError(f"{models}: models folder not found (train with 'kepp train all')")
    rows, records, skipped = [], [], {}
    for setting in args.settings:
        root = models / setting if (models / setting).is_dir() else models
        for h in args.horizons:
            options = EvalOptions(setting=setting, m=_seconds(root, h), sampler=args.sampler,
                                  sampler_steps=args.sampler_steps, seed=args.seed, samples=args.samples,
                                  strict=args.strict, decode=decode, encoder=args.encoder)
            ev = evaluate_horizon(ds, root, h, args.methods, options, llm,
                                  log=lambda s: print(s) if not args.json else None)
            for r in ev.rows(args.metrics):
                if ev.step_accuracy:
                    r.update(ev.step_accuracy)
                rows.append(r)
            skipped.update({f"T={h} {setting} {k}": v for k, v in ev.skipped.items()})
            if args.records:
                records += episode_records(ev, ds.actions, seed=args.seed)
    if args.records:
        write_records_output(args, "records", records)
    if args.out:
        atomic_write_json(args.out, {"dataset": ds.name, "rows": rows, "skipped": skipped})
    if args.json:
        emit_json({"rows": rows, "skipped": skipped})
        return 0
    own = family(DEFAULT_FAMILY)  # this package's code: its columns head the default table
    if args.metrics != [DEFAULT_FAMILY]:
        _print_families(rows, args, ds.name)
    elif args.samples:  # narrower: the uncertainty columns replace the secondary ones
        cols = ["method", "T", *(m.column for m in own.table_metrics), "K", *UNCERTAINTY_COLUMNS, "episodes"]
        if llm is not None:
            cols.insert(-1, "llm_fallbacks")
        if len(args.settings) > 1:
            cols.insert(2, "setting")
    else:
        from kepp_core.evaluation.report import STEP_METRICS

        # the endpoint accuracies: the step model's and the endpoint model's always, a variant's or the text tower's where one ran
        ends = [m for i, m in enumerate(STEP_METRICS) if i < 4 or any(r.get(m) is not None for r in rows)]
        cols = ["method", "T", "setting", *own.columns, *ends, "episodes", "episodes_per_s"]
        if llm is not None:
            cols[-2:-2] = ["llm_plans", "llm_fallbacks"]
    if args.metrics == [DEFAULT_FAMILY]:
        print_table(rows, cols, title=f"{ds.name}: test episodes")
        _published_hint(args)
    for k, v in skipped.items():
        print(f"skipped {k}: {v}")
    if llm is not None:
        fb = [r for r in rows if r.get("llm_fallbacks")]
        print(f"LLM plans: fallback {llm.fallback.name!r} used for "
              + (", ".join(f"{r['method']} T={r['T']}: {r['llm_fallbacks']} of {r['episodes']} "
                           f"({', '.join(f'{k} ×{v}' for k, v in r['fallback_reasons'].items())})" for r in fb)
                 if fb else "no episode")
              + f"; {llm.client.requests} requests, {llm.client.cache_hits} cached replies")
    if args.records:
        print(f"records → {args.records} ({len(records)} episodes)")
    return 0


# What --from-records scores the records with: nothing of a dataset, models or a run is used.
_RUN_OPTIONS = ("models", "records", "samples", "decode", "decode_weight", "decode_samples", "encoder", "sampler",
                "sampler_steps", "save_decoding", "strict", "llm_url")


def _from_records(args) -> int:
    """``kepp eval --from-records``: per chosen code, the method × T table of the recorded plans
    (:func:`kepp_core.api.method_horizon_table`: mean over seeds, each header naming the code) and, with
    ``--json``, every (method, T, seed)'s numbers as the code computes them, unrounded."""
    from kepp_core import api
    from kepp_core.io import atomic_write_json

    given = [f"--{k.replace('_', '-')}" for k in _RUN_OPTIONS if getattr(args, k, None) not in (None, False, 0)]
    if given:
        raise KeppError(f"--from-records scores recorded plans: {', '.join(given)} belong to a run of models "
                        "(drop them, or drop --from-records)")
    from kepp_core.evaluation.runs import Runs
    from kepp_core.evaluation.store import plans_frame

    files = _records_files(args.from_records)
    preds = _recorded(plans_frame(files), args)  # the plans as the store's arrays: no tuple per record
    horizons = sorted(int(h) for h in preds["horizon"].unique())
    result = {"records": [str(f) for f in files], "tables": []}
    several = len(args.metrics) > 1  # each T's plans in run order kept for the next code
    tabled = Runs(preds, missing_seed=0, keep=several)  # grouped once, each T's IoUs counted once, for every code
    written = args.json or args.out  # every run's numbers: only where they are written
    # the runs written: the table's, unless a seed is missing (then a run of its own, where the table counts it as 0)
    runs = tabled if not written or preds["seed"].notna().all() else Runs(preds, keep=several)
    for code in args.metrics:
        fam = family(code)
        table, _ = api.method_horizon_table(preds, code, runs=tabled)
        if written:
            result["tables"].append({"code": code, "label": fam.label, "source": fam.source,
                                     "rows": [{"method": name, **cells} for name, cells in table.to_dict("index").items()],
                                     "runs": _run_values(runs, code)})
        if args.json:
            continue
        print_table([{"method": name, **cells} for name, cells in table.to_dict("index").items()],
                    title=f"{args.from_records}: recorded plans; {fam.label}'s metrics ({fam.source})")
        if args.benchmark is not None:
            _print_published(args.benchmark, horizons, code)
    if args.out:
        atomic_write_json(args.out, result)
    if args.json:
        emit_json(result)
    return 0


def _recorded(preds, args):
    """The recorded plans ``--from-records`` scores: those of ``-T`` and ``--methods`` where given (a
    horizon or method the records do not hold is refused, naming what they hold)."""
    where = printable(str(args.from_records))
    if preds.empty:
        raise KeppError(f"{where}: no recorded plans to score")
    for flag, column, wanted in (("-T", "horizon", args.horizons), ("--methods", "method", args.methods)):
        if wanted is None:
            continue
        held = sorted(preds[column].unique())
        missing = [w for w in wanted if w not in set(held)]
        if missing:
            raise KeppError(f"{where}: no records of {flag} {' '.join(printable(str(m)) for m in missing)} "
                            f"(the records hold {', '.join(printable(str(h)) for h in held)})")
        preds = preds[preds[column].isin(wanted)]
    return preds


def _run_values(runs, code: str) -> list[dict]:
    """Per method, T and seed of a predictions table (``runs``: its :class:`~kepp_core.evaluation.runs.Runs`), what
    the code ``code`` reports on its episodes (in the records' order), unrounded, with the file an imported method's
    plans came from: every run of a T counted at once on the store's ``[n, T]`` arrays, never a record at a time."""
    import numpy as np
    import pandas as pd

    values = runs.values(family(code))
    files, names = pd.factorize(runs.preds["imported"])  # -1: not imported
    some = files >= 0
    held = np.unique(runs.group[some] * len(names) + files[some])  # each run's imported files, once each
    imported: dict[int, list[str]] = {}
    for r, f in zip((held // max(len(names), 1)).tolist(), names[held % max(len(names), 1)].tolist()):
        imported.setdefault(r, []).append(f)
    rows = []
    for r, (method, horizon, seed) in enumerate(runs.keys):
        rows.append({"method": method, "T": int(horizon), "seed": None if seed == -1 else int(seed),
                     "episodes": int(runs.sizes[r]), **({"imported": ", ".join(sorted(imported[r]))} if r in imported else {}),
                     **{key: v[r] for key, v in values.items()}})
    return rows


def _print_families(rows: list[dict], args, name: str) -> None:
    """One table per chosen evaluation code (its headers name the code), each followed by the published
    numbers of ``--benchmark`` for the same horizons and code, as a table of their own."""
    for fam in args.metrics:
        f = family(fam)
        shown = [{"method": r["method"], "T": r["T"], **({"setting": r["setting"]} if len(args.settings) > 1 else {}),
                  **{m.header: r[m.column] for m in f.metrics}, "episodes": r["episodes"]} for r in rows]
        print_table(shown, title=f"{name}: test episodes, measured; {f.label}'s metrics ({f.source})")
        if args.benchmark is not None:
            _print_published(args.benchmark, args.horizons, fam)
    _published_hint(args)


def _print_published(benchmark: str, horizons, code: str) -> None:
    """The published numbers of ``benchmark`` at ``horizons`` computed with ``code``, as a table of their own
    (unconfirmed rows marked, :data:`~kepp_core.catalog.benchmark.LITERATURE_UNCONFIRMED`)."""
    from kepp_core.evaluation.literature import literature_rows, literature_table

    f = family(code)
    published = [p for h in horizons for p in literature_rows(benchmark, h, code)]
    if published:
        print_table(literature_table(published, code),
                    title=f"published on {benchmark} with {f.label}'s code: read from the papers, "
                          "not measured here, never averaged with the rows above")
        if not all(p.confirmed for p in published):
            print(LITERATURE_UNCONFIRMED)
    elif code != DEFAULT_FAMILY:
        print(f"no published numbers of {benchmark} T={', '.join(map(str, horizons))} with {f.label}'s code")


def _published_hint(args) -> None:
    """With ``--benchmark``: one line naming the codes whose published numbers the chosen ``--metrics`` hide."""
    if args.benchmark is None:
        return
    from kepp_core.evaluation.literature import literature_rows

    codes = sorted({r.code for h in args.horizons for r in literature_rows(args.benchmark, h)})
    if args.metrics == [DEFAULT_FAMILY]:
        print(f"published numbers for {args.benchmark}: computed with " + (", ".join(codes) or "no code") +
              ("; show them with --metrics " + " ".join(codes) if codes else "") +
              f" (the {DEFAULT_FAMILY} columns are this package's own)")
        return
    hidden = [c for c in codes if c not in args.metrics]
    if hidden:
        print(f"published numbers for {args.benchmark} also exist with "
              + ", ".join(f"{FAMILIES[c].label}'s code ({c})" for c in hidden)
              + f", not among --metrics {' '.join(args.metrics)}: show them with --metrics {' '.join(hidden)}")


def _compare(args) -> int:
    """``kepp eval compare``: per T, :func:`kepp_core.api.compare_methods` of the two methods."""
    from kepp_core import api
    from kepp_core.io import atomic_open

    if not 1 <= args.resamples <= 1_000_000:
        raise KeppError(f"--resamples {args.resamples}: expected 1..1000000 bootstrap draws")
    if not 0 < args.confidence < 1:
        raise KeppError(f"--confidence {args.confidence}: expected a level between 0 and 1 (e.g. 0.9)")
    files = [f for given in args.records for f in _records_files(given)]
    preds = api.read_predictions(files)
    recorded = sorted(map(str, preds["method"].unique()))
    for m in (args.a, args.b):
        if m not in recorded:
            raise KeppError(f"{', '.join(map(str, files))}: no records of method {m!r} (recorded: "
                            f"{', '.join(recorded) or 'none'})")
    both = set.intersection(*(set(preds.loc[preds["method"] == m, "horizon"].astype(int)) for m in (args.a, args.b)))
    if not both:
        raise KeppError(f"{args.a!r} and {args.b!r} were not evaluated at a common T")
    horizons = args.horizons or sorted(both)
    if set(horizons) - both:
        raise KeppError(f"-T {' '.join(map(str, sorted(set(horizons) - both)))}: {args.a!r} and {args.b!r} were both "
                        f"evaluated at T={', '.join(map(str, sorted(both)))}")
    found = [api.compare_methods(preds, args.a, args.b, h, args.fraction, args.resamples, args.confidence, args.seed)
             for h in horizons]
    if args.episodes:
        import pandas as pd

        with atomic_open(args.episodes, "w", encoding="utf-8", newline="") as f:
            pd.concat([c.table(args.cell) for c in found]).to_csv(f, index=False)
    if args.json:
        emit_json({"rows": [c.row() for c in found]})
        return 0
    level = f"{round(args.confidence * 100)}%"
    rows = [{"T": c.horizon, "units": len(c.units), **{catalog.AB_CELLS[k]: v for k, v in c.counts.items()},
             "SR A": _with_interval(c.sr_a, c.sr_a_interval), "SR B": _with_interval(c.sr_b, c.sr_b_interval),
             "A - B": _with_interval(c.delta, c.delta_interval, "+"),
             **({f"p ({c.test_name})": catalog.p_text(c.p)} if len({f.test_name for f in found}) == 1 else
                {"test": c.test_name, "p": catalog.p_text(c.p)})} for c in found]
    print_table(rows, title=f"A = {catalog.method_label(args.a)} ({args.a}), B = {catalog.method_label(args.b)} "
                            f"({args.b}): SR in %, [{level} interval]")
    for c in found:
        print(f"T={c.horizon}: {c.verdict()}")
        if c.stratified:  # the seeds' own numbers beside the combined p
            print(f"T={c.horizon} per seed (A right B wrong b, B right A wrong c, McNemar's exact p): "
                  + "; ".join(f"seed {t.seed}: b={t.b:,} c={t.c:,} p={catalog.p_text(t.p)}" for t in c.per_seed))
    print(f"p: {found[0].test}" + (" over (seed, test episode) units" if found[0].seeds > 1 and not found[0].stratified
                                   else "") + f"; intervals: {found[0].resampling()}")
    if args.episodes:
        print(f"episodes → {args.episodes} ({sum(len(c.select(args.cell)) for c in found)} rows)")
    return 0


def _records_files(path) -> list[Path]:
    """The records files ``path`` names (:func:`kepp_core.evaluation.store.records_in`: a file, or every file of a
    folder that reads as records, whatever its name), those of the folder that are not records named on stderr."""
    from kepp_core.evaluation.store import records_in

    files, skipped = records_in(path)
    for s in skipped:
        print(f"kepp: {s.line()}", file=sys.stderr)
    return files


def _with_interval(value: float, interval: tuple[float, float], sign: str = "") -> str:
    return f"{value:{sign}.2f} [{interval[0]:{sign}.2f}, {interval[1]:{sign}.2f}]"


def _seconds(root: Path, horizon: int) -> int:
    """Seconds per observation ``M`` the step model of ``ROOT/T<h>`` was made for (the default
    where there is none: the methods that need it are skipped)."""
    from kepp_core.catalog import STEP, model_folder, models_dir
    from kepp_core.catalog import DEFAULT_M
    from kepp_core.models.spec import load_spec

    folder = models_dir(root, horizon) / model_folder(STEP)
    try:
        return load_spec(folder).m if folder.is_dir() else DEFAULT_M
    except KeppError:
        return DEFAULT_M  # an unreadable config is reported, with its reason, when the method loads it


def _decode_override(args):
    """The graph-decoded methods' decoding from ``--decode``, ``--decode-weight`` and ``--decode-samples``
    (parts not given are chosen on validation)."""
    from kepp_core.evaluation.options import DecodeOverride, parse_decode_mode
    from kepp_core.graph.decoding import TOPK

    samples = parse_decode_samples(args.decode_samples) if args.decode_samples is not None else 1
    try:
        mode, k = parse_decode_mode(args.decode) if args.decode is not None else (None, TOPK)
    except KeppError as e:
        raise KeppError(f"--decode: {e}") from None
    lam = parse_decode_weight(args.decode_weight) if args.decode_weight is not None else None
    return DecodeOverride(mode, lam, k, samples, save=args.save_decoding)


def parse_decode_weight(text) -> float:
    """λ of ``--decode-weight``: a finite number >= 0 (KeppError otherwise)."""
    from kepp_core.graph.decoding import check_weight

    try:
        lam = float(text)
    except (TypeError, ValueError):
        raise KeppError(f"--decode-weight {text!r}: expected a number >= 0") from None
    return check_weight(lam, "--decode-weight")


def parse_decode_samples(text) -> int:
    """K of ``--decode-samples``: a whole number >= 1 (KeppError otherwise)."""
    if isinstance(text, bool) or not (whole_number(text) or 0) >= 1:
        raise KeppError(f"--decode-samples {str(text)[:40]!r}: expected a whole number K >= 1")
    return whole_number(text)


def _recommender(args, ds):
    """The LLM recommender when an LLM method is asked for and an endpoint is configured."""
    import os

    from kepp_core.commands.llm_args import recommender_from_args
    from kepp_core.llm.client import ENV_URL

    if not set(args.methods) & set(_llm_methods()):
        return None
    if not (args.llm_url or os.environ.get(ENV_URL)):
        return None  # the LLM methods are skipped, saying why (or fail with --strict)
    return recommender_from_args(args, ds)


def _llm_methods() -> tuple[str, ...]:
    """The methods that need an LLM endpoint (run only when named)."""
    return tuple(m.name for m in catalog.methods() if m.llm)
