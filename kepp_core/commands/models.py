"""``kepp models import``: bring checkpoints trained with the official KEPP code into a models folder."""

from __future__ import annotations

from kepp_core.catalog import DEFAULT_SETTING, SETTINGS
from kepp_core.commands._common import add_command, dataset_from_args, emit_json, print_table, writes

EXAMPLES = """  kepp models import --plan plan/save_max/checkpoint.pth.tar --step step/save_max/checkpoint.pth.tar \\
      --horizon 3 --out models/official
  kepp models import --plan P.pth.tar --step S.pth.tar -T 3 --out models/official --weights model --sampler ddim
  kepp models import --plan P.pth.tar --step S.pth.tar -T 3 --out models/official \\
      --dataset official-list --root train_list.json --seconds 1
  kepp eval --dataset plans --root my/plans.jsonl --models models/official -T 3 --methods kepp-R1

Sizes (dim, dim_mults, action and observation widths, diffusion steps) are read from the tensor
shapes; the horizon is not in any shape and is given. The planning model's LLM rows repeat its
graph rows (what the official code does without LLM output). --dataset/--root: the dataset the
models were trained on (its action vocabulary; default: the official action ids 0..A-1) and the
source of the graph stored beside the planning model (or give --graph)."""


def register(sub) -> None:
    """Add the ``kepp models`` sub-commands."""
    p = sub.add_parser("models", help="import models trained elsewhere (official KEPP / PDPP checkpoints)")
    msub = p.add_subparsers(dest="models_command", metavar="SUBCOMMAND", required=True)
    i = add_command(msub, "import", "write a models folder from an official planning and step checkpoint",
                    EXAMPLES, func=_import)
    i.add_argument("--plan", required=True, help="official planning-model checkpoint (.pth.tar)")
    i.add_argument("--step", required=True, help="official step-model checkpoint (.pth.tar)")
    i.add_argument("--out", "-o", required=True, help="models folder to write (OUT/T<h>/step, plan-graph-R1)")
    writes(i, folders={"out": _import_output}, reads=("plan", "step", "graph", "root"))
    i.add_argument("-T", "--horizon", type=int, required=True, help="horizon T the checkpoints were trained for")
    i.add_argument("--weights", choices=["ema", "model"], default="ema",
                   help="which weights of the checkpoint (the official evaluation samples with ema)")
    i.add_argument("--sampler", choices=["ddpm", "ddim"], default="ddpm", help="the models' sampler")
    i.add_argument("--seconds", type=int, default=3, metavar="M",
                   help="seconds per observation M (the observation width is M × feature width)")
    i.add_argument("--setting", choices=list(SETTINGS), default=DEFAULT_SETTING,
                   help="observation setting the models were trained with")
    i.add_argument("--graph", default=None, help="graph file to store beside the planning model")
    i.add_argument("--dataset", default=None, help="dataset format of the training data (see kepp graph build)")
    i.add_argument("--root", default=None, help="the training data (with --dataset)")
    i.add_argument("--json", action="store_true", help="machine-readable output")


def _import_output(args):
    """What ``kepp models import`` writes into ``--out``: the horizon's step and planning models (and the
    planning model's graph)."""
    from pathlib import Path

    from kepp_core.catalog import CONFIG_FILE, GRAPH_FILE, model_folder, models_dir
    from kepp_core.commands._outputs import FolderOutput
    from kepp_core.models.official import PLAN_ROLE, STEP_ROLE

    folders = [models_dir(Path(args.out), args.horizon) / model_folder(r) for r in (STEP_ROLE, PLAN_ROLE)]
    return FolderOutput(folder=Path(args.out), files=(*((f / CONFIG_FILE, "checkpoint") for f in folders),
                                                      (folders[1] / GRAPH_FILE, "graph")))


def _import(args) -> int:
    from kepp_core.errors import KeppError
    from kepp_core.models.official import import_official

    if args.horizon < 2:
        raise KeppError(f"--horizon {args.horizon}: expected T >= 2")
    dataset = None
    if args.dataset is not None or args.root is not None:
        if args.dataset is None or args.root is None:
            raise KeppError("--dataset and --root go together (the dataset the official models were trained on)")
        args.split_seed, args.coin_actions, args.features = 0, "steps", None
        dataset = dataset_from_args(args)
    summary = import_official(args.plan, args.step, args.out, args.horizon, args.weights, dataset, args.graph,
                              args.sampler, args.seconds, args.setting)
    if args.json:
        emit_json(summary)
        return 0
    print_table([{"field": k, "value": v} for k, v in summary.items()], title="imported official KEPP models")
    return 0
