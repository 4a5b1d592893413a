"""The episodes through a step or a transition, on the Graph page: every record (method, T, seed, its file) whose
plan or ground truth passes through the chosen node (the step appears) or edge ``a → b`` (``a`` right before
``b``), found on the store's ``[n, T]`` arrays (:func:`kepp_core.api.episodes_through`, once per records version
and choice), listed a page at a time (:mod:`components.records.paging`), each row opening its record on the Plan
page (:mod:`components.records.urls`) and each of its steps the graph around that step
(:mod:`components.ui.step_links`); the CSV holds the whole list.

The list's rows are drawn as one HTML table (a page of at most :data:`~components.records.paging.PAGE_SIZE` rows),
every dataset string escaped for it (:func:`~components.ui.text.html_text`)."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

from components.records import backend, paging, urls
from components.ui import colours
from components.ui.config import presenting
from components.ui.names import episode_label, method_name
from components.ui.pages import PAGES
from components.ui.step_links import step_chip_html
from components.ui.text import html_text, md

__all__ = ["list_rows", "show_through", "through_csv", "through_word"]

_CELL = "padding:2px 6px;vertical-align:top;"  # a cell of the list's table
_WIDTHS = {0: "min-width:9em", 1: "min-width:7em"}  # the episode's and the method's words wrap; the rest stay on a line
TABLE_CLASS = "kepp-through"  # the list's HTML table (the browser tests read its rows by it)


def through_word(in_plan, in_truth) -> np.ndarray:
    """What passes through, per row: ``plan``, ``truth`` or ``both`` (arrays in, an object array out).

    >>> through_word(np.array([True, False, True]), np.array([True, True, False])).tolist()
    ['both', 'truth', 'plan']
    """
    in_plan, in_truth = np.asarray(in_plan, bool), np.asarray(in_truth, bool)
    return np.where(in_plan & in_truth, "both", np.where(in_plan, "plan", "truth")).astype(object)


def list_rows(preds: pd.DataFrame, hits: pd.DataFrame) -> pd.DataFrame:
    """The records of ``hits`` (:func:`kepp_core.api.episodes_through`'s positions in ``preds``) with what passes
    through (``through``), columns picked from the table by position (no row loop)."""
    rows = preds.iloc[hits["row"].to_numpy()]
    return rows.assign(through=through_word(hits["plan"].to_numpy(), hits["truth"].to_numpy()))


def through_csv(rows: pd.DataFrame, ds) -> bytes:
    """The whole list as CSV: the episode (id and in words), method, T, seed, the records file and, for imported
    plans, their file, what passes through, the plan and the ground truth named (made when the button is pressed)."""
    names = {t: ds.tasks[t].name for t in ds.tasks}
    labels = np.array(ds.actions, dtype=object)
    return pd.DataFrame({
        "episode": rows["episode"].to_numpy(), "in words": [episode_label(e, names) for e in rows["episode"]],
        "method": rows["method"].to_numpy(), "T": rows["horizon"].to_numpy(), "seed": rows["seed"].to_numpy(),
        "file": rows["source"].to_numpy(), "imported": rows["imported"].to_numpy(),
        "through": rows["through"].to_numpy(),
        "plan": [" → ".join(labels[list(p)]) for p in rows["plan"]],
        "ground truth": [" → ".join(labels[list(t)]) for t in rows["truth"]],
    }).to_csv(index=False).encode()


def _chips(ds, steps, marks, present: bool) -> str:
    return " ".join(step_chip_html(int(a), ds.actions[int(a)], mark=m, present=present)
                    for a, m in zip(steps, marks if marks is not None else [None] * len(steps)))


def _table_html(ds, page: pd.DataFrame, names: dict, present: bool) -> str:
    """One page of the list as an HTML table (every string escaped; steps as step links; Open as the Plan page's
    link of the record)."""
    head = "".join(f"<th>{h}</th>" for h in ("episode", "method", "T", "seed", "file", "through", "plan", "ground truth", ""))
    body = []
    for row in page.itertuples(index=False):  # one page: at most paging.PAGE_SIZE rows
        record = row._asdict()
        query = urls.plan_query(record)
        if present:
            query["present"] = "1"
        href = PAGES["plan"].url_path + "?" + urlencode(query)
        imported = record["imported"] if isinstance(record["imported"], str) else None
        seed = "" if record["seed"] is None or record["seed"] != record["seed"] else str(int(record["seed"]))
        marks = [a == b for a, b in zip(record["plan"], record["truth"])]
        cells = [episode_label(record["episode"], names), method_name(record["method"], imported), str(int(record["horizon"])),
                 seed, str(record["source"] or "")]
        body.append(
            f'<tr data-episode="{html_text(record["episode"])}" data-method="{html_text(record["method"])}" '
            f'data-seed="{html_text(seed)}" data-through="{html_text(record["through"])}">'
            + "".join(f'<td style="{_CELL}{_WIDTHS.get(k, "white-space:nowrap")}">{html_text(c)}</td>'
                      for k, c in enumerate(cells))
            + f'<td style="{_CELL}">{html_text(record["through"])}</td>'
            f'<td style="{_CELL}min-width:9em">{_chips(ds, record["plan"], marks, present)}</td>'
            f'<td style="{_CELL}min-width:9em">{_chips(ds, record["truth"], None, present)}</td>'
            f'<td style="{_CELL}white-space:nowrap"><a class="kepp-open-plan" href="{html_text(href)}" target="_self">'
            'Open in Plan</a></td></tr>')
    size = "1em" if present else "0.85em"  # a room's type never under its 20 px (presentation mode)
    return (f'<div style="overflow-x:auto"><table class="{TABLE_CLASS}" style="font-size:{size};border-collapse:collapse">'
            f'<thead style="color:{colours.SUBTLE}"><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def show_through(link, cfg, ds, node: int, edge: tuple[int, int] | None) -> None:
    """The list of the records whose plan or truth passes through ``node`` (``edge`` None) or ``edge``, paged, with
    its CSV (``link``: the Graph page's :class:`~components.ui.links.PageLink`; its page is ``epage``)."""
    preds = backend.predictions(cfg)
    what = (f"{ds.actions[edge[0]]} → {ds.actions[edge[1]]}" if edge is not None else ds.actions[node])
    if preds is None or not len(preds):
        st.caption("No prediction records: no episode to list.")
        return
    hits = backend.episodes_through(cfg, None if edge is not None else node, edge)
    rows = list_rows(preds, hits)
    n_plan, n_truth = int(hits["plan"].sum()), int(hits["truth"].sum())
    st.markdown(f"**{len(rows):,} record{'s' if len(rows) != 1 else ''}** whose plan or ground truth passes through "
                f"**{md(what)}**: the plan in {n_plan:,}, the truth in {n_truth:,} "
                f"({len(preds):,} records of every method, T and seed).")
    if not len(rows):
        link.keep(epage=None)
        return
    lo, hi = paging.pager(link, "graph_through", pd.Series(np.arange(len(rows))), "graph_through_episode",
                          params=("graph_through_episode", "epage"), what="records")
    names = {t: ds.tasks[t].name for t in ds.tasks}
    st.markdown(_table_html(ds, rows.iloc[lo:hi], names, presenting()), unsafe_allow_html=True)
    stem = f"kepp_through_{edge[0]}-{edge[1]}" if edge is not None else f"kepp_through_{node}"
    st.download_button("Download the list (CSV)", lambda: through_csv(rows, ds), file_name=f"{stem}.csv",
                       mime="text/csv", key="graph_through_csv", on_click="ignore")
