"""A and B, episode by episode (Results, Failure cases, and the protocol section's pair of
methods): the 2×2 table of two methods on the episodes both planned (both right, A right and B
wrong, B right and A wrong, both wrong), each cell one click from its episodes, with McNemar's exact
test and the paired-bootstrap interval of the SR difference.

The numbers are :func:`kepp_core.api.compare_methods`' (through :mod:`components.records.backend`); this
module lays them out. On a records page the choice lives in the URL: ``a=`` and ``b=`` (the
methods), ``cell=`` (the cell listed, a name of :data:`kepp_core.catalog.AB_CELLS`), ``abep=`` and
``abpage=`` (the episode shown and its page of the list), so a reload or a shared link lists the
same episodes. The cell's list holds both plans side by side (:meth:`ABComparison.table
<kepp_core.evaluation.compare.ABComparison.table>`), downloads as CSV, and opens each method's record
on the Plan page; the protocol section keeps no URL state (:class:`Unlinked`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from components.ui import links, url_schema
from components.records import backend, episodes, metric_codes, paging
from components.ui.charts import show_table
from components.ui.config import presenting
from components.ui.pages import PAGES
from components.ui.names import compare_default, episode_label, method_name, namer
from components.ui.text import md, plan_text
from kepp_core.catalog import AB_CELLS, DEFAULT_FAMILY, p_text

__all__ = ["GRID", "PARAMS", "Unlinked", "ab_section", "cell_label", "episodes_csv", "protocol_comparison", "seed_table",
           "show_comparison"]

GRID = (("both", "a-only"), ("b-only", "neither"))
# The tiles' values (an SR and its interval) and labels (an imported method's name) wrap inside their tile:
# Streamlit cuts a metric's value and label with "…"
TILES_CSS = """<style>
[class*="_ab_tiles"] [data-testid="stMetricValue"], [class*="_ab_tiles"] [data-testid="stMetricValue"] *,
[class*="_ab_tiles"] [data-testid="stMetricLabel"], [class*="_ab_tiles"] [data-testid="stMetricLabel"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
</style>"""  # rows: A right, A wrong; columns: B right, B wrong
PARAMS = tuple(k.name for k in url_schema.AB_KEYS)  # the URL keys of a records page's comparison


class Unlinked:
    """A page state kept out of the URL (the protocol section): the link calls do nothing."""

    def __init__(self) -> None:
        self.url: dict[str, str] = {}
        self.mem: dict[str, str] = {}

    def new(self, param: str) -> None:
        return None

    def seed(self, *args, **kwargs) -> bool:
        return False

    def keep(self, **values) -> None:
        return None


def cell_label(name: str, count: int, total: int) -> str:
    """A cell's button: its name, its count and its share of the units.

    >>> cell_label("a-only", 70, 585)
    'A right, B wrong: 70 (12.0%)'
    """
    return f"{AB_CELLS[name]}: {count:,} ({100 * count / max(total, 1):.1f}%)"


def _interval(value: float, interval: tuple[float, float], sign: str = "") -> str:
    return f"{value:{sign}.1f} [{interval[0]:{sign}.1f}, {interval[1]:{sign}.1f}]"


def pick_methods(link, prefix: str, methods: Sequence[str], method: str, name: Callable[[str], str] = method_name
                 ) -> tuple[str, str]:
    """Methods A and B (``a=``, ``b=``): A the page's method, B the first method it is compared with."""
    methods = list(methods)
    others = [m for m in methods if m != method]
    b_default = (compare_default(method, others)[1:] or others or [method])[0]
    c1, c2 = st.columns(2)
    chosen = []
    for col, side, default in ((c1, "a", method), (c2, "b", b_default)):
        key = f"{prefix}_ab_{side}"
        link.seed(key, side, methods)
        chosen.append(col.selectbox(f"Method {side.upper()}", methods, key=key, format_func=name,
                                    **links.default_kwargs(key, index=methods.index(default))))
    link.keep(a=chosen[0], b=chosen[1])
    return chosen[0], chosen[1]


def ab_section(link, prefix: str, cfg, ds, preds: pd.DataFrame, methods: Sequence[str], method: str,
               horizon: int, code: str = DEFAULT_FAMILY, *, add_pair: Callable | None = None) -> None:
    """The section of a records page: methods A and B at the page's ``T``, their 2×2 table and numbers,
    and the clicked cell's episodes, each opening either method's record on the Plan page (``code``: the
    evaluation code whose metrics the page shows, named in the caption). ``add_pair(cfg, rows, a, b, key)``
    draws the control that adds an episode's pair to a playlist: the page hands it in
    (:func:`components.talk.playlists.ab_control`), as the talk's room stands above this one."""
    st.subheader("A and B, episode by episode")
    name = namer(backend.method_names(cfg))  # an imported method's name says so
    a, b = pick_methods(link, prefix, methods, method, name)
    if a == b:
        st.info("Pick two different methods to compare them episode by episode.")
        return
    with backend.guarded(stop=False):
        comparison = backend.ab_comparison(cfg, a, b, horizon)
        tasks = episodes.task_names(ds)
        show_comparison(link, prefix, comparison, steps=lambda p: plan_text(ds.labels(p)),
                        episode=lambda e: episode_label(e, tasks),
                        detail=lambda unit: _record_detail(ds, preds, a, b, unit, name, cfg, prefix, add_pair), name=name,
                        code=code)


def show_comparison(link, prefix: str, comparison, steps: Callable[[Sequence[int]], str],
                    episode: Callable[[str], str], detail: Callable[[pd.Series], None] | None = None,
                    name: Callable[[str], str] = method_name, code: str = DEFAULT_FAMILY) -> None:
    """The verdict, each method's SR and A − B with their intervals, McNemar's p, the 2×2 table of
    cell buttons, the CSV of every paired episode and, when a cell is picked, its episodes (``detail``
    draws the one chosen); ``name``: a method's display name; ``code``: the evaluation code the page shows
    (the caption names its SR: :func:`components.records.metric_codes.sr_words`)."""
    c = comparison
    (st.success if c.significant else st.warning)(md(c.verdict()))
    st.markdown(TILES_CSS, unsafe_allow_html=True)
    with st.container(key=f"{prefix}_ab_tiles"):  # the intervals wrap in their tile, never cut with "…"
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(f"SR A: {md(name(c.a))}", _interval(c.sr_a, c.sr_a_interval))
        m2.metric(f"SR B: {md(name(c.b))}", _interval(c.sr_b, c.sr_b_interval))
        m3.metric("Δ SR (A − B), points", _interval(c.delta, c.delta_interval, "+"))
        m4.metric(f"p ({c.test_name})", p_text(c.p))
    units = f"{len(c.units):,} (seed × episode) units" if c.seeds > 1 else f"{len(c.units):,} test episodes"
    if not presenting():
        st.caption(f"{md(units)} both methods planned at T={c.horizon}; SR in % ({md(metric_codes.sr_words(code))}), "
                   f"[ ]: the {md(c.resampling())}; "
                   f"p: {md(c.test)}" + (" over the (seed, episode) units of the same seeds of both methods"
                                         if c.seeds > 1 and not c.stratified else "")
                   + ". Click a cell to list its episodes.")
    if c.stratified:
        _per_seed(prefix, c, name)
    cell = _grid(link, prefix, c, name)
    st.download_button("Download every paired episode, both plans (CSV)", key=f"{prefix}_ab_all_csv",
                       data=lambda: episodes_csv(c, None, steps, episode),
                       file_name=f"kepp_{c.a}_vs_{c.b}_T{c.horizon}.csv", mime="text/csv", on_click="ignore")
    if cell is not None:
        _cell_list(link, prefix, c, cell, steps, episode, detail, name)


def seed_table(comparison) -> pd.DataFrame:
    """A one-run method against several seeds: each seed's own 2×2 numbers (its units, ``b``: A right and B wrong,
    ``c``: B right and A wrong, McNemar's exact p), what the combined p of the CMH test stands on."""
    return pd.DataFrame({"seed": [t.seed for t in comparison.per_seed], "units": [t.units for t in comparison.per_seed],
                         "b (A right, B wrong)": [t.b for t in comparison.per_seed],
                         "c (B right, A wrong)": [t.c for t in comparison.per_seed],
                         "p (McNemar, this seed)": [p_text(t.p) for t in comparison.per_seed]})


def _per_seed(prefix: str, c, name: Callable[[str], str]) -> None:
    """The seeds' own tests beside the combined p (the one run is never pooled as if it were several)."""
    st.markdown(f"**Seed by seed**: {md(name(c.one_run))} is one run, tested against each seed; "
                f"combined: p = {md(p_text(c.p))} ({md(c.test_name)})")
    show_table(seed_table(c), f"kepp_{c.a}_vs_{c.b}_T{c.horizon}_seeds", key=f"{prefix}_ab_seeds", hide_index=True)


def episodes_csv(comparison, cell: str | None, steps: Callable[[Sequence[int]], str],
                 episode: Callable[[str], str]) -> bytes:
    """The downloads: every episode of ``cell`` (every paired episode when None) with the ground truth,
    A's plan, whether it is right, B's plan, whether it is right and the cell, as CSV."""
    return comparison.table(cell, steps, episode, seeds=True).to_csv(index=False).encode()


def _pick_cell(prefix: str, name: str) -> None:
    """on_click of a cell: list its episodes (a second click closes the list), from the first page."""
    key = f"{prefix}_ab_cell"
    st.session_state[key] = "" if st.session_state.get(key) == name else name  # "": a URL's cell stays closed
    st.session_state.pop(f"{prefix}_ab_episode", None)
    st.session_state[f"{prefix}_ab_page"] = 1


def _grid(link, prefix: str, c, name: Callable[[str], str]) -> str | None:
    """The 2×2 table as four buttons (the picked one highlighted); returns the picked cell (``cell=``)."""
    key = f"{prefix}_ab_cell"
    link.seed(key, "cell", [*AB_CELLS, ""], absent="")  # a link without a cell closes the list
    active = st.session_state.get(key) or None
    widths = [1.2, 2, 2]
    head = st.columns(widths)
    head[1].markdown(f"**B right** · {md(name(c.b))}")
    head[2].markdown("**B wrong**")
    for row_label, names in zip((f"**A right** · {md(name(c.a))}", "**A wrong**"), GRID):
        cols = st.columns(widths, vertical_alignment="center")
        cols[0].markdown(row_label)
        for col, name in zip(cols[1:], names):
            col.button(cell_label(name, c.counts[name], len(c.units)), key=f"{prefix}_ab_{name}", width="stretch",
                       type="primary" if name == active else "secondary", on_click=_pick_cell, args=(prefix, name),
                       help="list these episodes" if name != active else "close the list")
    link.keep(cell=active)
    return active


def _cell_list(link, prefix: str, c, cell: str, steps, episode, detail, name: Callable[[str], str]) -> None:
    """One cell's episodes: a paged table with both plans (its CSV holds the whole cell), a click on a
    row or the select box picks the episode that ``detail`` draws."""
    rows = c.select(cell).reset_index(drop=True)
    st.markdown(f"#### {md(AB_CELLS[cell])} · {md(name(c.a))} (A), {md(name(c.b))} (B)")
    if not len(rows):
        link.keep(abep=None)
        st.info("No episode falls in this cell.")
        return
    ids = episodes.unit_ids(rows)
    episode_key = f"{prefix}_ab_episode"
    lo, hi = paging.pager(link, f"{prefix}_ab", pd.Series(ids), episode_key, params=("abep", "abpage"),
                          what="paired episodes" if c.seeds == 1 else "paired (seed, episode) units")
    page_ids = ids[lo:hi]

    def pick_row() -> None:
        picked = st.session_state[f"tbl_{prefix}_ab_table"].selection.rows
        if picked:
            st.session_state[episode_key] = page_ids[picked[0]]

    show_table(c.table(cell, steps, episode, part=slice(lo, hi), seeds=True), f"kepp_{c.a}_vs_{c.b}_T{c.horizon}_{cell}",
               key=f"{prefix}_ab_table", hide_index=True, height=min(38 + 35 * len(page_ids), 260),
               csv=lambda: episodes_csv(c, cell, steps, episode),  # the whole cell
               on_select=pick_row, selection_mode="single-row")
    link.seed(episode_key, "abep", page_ids)
    if st.session_state.get(episode_key) not in page_ids:  # another page or cell: its first episode
        st.session_state[episode_key] = page_ids[0]
    shown = {u: episode(str(e)) + u[len(str(e)):] for u, e in zip(page_ids, rows["episode"].iloc[lo:hi])}
    ep_col, prev_col, next_col = st.columns([4, 1.3, 1.3], vertical_alignment="bottom")
    chosen = ep_col.selectbox("Episode", page_ids, key=episode_key, format_func=shown.get)
    paging.episode_buttons(f"{prefix}_ab", episode_key, pd.Series(ids), (prev_col, next_col))
    link.keep(abep=chosen)
    if detail is not None:
        detail(rows.iloc[ids.index(chosen)])


def open_label(name: str) -> str:
    """The label of the link that opens a method's record on the Plan page: Markdown (a page link's label
    is), so the name (an imported method's holds its predictions file's) is escaped for it.

    >>> "![x](" in open_label("vpn (imported: ![x](http://host/x).json)")
    False
    """
    return f"Open {md(name)} in Plan"


def _record_detail(ds, preds: pd.DataFrame, a: str, b: str, unit: pd.Series, name: Callable[[str], str], cfg,
                   prefix: str, add_pair: Callable | None) -> None:
    """One paired episode of a records page: each method's record opened on the Plan page, the pair added to
    a playlist as one A/B slide, then the episode with both methods side by side (clips, ground truth,
    endpoints, graph paths, plans)."""
    same = preds[(preds["episode"] == unit["episode"]) & (preds["horizon"] == unit["horizon"])]
    if unit["seed"] is not None and unit["seed"] == unit["seed"]:  # the unit's seed; a method without seeds
        same = same[(same["seed"] == unit["seed"]) | same["seed"].isna()]  # (imported) was paired with each
    cols = st.columns(2)
    for col, m in zip(cols, (a, b)):
        rows = same[same["method"] == m]
        if len(rows):
            col.page_link(PAGES["plan"].path, label=open_label(name(m)), icon=PAGES["plan"].icon,
                          query_params=episodes.plan_query(rows.iloc[0]))
    if add_pair is not None:
        add_pair(cfg, same, a, b, f"{prefix}_ab_add")
    episodes.show_episode(ds, same, [a, b])


def protocol_comparison(cfg, ds, run, a: str, b: str, horizon: int, fraction: float) -> None:
    """The protocol section's pair of methods episode by episode: over every (seed, test episode)
    unit of ``(fraction, T)`` of the folder's records. Steps are named with the app's dataset when
    the protocol ran on it (ids otherwise); no Plan-page links: the protocol's own models made
    these plans, not the app's."""
    st.markdown("**A and B, episode by episode** (the 2×2 table over every seed and test episode)")
    with backend.guarded(stop=False):
        comparison = backend.protocol_comparison(run.folder, a, b, horizon, fraction)
        named = ds is not None and _same_dataset(cfg, run)
        names = episodes.task_names(ds) if named else {}
        show_comparison(Unlinked(), "proto", comparison,
                        steps=(lambda p: plan_text(ds.labels(p))) if named else (lambda p: " ".join(map(str, p))),
                        episode=lambda e: episode_label(e, names))
        if not named and not presenting():
            st.caption("Steps as action ids: this protocol ran on another dataset than the app's.")


def _same_dataset(cfg, run) -> bool:
    """Whether a protocol ran on the app's dataset (same format and root), so its ids name the app's steps."""
    root = run.spec.get("root")
    if run.spec.get("dataset") != cfg.dataset:
        return False
    app_root = backend.dataset_root(cfg)
    if root is None or app_root is None:
        return root is None and cfg.dataset == "demo" and cfg.root is None
    return Path(str(root)).resolve() == Path(str(app_root)).resolve()
