"""Figures, tables and step cards: plotly charts with PNG/HTML downloads, tables with CSV
downloads, transition heatmaps, a plan as a row of step cards. They take plain data and only draw it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from components.ui import colours
from components.ui.colours import RIGHT, WRONG
from components.ui.config import MIN_PRESENT_PX, font_scale, presenting
from components.ui.step_links import step_link_html
from components.ui.text import css_colour, html_text, plot_text
from kepp_core.catalog import CONFIDENCE

if TYPE_CHECKING:  # pandas loads lazily: the home page does not need it
    import pandas as pd


# --- figures and tables -------------------------------------------------------------------------------
def scaled(fig):
    """``fig`` with its fonts grown by the mode's font scale (1.4x in presentation mode): the
    base font, titles, and tick labels whose size a chart set explicitly."""
    k = font_scale()
    if k == 1.0:
        return fig

    def size(px: float | None) -> int:  # presentation mode: never below the room's minimum
        return max(MIN_PRESENT_PX, round((px or 12) * k))

    fig.update_layout(font=dict(size=size(12)), title_font=dict(size=size(17)), legend_font=dict(size=size(12)),
                      margin=dict(autoexpand=True))  # the larger type: plotly measures the margins it needs
    fig.update_xaxes(automargin=True)  # room for the larger tick labels and axis titles
    fig.update_yaxes(automargin=True)
    fig.for_each_xaxis(lambda a: a.update(tickfont=dict(size=size(a.tickfont.size)), title_font=dict(size=size(12))))
    fig.for_each_yaxis(lambda a: a.update(tickfont=dict(size=size(a.tickfont.size)), title_font=dict(size=size(12))))
    fig.for_each_annotation(lambda a: a.update(font=dict(size=size(a.font.size))))

    def bar(cb) -> None:  # a colour bar's ticks and title (a heatmap's shared scale, a trace's own)
        cb.update(tickfont=dict(size=size(cb.tickfont.size)), title_font=dict(size=size(cb.title.font.size)))

    fig.for_each_coloraxis(lambda c: bar(c.colorbar))
    for trace in fig.data:
        if "colorbar" in trace:
            bar(trace.colorbar)
        if "marker" in trace and "colorbar" in trace.marker:
            bar(trace.marker.colorbar)
    return fig


def tick_px() -> int:
    """The tick labels' size of a heatmap (their margins are fixed from it): 14 px, in presentation mode the
    room's least (:data:`~components.ui.config.MIN_PRESENT_PX`) or more."""
    return max(MIN_PRESENT_PX, round(14 * font_scale())) if font_scale() > 1 else 14


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


def table_on_demand(label: str, rows: Callable[[], pd.DataFrame], name: str, key: str,
                    guard: Callable[[], AbstractContextManager] = nullcontext, **kwargs) -> None:
    """A table (:func:`show_table`, its CSV beside) made and drawn only while its expander, ``label``, is open:
    opening it reruns this part alone (a fragment), and a closed one costs a new tab nothing (a data grid is among
    the dearest things a page draws). ``rows`` makes the table, under ``guard`` (a page's error guard)."""

    @st.fragment
    def part() -> None:
        box = st.expander(label, expanded=False, key=f"open_{key}", on_change="rerun")
        if box.open:
            with box, guard():
                show_table(rows(), name, key=key, **kwargs)

    part()


# --- transition heatmaps ------------------------------------------------------------------------------
# Drawn by ECharts (Streamlit's own st.echarts_chart): its module loads in a fifth of plotly's time, the most of a
# Heatmaps page's second view (docs/at-scale.md), and a click on a cell selects it as it is.
HEAT_ROW_PX = 24  # a matrix row's height
HEAT_CHART_PX = 820  # the narrowest chart laid out for (a 1280 px window, the sidebar open): panel titles wrap to it


@dataclass(frozen=True)
class Heatmap:
    """Transition matrices drawn side by side (:func:`heatmap_chart`): ECharts' ``option``, its ``height`` (px),
    per data item of its one series the cell it draws as (panel, row, column: positions in the matrices' order),
    and whether a click selects a cell."""

    option: dict
    height: int
    cells: tuple[tuple[int, int, int], ...]
    selectable: bool = False


