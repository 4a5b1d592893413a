"""The app's colours, written once: every page, chart and graph drawing reads them here.

Two carry a meaning everywhere: green for right (a right step, the truth, a start) and red for wrong
(a wrong step, a goal, an action outside its task). The plan has one colour (orange: its arrows in the
plan graph) and a light tint for its step cards; the truth's and a graph path's cards have tints of
their own; the step a drawing centres on is amber. Below them: the palettes of the charts (steps, failure patterns,
training runs), the greys of the app's own type and rules, and the tints of the other step cards.

The app's scripts read the table too: the page's CSS variables (:data:`CSS_VARIABLES`, ``var(--kepp-…)``
in a stylesheet or a component's HTML) and the graph frame's colours (:data:`GRAPH_SCRIPT`, in its JSON
block). ``tests/test_colours.py`` holds every other module of ``app/`` and ``kepp_core/`` to it: no
colour is written anywhere else.
"""

from __future__ import annotations

__all__ = ["BAR", "BAR_BORDER", "BEST_TINT", "BLANK", "CARD_BORDER", "CHANGED", "CSS_VARIABLES", "DIFF_SCALE", "EDGE",
           "FAINT_EDGE", "FOCUS", "GOAL_NODE", "GRAPH_SCRIPT", "GROUP_COLOURS", "HEAT_SCALE", "INK", "LLM_TINT",
           "MD_RIGHT", "MD_WRONG", "MIXED",
           "MUTED", "NODE", "NODE_STROKE", "OTHER_SEGMENT", "PATH_COLOURS", "PATH_NODE", "PATH_TINT",
           "PATTERN_COLOURS", "PLAN", "PLAN_TINT", "RAW_TINT", "RIGHT", "RULE", "RUN_COLOURS", "SEGMENT", "SHADOW",
           "SOFT", "START_NODE", "STEP_COLOURS", "STEP_NODE", "STEP_TINT", "SUBTLE", "TRUTH_TINT", "UNKNOWN",
           "VEIL", "WHITE", "WRONG", "css_variables"]

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
NODE_STROKE = "#455a64"  # the outline of a step node in the offline deck's drawing
# The P²KG drawings: a node, an arrow, an arrow leaving the drawing, and the recommended paths (blue,
# purple, teal, orange, brown); the plan graph's path groups leave orange to the plan.
NODE, EDGE, FAINT_EDGE = "#d9e3f0", "#9e9e9e", "#c7c7c7"
PATH_COLOURS = ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#5d4037")
GROUP_COLOURS = ("#1565c0", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#283593")

# Type and rules: the label ink of light nodes and boxes, white (labels on dark fills, label boxes, the PNG's
# ground), the small type of a card's head and a drawing's settings (muted), a title over cards (subtle),
# a timeline's ticks (soft) and rule, a card's border, a colour a style attribute cannot take (grey).
INK, WHITE = "#1a1a1a", "#ffffff"
MUTED, SUBTLE, SOFT, RULE = "#555555", "#444444", "#666666", "#cccccc"
CARD_BORDER, UNKNOWN = "#bdbdbd", EDGE
# Tints of the other step cards: a plain step row, the plan before graph decoding, an LLM's plan, the best
# value of a results column; the step a decoding changed (its card's border); an outcome that is mixed.
STEP_TINT, RAW_TINT, LLM_TINT, BEST_TINT = "#e3f2fd", "#eceff1", "#e0f7fa", TRUTH_TINT
CHANGED, MIXED = PATH_COLOURS[0], FOCUS
# A video timeline: the shown episode's steps, the video's other steps.
SEGMENT, OTHER_SEGMENT = PATH_COLOURS[0], "#90a4ae"
# Streamlit Markdown's own colour names (``:green[...]``): a verdict's words and a caption's warning.
MD_RIGHT, MD_WRONG = "green", "red"
# The transition heatmaps' scales, low to high: a share (0..1, ColorBrewer's Blues) and a difference of shares
# (-1..1, ColorBrewer's RdBu: red where A has less than B, blue where it has more).
HEAT_SCALE = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
DIFF_SCALE = ("#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac")
# The playlist bar floating over a page: its ground, border and shadow.
BAR, BAR_BORDER, SHADOW = "rgba(255, 255, 255, 0.95)", "#d0d7de", "rgba(0, 0, 0, 0.12)"
# The speaker's layers (app/static/kepp-speaker.css): the blanked screen (B or .) and the veil behind the list
# of keys (?).
BLANK, VEIL = "#000000", "rgba(0, 0, 0, 0.45)"
# The charts' palettes: a step timeline's steps (12, then repeated), the failure patterns, training runs.
STEP_COLOURS = ("#5c6bc0", "#26a69a", PLAN, "#8d6e63", "#ab47bc", "#42a5f5", "#9ccc65", "#ec407a",
                "#78909c", "#ffa726", "#26c6da", "#d4e157")
PATTERN_COLOURS = (WRONG, PATH_COLOURS[1], PLAN, "#757575")
RUN_COLOURS = (PATH_COLOURS[0], WRONG, RIGHT, PLAN, PATH_COLOURS[1], PATH_COLOURS[2], PATH_COLOURS[4],
               GROUP_COLOURS[3], GROUP_COLOURS[5], "#9e9d24")

# What the app's scripts read: the page's CSS variables (the presenter's controls, the playlist bar) and the
# graph frame's colours (app/static/kepp-graph.js: edge labels, their boxes, the PNG export).
# The offline deck's stylesheet (app/static/kepp-deck.css) reads the same variables, plus its own: the
# page's ink and ground, right and wrong verdicts, headings, and the presenter's frames and faint notes.
CSS_VARIABLES = {"--kepp-muted": MUTED, "--kepp-bar": BAR, "--kepp-bar-border": BAR_BORDER, "--kepp-shadow": SHADOW,
                 "--kepp-ink": INK, "--kepp-white": WHITE, "--kepp-right": RIGHT, "--kepp-wrong": WRONG,
                 "--kepp-subtle": SUBTLE, "--kepp-soft": SOFT, "--kepp-card-border": CARD_BORDER,
                 "--kepp-blank": BLANK, "--kepp-veil": VEIL}
GRAPH_SCRIPT = {"ink": INK, "ground": WHITE, "edge": MUTED}


def css_variables() -> str:
    """The page's stylesheet of :data:`CSS_VARIABLES` (``:root``), drawn once per page.

    >>> css_variables().startswith("<style>:root { --kepp-muted: ")
    True
    """
    return "<style>:root { " + " ".join(f"{k}: {v};" for k, v in CSS_VARIABLES.items()) + " }</style>"
