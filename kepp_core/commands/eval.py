"""``kepp eval``: the methods table (SR, mAcc, mIoU) for some horizons and observation settings."""

from __future__ import annotations

from pathlib import Path

from kepp_core import catalog
from kepp_core.commands._common import (add_command, add_dataset_args, check_outputs, dataset_from_args, emit_json,
                                        print_table, set_threads, writes)
from kepp_core.errors import KeppError

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
  (+jdec-text: the +jdec row decoded jointly with the text tower's distributions instead of the endpoint model's)"""


def register(sub) -> None:
    """Add ``kepp eval`` (its ``--methods`` choices come from the method catalogue)."""
    from kepp_core.commands.llm_args import add_llm_args

    defaults = tuple(m.name for m in catalog.methods() if m.default and not m.llm)
    others = tuple(m.name for m in catalog.methods() if not m.default and not m.llm) + _llm_methods()

    p = add_command(sub, "eval", "evaluate KEPP and the baselines on the test split", EXAMPLES, _eval)
    add_dataset_args(p)
    p.add_argument("--models", required=True, help="models folder (MODELS/T<h>/step, plan-graph-R1, ...)")
    p.add_argument("-T", "--horizons", type=int, nargs="+", default=list(catalog.TABLE_HORIZONS))
    p.add_argument("--settings", nargs="+", choices=list(catalog.SETTINGS), default=[catalog.DEFAULT_SETTING])
    p.add_argument("--methods", nargs="+", default=list(defaults), help=f"subset of: {' '.join(defaults + others)} "
                                                                     f"(default: {' '.join(defaults)})")
    p.add_argument("--sampler", choices=["ddpm", "ddim"], default=None, help="override the models' sampler")
    p.add_argument("--sampler-steps", type=int, default=None, help="DDIM steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, metavar="K",
                   help="draw K plans per test episode and report NLL, KL, mode precision and recall")
    p.add_argument("--strict", action="store_true", help="fail instead of skipping methods without models")
    p.add_argument("--records", default=None, help="per-episode predictions (.jsonl or .parquet)")
    p.add_argument("--out", default=None, help="write the table rows as JSON")
    writes(p, "out", "records")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
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


def _eval(args) -> int:
    from kepp_core.evaluation.methods import UNCERTAINTY_COLUMNS, EvalOptions, evaluate_horizon
    from kepp_core.evaluation.options import MAX_SAMPLES
    from kepp_core.evaluation.records import episode_records, write_records
    from kepp_core.io import atomic_write_json

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
            for r in ev.rows():
                if ev.step_accuracy:
                    r.update(ev.step_accuracy)
                rows.append(r)
            skipped.update({f"T={h} {setting} {k}": v for k, v in ev.skipped.items()})
            if args.records:
                records += episode_records(ev, ds.actions, seed=args.seed)
    if args.records:
        write_records(args.records, records)
    if args.out:
        atomic_write_json(args.out, {"dataset": ds.name, "rows": rows, "skipped": skipped})
    if args.json:
        emit_json({"rows": rows, "skipped": skipped})
        return 0
    if args.samples:  # narrower: the uncertainty columns replace the secondary ones
        cols = ["method", "T", "SR", "mAcc", "mIoU", "K", *UNCERTAINTY_COLUMNS, "episodes"]
        if llm is not None:
            cols.insert(-1, "llm_fallbacks")
        if len(args.settings) > 1:
            cols.insert(2, "setting")
    else:
        from kepp_core.evaluation.report import STEP_METRICS

        # the endpoint accuracies: the step model's and the endpoint model's always, a variant's or the text tower's where one ran
        ends = [m for i, m in enumerate(STEP_METRICS) if i < 4 or any(r.get(m) is not None for r in rows)]
        cols = ["method", "T", "setting", "SR", "mAcc", "mIoU", "mIoU_b256", "ends", "SR_ends", *ends,
                "episodes", "episodes_per_s"]
        if llm is not None:
            cols[-2:-2] = ["llm_plans", "llm_fallbacks"]
    print_table(rows, cols, title=f"{ds.name}: test episodes")
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
    if isinstance(text, bool) or not str(text).strip().isdigit() or int(text) < 1:
        raise KeppError(f"--decode-samples {text!r}: expected a whole number K >= 1")
    return int(text)


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
