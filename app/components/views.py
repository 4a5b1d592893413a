"""View components: graph drawings (pyvis), heatmaps and curves (plotly), step cards,
downloads. They take plain data from ``kepp_core`` and only draw it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING

import streamlit as st

from components.config import AppConfig

if TYPE_CHECKING:  # pandas loads lazily: the home page does not need it
    import pandas as pd

# Colours of the graph drawing.
NODE = "#d9e3f0"
NODE_START = "#2e7d32"
NODE_GOAL = "#c62828"
NODE_FOCUS = "#f9a825"
EDGE = "#9e9e9e"
PATH_COLOURS = ["#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#5d4037"]
PATH_COLOUR_NAMES = ["blue", "purple", "teal", "orange", "brown"]
PLAN_COLOUR = "#f9a825"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|<>~$:&])")


def md(text) -> str:
    """Dataset text (labels, task names, ids, messages) for Streamlit Markdown: every Markdown,
    HTML and Streamlit-directive character is backslash-escaped (line breaks become spaces), so
    a label like ``![x](http://host/p.png)`` shows as text and never makes the browser fetch anything.

    >>> print(md("![x](http://h/p.png)"))
    \\!\\[x\\](http\\://h/p.png)
    """
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_code(text) -> str:
    """``text`` as an inline code span whose fence is longer than any backtick run inside it."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def dataset_caption(cfg: AppConfig, ds) -> str:
    root = cfg.root or (str(ds.root) if ds.root else "demo world")
    return (f"Dataset **{md(ds.name)}** ({md(cfg.dataset)} format) at {md_code(root)} · {len(ds.videos)} videos · "
            f"{ds.num_actions} actions")


# --- graph drawing -------------------------------------------------------------------------------
@dataclass
class GraphNode:
    id: int
    label: str
    title: str = ""
    color: str = NODE
    size: int = 18


@dataclass
class GraphEdge:
    source: int
    target: int
    label: str = ""
    title: str = ""
    width: float = 1.5
    color: str = EDGE
    dashes: bool = False


@dataclass
class GraphDrawing:
    nodes: dict[int, GraphNode] = field(default_factory=dict)
    edges: dict[tuple[int, int], GraphEdge] = field(default_factory=dict)

    def node(self, node: GraphNode) -> None:
        self.nodes.setdefault(node.id, node)

    def edge(self, edge: GraphEdge) -> None:
        self.edges[(edge.source, edge.target)] = edge

    def highlight_path(self, path: Sequence[int], color: str, labels: Sequence[str], width: float = 5.0,
                       title: str = "") -> None:
        """Draw ``path`` over the graph: its edges thick in ``color`` (added if missing)."""
        for a in path:
            self.node(GraphNode(a, labels[a]))
        for u, v in zip(path, path[1:]):
            old = self.edges.get((u, v))
            tip = (old.title + "\n" if old and old.title else "") + title
            self.edge(GraphEdge(u, v, label=old.label if old else "", title=tip, width=width, color=color,
                                dashes=old is None))


def _safe(text: str) -> str:
    """Dataset labels go into an inline script: keep them from closing it."""
    return text.replace("<", "‹").replace(">", "›")


_EXTERNAL = re.compile(r'<(script|link)[^>]+(src|href)="(https?:|\.\./)[^"]*"[^>]*>(\s*</script>)?', re.I)


@st.cache_data(show_spinner=False, max_entries=64)
def graph_html(nodes: tuple, edges: tuple, height: int = 560, hierarchical: bool = False) -> str:
    """A standalone, offline HTML page drawing the graph (pyvis with vis.js inlined)."""
    from pyvis.network import Network

    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor="#ffffff")
    for n in (GraphNode(*t) for t in nodes):
        net.add_node(n.id, label=_safe(n.label), title=_safe(n.title or n.label), color=n.color, size=n.size,
                     shape="box", font={"size": 20})
    for e in (GraphEdge(*t) for t in edges):
        net.add_edge(e.source, e.target, label=_safe(e.label), title=_safe(e.title or e.label), width=e.width,
                     color=e.color, dashes=e.dashes, arrows="to", font={"size": 16, "align": "top"})
    layout = ('"layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",'
              ' "levelSeparation": 190}},' if hierarchical else "")
    net.set_options('{' + layout + '"physics": {"enabled": ' + ("false" if hierarchical else "true") +
                    ', "solver": "forceAtlas2Based", "stabilization": {"iterations": 100}},'
                    ' "edges": {"smooth": {"type": "curvedCW", "roundness": 0.15}},'
                    ' "interaction": {"hover": true, "tooltipDelay": 80}}')
    page = net.generate_html(notebook=False)
    # Offline: vis.js is inlined; drop the template's CDN/relative asset tags it does not need.
    return _EXTERNAL.sub("", page)


def show_graph(drawing: GraphDrawing, height: int = 560, hierarchical: bool = False,
               download_name: str | None = None, key: str | None = None) -> str:
    """Draw a graph in the page (interactive) with an HTML download; returns the HTML."""
    page = graph_html(tuple(astuple(n) for n in drawing.nodes.values()),
                      tuple(astuple(e) for e in drawing.edges.values()), height, hierarchical)
    st.iframe(page, height=height + 20)
    if download_name:
        # The page is already in the iframe: send it again only when asked (it carries vis.js inline).
        st.download_button("Download graph (HTML)", lambda: page, file_name=download_name, mime="text/html",
                           key=key, on_click="ignore")
    return page


# --- figures and tables -------------------------------------------------------------------------------
def show_figure(fig, name: str, key: str) -> None:
    """A plotly figure (its toolbar saves PNG) plus a standalone HTML download."""
    st.plotly_chart(fig, width="stretch", key=f"fig_{key}",
                    config={"toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
                            "displaylogo": False})
    st.download_button("Download figure (HTML)", lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                       file_name=f"{name}.html", mime="text/html", key=f"dl_{key}", on_click="ignore")


def show_table(df: pd.DataFrame, name: str, key: str, **kwargs) -> None:
    """A table with a CSV download."""
    st.dataframe(df, width="stretch", key=f"tbl_{key}", **kwargs)
    st.download_button("Download table (CSV)", df.to_csv(index=False).encode(), file_name=f"{name}.csv",
                       mime="text/csv", key=f"dlcsv_{key}", on_click="ignore")


def heatmap(df: pd.DataFrame, title: str, zmin: float | None = 0.0, zmax: float | None = 1.0,
            diverging: bool = False, colour_bar: bool = True):
    """A transition heatmap: rows = from, columns = to (labels in the given order)."""
    import plotly.graph_objects as go

    labels_x, labels_y = [str(c) for c in df.columns], [str(i) for i in df.index]
    fig = go.Figure(go.Heatmap(
        z=df.to_numpy(), x=labels_x, y=labels_y,
        zmin=-1.0 if diverging else zmin, zmax=1.0 if diverging else zmax,
        colorscale="RdBu" if diverging else "Blues", reversescale=diverging, showscale=colour_bar,
        hovertemplate="from %{y}<br>to %{x}<br>%{z:.2f}<extra></extra>", xgap=1, ygap=1))
    fig.update_layout(title=title, height=max(420, 26 * len(labels_y) + 160), margin=dict(l=10, r=10, t=50, b=10),
                      yaxis=dict(autorange="reversed", title="from", tickmode="array", tickvals=labels_y,
                                 tickfont=dict(size=11)),
                      xaxis=dict(title="to", tickangle=-60, tickmode="array", tickvals=labels_x,
                                 tickfont=dict(size=11)))
    return fig


# --- plans -------------------------------------------------------------------------------------------
def step_cards(labels: Sequence[str], correct: Sequence[bool] | None = None, title: str = "",
               colour: str = "#e3f2fd") -> None:
    """A plan as a row of numbered step cards; green/red borders when correctness is known."""
    cards = []
    for t, label in enumerate(labels):
        border = "#bdbdbd" if correct is None else ("#2e7d32" if correct[t] else "#c62828")
        mark = "" if correct is None else (" ✓" if correct[t] else " ✗")
        cards.append(
            f'<div class="kepp-card" style="flex:1;min-width:90px;background:{colour};border:3px solid {border};'
            f'border-radius:8px;padding:6px 8px;margin:2px;text-align:center">'
            f'<div style="font-size:0.75em;color:#555">step {t + 1}{mark}</div>'
            f'<div style="font-weight:600">{html.escape(label)}</div></div>')
    head = f'<div style="font-size:0.9em;color:#444;margin-top:4px">{html.escape(title)}</div>' if title else ""
    st.markdown(f'{head}<div class="kepp-plan" style="display:flex;flex-wrap:wrap">{"".join(cards)}</div>',
                unsafe_allow_html=True)


def plan_text(labels: Iterable[str]) -> str:
    return " → ".join(labels)
