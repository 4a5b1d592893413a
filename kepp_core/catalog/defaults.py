"""The named defaults every signature, option parser and page reads: the observation settings and
the default one, the seconds per observation ``M``, the horizons of a table, the planning models' logit
scale and the confidence level of an interval. A default written as a literal in a signature is a
second copy; these names are the one.

>>> DEFAULT_SETTING in SETTINGS, DEFAULT_M, TABLE_HORIZONS, LOGIT_SCALE, CONFIDENCE
(True, 3, (3, 4, 5, 6), 10.0, 0.9)
"""

from __future__ import annotations

__all__ = ["CONFIDENCE", "DEFAULT_M", "DEFAULT_SETTING", "LOGIT_SCALE", "SETTINGS", "TABLE_HORIZONS"]

# The observation settings (paper supplement C.4): KEPP's conventional windows around the start and the
# end of the episode, or PDPP's (kepp_core.data.episodes.clip_window says how each cuts a clip).
SETTINGS = ("conventional", "pdpp")
DEFAULT_SETTING = "conventional"
DEFAULT_M = 3  # seconds per observation (each a window of per-second features)
# The horizons an evaluation table, ``kepp train all``, ``kepp eval`` and the demo models cover.
TABLE_HORIZONS = (3, 4, 5, 6)
# A planning model's x_0 action block times this is its logits over the actions at each position
# (softmax(x_0 · 10): PDPP's and the planner's own confidence scaling; the decoders' emissions).
LOGIT_SCALE = 10.0
CONFIDENCE = 0.9  # the two-sided level of an interval: over seeds (Student t) or bootstrap (the field's unified benchmark reports 90%)
