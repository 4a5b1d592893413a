"""Figures, tables and step cards: plotly charts with PNG/HTML downloads, tables with CSV
downloads, transition heatmaps, a plan as a row of step cards. They take plain data and only draw it."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

from components.config import font_scale

if TYPE_CHECKING:  # pandas loads lazily: the home page does not need it
    import pandas as pd


# --- figures and tables -------------------------------------------------------------------------------
def scaled(fig):
    """``fig`` with its fonts grown by the mode's font scale (1.4x in presentation mode): the
    base font, titles, and tick labels whose size a chart set explicitly."""
    k = font_scale()
    if k == 1.0:
        return fig
    fig.update_layout(font=dict(size=round(12 * k)), title_font=dict(size=round(17 * k)),
                      legend_font=dict(size=round(12 * k)))
    fig.for_each_xaxis(lambda a: a.update(tickfont=dict(size=round((a.tickfont.size or 12) * k))))
    fig.for_each_yaxis(lambda a: a.update(tickfont=dict(size=round((a.tickfont.size or 12) * k))))
    fig.for_each_annotation(lambda a: a.update(font=dict(size=round((a.font.size or 12) * k))))
    return fig


def show_figure(fig, name: str, key: str) -> None:
    """A plotly figure (its toolbar saves PNG) plus a standalone HTML download."""
    st.plotly_chart(scaled(fig), width="stretch", key=f"fig_{key}",
                    config={"toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
                            "displaylogo": False})
    st.download_button("Download figure (HTML)", lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                       file_name=f"{name}.html", mime="text/html", key=f"dl_{key}", on_click="ignore")


def show_table(df: pd.DataFrame, name: str, key: str, **kwargs):
    """A table with a CSV download; returns the table's selection state when ``on_select`` is given."""
    event = st.dataframe(df, width="stretch", key=f"tbl_{key}", **kwargs)
    st.download_button("Download table (CSV)", df.to_csv(index=False).encode(), file_name=f"{name}.csv",
                       mime="text/csv", key=f"dlcsv_{key}", on_click="ignore")
    return event


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


# --- page figures ------------------------------------------------------------------------------------
def video_timeline(video, actions: Sequence[str], episode: range | None, clips: dict, duration: float):
    """A video's annotated steps as bars (the episode's in blue) with the chosen clips shaded.

    ``clips``: name -> ((from, to) seconds, colour).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, s in enumerate(video.steps):
        fig.add_trace(go.Bar(x=[s.end - s.start], base=[s.start], y=["steps"], orientation="h",
                             marker_color="#1565c0" if episode is not None and k in episode else "#90a4ae",
                             showlegend=False, text=actions[s.action], textposition="inside",
                             insidetextanchor="middle",
                             hovertemplate=f"{actions[s.action]}<br>{s.start:.1f}–{s.end:.1f} s<extra></extra>"))
    for name, ((a, b), colour) in clips.items():
        fig.add_vrect(x0=a, x1=b, fillcolor=colour, opacity=0.25, line_width=0, annotation_text=name)
    fig.update_layout(height=150, barmode="overlay", margin=dict(l=10, r=10, t=10, b=30),
                      xaxis=dict(range=[0, duration], title="seconds"), yaxis=dict(visible=False))
    return fig


def pattern_bars(labels: Sequence[str], counts: Sequence[int]):
    """Failures per pattern as bars."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(labels), y=list(counts), marker_color=["#c62828", "#6a1b9a", "#ef6c00", "#757575"],
                           hovertemplate="%{x}: %{y} failures<extra></extra>"))
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=10, b=10), yaxis_title="failures (primary pattern)")
    return fig


def training_curves(frames: dict, metric: str, x_axis: str, kept: dict):
    """One metric of several runs' logs against ``x_axis``; ``kept``: run -> the step whose weights
    were kept, marked on validation curves."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, df in frames.items():
        if metric not in df or x_axis not in df:
            continue
        d = df[[x_axis, metric]].dropna()
        fig.add_trace(go.Scatter(x=d[x_axis], y=d[metric], mode="lines+markers" if len(d) < 40 else "lines",
                                 name=name))
        step = kept.get(name)
        if metric.startswith("val_") and step is not None:
            hit = df[df["step"] == step]
            if len(hit) and metric in hit and hit[metric].notna().any():
                fig.add_trace(go.Scatter(x=hit[x_axis], y=hit[metric], mode="markers", showlegend=False,
                                         marker=dict(symbol="triangle-down", size=14),
                                         name=f"{name}: kept (step {step})"))
    fig.update_layout(title=metric, xaxis_title=x_axis, yaxis_title=metric, height=380,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h"))
    return fig
