"""``kepp data stats|synth|lists``."""

from __future__ import annotations

from kepp_core.commands._common import (DATASET_INPUTS, add_command, add_dataset_args, dataset_from_args, emit_json,
                                        print_table, writes)
from kepp_core.commands.synth import register_synth
from kepp_core.data import dataset_stats


def register(sub) -> None:
    """Add ``kepp data stats``, ``kepp data synth`` and ``kepp data lists`` to the command line."""
    p = sub.add_parser("data", help="inspect datasets and build the synthetic world")
    dsub = p.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)

    s = add_command(dsub, "stats", "videos, tasks, actions, steps per video, episodes per split",
                    "  kepp data stats --dataset coin --root ../shared/data/coin/COIN.json\n"
                    "  kepp data stats --dataset plans --root ../shared/data/niv/plans.jsonl --json",
                    func=_stats)
    add_dataset_args(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")

    register_synth(dsub)

    lst = add_command(dsub, "lists", "write a dataset's train and test episodes as split lists (the field's data lists)",
                      "  kepp data lists --dataset demo --root runs/niv-lists-world -T 3 4 5 6 --out runs/niv-lists-world/lists\n"
                      "  (DIR/train_<T>.json, DIR/test_<T>.json and DIR/taxonomy.json: ViterbiPlanNet's shape, the "
                      "dataset's action\n   indices as ids, its feature files by name; --dataset split-lists reads them "
                      "back with --features)", func=_lists)
    add_dataset_args(lst)
    lst.add_argument("-T", "--horizons", type=int, nargs="+", default=[3, 4, 5, 6])
    lst.add_argument("--out", required=True, metavar="DIR", help="the folder to write the lists into")
    writes(lst, folders={"out": _lists_output}, reads=DATASET_INPUTS)


def _lists_output(args):
    """What ``kepp data lists`` writes into ``--out``: each horizon's two lists and the taxonomy."""
    from pathlib import Path

    from kepp_core.commands._outputs import FolderOutput

    out = Path(args.out)
    return FolderOutput(folder=out, files=(*((out / f"{split}_{h}.json", "split-list") for h in args.horizons
                                             for split in ("train", "test")), (out / "taxonomy.json", "taxonomy")))


def _lists(args) -> int:
    from pathlib import Path

    from kepp_core.data.split_lists import split_list_entries, write_split_list, write_taxonomy
    from kepp_core.io import ensure_folder

    ds = dataset_from_args(args)
    out = ensure_folder(args.out)
    for h in args.horizons:
        for split in ("train", "test"):
            entries = split_list_entries(ds, h, split)
            write_split_list(Path(out) / f"{split}_{h}.json", entries)
            print(f"{split}_{h}.json: {len(entries)} episodes")
    write_taxonomy(Path(out) / "taxonomy.json", ds)
    print(f"taxonomy.json: {ds.num_actions} actions of {len(ds.tasks)} tasks → {out}")
    return 0


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
