"""Results: a method x T table, metrics per method and horizon, a method's episodes by slice,
browse test episodes, compare up to four methods on one episode, the map of the test episodes,
two methods episode by episode (the 2×2 table, each cell's episodes);
the ``kepp protocol`` results (intervals over seeds, the paired
test of a chosen pair, data-efficiency curves).

The episodes are paged (:mod:`components.records.paging`): the table and the episode select box hold one
page of the filtered records, so tens of thousands of records never go into the page at once; the
tables over all records are computed once per records file (:mod:`components.records.backend`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.ui import links
from components.records import ab, backend, episode_map, episodes, metric_codes, paging, slices
from components.talk import playlists
from components.ui.charts import show_table, table_on_demand
from components.ui.colours import BEST_TINT
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.records.protocol import show_protocol
from components.ui.text import md_code
from components.ui.names import compare_default, default_method, namer
from kepp_core.catalog import DEFAULT_FAMILY, FAMILIES, PATTERNS, PATTERN_LABELS

cfg = page_setup("Results")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Results")

ds, preds = backend.records_page(cfg, "so there is no table of methods to show.")
if preds is None:
    show_protocol(cfg, ds)
    st.stop()
if not cfg.presentation:
    st.caption("Records: " + ", ".join(md_code(s) for s in backend.records_index(cfg).sources))
link = links.PageLink("results")
index = backend.records_index(cfg)  # the filters' values and where rows lie, once per version of the records

st.subheader("Method × T")
code = metric_codes.pick_code(link, "res_code")  # which evaluation code's metrics: every header names it
with backend.guarded():
    grid, best = backend.method_table(cfg, code)
name_of = namer(backend.method_names(cfg))  # an imported method's name says so, with its predictions file
seeds = index.seeds
spread = (f"; mean ± 90% CI (Student t) over {seeds} seeds." if seeds > 1 else
          "; [ ]: the 90% percentile bootstrap interval over the test episodes (one seed: episode-level, the test "
          "set's spread, not the training's)." if FAMILIES[code].per_episode is not None else
          "; one seed: no interval (a per-batch number is not a mean over episodes to resample).")
st.caption(metric_codes.code_caption(code, {metric_codes.column_kind(c) for c in grid.columns}
                                     if code == DEFAULT_FAMILY else None)
           + " All in %; **bold**: the best measured per column" + spread)


def bold_best(col):
    """Styler: the best method of a column in bold on a light green."""
    return [f"font-weight: 700; background-color: {BEST_TINT}" if name == best.get(col.name) else "" for name in col.index]


# one metric at a time by default: every T of it fits the page's width beside the methods' names
METRICS = ["SR", "mAcc", "mIoU", "all"]


@st.fragment
def method_grid() -> None:
    """The method × T table of the metric picked: the metric's control redraws only the table (a fragment)."""
    link.seed("res_metric", "metric", METRICS, absent="SR")
    shown_metric = st.segmented_control("Metric", METRICS, key="res_metric",
                                        **links.default_kwargs("res_metric", default="SR"),
                                        format_func=lambda m: "all three" if m == "all" else m) or "SR"
    link.keep(metric=None if shown_metric == "SR" else shown_metric)
    columns = [c for c in grid.columns if shown_metric == "all" or metric_codes.column_kind(c) == shown_metric]
    st.dataframe(grid[columns].style.apply(bold_best), width="stretch", key="res_grid")
    link.publish_fragment()


method_grid()
st.download_button("Download table (CSV)", grid.to_csv().encode(), file_name=f"kepp_method_by_T_{code}.csv",
                   mime="text/csv", key="res_grid_csv", on_click="ignore")
metric_codes.published(cfg, index.horizons, code)  # the benchmark's published rows, apart


table_on_demand(f"All metrics of {FAMILIES[code].label}'s code (per setting)",
                lambda code=code: backend.metrics_table(cfg, code), f"kepp_metrics_{code}", key="res_metrics",
                guard=lambda: backend.guarded(stop=False), hide_index=True)

st.subheader("Test episodes")
f1, f2, f3, f4, f5 = st.columns(5)
task_names = {t: ds.tasks[t].name if t in ds.tasks else t for t in index.tasks}
tasks = ["(all)", *task_names]
link.seed("res_task", "task", tasks)
task = f1.selectbox("Task", tasks, key="res_task", format_func=lambda t: task_names.get(t, t))
hs = index.horizons
link.seed("res_T", "T", hs)
horizon = f2.selectbox("T", hs, key="res_T")
methods = index.methods
link.seed("res_method", "method", methods)
method = f3.selectbox("Method", methods, key="res_method", format_func=name_of,
                      **links.default_kwargs("res_method", index=default_method(methods)))
