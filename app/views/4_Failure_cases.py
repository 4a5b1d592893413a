"""Failure cases: failed test episodes by the paper's patterns, with the paper's statistics, and
two methods episode by episode (the 2×2 table, each cell's episodes).

The failures of a pattern are paged (:mod:`components.records.paging`): the table and the episode select
box hold one page, so tens of thousands of records never go into the page at once."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.ui import links
from components.records import ab, backend, episodes, metric_codes, paging, slices
from components.talk import playlists
from components.ui.charts import pattern_bars, show_table
from components.ui.config import page_setup
from components.ui.pages import PAGES
from components.ui.text import md
from components.ui.names import default_method, namer
from kepp_core.catalog import DEFAULT_FAMILY, PATTERNS, PATTERN_LABELS, codes_named, pattern_label

cfg = page_setup("Failure cases")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Failure cases")
if not cfg.presentation:
    st.caption("Every failed test episode (plan ≠ ground truth) is filed under the first pattern that applies: "
               "a wrong predicted endpoint (the step model's â₁ or â_T; without a step model, the plan's own first "
               "or last step); ground truth starting and ending with the same step "
               "(the graph proposes loops); a repeated sub-sequence in the true or predicted plan; other.")

ds, preds = backend.records_page(cfg, "so there are no failures to browse.")
if preds is None:
    st.stop()

link = links.PageLink("failures")
c1, c2 = st.columns(2)
index = backend.records_index(cfg)  # the filters' values and where rows lie, once per version of the records
methods = index.methods
name_of = namer(backend.method_names(cfg))  # an imported method's name says so, with its predictions file
link.seed("fail_method", "method", methods)
method = c1.selectbox("Method", methods, key="fail_method", format_func=name_of,
                      **links.default_kwargs("fail_method", index=default_method(methods)))
hs = index.horizons_of(method)
link.seed("fail_T", "T", hs)
horizon = c2.selectbox("T", hs, key="fail_T")
link.keep(method=method, T=horizon)
run = backend.run_rows(cfg, method, horizon)
stats = backend.failure_stats(cfg, method, horizon)
left, right = st.columns([3, 2])
with left:
    st.subheader("Statistics")
    table = pd.DataFrame(stats.as_rows((cfg.dataset, horizon)))  # the paper's column where its setting is this one
    table["value"] = [round(v, 2) if isinstance(v, float) else ("—" if v is None else v) for v in table["value"]]
    paper = table.columns[-1] if len(table.columns) > 2 else None
    if paper is not None:
        table[paper] = ["—" if v is None or v != v else f"{v:g}" for v in table[paper]]
    show_table(table, f"failure_stats_{method}_T{horizon}", key="fail_stats", hide_index=True)
    st.caption(("Paper column: CrossTask, T=4, R=2 (supplement B.5); — where the paper gives no number. "
                if paper is not None else "") + "Top-1 path shares count episodes with a graph path. "
               + metric_codes.code_caption(DEFAULT_FAMILY, ["SR"]) + " This page's numbers are that code's only; "
               f"Results shows the others' ({md(codes_named('{label}', skip=(DEFAULT_FAMILY,)))}).")
with right:
    st.subheader("Patterns")
    st.markdown(pattern_bars([PATTERN_LABELS[p] for p in PATTERNS], [stats.pattern_counts[p] for p in PATTERNS]),
                unsafe_allow_html=True)

# by slice: a click on a row sets the pattern or T above, or filters the failures by the slice itself
active_slice = slices.slice_block(link, "fail", cfg, ds, method, horizon, methods,
                                  {"pattern": ("fail_pattern", PATTERNS), "horizon": ("fail_T", hs)})
# two methods episode by episode: where A is right and B wrong, and the other way
ab.ab_section(link, "fail", cfg, ds, preds, methods, method, horizon, add_pair=playlists.ab_control)

if not stats.failures:
    link.publish()
    st.success("No failures for this method and horizon.")
    st.stop()


def with_patterns(df: pd.DataFrame) -> pd.DataFrame:
    """The failures' rows for the table: every pattern that applies, by name."""
    df = df.reset_index(drop=True)
    df["pattern"] = [pattern_label(p) for p in df["patterns"]]
    return df


