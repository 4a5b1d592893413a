"""Training loops, presets and distributed launch for the step, planning, task-classifier and endpoint models."""

from kepp_core.training.config import *  # noqa: F403
from kepp_core.training.data import *  # noqa: F403
from kepp_core.training.loop import *  # noqa: F403
from kepp_core.training.trainers import *  # noqa: F403
from kepp_core.training import config, data, loop, trainers

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *config.__all__,
    *data.__all__,
    *loop.__all__,
    *trainers.__all__,
]
