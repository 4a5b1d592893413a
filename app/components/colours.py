"""The app's two meaning-carrying colours, written once: green for right (a right step, the truth, a
start) and red for wrong (a wrong step, a goal, an action outside its task). Every page, chart and
graph drawing reads them here."""

from __future__ import annotations

__all__ = ["RIGHT", "WRONG"]

RIGHT = "#2e7d32"  # green: right, the ground truth, the start clip and step
WRONG = "#c62828"  # red: wrong, the goal clip and step, outside the task
