"""What a renderer's output does in a browser, without one: Markdown (and the HTML inside it)
rendered as Streamlit renders it (CommonMark with raw HTML, GFM tables), plotly's text fields, a
standalone page; then the elements and attributes a hostile label must never become."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

from markdown_it import MarkdownIt

HOST = "kepp-test.invalid"
# The audit's label, and two that are HTML for plotly and for pages.
HOSTILE = (f"stir\n\n![x](http://{HOST}/img)\n\n",
           f'<a href="http://{HOST}/a">open</a>',
           f'<img src="http://{HOST}/i" onerror="window.pwned=1">')


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self._script = 0

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._script += tag == "script"

    def handle_endtag(self, tag):
        self._script -= tag == "script" and self._script > 0

    def handle_data(self, data):
        if not self._script:
            self.text.append(data)


def elements(html: str) -> tuple[list[tuple[str, dict]], str]:
    """The elements (tag, attributes) of an HTML text and its visible text (scripts left out)."""
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.elements, "".join(parser.text)


def render_markdown(text: str) -> str:
    """``text`` as Streamlit's Markdown renders it (``unsafe_allow_html``: raw HTML kept)."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough").render(text)


OWN_LINKS = {("a", "kepp-step-link"), ("a", "kepp-open-plan")}  # links the renderers make themselves
APP_PAGES = ("Graph", "Plan")  # the pages those links open (relative to the app's root)
URL_ATTRIBUTES = ("src", "href", "srcset", "action", "formaction", "data", "poster", "background", "style",
                  "xlink:href")


def assert_inert(html: str, where: str = "", page: bool = False) -> str:
    """No element or attribute of ``html`` came from a hostile label: no image, link, frame or
    script (``page``: a page's own scripts are allowed), no event handler but the page's own
    buttons', no address of :data:`HOST` where a browser would fetch or follow it (a ``title`` holding
    the label as text is fine); the app's own links (:data:`OWN_LINKS`) only with addresses of the app. Returns the
    visible text."""
    found, text = elements(html)
    refused = ("img", "a", "iframe", "svg", "object", "embed") + (() if page else ("script",))
    for tag, attrs in found:
        # the app's own links (a step link: components.ui.step_links) are not the label's: their address is checked below
        assert tag not in refused or (tag, attrs.get("class")) in OWN_LINKS, (where, tag, attrs)
        own = (tag, attrs.get("class")) in OWN_LINKS
        for name, value in attrs.items():
            assert not name.startswith("on") or (page and HOST not in (value or "")), (where, tag, name)
            if own and name == "href":  # an app page's relative address: a label may only be a value of its query
                parts = urlsplit(value or "")
                assert not parts.scheme and not parts.netloc and parts.path in APP_PAGES, (where, tag, name, value)
                assert HOST not in parts.path, (where, tag, name, value)
                continue
            assert name not in URL_ATTRIBUTES or HOST not in (value or ""), (where, tag, name, value)
    return text


def assert_markdown_inert(text: str, label: str, where: str = "") -> None:
    """Markdown (or HTML in Markdown) that shows ``label`` as text and makes nothing of it."""
    visible = assert_inert(render_markdown(text), where)
    words = " ".join(label.split())
    assert words in " ".join(visible.split()), (where, words, visible[:500])


def plotly_strings(fig) -> list[str]:
    """Every string of a plotly figure that plotly draws as its own small HTML: trace names, text,
    hover text and templates, tick text, titles, annotations."""
    out: list[str] = []

    def walk(obj, key=None):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, k)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v, key)
        elif isinstance(obj, str) and key in ("name", "text", "hovertext", "hovertemplate", "ticktext", "legendgroup"):
            out.append(obj)

    walk(fig.to_plotly_json())
    return out


_PLOTLY_TAGS = re.compile(r"<(a|img|b|i|br|span|sup|sub|em)\b[^>]*" + re.escape(HOST), re.I)


def assert_plotly_inert(fig, label: str, where: str = "") -> None:
    """No plotly text field holds a hostile label's markup (plotly would draw its ``<a href>`` as a
    link), and no hover template shows a raw category value (``%{x}``, ``%{y}``) that is a label."""
    strings = plotly_strings(fig)
    for s in strings:
        assert not _PLOTLY_TAGS.search(s) and "<img" not in s and "<a " not in s, (where, s[:300])
    assert any(HOST in s for s in strings), (where, "the label is not shown at all")
    for trace in fig.to_plotly_json()["data"]:
        template = trace.get("hovertemplate") or ""
        for axis in ("x", "y"):
            if f"%{{{axis}}}" in template:
                values = trace.get(axis)
                assert not any(isinstance(v, str) and HOST in v for v in (values if values is not None else [])), \
                    (where, axis, template)
