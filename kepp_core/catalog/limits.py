"""Limits and fixed vocabularies every option parser shares."""

from __future__ import annotations

from kepp_core.catalog.defaults import TABLE_HORIZONS

__all__ = ["DEMO_HORIZONS", "MAX_HORIZON", "MAX_SEED", "MAX_TOP", "SAMPLERS"]

MAX_SEED = 2**32 - 1  # seeds seed numpy's and torch's generators: 0 .. 2³² − 1
MAX_HORIZON = 64  # planning horizons T: the longest plan of any dataset here has 23 steps
MAX_TOP = 100  # paths or choices a query returns (graph paths --top, plan -R and --top)
DEMO_HORIZONS = TABLE_HORIZONS  # the demo ships models for the table's horizons (and its demo table covers them)


# --- samplers -----------------------------------------------------------------------------------------------
SAMPLERS = ("ddpm", "ddim")  # how a diffusion model draws a plan: the full chain, or DDIM's shortcut