def heatmap_chart(mats: dict, *, marked: Collection[str] = frozenset(), diverging: bool = False,
                  tick_size: int | None = None, selectable: bool = False) -> Heatmap:
    """Transition matrices (``mats``: a panel's title -> a square frame, the same actions in the same order on
    every axis) side by side in one chart: equal panels a column apart, the from-labels once on the left, one
    shared colour scale (0..1, or -1..1 ``diverging`` for a difference), the ``marked`` actions (outside the
    task's step list) in red with a ✱. ``selectable``: a click selects a cell (:attr:`Heatmap.cells` says which).

    Dataset text goes in as text: ECharts draws it as SVG text and its tooltip as drawn text (``richText``),
    never as HTML.

    >>> import pandas as pd
    >>> df = pd.DataFrame([[0.0, 1.0], [0.5, 0.5]], index=["a", "b"], columns=["a", "b"])
    >>> chart = heatmap_chart({"train": df, "test": df}, marked={"b"})
    >>> chart.option["xAxis"][0]["data"][:3], chart.cells[:3]  # b in the colour of wrong
    (['a', {'value': 'b ✱', 'textStyle': {'color': ...}}, ''], ((0, 0, 0), (0, 0, 1), (0, 1, 0)))
    >>> chart.option["series"][0]["data"][4:6]  # the second panel starts after a blank column
    [{'value': [3, 0, 0.0], 'name': 'test: a → a'}, {'value': [4, 0, 1.0], 'name': 'test: a → b'}]
    """
    tick = tick_size or tick_px()
    frames = list(mats.values())
    rows, cols = [str(i) for i in frames[0].index], [str(c) for c in frames[0].columns]
    gap = 1 if len(frames) > 1 else 0

    def item(label: str):
        return {"value": f"{label} ✱", "textStyle": {"color": WRONG}} if label in marked else label

    xs, tops, data, cells = [], [], [], []
    for p, (title, df) in enumerate(mats.items()):
        if p:
            xs.append("")
            tops.append("")
        base = p * (len(cols) + gap)
        xs += [item(c) for c in cols]
        tops += [title if j == (len(cols) - 1) // 2 else "" for j in range(len(cols))]
        z = np.round(df.to_numpy(dtype=float), 4)
        # each cell named (its hover text; ECharts selects by name: one name per cell, or a click selects a column)
        data += [{"value": [base + j, i, float(z[i, j])], "name": f"{title}: {rows[i]} → {cols[j]}"}
                 for i in range(len(rows)) for j in range(len(cols))]
        cells += [(p, i, j) for i in range(len(rows)) for j in range(len(cols))]
    left, bottom = _label_margins([*rows, *cols], tick)
    lo, hi = (-1.0, 1.0) if diverging else (0.0, 1.0)
    panel_px = (HEAT_CHART_PX - left - 90) * len(cols) / max(len(xs), 1)
    text, line = {"fontSize": tick}, round(tick * 1.25)
    option = {
        "animation": False,
        "tooltip": {"trigger": "item", "renderMode": "richText", "textStyle": text},
        # the margins hold the labels (they are measured from them): ECharts adds none of its own
        "grid": {"left": left, "right": 90, "top": 16 + 3 * line, "bottom": bottom,  # titles: up to three lines
                 "outerBoundsMode": "none", "containLabel": False},
        "xAxis": [
            {"type": "category", "data": xs, "name": "to", "nameLocation": "middle", "nameGap": bottom - 20,
             "nameTextStyle": text, "axisLabel": {"interval": 0, "rotate": 60, **text}, "axisTick": {"show": False},
             "splitArea": {"show": False}},
            {"type": "category", "data": tops, "position": "top", "axisLine": {"show": False},
             "axisTick": {"show": False}, "axisLabel": {"interval": 0, "width": round(panel_px), "overflow": "break",
                                                      "lineHeight": line, "fontSize": tick, "fontWeight": "bold"}}],
        "yAxis": {"type": "category", "data": [item(r) for r in rows], "inverse": True, "name": "from",
                  "nameLocation": "middle", "nameGap": left - 24, "nameTextStyle": text,
                  "axisLabel": {"interval": 0, **text}, "axisTick": {"show": False}},
        "visualMap": {"type": "continuous", "min": lo, "max": hi, "calculable": False, "orient": "vertical",
                      "right": 10, "top": "middle", "text": [f"{hi:g}", f"{lo:g}"], "textStyle": text,
                      "inRange": {"color": list(colours.DIFF_SCALE if diverging else colours.HEAT_SCALE)}},
        "series": [{"type": "heatmap", "data": data, "progressive": 0, "selectedMode": "single" if selectable else False,
                    "itemStyle": {"borderColor": colours.WHITE, "borderWidth": 1},
                    "emphasis": {"itemStyle": {"borderColor": colours.INK, "borderWidth": 1}},
                    "select": {"itemStyle": {"borderColor": colours.INK, "borderWidth": 2}}}],
    }
    return Heatmap(option, max(420, HEAT_ROW_PX * len(rows) + option["grid"]["top"] + bottom), tuple(cells),
                   selectable)


def show_heatmap(chart: Heatmap, key: str):
    """Draw ``chart`` (SVG: its text is the page's, measured and read as such); a selectable one returns the clicked
    cell's (panel, row, column) or None."""
    event = st.echarts_chart(chart.option, key=key, height=chart.height, renderer="svg",
                             on_select="rerun" if chart.selectable else "ignore")
    if not chart.selectable:
        return None
    for group in event.selection.selected:
        for k in group.get("data_indices", ()):
            if 0 <= k < len(chart.cells):
                return chart.cells[k]
    return None


def _label_margins(labels: Sequence[str], tick_size: int) -> tuple[int, int]:
    """Left and bottom margins (px) for a heatmap's action labels (the y labels level, the x labels at
    60°, an axis title each), from the longest label.

    >>> _label_margins(["boil water", "stir"], 14)
    (145, 138)
    """
    width = 0.6 * tick_size * max((len(x) + 2 for x in labels), default=4)  # "✱" marks an out-of-task action
    return round(width + 44), round(width * 0.87 + 50)


# --- plans -------------------------------------------------------------------------------------------
def step_cards(labels: Sequence[str], correct: Sequence[bool] | None = None, title: str = "",
               colour: str = colours.STEP_TINT, *, ids: Sequence[int] | None = None) -> None:
    """A plan as a row of numbered step cards (:func:`step_cards_html`); with the steps' action ``ids``, each card
    opens the Graph page centred on its step (in presentation mode when the page is in it)."""
    st.markdown(step_cards_html(labels, correct, title, colour, ids=ids, present=presenting()), unsafe_allow_html=True)


# A step name's word: the name wraps at its spaces only; a word wider than its card is cut short with "…" (the
# card's hover text holds the whole name), never broken mid-word nor drawn over the next card.
_WORD = ('<span class="kepp-word" style="display:inline-block;max-width:100%;overflow:hidden;'
         'text-overflow:ellipsis;white-space:nowrap;vertical-align:top">')


def _words(label: str) -> str:
    """A step name as its words, each kept whole on one line (:data:`_WORD`), escaped.

    >>> _words("boil <b>water").count('class="kepp-word"'), "&lt;b&gt;" in _words("<b>")
    (2, True)
    """
    return " ".join(f"{_WORD}{html_text(w)}</span>" for w in str(label).split()) or html_text(label)


def step_cards_html(labels: Sequence[str], correct: Sequence[bool] | None = None, title: str = "",
                    colour: str = colours.STEP_TINT, *, ids: Sequence[int] | None = None, present: bool = False) -> str:
    """A plan as a row of numbered step cards; green/red borders when correctness is known. Labels are
    escaped for HTML in Markdown (:func:`~components.ui.text.html_text`): the cards stay one HTML block. With the
    steps' action ``ids``, each card is a step link (:mod:`components.ui.step_links`: the Graph page centred on it;
    ``present``: in presentation mode).

    >>> "&lt;b&gt;" in step_cards_html(["<b>", "stir"], title="plan")
    True
    >>> step_cards_html(["boil", "stir"], ids=[4, 9]).count('href="Graph?node=')
    2
    """
    cards, colour = [], css_colour(colour)  # an attribute value
    for t, label in enumerate(labels):
        border = colours.CARD_BORDER if correct is None else (RIGHT if correct[t] else WRONG)
        mark = "" if correct is None else f' <span class="kepp-mark">{"✓" if correct[t] else "✗"}</span>'
        cards.append(
            f'<div class="kepp-card" style="flex:1;min-width:62px;background:{colour};border:3px solid {border};'
            f'border-radius:8px;padding:3px 6px;margin:2px;text-align:center;line-height:1.25">'
            f'<div class="kepp-small" style="font-size:0.75em;color:{colours.MUTED}">'
            f'<span class="kepp-step-word">step </span>{t + 1}{mark}</div>'  # a compact slide shows the number alone
            f'<div class="kepp-card-label" title="{html_text(label)}" style="font-weight:600;overflow-wrap:normal;'
            f'word-break:normal">{_words(label)}</div></div>')
        if ids is not None:  # the link takes the card's share of the row; the card fills it
            cards[-1] = step_link_html(int(ids[t]), cards[-1], label, present=present,
                                       style="flex:1;min-width:62px;display:flex;flex-direction:column")
    head = (f'<div class="kepp-small" style="font-size:0.9em;color:{colours.SUBTLE};margin-top:2px">'
            f'{html_text(title)}</div>') if title else ""
    return f'{head}<div class="kepp-plan" style="display:flex;flex-wrap:wrap">{"".join(cards)}</div>'


# --- page figures ------------------------------------------------------------------------------------
def video_timeline(video, actions: Sequence[str], episode: range | None, clips: dict, duration: float) -> str:
    """A video's annotated steps as bars (the episode's in blue) with the chosen clips shaded, as
    light HTML (no chart library: the Plan page opens from a link without loading one). Labels
    and hover texts are escaped; positions are percentages of ``duration``.

    ``clips``: name -> ((from, to) seconds, colour).

    >>> from types import SimpleNamespace as S
    >>> v = S(steps=[S(start=0.0, end=5.0, action=0), S(start=5.0, end=10.0, action=1)])
    >>> html_ = video_timeline(v, ["<b>", "stir"], range(1, 2), {"start": ((0.0, 3.0), RIGHT)}, 10.0)
    >>> html_.count('class="kepp-tl-step"'), "&lt;b&gt;" in html_, "left:50.00%" in html_
    (2, True, True)
    """
    pct = _percent(duration)
    parts = []
    for k, s in enumerate(video.steps):
        label = html_text(actions[s.action])
        fill = colours.SEGMENT if episode is not None and k in episode else colours.OTHER_SEGMENT
        parts.append(f'<div class="kepp-tl-step" title="{label} · {s.start:.1f}–{s.end:.1f} s" style="position:absolute;'
                     f'top:22px;height:34px;left:{pct(s.start):.2f}%;width:{max(pct(s.end) - pct(s.start), 0.2):.2f}%;'
                     f'background:{fill};color:{colours.WHITE};border:1px solid {colours.WHITE};border-radius:3px;overflow:hidden;'
                     f'white-space:nowrap;text-overflow:ellipsis;font-size:0.75em;line-height:34px;'
                     f'text-align:center">{label}</div>')
    return _timeline(parts + _clip_marks(clips, pct), duration, "kepp-timeline")


STEP_COLOURS = colours.STEP_COLOURS


def step_timeline(seconds: Sequence[dict], clips: dict, duration: float) -> str:
    """The step each second of a video most resembles (the S3D text tower's scores,
    ``TextEndpoints.timeline``) as light HTML, drawn under the video like :func:`video_timeline`:
    one cell per second coloured by its step, each run of one step labelled, a second's top steps
    and scores on hover; the chosen clips shaded. Labels and hover texts are escaped.

    >>> rows = [{"second": s, "step": 0, "label": "<b>", "score": 1.0, "top": [{"label": "<b>", "score": 1.0},
    ...          {"label": "stir", "score": 0.5}]} for s in range(3)]
    >>> html_ = step_timeline(rows, {}, 3.0)
    >>> html_.count('class="kepp-st-second"'), html_.count('class="kepp-st-run"'), "&lt;b&gt; 1.00 · stir 0.50" in html_
    (3, 1, True)
    """
    pct = _percent(duration)
    cells, runs = [], []
    for r in seconds:
        a, b = float(r["second"]), min(float(r["second"]) + 1.0, float(duration))
        hover = html_text(f"{r['second']}–{r['second'] + 1} s: " + " · ".join(f"{t['label']} {t['score']:.2f}"
                                                                            for t in r["top"]))
        colour = STEP_COLOURS[int(r["step"]) % len(STEP_COLOURS)]
        cells.append(f'<div class="kepp-st-second" title="{hover}" style="position:absolute;top:22px;height:26px;'
                     f'left:{pct(a):.3f}%;width:{max(pct(b) - pct(a), 0.05):.3f}%;background:{colour}"></div>')
        if runs and runs[-1][2] == r["step"] and runs[-1][1] == a:
            runs[-1][1] = b
        else:
            runs.append([a, b, r["step"], r["label"]])
    for a, b, _, label in runs:  # the labels over the cells; hover goes through to the seconds
        runs_label = html_text(label)
        cells.append(f'<div class="kepp-st-run" style="position:absolute;top:22px;height:26px;left:{pct(a):.3f}%;'
                     f'width:{max(pct(b) - pct(a), 0.05):.3f}%;color:{colours.WHITE};font-size:0.7em;line-height:26px;'
                     f'text-align:center;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;'
                     f'pointer-events:none;border-right:1px solid {colours.WHITE}">{runs_label}</div>')
    return _timeline(cells + _clip_marks(clips, pct), duration, "kepp-step-timeline", height=68)


def _percent(duration: float) -> Callable[[float], float]:
    """Seconds -> a percentage of ``duration`` (clamped to the video)."""
    span = max(float(duration), 1e-9)
    return lambda t: 100.0 * min(max(float(t), 0.0), span) / span


def _clip_marks(clips: dict, pct) -> list[str]:
    """The chosen clips over a timeline (``clips``: name -> ((from, to), colour)): a named band above the
    steps and an outline around them, so that no step's label is covered."""
    parts = []
    for name, ((a, b), colour) in clips.items():
        name, colour = html_text(name), css_colour(colour)
        where = f"left:{pct(a):.2f}%;width:{max(pct(b) - pct(a), 0.3):.2f}%"
        parts.append(f'<div class="kepp-tl-clip" title="{name} clip · {a:.1f}–{b:.1f} s" style="position:absolute;'
                     f'top:0;height:20px;{where};background:{colour};border-radius:3px 3px 0 0;color:{colours.WHITE};'
                     f'font-size:0.7em;font-weight:600;line-height:20px;white-space:nowrap;overflow:visible;'
                     f'padding-left:2px">{name}</div><div style="position:absolute;top:20px;bottom:18px;{where};'
                     f'border:2px solid {colour};border-top:0;pointer-events:none;box-sizing:border-box"></div>')
    return parts


def _timeline(parts: list[str], duration: float, css_class: str, height: int = 76) -> str:
    """A timeline box of ``height`` px holding ``parts``, with second ticks along its bottom."""
    pct = _percent(duration)
    ticks = "".join(f'<div style="position:absolute;bottom:0;left:{pct(t):.2f}%;font-size:0.65em;color:{colours.SOFT};'
                    f'transform:translateX(-50%)">{t:g} s</div>' for t in _ticks(max(float(duration), 1e-9)))
    return (f'<div class="{css_class}" style="position:relative;height:{height}px;margin:4px 8px 10px 8px;'
            f'border-bottom:1px solid {colours.RULE}">{"".join(parts)}{ticks}</div>')


def _ticks(duration: float, most: int = 8) -> list[float]:
    """Round tick positions (seconds) along a video of ``duration`` seconds.

    >>> _ticks(27.0)
    [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]
    """
    step = next(s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 1e9) if duration / s <= most)
    return [k * float(step) for k in range(int(duration // step) + 1)]


PATTERN_COLOURS = colours.PATTERN_COLOURS


def pattern_bars(labels: Sequence[str], counts: Sequence[int]) -> str:
    """Failures per pattern as horizontal bars, light HTML (no chart library: the page opens without
    loading one); labels escaped, each bar's count written beside it and on hover.

    >>> html_ = pattern_bars(["wrong <endpoint>", "other"], [30, 10])
    >>> html_.count('class="kepp-bar"'), "wrong &lt;endpoint&gt;" in html_, "width:100.0%" in html_, "width:33.3%" in html_
    (2, True, True, True)
    """
    top = max([int(c) for c in counts] + [1])
    rows = []
    for k, (label, n) in enumerate(zip(labels, counts)):
        label, colour = html_text(label), PATTERN_COLOURS[k % len(PATTERN_COLOURS)]
        rows.append(f'<div class="kepp-bar" title="{label}: {int(n)} failures" style="display:flex;align-items:center;'
                    f'gap:8px;margin:6px 0"><div style="flex:0 0 42%;text-align:right">{label}</div>'
                    f'<div style="flex:1;display:flex;align-items:center;gap:6px"><div style="height:1.4em;'
                    f'width:{100.0 * int(n) / top:.1f}%;background:{colour};border-radius:3px"></div>'
                    f'<b>{int(n)}</b></div></div>')
    return ('<div class="kepp-bars" style="margin-top:4px">' + "".join(rows)
            + f'<div class="kepp-small" style="color:{colours.SOFT};font-size:0.8em">failures by their first pattern</div></div>')


RUN_COLOURS = colours.RUN_COLOURS
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
                                     opacity=0.3, showlegend=False, hoverinfo="skip", legendgroup=plot_text(name)))
            y = d[metric].ewm(alpha=1.0 - smoothing).mean()
        else:
            y = d[metric]
        fig.add_trace(go.Scatter(x=d[x_axis], y=y, mode="lines+markers" if len(d) < 40 else "lines",
                                 name=plot_text(name), line=dict(color=colour), marker=dict(color=colour),
                                 legendgroup=plot_text(name)))
        step = kept.get(name)
        if metric.startswith("val_") and step is not None:
            hit = df[df["step"] == step]
            if len(hit) and metric in hit and hit[metric].notna().any():
                fig.add_trace(go.Scatter(x=hit[x_axis], y=hit[metric], mode="markers", showlegend=False,
                                         marker=dict(symbol="triangle-down", size=14, color=colour),
                                         name=plot_text(f"{name}: kept (step {step})"), legendgroup=plot_text(name)))
    # the legend between the title and the plot: below it, it covered the x axis's title
    # the legend between the title and the plot (below it, it covered the x axis's title); margins fixed,
    # not measured: plotly's measuring of its text was a tenth of a new tab's time
    fig.update_layout(title=dict(text=plot_text(metric), y=0.97, yanchor="top"), xaxis_title=plot_text(x_axis),
                      yaxis_title=plot_text(metric),
                      height=400, margin=dict(l=70, r=16, t=92, b=52, autoexpand=False),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0))
    if log_y:
        fig.update_yaxes(type="log")
    return fig