link.seed("res_outcome", "outcome", ["all", "correct", "incorrect"])
outcome = f4.selectbox("Outcome", ["all", "correct", "incorrect"], key="res_outcome")
link.seed("res_pattern", "pattern", ["(any)", *PATTERNS])
pattern = f5.selectbox("Failure pattern", ["(any)", *PATTERNS], key="res_pattern",
                       format_func=lambda p: PATTERN_LABELS.get(p, p))
link.keep(task=None if task == "(all)" else task, T=horizon, method=method,
          outcome=None if outcome == "all" else outcome, pattern=None if pattern == "(any)" else pattern)
run = backend.run_rows(cfg, method, horizon)
# by slice: a click on a row sets the task or T filter above, or filters by the slice itself
active_slice = slices.slice_block(link, "res", cfg, ds, method, horizon, methods,
                                  {"task": ("res_task", tasks), "horizon": ("res_T", hs)})
sel = slices.apply_slice(cfg, active_slice, run, method, horizon)
if task != "(all)":
    sel = sel[sel["task"] == task]
if outcome != "all":
    sel = sel[sel["success"] == (outcome == "correct")]
if pattern != "(any)":
    sel = sel[sel["patterns"].str.contains(pattern, regex=False)]
sel = sel.reset_index(drop=True)


def pick_row(key: str, ids: list[str]) -> None:
    """on_select of the episodes table: the clicked row becomes the episode compared below."""
    rows = st.session_state[key].selection.rows
    if rows:
        st.session_state["res_episode"] = ids[rows[0]]


st.markdown("#### Episodes")
units = pd.Series(episodes.unit_ids(sel))  # one id per row: the seed (and file) where an episode repeats
lo, hi = paging.pager(link, "res", units, "res_episode")
page_rows = sel.iloc[lo:hi]
ids = units.iloc[lo:hi].tolist()
st.caption("Click a row to compare it below")
show_table(episodes.episode_table(page_rows, ds, ids=ids), "kepp_episodes", key="res_episodes", hide_index=True, height=260,
           csv=lambda: episodes.episodes_csv(sel, ds),  # every page of the filter
           on_select=lambda: pick_row("tbl_res_episodes", ids), selection_mode="single-row")
if len(sel):
    playlists.add_listed_control(cfg, sel, "res_add_listed")

if len(sel):
    st.subheader("Compare methods on one episode")
    names = episodes.unit_names(page_rows, ds, ids)
    link.seed("res_episode", "episode", ids, parse=lambda raw: episodes.unit_of(raw, ids))
    if st.session_state.get("res_episode") not in ids:  # another page: its first episode
        st.session_state["res_episode"] = ids[0]
    c1, prev_col, next_col, open_col = st.columns([4, 1.3, 1.3, 2], vertical_alignment="bottom")
    unit = c1.selectbox("Episode", ids, key="res_episode", format_func=names.get)
    paging.episode_buttons("res", "res_episode", units, (prev_col, next_col))
    row = page_rows.iloc[ids.index(unit)]
    open_col.page_link(PAGES["plan"].path, label="Open in Plan", icon=PAGES["plan"].icon, query_params=episodes.plan_query(row))
    with open_col:
        playlists.add_control(cfg, [playlists.item_of_row(row)], "res_add")
    same = episodes.same_run(backend.episode_rows(cfg, row["episode"], row["horizon"]), row)  # this row's seed: never another seed's plans
    available = sorted(same["method"].unique())


    def methods_of(text: str) -> list[str]:
        """The URL's comma-separated methods that this episode has (up to four)."""
        picked = [m for m in text.split(",") if m in available][:4]
        if not picked:
            raise ValueError(text)
        return picked

    link.seed("res_compare", "compare", parse=methods_of)
    if "res_compare" in st.session_state:  # keep only methods this episode has
        st.session_state["res_compare"] = [m for m in st.session_state["res_compare"] if m in available][:4]
    default = compare_default(method, available)
    chosen = st.multiselect("Methods (up to four)", available, max_selections=4, key="res_compare",
                            format_func=name_of, **links.default_kwargs("res_compare", default=default[:4]))
    link.keep(episode=unit, compare=",".join(chosen))
    if len(chosen) >= 2:  # the first two methods compared, as one A/B slide
        playlists.ab_control(cfg, same, chosen[0], chosen[1], "res_add_ab")
    episodes.show_episode(ds, same, list(chosen))
episode_map.map_section(link, "res", cfg, ds, run, method, horizon)
ab.ab_section(link, "res", cfg, ds, preds, methods, method, horizon, code, add_pair=playlists.ab_control)
show_protocol(cfg, ds)
link.publish()
with link_col:
    links.copy_link(link, "res_link")
