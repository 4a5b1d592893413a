"""``kepp features extract|encode|info``: per-second features from videos."""

from __future__ import annotations

import argparse
from pathlib import Path

from kepp_core.commands._common import add_command, check_outputs, emit_json, print_table, writes
from kepp_core.data import LOADERS, extract_features, load_dataset
from kepp_core.errors import KeppError

ENCODER_HELP = "builtin, a Python callable 'module:function', or a TorchScript .pt file"


def register(sub) -> None:
    """Add ``kepp features extract|encode|info``."""
    p = sub.add_parser("features", help="decode videos and compute per-second features")
    fsub = p.add_subparsers(dest="features_command", metavar="SUBCOMMAND", required=True)

    e = add_command(fsub, "extract", "fill a dataset's feature cache (features/<video>.npy) from its videos",
                    "  kepp features extract --root ~/.cache/kepp/demo-world\n"
                    "  kepp features extract --root data/crosstask --dataset crosstask --encoder my_pkg.enc:s3d\n"
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
    e.add_argument("--json", action="store_true", help="machine-readable summary")

    c = add_command(fsub, "encode", "compute the per-second features of one video file",
                    "  kepp features encode my_video.mp4 --out my_video.npy\n"
                    "  kepp features encode clip.webm --out clip.npy --encoder enc.pt",
                    func=_encode)
    c.add_argument("video", help="video file (mp4, webm, mkv, avi, mov)")
    c.add_argument("--out", required=True, help="output .npy file [seconds, D]")
    writes(c, "out")
    c.add_argument("--encoder", default="builtin", help=ENCODER_HELP)

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
    s = extract_features(source, args.encoder, force=args.force, features_dir=args.features)
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
                  f"({s.speed:.0f}x real time) with {s.encoder}, D={s.dim}")
    return 0


def _encode(args: argparse.Namespace) -> int:
    from kepp_core.video import encode_video, save_features

    check_outputs(args.out)
    feats = encode_video(args.video, args.encoder)
    save_features(args.out, feats)
    print(f"{args.out}: features {feats.shape[0]} s x D={feats.shape[1]}")
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
