"""``kepp eval``: the methods table (SR, mAcc, mIoU) for some horizons and observation settings."""

from __future__ import annotations

from pathlib import Path

from kepp_core.commands._common import add_command, add_dataset_args, dataset_from_args, emit_json, print_table

EXAMPLES = """  kepp eval --dataset demo --models models --horizons 3 4 5 6
  kepp eval --dataset demo --models models -T 4 --methods kepp-R1 kepp-nograph --sampler ddim --sampler-steps 10
  kepp eval --dataset demo --models models --settings conventional pdpp --records runs/preds.jsonl --out runs/table.json
  kepp eval --dataset demo --models assets/demo --methods kepp-R1 kepp-nograph --samples 20 --out runs/unc.json
  (--samples K: K sampled plans per episode → NLL, KL, mode precision/recall next to SR/mAcc/mIoU)
  (for --settings pdpp the models come from MODELS/pdpp/ when that folder exists)"""


def register(sub) -> None:
    from kepp_core.evaluation.methods import METHODS

    p = add_command(sub, "eval", "evaluate KEPP and the baselines on the test split", EXAMPLES, _eval)
    add_dataset_args(p)
    p.add_argument("--models", required=True, help="models folder (MODELS/T<h>/step, plan-graph-R1, ...)")
    p.add_argument("-T", "--horizons", type=int, nargs="+", default=[3, 4, 5, 6])
    p.add_argument("--settings", nargs="+", choices=["conventional", "pdpp"], default=["conventional"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), help=f"subset of: {' '.join(METHODS)}")
    p.add_argument("--sampler", choices=["ddpm", "ddim"], default=None, help="override the models' sampler")
    p.add_argument("--sampler-steps", type=int, default=None, help="DDIM steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, metavar="K",
                   help="draw K plans per test episode and report NLL, KL, mode precision and recall")
    p.add_argument("--strict", action="store_true", help="fail instead of skipping methods without models")
    p.add_argument("--records", default=None, help="per-episode predictions (.jsonl or .parquet)")
    p.add_argument("--out", default=None, help="write the table rows as JSON")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def _eval(args) -> int:
    from kepp_core.errors import KeppError
    from kepp_core.evaluation.methods import UNCERTAINTY_COLUMNS, evaluate_horizon
    from kepp_core.evaluation.report import episode_records, write_records
    from kepp_core.io import atomic_write_json
    from kepp_core.training.loop import set_cpu_threads

    set_cpu_threads(args.threads)
    ds = dataset_from_args(args)
    models = Path(args.models)
    if not models.is_dir():
        raise KeppError(f"{models}: models folder not found (train with 'kepp train all')")
    rows, records, skipped = [], [], {}
    for setting in args.settings:
        root = models / setting if (models / setting).is_dir() else models
        for h in args.horizons:
            ev = evaluate_horizon(ds, root, h, setting, args.methods, sampler=args.sampler,
                                  sampler_steps=args.sampler_steps, seed=args.seed, strict=args.strict,
                                  samples=args.samples, log=lambda s: print(s) if not args.json else None)
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
        if len(args.settings) > 1:
            cols.insert(2, "setting")
    else:
        cols = ["method", "T", "setting", "SR", "mAcc", "mIoU", "mIoU_b256", "first_acc", "last_acc",
                "episodes", "episodes_per_s"]
    print_table(rows, cols, title=f"{ds.name}: test episodes")
    for k, v in skipped.items():
        print(f"skipped {k}: {v}")
    if args.records:
        print(f"records → {args.records} ({len(records)} episodes)")
    return 0
