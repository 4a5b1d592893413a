"""Worker process of the world builder: ``python -m kepp_core.data.synth.worker`` reads a JSON
job (output folder, seed, knobs, action looks, video specs) on stdin, builds each video and
prints ``done <index> <seconds>`` per video. Plain subprocesses with JSON (no pickling, no
re-import of the caller's main module) keep this safe to call from scripts and apps."""

from __future__ import annotations

import json
import sys

from kepp_core.data.synth.render import ActionLook, Segment
from kepp_core.data.synth.world import VideoSpec, build_video


def main() -> int:
    """Build the videos of the JSON job on stdin, printing one line per finished video."""
    job = json.load(sys.stdin)
    looks = {k: ActionLook(**{f: tuple(v) if isinstance(v, list) else v for f, v in d.items()})
             for k, d in job["looks"].items()}
    for s in job["specs"]:
        spec = VideoSpec(s["index"], s["task"], s["id"], s["split"],
                         [Segment(*seg) for seg in s["segments"]], s["duration"])
        seconds = build_video((job["out"], job["seed"], spec, job["knobs"], looks))
        print(f"done {spec.index} {seconds}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
