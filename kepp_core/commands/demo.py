"""``kepp demo``: the synthetic world, its models and the app, in one command.

``kepp demo`` builds the demo world if it is not cached, uses the shipped checkpoints in
``assets/demo`` (or trains the models once into the cache), then starts the Streamlit app.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kepp_core.commands._common import add_command, print_table
from kepp_core.errors import KeppError

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "assets" / "demo"
DEMO_HORIZONS = (3, 4, 5, 6)
# What the app shows for each horizon (KEPP R=1/R=2 and the no-graph ablation).
DEMO_MEMBERS = ("step", "plan-graph-R1", "plan-graph-R2", "plan-none")

EXAMPLES = """  kepp demo                      # world + models + app
  kepp demo --no-app             # world + models, then print where they are
  kepp demo table --seeds 3      # train and evaluate T=3..6 over 3 seeds (the README table)
  kepp demo models --out assets/demo   # train the shipped demo checkpoints"""


def register(sub) -> None:
    p = add_command(sub, "demo", "the demo: synthetic world, trained models and the app", EXAMPLES, _demo)
    p.add_argument("--no-app", action="store_true", help="do not start the app")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--threads", type=int, default=None, help="CPU threads")
    dsub = p.add_subparsers(dest="demo_command", metavar="SUBCOMMAND")
    t = add_command(dsub, "table", "train and evaluate every method on the demo world (mean ± std over seeds)",
                    "  kepp demo table --seeds 3\n  kepp demo table --seeds 1 --horizons 4 --out runs/t4", _table)
    t.add_argument("--seeds", type=int, default=3, help="number of training seeds (0..N-1)")
    t.add_argument("--horizons", type=int, nargs="+", default=list(DEMO_HORIZONS))
    t.add_argument("--out", default="runs/demo-table", help="folder of models, predictions and the table")
    t.add_argument("--setting", choices=["conventional", "pdpp"], default="conventional",
                   help="observation setting (train and test)")
    t.add_argument("--retrain", action="store_true", help="train even where models exist")
    t.add_argument("--train-steps", type=int, default=None, help="override the demo preset")
    t.add_argument("--threads", type=int, default=None, help="CPU threads")
    m = add_command(dsub, "models", "train the demo models for the app (what assets/demo ships)",
                    "  kepp demo models --out assets/demo", _models)
    m.add_argument("--out", default=str(ASSETS))
    m.add_argument("--horizons", type=int, nargs="+", default=list(DEMO_HORIZONS))
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--from", dest="source", default=None,
                   help="copy trained models from this folder (e.g. runs/demo-table/seed0) instead of training")
    m.add_argument("--threads", type=int, default=None, help="CPU threads")


def _world():
    from kepp_core.data import load_dataset
    from kepp_core.data.synth import ensure_world

    root = ensure_world()
    return root, load_dataset("demo", root)


def _demo(args) -> int:
    from kepp_core.training.loop import set_cpu_threads

    set_cpu_threads(args.threads)
    root, ds = _world()
    models, how = ensure_models(ds)
    print(f"demo world: {root} ({len(ds.videos)} videos, {len(ds.tasks)} tasks, {ds.num_actions} actions)")
    print(f"models: {models} ({how})")
    app = REPO / "app" / "Home.py"
    if args.no_app or not app.is_file():
        if not app.is_file():
            print(f"no app at {app}; plan with KEPPPlanner.from_models({str(models)!r}, horizon=4)")
        return 0
    from kepp_core.commands.app import AppOptions, launch_app

    return launch_app(AppOptions(checkpoints=str(models), port=args.port))


def ensure_models(ds, horizons=DEMO_HORIZONS) -> tuple[Path, str]:
    """The shipped checkpoints when they match the world, else models trained once into the cache."""
    from kepp_core.models.checkpoint import read_config

    def usable(root: Path) -> bool:
        try:
            return all(read_config(root / f"T{h}" / m)["dataset"]["vocabulary_hash"] == ds.vocabulary_hash()
                       for h in horizons for m in DEMO_MEMBERS)
        except KeppError:
            return False

    if usable(ASSETS):
        return ASSETS, "shipped checkpoints"
    from kepp_core.data.synth import default_world_root

    cache = default_world_root().parent / "demo-models"
    if usable(cache):
        return cache, "trained earlier"
    train_demo_models(ds, cache, horizons)
    return cache, "trained now"


