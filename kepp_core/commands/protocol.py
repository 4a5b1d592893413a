"""``kepp protocol SPEC.toml``: train what is missing over seeds, evaluate, and report mean ± 90% CI
and paired tests (:mod:`kepp_core.experiments.protocol`)."""

from __future__ import annotations

from kepp_core.catalog.benchmark import FAMILIES
from kepp_core.catalog import models_dir, parse_model_folder
from kepp_core.commands._common import add_command, add_device_option, set_threads, writes
from kepp_core.commands.train import add_print_args
from kepp_core.errors import KeppError

EXAMPLES = """  kepp protocol runs/graph.toml --threads 1
  kepp protocol runs/graph.toml --seeds 2 --out runs/graph-2seeds
  kepp protocol runs/graph.toml --train-fraction 0.25 0.5 1.0     # data-efficiency curves
  kepp protocol runs/graph.toml --print-commands > runs.txt       # the training runs as a run list
  kepp protocol runs/graph.toml --print-commands --stage 1 > stage1.txt
  kepp protocol runs/graph.toml                                   # afterwards: evaluates, trains nothing

  --print-commands prints one self-contained 'kepp train ...' line per model the spec's methods
  need (every fraction, seed and horizon) instead of running: stage 1 (step models, planning
  models without the graph, the task classifier) in any order, then stage 2 (graph-conditioned
  planning models, which read their horizon's finished step model). Without --stage both stages
  are printed after '# stage N' comment lines (the file runs as a shell script); --stage N
  prints that stage's lines only, one run per line (a job array runs line $SLURM_ARRAY_TASK_ID).
  Each line carries --skip-finished (finished models are skipped, killed runs resume). The
  lines give the models this command would train; run them from this directory, then run this
  command without --print-commands to evaluate.

  A spec (TOML):
    dataset = "demo"
    horizons = [3, 4]
    methods = ["random", "graph-gt", "kepp-nograph", "kepp-nograph+dec", "kepp-R1", "kepp-R1+dec"]
    seeds = 5
    preset = "demo"
    pairs = [["kepp-R1+dec", "kepp-nograph"]]
    out = "runs/protocol"
    metrics = ["kepp", "pdpp", "vpn"]       # each evaluation code's columns (kepp: this package's, the default)
    [train]
    train_steps = 300

  The unified benchmark (ViterbiPlanNet's split lists; protocols/benchmark-*.toml):
    kepp protocol protocols/benchmark-niv.toml --lists-dir NIV --features NIV/processed_data
    (each horizon trains and tests on its own lists; the results add the benchmark's own bootstrap
     interval beside the Student t one, and the published numbers of that dataset apart)"""


def register(sub) -> None:
    """Add ``kepp protocol``."""
    p = add_command(sub, "protocol", "train and evaluate methods over seeds: mean ± CI and paired tests",
                    EXAMPLES, _protocol)
    p.add_argument("spec", help="protocol spec (TOML)")
    p.add_argument("--out", default=None, help="output folder (overrides the spec's 'out')")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds 0..N-1 (overrides the spec)")
    p.add_argument("--train-fraction", type=float, nargs="+", default=None, metavar="F",
                   help="fractions of the training videos (nested subsets; overrides the spec)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: $KEPP_THREADS or half the cores)")
    p.add_argument("--features", default=None, metavar="DIR", help="the feature folder (overrides the spec's)")
    p.add_argument("--lists-dir", default=None, metavar="DIR",
                   help="the folder the spec's split lists and taxonomy are named in (e.g. ViterbiPlanNet's dataset/NIV)")
    p.add_argument("--metrics", nargs="+", default=None, metavar="CODE",
                   help="the evaluation codes whose metrics the results report (overrides the spec): "
                        f"{', '.join(FAMILIES)}")
    add_device_option(p)
    add_print_args(p)
    writes(p, folders={"out": _protocol_output}, reads=("spec",))


def _protocol_output(args):
    """What ``kepp protocol`` writes into its spec's ``out`` (nothing with --print-commands; None where the
    spec is wrong: the command says so)."""
    if args.print_commands:
        return None
    try:
        return protocol_output(_spec(args), args.spec)
    except KeppError:
        return None


