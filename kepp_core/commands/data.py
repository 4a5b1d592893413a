"""``kepp data stats|synth``."""

from __future__ import annotations

from kepp_core.commands._common import add_command, add_dataset_args, dataset_from_args, emit_json, print_table
from kepp_core.commands.synth import register_synth
from kepp_core.data import dataset_stats


def register(sub) -> None:
    """Add ``kepp data stats`` and ``kepp data synth`` to the command line."""
    p = sub.add_parser("data", help="inspect datasets and build the synthetic world")
    dsub = p.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)

    s = add_command(dsub, "stats", "videos, tasks, actions, steps per video, episodes per split",
                    "  kepp data stats --dataset coin --root ../shared/data/coin/COIN.json\n"
                    "  kepp data stats --dataset plans --root ../shared/data/niv/plans.jsonl --json",
                    func=_stats)
    add_dataset_args(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")

    register_synth(dsub)


def _stats(args) -> int:
    st = dataset_stats(dataset_from_args(args))
    if args.json:
        emit_json(st)
        return 0
    print_table([
        {"field": "videos", "value": f"{st['videos']} (train {st['videos_per_split']['train']}, "
                                     f"test {st['videos_per_split']['test']})"},
        {"field": "tasks", "value": st["tasks"]},
        {"field": "actions", "value": st["actions"]},
        {"field": "steps per video", "value": f"{st['steps_per_video_mean']:.2f} ± {st['steps_per_video_std']:.2f}"},
        {"field": "videos with features / mp4", "value": f"{st['with_features']} / {st['with_videos']}"},
    ], title=f"dataset {st['dataset']}")
    print_table([{"T": t, "train episodes": e["train"], "test episodes": e["test"]}
                 for t, e in st["episodes"].items()])
    return 0
