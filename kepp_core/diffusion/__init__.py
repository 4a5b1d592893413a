"""Temporal U-Net, projected diffusion and the condition layouts of the step and planning models."""

from kepp_core.diffusion.layout import ConditionLayout, ConditionRow, plan_layout, step_layout
from kepp_core.diffusion.model import ProjectedDiffusion, cosine_betas
from kepp_core.diffusion.unet import TemporalUNet, sinusoidal_embedding

__all__ = [
    "ConditionLayout", "ConditionRow", "ProjectedDiffusion",
    "TemporalUNet", "cosine_betas", "plan_layout", "sinusoidal_embedding", "step_layout",
]
