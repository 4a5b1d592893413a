"""The "by slice" table of Results and Failure cases: one method's episodes cut by task, failure
pattern, horizon or whether the endpoints were right (:func:`kepp_core.api.slice_table`), with
count, SR, mAcc and ends right (first and last step right), compared with a reference method.

A click on a row filters the page's episode list to that slice: where the page has a filter of
its own for the cut (Results: task and ``T``; Failure cases: pattern and ``T``) the click sets it,
otherwise the slice itself becomes a filter kept in the URL (``slice=ends:wrong``), so a
reload or a shared link lists the same episodes. The cuts, their labels and which one spans every
horizon are the catalogue's (:data:`kepp_core.catalog.SLICE_CUTS`); the labels and the URL codec
below are plain Python, tested without a browser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from components.records import backend
from components.ui.charts import show_table
from components.ui.names import compare_default, namer
from components.ui.text import md
from kepp_core.catalog import DEFAULT_FAMILY, FAMILIES, PAIRED_TEST, SLICE_CUTS

__all__ = ["active_slice", "apply_slice", "cut_scope", "display_table", "parse_slice", "slice_block", "slice_label",
           "slice_text"]

NO_REFERENCE = "(none)"
RENAMED = {"endpoints": "ends"}  # a cut's earlier name, as links made before the rename carry it


def cut_scope(by: str, horizon: int) -> int | None:
    """The horizon a cut's table counts: the page's, or every horizon (None) for the cut that spans them.

    >>> cut_scope("task", 4), cut_scope("horizon", 4)
    (4, None)
    """
    return None if SLICE_CUTS[by].every_horizon else horizon


def slice_label(by: str, value: str, task_names: Mapping[str, str] | None = None) -> str:
    """A slice's readable name.

    >>> slice_label("horizon", "4"), slice_label("pattern", "wrong_endpoint"), slice_label("ends", "wrong")
    ('T=4', 'wrong predicted endpoint', "the plan's first or last step wrong")
    >>> slice_label("task", "tea", {"tea": "make tea"}), slice_label("pattern", "success")
    ('make tea', 'success (no failure)')
    """
    return SLICE_CUTS[by].value_label(value, task_names)


def slice_text(by: str, value: str) -> str:
    """A slice in the URL: ``by:value``.

    >>> slice_text("task", "a:b")
    'task:a:b'
    """
    return f"{by}:{value}"


def parse_slice(text: str) -> tuple[str, str]:
    """``by:value`` back to ``(by, value)`` (the value may hold colons); ValueError if it is not one.

    >>> parse_slice("task:a:b"), parse_slice("endpoints:wrong")
    (('task', 'a:b'), ('ends', 'wrong'))
    >>> parse_slice("colour:red")
    Traceback (most recent call last):
    ...
    ValueError: not a slice: 'colour:red'
    """
    by, sep, value = str(text).partition(":")
    by = RENAMED.get(by, by)
    if not sep or by not in SLICE_CUTS or not value:
        raise ValueError(f"not a slice: {text!r}")
    return by, value


def display_table(table: pd.DataFrame, by: str, task_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The slice table as the page shows it: the slice's readable name first (its column named
    after the cut), then the numbers (without a p column when no slice has a p-value: one seed).

    >>> t = pd.DataFrame({"slice": ["3", "4"], "count": [5, 4], "SR": [40.0, 25.0]})
    >>> display_table(t, "horizon").to_dict("list")
    {'horizon (T)': ['T=3', 'T=4'], 'count': [5, 4], 'SR': [40.0, 25.0]}
    """
    shown = table.drop(columns=["slice"] + (["p"] if "p" in table and table["p"].isna().all() else []))
    shown.insert(0, SLICE_CUTS[by].label, [slice_label(by, v, task_names) for v in table["slice"]])
    return shown


def active_slice(prefix: str) -> tuple[str, str] | None:
    """The slice filter of the page (``prefix``: its widget keys' prefix), or None."""
    try:
        return parse_slice(st.session_state.get(f"{prefix}_slice") or "")
    except ValueError:
        return None


def _pick(prefix: str, table_key: str, by: str, values: list[str], widgets: Mapping[str, tuple[str, Sequence]]) -> None:
    """on_select of the slice table: the clicked slice becomes the page's filter (its own widget
    for the cut when it has one and the value is among its options, else the slice filter)."""
    rows = st.session_state[table_key].selection.rows
    if not rows:
        return
    value = values[rows[0]]
    key, options = widgets.get(by, (None, ()))
    parsed = int(value) if SLICE_CUTS[by].every_horizon else value  # that cut's values are horizons
    if key is not None and parsed in list(options):
        st.session_state[key] = parsed
        st.session_state[f"{prefix}_slice"] = ""
    else:
        st.session_state[f"{prefix}_slice"] = slice_text(by, value)