def pick_row(key: str, ids: list[str]) -> None:
    """on_select of the failures table: the clicked row becomes the episode shown."""
    sel = st.session_state[key].selection.rows
    if sel:
        st.session_state["fail_episode"] = ids[sel[0]]


@st.fragment
def browse(method: str, horizon: int, active_slice, counts: dict) -> None:
    """The failures of the pattern picked, paged, and the episode picked: the pattern's control, the pager and the
    episode redraw only this (a fragment); the records read through the backend again."""
    st.subheader("Browse failures")
    link.seed("fail_pattern", "pattern", PATTERNS)
    pattern = st.radio("Pattern", PATTERNS, horizontal=True, key="fail_pattern",
                       format_func=lambda p: f"{PATTERN_LABELS[p]} ({counts[p]})")
    link.keep(pattern=pattern)
    run = backend.run_rows(cfg, method, horizon)  # through the backend again: never a table the page's full run held
    chosen = run[run["pattern"] == pattern]  # a failure's primary pattern is its first (classify_failures)
    chosen = slices.apply_slice(cfg, active_slice, chosen, method, horizon)
    if not len(chosen):
        link.publish()
        st.info("No failure has this pattern" + (" in this slice: clear the slice or pick another pattern."
                                                   if active_slice else "."))
        return

    units = pd.Series(episodes.unit_ids(chosen))  # one id per row: the seed (and file) where an episode repeats
    lo, hi = paging.pager(link, "fail", units, "fail_episode")
    rows = with_patterns(chosen.iloc[lo:hi])
    ids = units.iloc[lo:hi].tolist()
    link.seed("fail_episode", "episode", ids, parse=lambda raw: episodes.unit_of(raw, ids))
    if st.session_state.get("fail_episode") not in ids:  # another page: its first episode
        st.session_state["fail_episode"] = ids[0]

    table = episodes.episode_table(rows, ds, drop=("T", "method", "correct"), ids=ids)  # this method's failures at this T
    st.caption("Click a row to show its episode.")
    show_table(table, f"failures_{pattern}", key="fail_table", hide_index=True, height=220,
               csv=lambda: episodes.episodes_csv(with_patterns(chosen), ds),  # every page of the pattern
               on_select=lambda: pick_row("tbl_fail_table", ids), selection_mode="single-row")
    playlists.add_listed_control(cfg, chosen, "fail_add_listed")
    names = episodes.unit_names(rows, ds, ids)
    ep_col, prev_col, next_col, open_col = st.columns([4, 1.3, 1.3, 2], vertical_alignment="bottom")
    unit = ep_col.selectbox("Episode", ids, key="fail_episode", format_func=names.get)
    paging.episode_buttons("fail", "fail_episode", units, (prev_col, next_col))
    link.keep(episode=unit)
    row = rows.iloc[ids.index(unit)]
    open_col.page_link(PAGES["plan"].path, label="Open in Plan", icon=PAGES["plan"].icon, query_params=episodes.plan_query(row))
    with open_col:
        playlists.add_control(cfg, [playlists.item_of_row(row)], "fail_add")
    link.publish()
    st.markdown("Patterns that apply: " + ", ".join(f"**{md(PATTERN_LABELS[p.strip()])}**"
                                                     for p in str(row["patterns"]).split(",") if p.strip()))
    same = episodes.same_run(backend.episode_rows(cfg, row["episode"], row["horizon"]), row)  # this row's seed: never another seed's plans
    episodes.show_episode(ds, same, [method])


browse(method, horizon, active_slice, dict(stats.pattern_counts))
with link_col:
    links.copy_link(link, "fail_link")
