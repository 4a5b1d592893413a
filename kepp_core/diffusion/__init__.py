"""Temporal U-Net, projected diffusion, the condition layouts of the step and planning models and the one
sampler (scheduler) every diffusion model samples with."""

from kepp_core.diffusion.layout import *  # noqa: F403
from kepp_core.diffusion.model import *  # noqa: F403
from kepp_core.diffusion.scheduler import *  # noqa: F403
from kepp_core.diffusion.unet import *  # noqa: F403
from kepp_core.diffusion import layout, model, scheduler, unet

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *layout.__all__,
    *model.__all__,
    *scheduler.__all__,
    *unet.__all__,
]
