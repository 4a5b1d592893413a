"""``kepp records import``: another method's predictions as prediction records
(:mod:`kepp_core.evaluation.imports`)."""

from __future__ import annotations

from pathlib import Path

from kepp_core.commands._common import add_command, check_outputs, writes
from kepp_core.evaluation.imports import FORMATS

# where the imported records go, after each format's own example (kepp_core.evaluation.imports.FORMATS)
AFTER_EXAMPLES = """  kepp eval ... --dataset split-lists --train-list train70_3.json --test-list test30_3.json \
      --records runs/compare/kepp-records.jsonl
  kepp app --predictions runs/compare ...      # the records folder: both methods side by side"""


def register(sub) -> None:
    """Add ``kepp records import``."""
    p = sub.add_parser("records", help="prediction records: bring in other methods' predictions")
    rsub = p.add_subparsers(dest="records_command", metavar="SUBCOMMAND", required=True)
    examples = "\n".join([*(f.example for f in FORMATS.values()), AFTER_EXAMPLES])
    i = add_command(rsub, "import", "another method's predictions on a split list, as prediction records", examples,
                    _import)
    i.add_argument("--format", required=True, choices=list(FORMATS),
                   help="; ".join(f"{f.name}: {f.help}" for f in FORMATS.values()))
    i.add_argument("--predictions", required=True, metavar="FILE", help="the predictions file")
    i.add_argument("--split", required=True, metavar="LIST", help="the split list the predictions were made on")
    i.add_argument("--method", required=True, metavar="NAME", help="the name the imported method goes by")
    i.add_argument("--taxonomy", default=None, metavar="FILE", help="step names, for predictions that name their steps")
    i.add_argument("--seed", type=int, default=None, help="the run's seed, kept with each record")
    i.add_argument("--out", required=True, metavar="RECORDS", help="records file to write (.jsonl or .parquet)")
    writes(i, kinds={"out": "records"}, reads=("predictions", "split", "taxonomy"), run_keys=_run_keys)


def _run_keys(args) -> set[tuple]:
    """The ``(method, seed, T, imported from)`` of the records this import writes (any T: the list's)."""
    return {(args.method, args.seed, None, Path(args.predictions).name)}


def _import(args) -> int:
    from kepp_core.catalog.benchmark import FAMILIES
    from kepp_core.evaluation.imports import import_predictions
    from kepp_core.commands._outputs import write_records_output

    check_outputs(args.out)
    records = import_predictions(args.predictions, args.split, args.method, args.format, args.taxonomy, args.seed)
    write_records_output(args, "out", records)
    plans, gt = [r["plans"][args.method] for r in records], [r["gt"] for r in records]
    print(f"{args.method}: {len(records)} episodes (T={records[0]['T']}) from {args.predictions}")
    for code in FAMILIES.values():
        print(f"  {code.summary(code.scores(plans, gt))}")
    print(f"records → {args.out}")
    return 0
