"""Figures, tables and step cards: plotly charts with PNG/HTML downloads, tables with CSV
downloads, transition heatmaps, a plan as a row of step cards. They take plain data and only draw it."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import streamlit as st

from components.colours import RIGHT, WRONG
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
    fig.update_xaxes(automargin=True)  # room for the larger tick labels and axis titles
    fig.update_yaxes(automargin=True)
    fig.for_each_xaxis(lambda a: a.update(tickfont=dict(size=round((a.tickfont.size or 12) * k))))
    fig.for_each_yaxis(lambda a: a.update(tickfont=dict(size=round((a.tickfont.size or 12) * k))))
    fig.for_each_annotation(lambda a: a.update(font=dict(size=round((a.font.size or 12) * k))))
    return fig


def show_figure(fig, name: str, key: str, chart_key: str | None = None, **kwargs):
    """A plotly figure (its toolbar saves PNG) plus a standalone HTML download. ``kwargs`` go to
    ``st.plotly_chart`` (``on_select``, ``selection_mode``: then the selection state is returned,
    and kept in the session under ``chart_key``)."""
    event = st.plotly_chart(scaled(fig), width="stretch", key=chart_key or f"fig_{key}",
                            config={"toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
                                    "displaylogo": False}, **kwargs)
    st.download_button("Download figure (HTML)", lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                       file_name=f"{name}.html", mime="text/html", key=f"dl_{key}", on_click="ignore")
    return event


def show_table(df: pd.DataFrame, name: str, key: str, csv: Callable[[], bytes] | None = None, **kwargs):
    """A table with a CSV download; returns the table's selection state when ``on_select`` is given.

    ``csv``: what the download holds when it is more than the rows shown (a paged table: every row
    of its filter), made when the button is pressed, not on every run."""
    event = st.dataframe(df, width="stretch", key=f"tbl_{key}", **kwargs)
    st.download_button("Download table (CSV)", csv or df.to_csv(index=False).encode(), file_name=f"{name}.csv",
                       mime="text/csv", key=f"dlcsv_{key}", on_click="ignore")
    return event


def heatmap(df: pd.DataFrame, title: str, zmin: float | None = 0.0, zmax: float | None = 1.0,
            diverging: bool = False, colour_bar: bool = True, marked: set[str] = frozenset(), tick_size: int = 14):
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
                                 ticktext=marked_labels(labels_y, marked), tickfont=dict(size=tick_size)),
                      xaxis=dict(title="to", tickangle=-60, tickmode="array", tickvals=labels_x,
                                 ticktext=marked_labels(labels_x, marked), tickfont=dict(size=tick_size)))
    return fig


OUT_OF_TASK = WRONG


def marked_labels(labels: Sequence[str], marked: set[str]) -> list[str]:
    """Tick labels with the ``marked`` ones (actions outside the task's step list) in red with a ✱."""
    return [f'<span style="color:{OUT_OF_TASK}">{x} ✱</span>' if x in marked else x for x in labels]


def heatmap_panels(mats: dict, marked: set[str] = frozenset(), tick_size: int = 14):
    """Transition heatmaps side by side in one figure: equal panels, one shared colour bar (0–1),
    the same action order on every axis, ``marked`` actions flagged on the ticks."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(mats)
    fig = make_subplots(rows=1, cols=len(names), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=names)
    n = 0
    for k, name in enumerate(names, start=1):
        df = mats[name]
        xs, ys = [str(c) for c in df.columns], [str(i) for i in df.index]
        n = len(ys)
        fig.add_trace(go.Heatmap(z=df.to_numpy(), x=xs, y=ys, coloraxis="coloraxis", xgap=1, ygap=1, name=name,
                                 hovertemplate=f"{name}<br>from %{{y}}<br>to %{{x}}<br>%{{z:.2f}}<extra></extra>"),
                      row=1, col=k)
        fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=marked_labels(xs, marked), tickangle=-60,
                         tickfont=dict(size=tick_size), title_text="to", row=1, col=k)
        fig.update_yaxes(tickmode="array", tickvals=ys, ticktext=marked_labels(ys, marked), autorange="reversed",
                         tickfont=dict(size=tick_size), row=1, col=k)
    fig.update_yaxes(title_text="from", row=1, col=1)
    fig.update_layout(coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=1.0,
                                     colorbar=dict(title="share", thickness=14, tickfont=dict(size=tick_size))),
                      height=max(480, 24 * n + 260), margin=dict(l=10, r=10, t=50, b=10))
    return fig


# --- plans -------------------------------------------------------------------------------------------
def step_cards(labels: Sequence[str], correct: Sequence[bool] | None = None, title: str = "",
               colour: str = "#e3f2fd") -> None:
    """A plan as a row of numbered step cards; green/red borders when correctness is known. Labels are
    escaped and kept on one line: the cards stay one HTML block, never read as Markdown."""
    cards, colour = [], html.escape(colour)  # an attribute value
    for t, label in enumerate(labels):
        border = "#bdbdbd" if correct is None else (RIGHT if correct[t] else WRONG)
        mark = "" if correct is None else (" ✓" if correct[t] else " ✗")
        cards.append(
            f'<div class="kepp-card" style="flex:1;min-width:90px;background:{colour};border:3px solid {border};'
            f'border-radius:8px;padding:6px 8px;margin:2px;text-align:center">'
            f'<div style="font-size:0.75em;color:#555">step {t + 1}{mark}</div>'
            f'<div style="font-weight:600">{html.escape(" ".join(str(label).split()))}</div></div>')
    head = f'<div style="font-size:0.9em;color:#444;margin-top:4px">{html.escape(" ".join(title.split()))}</div>' if title else ""
    st.markdown(f'{head}<div class="kepp-plan" style="display:flex;flex-wrap:wrap">{"".join(cards)}</div>',
                unsafe_allow_html=True)


# --- page figures ------------------------------------------------------------------------------------
def video_timeline(video, actions: Sequence[str], episode: range | None, clips: dict, duration: float) -> str:
    """A video's annotated steps as bars (the episode's in blue) with the chosen clips shaded, as
    light HTML (no chart library: the Plan page opens from a link without loading one). Labels
    and hover texts are escaped; positions are percentages of ``duration``.

    ``clips``: name -> ((from, to) seconds, colour).

    >>> from types import SimpleNamespace as S
    >>> v = S(steps=[S(start=0.0, end=5.0, action=0), S(start=5.0, end=10.0, action=1)])
    >>> html_ = video_timeline(v, ["<b>", "stir"], range(1, 2), {"start": ((0.0, 3.0), "#2e7d32")}, 10.0)
    >>> html_.count('class="kepp-tl-step"'), "&lt;b&gt;" in html_, "left:50.00%" in html_
    (2, True, True)
    """
    span = max(float(duration), 1e-9)

    def pct(t: float) -> float:
        return 100.0 * min(max(float(t), 0.0), span) / span

    parts = []
    for k, s in enumerate(video.steps):
        label = html.escape(" ".join(str(actions[s.action]).split()))
        fill = "#1565c0" if episode is not None and k in episode else "#90a4ae"
        parts.append(f'<div class="kepp-tl-step" title="{label} · {s.start:.1f}–{s.end:.1f} s" style="position:absolute;'
                     f'top:22px;height:34px;left:{pct(s.start):.2f}%;width:{max(pct(s.end) - pct(s.start), 0.2):.2f}%;'
                     f'background:{fill};color:#fff;border:1px solid #fff;border-radius:3px;overflow:hidden;'
                     f'white-space:nowrap;text-overflow:ellipsis;font-size:0.75em;line-height:34px;'
                     f'text-align:center">{label}</div>')
    for name, ((a, b), colour) in clips.items():
        name, colour = html.escape(str(name)), html.escape(str(colour))
        parts.append(f'<div class="kepp-tl-clip" title="{name} clip · {a:.1f}–{b:.1f} s" style="position:absolute;'
                     f'top:0;bottom:18px;left:{pct(a):.2f}%;width:{max(pct(b) - pct(a), 0.3):.2f}%;background:{colour};'
                     f'opacity:0.3;border-radius:3px"></div><div style="position:absolute;top:2px;left:{pct(a):.2f}%;'
                     f'font-size:0.7em;color:{colour};font-weight:600">{name}</div>')
    ticks = "".join(f'<div style="position:absolute;bottom:0;left:{pct(t):.2f}%;font-size:0.65em;color:#666;'
                    f'transform:translateX(-50%)">{t:g} s</div>' for t in _ticks(span))
    return (f'<div class="kepp-timeline" style="position:relative;height:76px;margin:4px 8px 10px 8px;'
            f'border-bottom:1px solid #ccc">{"".join(parts)}{ticks}</div>')


def _ticks(duration: float, most: int = 8) -> list[float]:
    """Round tick positions (seconds) along a video of ``duration`` seconds.

    >>> _ticks(27.0)
    [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]
    """
    step = next(s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 1e9) if duration / s <= most)
    return [k * float(step) for k in range(int(duration // step) + 1)]


def pattern_bars(labels: Sequence[str], counts: Sequence[int]):
    """Failures per pattern as bars."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(labels), y=list(counts), marker_color=[WRONG, "#6a1b9a", "#ef6c00", "#757575"],
                           hovertemplate="%{x}: %{y} failures<extra></extra>"))
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=10, b=10), yaxis_title="failures (primary pattern)")
    return fig


