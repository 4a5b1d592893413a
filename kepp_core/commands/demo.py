"""``kepp demo``: the synthetic world, its models and the app, in one command.

``kepp demo`` builds the demo world if it is not cached, uses the shipped checkpoints in
``assets/demo`` (or trains the models once into the cache), then starts the Streamlit app: the command
``kepp app``, which the app plugs in (:func:`kepp_core.commands.plugins.run_plugin`).
The training and evaluation behind ``kepp demo table`` / ``kepp demo models`` live in
:mod:`kepp_core.experiments.demo`; this module parses arguments and prints.
"""

from __future__ import annotations

from pathlib import Path

from kepp_core.commands._common import add_command, add_device_option, print_table, set_threads, writes
from kepp_core.errors import KeppError
from kepp_core.catalog import DEMO_HORIZONS, SETTINGS
from kepp_core.paths import DEMO_ASSETS, DEMO_TABLE_SPEC


EXAMPLES = """  kepp demo                      # world + models + app
  kepp demo --no-app             # world + models, then print where they are
  kepp demo table --seeds 3      # train and evaluate T=3..6 over 3 seeds (the README table)
  kepp demo models --out assets/demo   # train the shipped demo checkpoints
  kepp demo models --from assets/demo --out assets/demo   # evaluate them again: records, decoding.json"""


def register(sub) -> None:
    """Add ``kepp demo`` with its ``table`` and ``models`` sub-commands."""
    p = add_command(sub, "demo", "the demo: synthetic world, trained models and the app", EXAMPLES, _demo)
    p.add_argument("--no-app", action="store_true", help="do not start the app")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--threads", type=int, default=None, help="CPU threads")
    add_device_option(p)
    dsub = p.add_subparsers(dest="demo_command", metavar="SUBCOMMAND")
    t = add_command(dsub, "table", "train and evaluate every method on the demo world (mean ± std over seeds): "
                    "a protocol spec run by the protocol runner ('kepp protocol')",
                    "  kepp demo table --seeds 3\n  kepp demo table --seeds 1 --horizons 4 --out runs/t4", _table)
    t.add_argument("--spec", default=str(DEMO_TABLE_SPEC),
                   help="the protocol spec (TOML) the table runs; the options below override its keys")
    t.add_argument("--seeds", type=int, default=None, help="number of training seeds 0..N-1 (None: the spec's)")
    t.add_argument("--horizons", type=int, nargs="+", default=None, help="horizons (None: the spec's)")
    t.add_argument("--out", default=None, help="folder of models, records and the table (None: the spec's)")
    t.add_argument("--setting", choices=list(SETTINGS), default=None,
                   help="observation setting, train and test (None: the spec's)")
    t.add_argument("--retrain", action="store_true", help="train even where models exist")
    t.add_argument("--train-steps", type=int, default=None, help="override the preset's training steps")
    t.add_argument("--threads", type=int, default=None, help="CPU threads")
    add_device_option(t)
    writes(t, folders={"out": _table_output}, reads=("spec",))
    m = add_command(dsub, "models", "train the demo models for the app (what assets/demo ships)",
                    "  kepp demo models --out assets/demo", _models)
    m.add_argument("--out", default=str(DEMO_ASSETS))
    m.add_argument("--horizons", type=int, nargs="+", default=list(DEMO_HORIZONS))
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--from", dest="source", default=None,
                   help="copy trained models from this folder (e.g. runs/demo-table/frac100/seed0) instead of "
                        "training; the --out folder itself: evaluate its models again")
    m.add_argument("--threads", type=int, default=None, help="CPU threads")
    add_device_option(m)
    writes(m, folders={"out": _models_output})  # --from the --out folder itself: its models evaluated again


def _world():
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world

    root = ensure_world()
    return root, load_dataset("demo", root)


def _demo(args) -> int:
    from kepp_core.experiments.demo import ensure_demo_models

    set_threads(args)
    root, ds = _world()
    models, how = ensure_demo_models(ds)
    print(f"demo world: {root} ({len(ds.videos)} videos, {len(ds.tasks)} tasks, {ds.num_actions} actions)")
    print(f"models: {models} ({how})")
    if args.no_app:
        return 0
    from kepp_core.commands.plugins import run_plugin

    # the app is a plug-in (`kepp app`): started as that command, where one is installed
    status = run_plugin("app", ["--checkpoints", str(models), "--port", str(args.port),
                                *(["--device", args.device] if args.device else [])])
    if status is None:
        print(f"no app installed ('kepp app'); plan with KEPPPlanner.from_models({str(models)!r}, horizon=4)")
    return status or 0


def _table_spec(args):
    """The table's protocol spec with the command line's overrides."""
    from kepp_core.experiments.protocol import load_protocol, override_spec

    if args.seeds is not None and args.seeds < 1:
        raise KeppError(f"--seeds {args.seeds}: need at least one seed")
    spec = load_protocol(args.spec)
    train = {**spec.train, "train_steps": args.train_steps} if args.train_steps is not None else None
    return override_spec(spec, args.spec, seeds=args.seeds, horizons=args.horizons, out=args.out,
                         setting=args.setting, train=train)


def _table_output(args):
    """What ``kepp demo table`` writes into its spec's ``out``: the protocol's files and the table."""
    from kepp_core.commands.protocol import protocol_output

    try:
        return protocol_output(_table_spec(args), args.spec, extra=(("table.json", "results"),))
    except KeppError:
        return None  # the command says what is wrong with the spec


def _models_output(args):
    """What ``kepp demo models`` writes into ``--out``: its models and their records."""
    from kepp_core.commands._outputs import RECORDS, FolderOutput, model_configs

    out = Path(args.out)
    return FolderOutput(folder=out, files=((out / "predictions.jsonl", RECORDS), *model_configs(out)))


def _models(args) -> int:
    from kepp_core.experiments.demo import train_demo_models

    set_threads(args)
    _, ds = _world()
    man = train_demo_models(ds, Path(args.out), args.horizons, args.seed,
                            Path(args.source) if args.source else None)
    print_table([{"T": h[1:], "method": m, **v} for h, ms in man["metrics"].items() for m, v in ms.items()
                 if m != "step"], ["T", "method", "SR", "mAcc", "mIoU"], title=f"demo models → {args.out}")
    return 0


def _table(args) -> int:
    from kepp_core.data.synth import ensure_world
    from kepp_core.evaluation.report import horizon_table
    from kepp_core.experiments.demo import run_table

    set_threads(args)
    spec = _table_spec(args)
    if spec.dataset == "demo" and spec.root is None:
        ensure_world()  # the default demo world, built where it is missing (the runner only loads it)
    res = run_table(spec, retrain=args.retrain)
    print(horizon_table(res["summary"], list(spec.horizons)))
    c = res["claim"]
    print(f"KEPP R=1 beats KEPP without the graph condition at T=4 and T=5 (mean SR over {len(spec.seeds)} seeds): "
          f"{'yes' if c['holds'] else 'NO'} {c['per_horizon']}")
    print(f"table → {Path(spec.out) / 'table.md'}, {Path(spec.out) / 'table.json'}")
    return 0
