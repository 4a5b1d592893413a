"""The app's colours, written once: every page, chart and graph drawing reads them here.

Two carry a meaning everywhere: green for right (a right step, the truth, a start) and red for wrong
(a wrong step, a goal, an action outside its task). The plan has one colour (orange: its arrows in the
plan graph) and a light tint for its step cards; the truth's and a graph path's cards have tints of
their own; the step a drawing centres on is amber.
"""

from __future__ import annotations

__all__ = ["EDGE", "FAINT_EDGE", "FOCUS", "GOAL_NODE", "GROUP_COLOURS", "NODE", "PATH_COLOURS", "PATH_NODE", "PATH_TINT", "PLAN", "PLAN_TINT",
           "RIGHT", "START_NODE", "STEP_NODE", "TRUTH_TINT", "WRONG"]

RIGHT = "#2e7d32"  # green: right, the ground truth, the start clip and step
WRONG = "#c62828"  # red: wrong, the goal clip and step, outside the task
PLAN = "#ef6c00"  # orange: the plan (its arrows in the plan graph)
PLAN_TINT = "#fff8e1"  # the plan's step cards
TRUTH_TINT = "#e8f5e9"  # the ground truth's step cards
PATH_TINT = "#ede7f6"  # a graph path's step cards
FOCUS = "#f9a825"  # amber: the chosen step, the centre of a neighbourhood
# The plan graph's nodes: the start and the goal step (darker than RIGHT and WRONG: white labels on them),
# the other steps, the steps of a recommended path.
START_NODE, GOAL_NODE = "#1b5e20", "#b71c1c"
STEP_NODE, PATH_NODE = "#e3eaf4", "#fff3c4"
# The P²KG drawings: a node, an arrow, an arrow leaving the drawing, and the recommended paths (blue,
# purple, teal, orange, brown); the plan graph's path groups leave orange to the plan.
NODE, EDGE, FAINT_EDGE = "#d9e3f0", "#9e9e9e", "#c7c7c7"
PATH_COLOURS = ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#5d4037")
GROUP_COLOURS = ("#1565c0", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#283593")
