"""The synthetic instructional-video world: tasks with stochastic procedures, rendered to mp4
with numpy + PyAV, with per-second features, written in the CrossTask layout.

>>> from kepp_core.data.synth import ensure_world  # doctest: +SKIP
>>> root = ensure_world()          # ~/.cache/kepp/demo-world, built once  # doctest: +SKIP
>>> load_dataset("demo", root)     # doctest: +SKIP
"""

from kepp_core.data.synth.procedures import *  # noqa: F403
from kepp_core.data.synth.render import *  # noqa: F403
from kepp_core.data.synth.world import *  # noqa: F403
from kepp_core.data.synth import procedures, render, world

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *procedures.__all__,
    *render.__all__,
    *world.__all__,
]