def _clear(prefix: str) -> None:
    st.session_state[f"{prefix}_slice"] = ""  # "" (not absent): a dropped key would come back from the URL memory
    st.session_state[f"{prefix}_slice_gen"] = st.session_state.get(f"{prefix}_slice_gen", 0) + 1  # a fresh table


def _controls(link, prefix: str, method: str, methods: Sequence[str], name) -> tuple[str, str | None]:
    """The cut and the reference method (both kept in the URL: ``by=``, ``ref=``)."""
    c1, c2 = st.columns([3, 2])
    kinds = list(SLICE_CUTS)
    link.seed(f"{prefix}_slice_by", "by", kinds, parse=lambda t: RENAMED.get(t, t))
    by = c1.radio("Slice by", kinds, horizontal=True, key=f"{prefix}_slice_by", format_func=lambda b: SLICE_CUTS[b].label)
    others = [m for m in methods if m != method]
    refs = [NO_REFERENCE, *others]
    link.seed(f"{prefix}_ref", "ref", refs)
    if st.session_state.get(f"{prefix}_ref") not in (None, *refs):  # the reference became the method shown
        st.session_state.pop(f"{prefix}_ref")
    default = (compare_default(method, others)[1:] or others or [NO_REFERENCE])[0]
    ref = c2.selectbox("Compared with", refs, key=f"{prefix}_ref", format_func=lambda m: m if m == NO_REFERENCE
                       else name(m), **({} if f"{prefix}_ref" in st.session_state
                                               else {"index": refs.index(default)}))
    link.keep(by=None if by == kinds[0] else by, ref=ref)
    return by, None if ref == NO_REFERENCE else ref


def slice_block(link, prefix: str, cfg, ds, method: str, horizon: int, methods: Sequence[str],
                widgets: Mapping[str, tuple[str, Sequence]]) -> tuple[str, str] | None:
    """The "By slice" section: the cut, the reference method, the table of ``method``'s episodes
    at ``horizon`` (every horizon when cutting by horizon) and, when a row was clicked, the slice
    filter with a button that clears it. ``widgets``: the page's own filter per cut, as
    ``{cut: (widget key, its options)}``. Returns the slice filter the page applies
    (:func:`active_slice`), kept in the URL."""
    link.seed(f"{prefix}_slice", "slice", parse=lambda t: slice_text(*parse_slice(t)), absent="")
    st.markdown("#### By slice")
    name = namer(backend.method_names(cfg))  # an imported method's name says so
    by, ref = _controls(link, prefix, method, methods, name)
    with backend.guarded(stop=False):
        result = backend.slice_table(cfg, method, by, ref, cut_scope(by, horizon))
        names = {t: ds.tasks[t].name for t in ds.tasks}
        values = list(result.table["slice"])
        key = f"{prefix}_slices_{by}_{st.session_state.get(f'{prefix}_slice_gen', 0)}"
        fmt = {c: st.column_config.NumberColumn(format="%+.2f") for c in ("Δ SR", "Δ mAcc", "Δ ends right")}
        fmt["p"] = st.column_config.NumberColumn(format="%.4f")
        show_table(display_table(result.table, by, names), f"kepp_slices_{by}", key=key, hide_index=True,
                   height=min(38 + 35 * len(values), 300), column_config=fmt, selection_mode="single-row",
                   on_select=lambda: _pick(prefix, f"tbl_{key}", by, values, widgets))
        where = "every T" if cut_scope(by, horizon) is None else f"T={horizon}"
        st.caption(f"{md(name(method))} at {where}: count of episodes (× seeds); SR, mAcc and ends right "
                   f"(first and last step right) in %, by {md(FAMILIES[DEFAULT_FAMILY].label)}'s code"
                   + (f"; Δ: minus {md(name(ref))} on the same episodes and seeds, in points; p: "
                      f"{md(PAIRED_TEST)} (only with several seeds)" if ref else "")
                   + ". Click a row to list its episodes.")
    active = active_slice(prefix)
    if active is not None:
        names = {t: ds.tasks[t].name for t in ds.tasks}
        c1, c2 = st.columns([4, 1], vertical_alignment="center")
        c1.markdown(f"Episodes below: **{md(SLICE_CUTS[active[0]].label)}** = **{md(slice_label(*active, names))}**")
        c2.button("Clear slice", key=f"{prefix}_slice_clear", on_click=_clear, args=(prefix,), icon=":material/close:")
    link.keep(slice=slice_text(*active) if active else None)
    return active


def apply_slice(cfg, active: tuple[str, str] | None, rows: pd.DataFrame, method: str, horizon: int) -> pd.DataFrame:
    """``rows`` (``method``'s episodes at ``horizon``) in the slice ``active`` (all when None), by
    the rule the table counts with (:meth:`kepp_core.evaluation.slices.SliceTable.select`)."""
    if active is None or not len(rows):
        return rows
    by, value = active
    return backend.slice_table(cfg, method, by, None, cut_scope(by, horizon)).select(rows, value)
