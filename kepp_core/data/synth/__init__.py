"""The synthetic instructional-video world: tasks with stochastic procedures, rendered to mp4
with numpy + PyAV, with per-second features, written in the CrossTask layout.

>>> from kepp_core.data.synth import ensure_world  # doctest: +SKIP
>>> root = ensure_world()          # ~/.cache/kepp/demo-world, built once  # doctest: +SKIP
>>> load_dataset("demo", root)     # doctest: +SKIP
"""

from kepp_core.data.synth.procedures import TASKS, TaskSpec
from kepp_core.data.synth.render import ActionLook, Knobs, look_of, render_video
from kepp_core.data.synth.world import (DEFAULT_VIDEOS, DIFFICULTIES, KNOB_NAMES, WORLD_VERSION, default_world_root,
                                        ensure_world, generate_world, knobs_for, world_fingerprint,
                                        world_ready)

__all__ = [
    "DEFAULT_VIDEOS", "DIFFICULTIES", "KNOB_NAMES", "TASKS", "WORLD_VERSION", "ActionLook", "Knobs",
    "TaskSpec", "default_world_root", "ensure_world", "generate_world", "knobs_for", "look_of",
    "render_video", "world_fingerprint", "world_ready",
]