# --- protocol results (kepp protocol) --------------------------------------------------------------------
def interval_chart(df: pd.DataFrame, metric: str, confidence: float = CONFIDENCE):
    """Mean ± CI per method against ``T`` (a group of bars per horizon, error bars: the interval
    over seeds). ``df``: ``label``, ``T``, ``mean``, ``ci``, ``seeds`` (as ``ProtocolRun.intervals``)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, (label, g) in enumerate(df.groupby("label", sort=False)):
        ci = [0.0 if c is None or c != c else float(c) for c in g["ci"]]
        fig.add_trace(go.Bar(x=[f"T={t}" for t in g["T"]], y=g["mean"].tolist(), name=plot_text(label),
                             marker_color=RUN_COLOURS[k % len(RUN_COLOURS)],
                             error_y=dict(type="data", array=ci, visible=True, thickness=1.5, width=4),
                             customdata=list(zip(ci, g["seeds"].tolist())),
                             hovertemplate=f"{plot_text(label)}<br>%{{x}}: %{{y:.1f}} ± %{{customdata[0]:.1f}} "
                                           f"(%{{customdata[1]}} seeds)<extra></extra>"))
    fig.update_layout(barmode="group", height=440, margin=dict(l=10, r=10, t=50, b=10),
                      title=f"{metric} per horizon: mean ± {round(confidence * 100)}% CI over seeds",
                      yaxis_title=f"{metric} (%)", legend=dict(orientation="h", y=-0.15))
    return fig


def efficiency_chart(df: pd.DataFrame, metric: str, horizon: int, confidence: float = CONFIDENCE):
    """Data-efficiency curves: ``metric`` against the share of training videos, one line per
    method with error bars. ``df``: ``label``, ``percent``, ``mean``, ``ci`` (as ``ProtocolRun.efficiency``)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, (label, g) in enumerate(df.groupby("label", sort=False)):
        ci = [0.0 if c is None or c != c else float(c) for c in g["ci"]]
        colour = RUN_COLOURS[k % len(RUN_COLOURS)]
        fig.add_trace(go.Scatter(x=g["percent"].tolist(), y=g["mean"].tolist(), name=plot_text(label),
                                 mode="lines+markers",
                                 line=dict(color=colour), marker=dict(color=colour, size=8),
                                 error_y=dict(type="data", array=ci, visible=True, thickness=1.5, width=5),
                                 hovertemplate=f"{plot_text(label)}<br>%{{x}}% of the training videos: "
                                               "%{y:.1f}<extra></extra>"))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10),
                      title=f"Data efficiency, T={horizon}: {metric} (mean ± {round(confidence * 100)}% CI over seeds)",
                      xaxis=dict(title="training videos (%)", tickmode="array",
                                 tickvals=sorted(set(df["percent"])), ticksuffix="%"),
                      yaxis_title=f"{metric} (%)", legend=dict(orientation="h", y=-0.2))
    return fig
