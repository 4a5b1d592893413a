"""Dataset text in the pages, escaped for where it goes (labels are data, never markup): one helper
per context, and every renderer of ``app/components`` calls the one for its context:

- :func:`md`: Streamlit Markdown (``st.markdown``, ``st.caption``, messages, ``st.table`` cells,
  widget help);
- :func:`html_text`: HTML that Streamlit's Markdown renders (``st.markdown(..., unsafe_allow_html=True)``:
  step cards, timelines, verdicts), text and attribute values alike;
- :func:`plot_text`: plotly's text (tick labels, hover text, legend names), which plotly reads as
  its own small HTML (``<b>``, ``<br>``, ``<a href>``);
- :func:`page_text`: a standalone HTML page (the graph drawing's frame), text and attribute values;
- :func:`script_json`: a value inside an inline ``<script>``;

and inline code, plans as one line, the dataset caption every page shows."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable

from components.ui import colours
from kepp_core.api import AppConfig

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|<>~$:&])")


def md(text) -> str:
    """Dataset text (labels, task names, ids, messages) for Streamlit Markdown: every Markdown,
    HTML and Streamlit-directive character is backslash-escaped (line breaks become spaces), so
    a label like ``![x](http://host/p.png)`` shows as text and never makes the browser fetch anything.

    >>> print(md("![x](http://h/p.png)"))
    \\!\\[x\\](http\\://h/p.png)
    """
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


# Characters Markdown (GFM and Streamlit's directives) gives a meaning, as numeric character references
# inside HTML: entities are text to a Markdown parser, so nothing inside the HTML can become Markdown
# (the renderers' HTML is a block, <div ...> first and no blank line: Markdown reads none of it anyway).
_HTML_MD = {c: f"&#{ord(c)};" for c in "\\`*_{}[]()#+!|~$"}
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def html_text(text) -> str:
    """Dataset text for HTML that Streamlit's Markdown renders (``unsafe_allow_html``), as element
    text or a quoted attribute value: every HTML character escaped, every Markdown character a
    numeric reference, and line breaks spaces (a blank line would end the HTML block and let the
    rest be read as Markdown: ``"stir\\n\\n![x](http://host/img)"`` broke out of the step timeline).

    >>> html_text("stir\\n\\n![x](http://h/i) <b>")
    'stir &#33;&#91;x&#93;&#40;http://h/i&#41; &lt;b&gt;'
    """
    return "".join(_HTML.get(c) or _HTML_MD.get(c) or c for c in " ".join(str(text).split()))


_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}|rgba?\([0-9., ]{5,40}\)")


def css_colour(value) -> str:
    """A colour for a ``style`` attribute: ``#rrggbb``, a name or ``rgb(...)``, else grey (colours
    are the app's own, never a dataset's: anything else never reaches the page).

    >>> css_colour(colours.PLAN_TINT) == colours.PLAN_TINT, css_colour('red;background:url(x)') == colours.UNKNOWN
    (True, True)
    """
    value = str(value)
    return value if _COLOUR.fullmatch(value) else colours.UNKNOWN


def plot_text(text) -> str:
    """Dataset text for plotly (tick labels, hover text, legend and trace names, titles): plotly
    reads ``<b>``, ``<br>``, ``<a href=...>`` in them, and shows ``&lt;`` as ``<``; line breaks
    become spaces.

    >>> plot_text('<a href="http://h">x</a>\\n')
    '&lt;a href="http://h"&gt;x&lt;/a&gt;'
    """
    return html.escape(" ".join(str(text).split()), quote=False)


def page_text(text) -> str:
    """Dataset text for a standalone HTML page (an iframe's document, never read as Markdown), as
    element text or a quoted attribute value.

    >>> page_text('<img src=x onerror="y">')
    '&lt;img src=x onerror=&quot;y&quot;&gt;'
    """
    return html.escape(str(text), quote=True)


# In a JSON literal inside <script>: characters that could end the script or the string in a browser.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value) -> str:
    """``value`` as a JavaScript literal that is safe inside an inline ``<script>``: JSON with
    ``<``, ``>``, ``&`` and the line separators U+2028/U+2029 escaped, so dataset text such as
    ``</script><script>...`` stays a string and reads back exactly.

    >>> text = "</script><script>alert(1)</script> & \u2028"
    >>> "<" in script_json(text), json.loads(script_json(text)) == text
    (False, True)
    """
    text = json.dumps(value, ensure_ascii=False)
    return "".join(_SCRIPT_UNSAFE.get(c, c) for c in text)


def md_code(text) -> str:
    """``text`` as an inline code span whose fence is longer than any backtick run inside it."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def dataset_caption(cfg: AppConfig, ds) -> str:
    """The line under a page title: dataset name, format, path, videos, actions."""
    root = cfg.root or (str(ds.root) if ds.root else "demo world")
    return (f"Dataset **{md(ds.name)}** ({md(cfg.dataset)} format) at {md_code(root)} · {len(ds.videos)} videos · "
            f"{ds.num_actions} actions")



def plan_text(labels: Iterable[str]) -> str:
    """A plan's step labels joined by arrows."""
    return " → ".join(labels)
