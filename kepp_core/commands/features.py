"""``kepp features extract|encode|ground|info``: per-second features from videos, and the step each
second most resembles (the S3D text tower)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kepp_core.commands._common import (add_command, add_dataset_args, add_device_option, check_outputs,
                                        dataset_from_args, emit_json, print_table, writes)
from kepp_core.data import LOADERS, extract_features, load_dataset
from kepp_core.errors import KeppError
from kepp_core.io import has_suffix

ENCODER_HELP = ("builtin; s3d:PATH, the S3D HowTo100M network of the official models' features (its "
                "s3d_howto100m.pth, s3d_dict.npy beside it; options ,dict=WORDS ,output=mixed_5c ,device=cuda "
                ",batch=N); a Python callable 'module:function'; or a TorchScript .pt file")


def register(sub) -> None:
    """Add ``kepp features extract|encode|ground|info``."""
    p = sub.add_parser("features", help="decode videos and compute per-second features")
    fsub = p.add_subparsers(dest="features_command", metavar="SUBCOMMAND", required=True)

    e = add_command(fsub, "extract", "fill a dataset's feature cache (features/<video>.npy) from its videos",
                    "  kepp features extract --root ~/.cache/kepp/demo-world\n"
                    "  kepp features extract --root data/crosstask --dataset crosstask --encoder s3d:s3d/s3d_howto100m.pth\n"
                    "  kepp features extract --root my_videos --dataset files --encoder s3d:s3d/s3d_howto100m.pth,device=cuda\n"
                    "  kepp features extract --root data/niv/plans.jsonl --dataset plans --encoder enc.pt --force\n"
                    "  kepp features extract --root my_videos --dataset files   # every file in my_videos/videos/\n"
                    "  torchrun --nproc-per-node 4 --no-python kepp features extract --root data/crosstask "
                    "--dataset crosstask\n"
                    "\nUnder torchrun (or RANK/WORLD_SIZE/LOCAL_RANK from any launcher, plus MASTER_ADDR/PORT)\n"
                    "each rank encodes a disjoint share; existing files are skipped; rank 0 prints the summary.",
                    func=_extract)
    e.add_argument("--root", default=None,
                   help="dataset folder or annotation file (default: the cached demo world)")
    e.add_argument("--dataset", default="demo", choices=sorted(LOADERS) + ["files"],
                   help="dataset format; 'files': every video in ROOT/videos, no annotations needed")
    e.add_argument("--encoder", default="builtin", help=ENCODER_HELP)
    e.add_argument("--features", default=None, help="feature folder to fill (default: ROOT/features)")
    e.add_argument("--force", action="store_true", help="recompute features that are already cached")
    e.add_argument("--workers", type=int, default=None,
                   help="threads decoding videos while the network encodes (default: the encoder's: 1, the "
                        "serial path, on the CPU; for S3D on a GPU one per core but the network's, at most 8); the "
                        "features are the same byte for byte")
    add_device_option(e, shared=True)
    e.add_argument("--json", action="store_true", help="machine-readable summary")

    c = add_command(fsub, "encode", "compute the per-second features of one video file",
                    "  kepp features encode my_video.mp4 --out my_video.npy\n"
                    "  kepp features encode clip.webm --out clip.npy --encoder enc.pt\n"
                    "  kepp features encode talk.mp4 --out talk.npy --encoder s3d:s3d/s3d_howto100m.pth",
                    func=_encode)
    c.add_argument("video", help="video file (mp4, webm, mkv, avi, mov)")
    c.add_argument("--out", required=True, help="output .npy file [seconds, D]")
    writes(c, kinds={"out": "features"}, reads=("video",))
    c.add_argument("--encoder", default="builtin", help=ENCODER_HELP)
    c.add_argument("--workers", type=int, default=None,
                   help="threads decoding the video while the network encodes (default: the encoder's, as for "
                        "extract); the features are the same byte for byte")
    add_device_option(c, shared=True)

    g = add_command(fsub, "ground", "the step each second of a video most resembles (the S3D text tower, zero-shot)",
                    "  kepp features ground my_video.mp4 --encoder s3d:s3d/s3d_howto100m.pth \\\n"
                    "      --steps 'crack egg' 'whisk eggs' 'pour batter' 'flip pancake'\n"
                    "  kepp features ground data/crosstask/features/v1.npy --encoder s3d:s3d/s3d_howto100m.pth \\\n"
                    "      --dataset crosstask --root data/crosstask --top 5 --json\n"
                    "  (a .npy file holds the video's S3D features [seconds, 512] from this encoder; a video is encoded)",
                    func=_ground)
    g.add_argument("video", help="a video file, or its per-second S3D video_embedding features (.npy)")
    g.add_argument("--encoder", required=True, metavar="s3d:PATH", help="the S3D network (s3d_howto100m.pth)")
    g.add_argument("--steps", nargs="*", default=None, metavar="NAME",
                   help="step names to ground (default: the actions of the dataset given with --dataset/--root)")
    g.add_argument("--top", type=int, default=3, help="steps listed per second")
    g.add_argument("--json", action="store_true", help="one JSON object per second, one per line")
    add_device_option(g, shared=True)
    add_dataset_args(g)

    i = add_command(fsub, "info", "video metadata: fps, frames, duration, size",
                    "  kepp features info videos/tea_0000.mp4", func=_info)
    i.add_argument("video", help="video file")
    i.add_argument("--json", action="store_true", help="machine-readable output")


def _extract(args: argparse.Namespace) -> int:
    if args.dataset == "files":
        if args.root is None:
            raise KeppError("--dataset files needs --root (a folder with videos/)")
        source = Path(args.root)
    else:
        source = load_dataset(args.dataset, args.root, features=None)
    s = extract_features(source, args.encoder, force=args.force, features_dir=args.features, workers=args.workers)
    if s.rank != 0:  # under torchrun / RANK-WORLD_SIZE launchers rank 0 prints the one summary
        return 0
    row = {"ranks": s.ranks, "written": len(s.written), "cached": s.skipped, "videos without a file": len(s.missing_videos),
           "encoder": s.encoder, "D": s.dim, "video seconds": round(s.video_seconds, 1),
           "wall seconds": round(s.wall_seconds, 2),
           "x real time": round(s.speed, 1) if s.written else None, "folder": str(s.features_dir)}
    if args.json:
        emit_json(row)
    else:
        ranks = f" by {s.ranks} ranks" if s.ranks > 1 else ""
        print(f"{len(s.written)} written{ranks}, {s.skipped} cached, {len(s.missing_videos)} without a video file "
              f"-> {s.features_dir}")
        if s.written:
            print(f"encoded {s.video_seconds:.0f} s of video in {s.wall_seconds:.1f} s "
                  f"({s.speed:.3g}x real time) with {s.encoder}, D={s.dim}")
    return 0


def _encode(args: argparse.Namespace) -> int:
    import sys

    from tqdm import tqdm

    from kepp_core.data.extract import seconds_progress
    from kepp_core.video import encode_video, save_features

    check_outputs(args.out)
    bar, update = None, None

    def progress(done: float, total: float) -> None:  # a bar only once encoding runs, on a terminal
        nonlocal bar, update
        if bar is None:
            bar = tqdm(total=0, desc="seconds of video", unit="s", dynamic_ncols=True, leave=False)
            update = seconds_progress(bar)
        update(done, total)

    try:
        feats = encode_video(args.video, args.encoder, progress=progress if sys.stderr.isatty() else None,
                             workers=args.workers)
    finally:
        if bar is not None:
            bar.close()
    save_features(args.out, feats)
    print(f"{args.out}: features {feats.shape[0]} s x D={feats.shape[1]}")
    return 0


def _ground(args: argparse.Namespace) -> int:
    import json

    from kepp_core import api
    from kepp_core.data import load_features
    from kepp_core.video.grounding import MAX_NAMES
    from kepp_core.video.s3d_spec import S3DSpec

    spec = S3DSpec.parse(args.encoder)
    if spec.output != "video_embedding":
        raise KeppError(f"--encoder {args.encoder!r}: grounding scores the joint text-video space: use "
                        "output=video_embedding (the default)")
    if args.top < 1:
        raise KeppError(f"--top {args.top}: expected a whole number >= 1")
    if args.steps is not None and not args.steps:
        raise KeppError("--steps: the step list is empty: give at least one step name")
    if args.steps is not None and len(args.steps) > MAX_NAMES:
        raise KeppError(f"--steps: {len(args.steps):,} step names, more than the {MAX_NAMES:,} grounded at once")
    if args.steps is None and args.root is None:
        raise KeppError("give the step names with --steps, or a dataset whose actions to ground with --dataset/--root")
    source = Path(args.video)
    if not source.is_file():
        raise KeppError(f"{source}: file not found (VIDEO: a video file or its S3D features .npy)")
    grounding = api.text_grounding(args.encoder, args.steps, None if args.steps else dataset_from_args(args))
    feats = load_features(source) if has_suffix(source, ".npy") else api.encode_clip_video(source, args.encoder)
    rows = grounding.timeline(feats, args.top)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print_table([{"second": r["second"], "step": r["label"], "score": r["score"],
                  "top": "; ".join(f"{t['label']} {t['score']:.2f}" for t in r["top"])} for r in rows],
                title=f"{source.name}: the step each second most resembles ({len(grounding.texts.names)} steps)")
    return 0


def _info(args: argparse.Namespace) -> int:
    from kepp_core.video import video_info

    info = video_info(args.video)
    row = {"file": str(info.path), "fps": info.fps, "frames": info.frames, "duration": info.duration,
           "width": info.width, "height": info.height}
    if args.json:
        emit_json(row)
    else:
        print_table([{"field": k, "value": v} for k, v in row.items()])
    return 0