def protocol_output(spec, spec_path: str, extra: tuple[tuple[str, str], ...] = ()):
    """What a protocol run of ``spec`` (read from ``spec_path``) writes into its ``out``: records, results
    (and ``extra``: more ``(file name, kind)``), its models' configs, and what the spec names that it reads
    (its lists, the split file ``root`` names, its feature folder)."""
    from pathlib import Path

    from kepp_core.catalog import RECORDS_FILE, RESULTS_FILE
    from kepp_core.commands._outputs import RECORDS, FolderOutput, model_configs, split_file_inputs

    out, named = Path(spec.out), f"{spec_path}, which names it"
    reads = [p for h in spec.horizons if spec.lists(h) is not None
             for p in (spec.lists(h).train, spec.lists(h).test, spec.lists(h).taxonomy) if p is not None]
    reads += [Path(p) for p in (spec.root, spec.features) if p is not None]
    inputs = [(named, p) for p in reads] + (split_file_inputs(Path(spec.root), f"{spec_path}'s root {spec.root}")
                                               if spec.root else [])
    files = ((out / RECORDS_FILE, RECORDS), (out / RESULTS_FILE, "results"),
             *((out / name, kind) for name, kind in extra), *model_configs(Path(spec.models or spec.out)))
    return FolderOutput(folder=out, files=files, inputs=tuple(inputs),
                        run_keys=frozenset((m, s, None, None) for m in spec.methods for s in spec.seeds))


def _protocol(args) -> int:
    from kepp_core.experiments.protocol import run_protocol

    if args.stage is not None and not args.print_commands:
        raise KeppError("--stage goes with --print-commands")
    spec = _spec(args)
    if args.print_commands:
        print(protocol_commands(spec, args.stage, args.threads, args.device), end="")
        return 0
    set_threads(args)
    result = run_protocol(spec)
    print(f"\n{len(result['rows'])} rows in {result['seconds']:.0f}s → {spec.out}/results.md, results.json, "
          f"records.jsonl")
    return 0


def _spec(args):
    """The spec file with the command line's overrides."""
    from kepp_core.experiments.protocol import load_protocol, override_spec

    spec = load_protocol(args.spec)
    lists = {}
    if args.lists_dir is not None:
        from pathlib import Path

        if not Path(args.lists_dir).is_dir():
            raise KeppError(f"--lists-dir {args.lists_dir}: folder not found")
        lists = {k: str(Path(args.lists_dir) / getattr(spec, k)) for k in ("train_list", "test_list", "taxonomy")
                 if getattr(spec, k) is not None}
        if not lists:
            raise KeppError(f"--lists-dir: {args.spec} names no split lists (train_list, test_list)")
    return override_spec(spec, args.spec, out=args.out, seeds=args.seeds, train_fractions=args.train_fraction,
                         features=args.features, metrics=args.metrics, **lists)


def protocol_commands(spec, stage: int | None = None, threads: int | None = None, device: str | None = None) -> str:
    """The run list of a protocol spec: one ``kepp train`` line per (fraction, seed, horizon,
    model the methods need), the models ``run_protocol`` would train, in its folders."""
    from pathlib import Path

    from kepp_core.commands.runlist import data_args, format_commands, train_command
    from kepp_core.experiments.protocol import members_for

    data = {h: data_args(spec.dataset, spec.root, spec.features, lists=spec.lists(h)) for h in spec.horizons}
    roles = [parse_model_folder(m) for m in members_for(spec.methods)]
    cmds = []
    for fraction in spec.train_fractions:
        for seed in spec.seeds:
            root = Path(spec.models or spec.out) / f"frac{round(fraction * 100)}" / f"seed{seed}"
            cmds += [train_command(r, spec.config(h, seed), spec.preset, models_dir(root, h), data[h], fraction, threads,
                                   device=device)
                     for h in spec.horizons for r in roles]
    return format_commands(cmds, stage)
