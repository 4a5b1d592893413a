"""A step is a link: the one place a step (an action id and its name) becomes a link that opens the Graph
page centred on it. Every view that shows a step chip or card (the Plan page, Failure cases, Results' A/B,
Heatmaps' cell lists, the Gallery's tiles, the live slides) draws it through here, so the address, the
escaping and the look of a step link are decided once. Plain Python (no Streamlit).

The address names the Graph page's keys of :data:`components.ui.url_schema.GRAPH` (``node``: the step
drawn in the middle, by action id; ``edge``: a chosen transition ``a-b``) and is relative to the app's root
(``Graph?node=12``), so it opens the Graph page of the server it is clicked on, whatever its address; a link
opens in the same tab (``target="_self"``) and carries ``present=1`` when asked (presentation mode).

>>> step_href(12), edge_href(3, 7), step_href(5, present=True)
('Graph?node=12', 'Graph?node=3&edge=3-7', 'Graph?node=5&present=1')
>>> chip = step_chip_html(4, "add <b>sugar", mark=True)
>>> 'href="Graph?node=4"' in chip, "&lt;b&gt;sugar" in chip, "✓" in chip, 'data-action="4"' in chip
(True, True, True, True)
"""

from __future__ import annotations

from urllib.parse import urlencode

from components.ui import colours
from components.ui.pages import PAGES
from components.ui.text import html_text
from components.ui.url_schema import GRAPH

__all__ = ["LINK_CLASS", "edge_href", "edge_query", "step_chip_html", "step_href", "step_link_html", "step_query"]

LINK_CLASS = "kepp-step-link"  # every step link's class (the browser tests find the links by it)
_NODE, _EDGE = GRAPH["node"], GRAPH["edge"]


def step_query(action_id: int) -> dict[str, str]:
    """The Graph page's query centred on the step ``action_id``.

    >>> step_query(12)
    {'node': '12'}
    """
    return {_NODE.name: _NODE.text(int(action_id))}


def edge_query(a: int, b: int) -> dict[str, str]:
    """The Graph page's query centred on step ``a`` with the transition ``a → b`` chosen (its episodes listed).

    >>> edge_query(3, 7)
    {'node': '3', 'edge': '3-7'}
    """
    return {**step_query(a), _EDGE.name: _EDGE.text((int(a), int(b)))}


def _href(query: dict[str, str], present: bool) -> str:
    return PAGES["graph"].url_path + "?" + urlencode({**query, **({"present": "1"} if present else {})})


def step_href(action_id: int, *, present: bool = False) -> str:
    """The address (relative to the app's root) of the Graph page centred on the step ``action_id``;
    ``present``: in presentation mode."""
    return _href(step_query(action_id), present)


def edge_href(a: int, b: int, *, present: bool = False) -> str:
    """The address of the Graph page with the transition ``a → b`` chosen (centred on ``a``)."""
    return _href(edge_query(a, b), present)


def step_link_html(action_id: int, inner_html: str, name: str, *, present: bool = False, style: str = "") -> str:
    """``inner_html`` (a step card, already escaped) as a link to the Graph page centred on ``action_id``;
    ``name`` (the step's name, escaped here) is its hover text. The link keeps the card's colours (no
    underline, the text's own colour); ``style``: more CSS for the link itself (a card's flex share).

    >>> print(step_link_html(2, "<div>x</div>", 'a "b"'))  # doctest: +NORMALIZE_WHITESPACE
    <a class="kepp-step-link" data-action="2" href="Graph?node=2" target="_self" title="a &quot;b&quot; · open its graph"
       style="color:inherit;text-decoration:none;"><div>x</div></a>
    """
    return (f'<a class="{LINK_CLASS}" data-action="{int(action_id)}" href="{html_text(step_href(action_id, present=present))}" '
            f'target="_self" title="{html_text(name)} · open its graph" '
            f'style="color:inherit;text-decoration:none;{html_text(style)}">{inner_html}</a>')


def step_chip_html(action_id: int, name: str, *, mark: bool | None = None, present: bool = False) -> str:
    """A step as a small chip (its name, ✓/✗ where ``mark`` says right or wrong: a plan's step against the
    truth) that opens the Graph page centred on it; the name escaped for HTML in Markdown."""
    border = colours.CARD_BORDER if mark is None else (colours.RIGHT if mark else colours.WRONG)
    tick = "" if mark is None else f' <span class="kepp-mark">{"✓" if mark else "✗"}</span>'
    chip = (f'<span class="kepp-chip" style="display:inline-block;border:2px solid {border};border-radius:10px;'
            f'padding:0 6px;margin:1px;background:{colours.STEP_TINT};white-space:nowrap">{html_text(name)}{tick}</span>')
    return step_link_html(action_id, chip, name, present=present)