SHIPPED_FILES = ("model.safetensors", "config.json", "graph.json", "metrics.jsonl")  # no resume state


def train_demo_models(ds, out: Path, horizons=DEMO_HORIZONS, seed: int = 0, source: Path | None = None) -> dict:
    """Train the demo members for ``horizons`` (or copy them from ``source``, a models folder such
    as one seed of ``kepp demo table``), evaluate them and record the metrics in ``manifest.json``."""
    import shutil

    from kepp_core.data.synth import world_fingerprint
    from kepp_core.evaluation.methods import evaluate_horizon
    from kepp_core.evaluation.report import episode_records, write_records
    from kepp_core.io import atomic_write_json
    from kepp_core.training import preset
    from kepp_core.training.suite import train_horizon

    cfg = preset("demo", seed=seed)
    out = Path(out)
    metrics, records = {}, []
    for h in horizons:
        if source is None:
            train_horizon(ds, replace(cfg, horizon=h), out, DEMO_MEMBERS)
        else:
            for m in DEMO_MEMBERS:
                src, dst = Path(source) / f"T{h}" / m, out / f"T{h}" / m
                if not (src / "config.json").is_file():
                    raise KeppError(f"{src}: no trained model to copy")
                dst.mkdir(parents=True, exist_ok=True)
                for f in SHIPPED_FILES:
                    if (src / f).is_file():
                        shutil.copyfile(src / f, dst / f)
        ev = evaluate_horizon(ds, out, h, "conventional", ["kepp-R1", "kepp-R2", "kepp-nograph"], seed=seed)
        metrics[f"T{h}"] = {r["method"]: {k: r[k] for k in ("SR", "mAcc", "mIoU")} for r in ev.rows()}
        metrics[f"T{h}"]["step"] = ev.step_accuracy
        records += episode_records(ev, ds.actions, seed=seed)
    write_records(out / "predictions.jsonl", records)
    manifest = {"world": str(ds.root.name) if ds.root else None,
                "world_fingerprint": world_fingerprint(ds.root) if ds.root else None,
                "vocabulary_hash": ds.vocabulary_hash(), "seed": seed, "horizons": list(horizons),
                "members": list(DEMO_MEMBERS), "metrics": metrics,
                "made_by": f"kepp demo models --out {out.relative_to(REPO) if out.is_relative_to(REPO) else out}"}
    atomic_write_json(out / "manifest.json", manifest)
    return manifest


def _models(args) -> int:
    from kepp_core.training.loop import set_cpu_threads

    set_cpu_threads(args.threads)
    _, ds = _world()
    man = train_demo_models(ds, Path(args.out), args.horizons, args.seed,
                            Path(args.source) if args.source else None)
    print_table([{"T": h[1:], "method": m, **v} for h, ms in man["metrics"].items() for m, v in ms.items()
                 if m != "step"], ["T", "method", "SR", "mAcc", "mIoU"], title=f"demo models → {args.out}")
    return 0


def _table(args) -> int:
    from kepp_core.evaluation.demo_table import run_table
    from kepp_core.evaluation.report import markdown_table
    from kepp_core.training import preset
    from kepp_core.training.loop import set_cpu_threads

    set_cpu_threads(args.threads)
    if args.seeds < 1:
        raise KeppError(f"--seeds {args.seeds}: need at least one seed")
    _, ds = _world()
    cfg = preset("demo", train_steps=args.train_steps)
    res = run_table(ds, cfg, args.out, range(args.seeds), args.horizons, setting=args.setting, retrain=args.retrain)
    print(markdown_table(res["summary"], args.horizons))
    c = res["claim"]
    print(f"KEPP R=1 beats KEPP without the graph condition at T=4 and T=5 (mean SR over {args.seeds} seeds): "
          f"{'yes' if c['holds'] else 'NO'} {c['per_horizon']}")
    print(f"table → {Path(args.out) / 'table.md'}, {Path(args.out) / 'table.json'}")
    return 0
