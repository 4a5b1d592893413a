"""Temporal U-Net, projected diffusion and the condition layouts of the step and planning models."""

from kepp_core.diffusion.layout import *  # noqa: F403
from kepp_core.diffusion.model import *  # noqa: F403
from kepp_core.diffusion.unet import *  # noqa: F403
from kepp_core.diffusion import layout, model, unet

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *layout.__all__,
    *model.__all__,
    *unet.__all__,
]