RUN_COLOURS = ["#1565c0", WRONG, RIGHT, "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#ad1457",
               "#283593", "#9e9d24"]
VAL_SCORE_HELP = ("**val_score** is the validation score the training loop keeps the best weights by, computed "
                  "every *val_every* steps on training videos held out from fitting (*val_fraction*): for a step "
                  "model the mean of â₁ and â_T accuracy (%); for a planning model SR + mAcc (%, so up to 200); "
                  "for a task classifier the task accuracy (%). The other `val_*` curves are its parts.")


def run_colours(names) -> dict[str, str]:
    """One colour per run, the same in every chart (by the run's place in ``names``)."""
    return {name: RUN_COLOURS[k % len(RUN_COLOURS)] for k, name in enumerate(names)}


def training_curves(frames: dict, metric: str, x_axis: str, kept: dict, colours: dict | None = None,
                    smoothing: float = 0.0, log_y: bool = False):
    """One metric of several runs' logs against ``x_axis``; ``kept``: run -> the step whose weights
    were kept, marked on validation curves. ``colours``: run -> colour (one per run across charts);
    ``smoothing`` in [0, 1): exponential moving average (the raw curve stays, faint); ``log_y``: log scale."""
    import plotly.graph_objects as go

    colours = colours or run_colours(frames)
    fig = go.Figure()
    for name, df in frames.items():
        if metric not in df or x_axis not in df:
            continue
        d = df[[x_axis, metric]].dropna()
        colour = colours.get(name, RUN_COLOURS[0])
        if smoothing > 0 and len(d) > 1:
            fig.add_trace(go.Scatter(x=d[x_axis], y=d[metric], mode="lines", line=dict(color=colour, width=1),
                                     opacity=0.3, showlegend=False, hoverinfo="skip", legendgroup=name))
            y = d[metric].ewm(alpha=1.0 - smoothing).mean()
        else:
            y = d[metric]
        fig.add_trace(go.Scatter(x=d[x_axis], y=y, mode="lines+markers" if len(d) < 40 else "lines", name=name,
                                 line=dict(color=colour), marker=dict(color=colour), legendgroup=name))
        step = kept.get(name)
        if metric.startswith("val_") and step is not None:
            hit = df[df["step"] == step]
            if len(hit) and metric in hit and hit[metric].notna().any():
                fig.add_trace(go.Scatter(x=hit[x_axis], y=hit[metric], mode="markers", showlegend=False,
                                         marker=dict(symbol="triangle-down", size=14, color=colour),
                                         name=f"{name}: kept (step {step})", legendgroup=name))
    fig.update_layout(title=metric, xaxis_title=x_axis, yaxis_title=metric, height=380,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h"))
    if log_y:
        fig.update_yaxes(type="log")
    return fig


# --- protocol results (kepp protocol) --------------------------------------------------------------------
def interval_chart(df: pd.DataFrame, metric: str, confidence: float = 0.9):
    """Mean ± CI per method against ``T`` (a group of bars per horizon, error bars: the interval
    over seeds). ``df``: ``label``, ``T``, ``mean``, ``ci``, ``seeds`` (as ``api.interval_table``)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, (label, g) in enumerate(df.groupby("label", sort=False)):
        ci = [0.0 if c is None or c != c else float(c) for c in g["ci"]]
        fig.add_trace(go.Bar(x=[f"T={t}" for t in g["T"]], y=g["mean"].tolist(), name=label,
                             marker_color=RUN_COLOURS[k % len(RUN_COLOURS)],
                             error_y=dict(type="data", array=ci, visible=True, thickness=1.5, width=4),
                             customdata=list(zip(ci, g["seeds"].tolist())),
                             hovertemplate=f"{label}<br>%{{x}}: %{{y:.1f}} ± %{{customdata[0]:.1f}} "
                                           f"(%{{customdata[1]}} seeds)<extra></extra>"))
    fig.update_layout(barmode="group", height=440, margin=dict(l=10, r=10, t=50, b=10),
                      title=f"{metric} per horizon: mean ± {round(confidence * 100)}% CI over seeds",
                      yaxis_title=f"{metric} (%)", legend=dict(orientation="h", y=-0.15))
    return fig


def efficiency_chart(df: pd.DataFrame, metric: str, horizon: int, confidence: float = 0.9):
    """Data-efficiency curves: ``metric`` against the share of training videos, one line per
    method with error bars. ``df``: ``label``, ``percent``, ``mean``, ``ci`` (as ``api.efficiency_table``)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, (label, g) in enumerate(df.groupby("label", sort=False)):
        ci = [0.0 if c is None or c != c else float(c) for c in g["ci"]]
        colour = RUN_COLOURS[k % len(RUN_COLOURS)]
        fig.add_trace(go.Scatter(x=g["percent"].tolist(), y=g["mean"].tolist(), name=label, mode="lines+markers",
                                 line=dict(color=colour), marker=dict(color=colour, size=8),
                                 error_y=dict(type="data", array=ci, visible=True, thickness=1.5, width=5),
                                 hovertemplate=f"{label}<br>%{{x}}% of the training videos: %{{y:.1f}}<extra></extra>"))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10),
                      title=f"Data efficiency, T={horizon}: {metric} (mean ± {round(confidence * 100)}% CI over seeds)",
                      xaxis=dict(title="training videos (%)", tickmode="array",
                                 tickvals=sorted(set(df["percent"])), ticksuffix="%"),
                      yaxis_title=f"{metric} (%)", legend=dict(orientation="h", y=-0.2))
    return fig
