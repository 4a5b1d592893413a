"""``kepp data synth``: build the synthetic world (the data layer's generator behind a command)."""

from __future__ import annotations

import argparse
import time

from kepp_core.commands._common import add_command, emit_json
from kepp_core.data.synth import Knobs, default_world_root, generate_world
from kepp_core.io import read_json

KNOB_HELP = {
    "noise": "pixel noise std (fraction of 255)", "jitter": "camera shake in pixels",
    "distractors": "mean number of moving distractors per video",
    "lighting": "strength of lighting/tint variation", "similarity": "0..1, how alike actions look",
    "idle": "mean idle seconds between steps", "step_min": "shortest step, seconds",
    "step_max": "longest step, seconds", "fps": "frames per second", "size": "frame width = height, pixels",
}


def register_synth(dsub) -> None:
    """Add ``synth`` to the ``kepp data`` sub-commands."""
    p = add_command(dsub, "synth", "generate the synthetic instructional-video world (CrossTask layout)",
                    "  kepp data synth --out /tmp/world\n"
                    "  kepp data synth --out /tmp/hard --difficulty hard --videos 100 --seed 3\n"
                    "  kepp data synth --out /tmp/niv-world --from-plans ../shared/data/niv/plans.jsonl --videos 40\n"
                    "  kepp data synth --out /tmp/noisy --noise 0.1 --distractors 5",
                    func=_synth)
    p.add_argument("--out", default=argparse.SUPPRESS, help="output folder (default: the cached demo world)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same world)")
    p.add_argument("--videos", type=int, default=argparse.SUPPRESS,
                   help="number of videos (default: 300, or all plans of --from-plans)")
    p.add_argument("--difficulty", default="default", choices=["easy", "default", "hard"],
                   help="preset of the knobs below")
    p.add_argument("--from-plans", default=argparse.SUPPRESS, metavar="FILE",
                   help="render the plans of a plans-JSONL or COIN.json file, or of split lists (a split file, .toml), "
                        "instead of the built-in tasks")
    p.add_argument("--workers", type=int, default=argparse.SUPPRESS, help="worker processes (default: up to 2)")
    for name, field in Knobs.__dataclass_fields__.items():
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=field.type == "int" and int or float,
                       default=argparse.SUPPRESS, help=f"{KNOB_HELP[name]} (default: from --difficulty)")
    p.add_argument("--json", action="store_true", help="print world.json")


def _synth(args) -> int:
    knobs = {k: getattr(args, k, None) for k in Knobs.__dataclass_fields__}
    t0 = time.perf_counter()
    out = generate_world(getattr(args, "out", None) or default_world_root(), seed=args.seed,
                         videos=getattr(args, "videos", None), difficulty=args.difficulty,
                         from_plans=getattr(args, "from_plans", None), workers=getattr(args, "workers", None),
                         **knobs)
    meta = read_json(out / "world.json", dict)
    if args.json:
        emit_json(meta)
        return 0
    print(f"wrote {meta['num_videos']} videos ({meta['video_seconds'] / 60:.1f} min of video, "
          f"{len(meta['tasks'])} tasks, {meta['test_videos']} test) to {out} "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0
