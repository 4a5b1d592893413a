"""Groups: the records table grouped by any columns (method, T, seed, task, pattern, first or last step right, the
records file, ...), per group its count, SR, mAcc and mIoU with their bootstrap intervals, sorted by any column and
downloaded as CSV. The grouping, its sort and direction live in the URL (``by=``, ``sort=``, ``desc=``).

The numbers are :func:`kepp_core.api.group_table`'s, once per records files and grouping
(:mod:`components.records.backend`); this page only picks and draws them."""

from __future__ import annotations

import streamlit as st

from components.records import backend
from components.ui import links
from components.ui.charts import show_table
from components.ui.config import page_setup
from components.ui.text import md_code
from components.ui.url_schema import GROUP_SORTS, GROUPS
from kepp_core.catalog import CONFIDENCE, GROUP_BY

DEFAULT_BY = ["method", "T"]

cfg = page_setup("Groups")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Groups")
ds, preds = backend.records_page(cfg, "so there is nothing to group.")
if preds is None:
    st.stop()
link = links.PageLink("groups")
link.seed("grp_by", "by", parse=GROUPS["by"].parse)
by = st.multiselect("Group by", list(GROUP_BY), key="grp_by", help="; ".join(f"{k}: {v}" for k, v in GROUP_BY.items()),
                    **links.default_kwargs("grp_by", default=DEFAULT_BY))
link.keep(by=None if by == DEFAULT_BY else ",".join(by))
if not by:
    link.publish()
    st.info("Pick one or more columns to group the records by.")
    st.stop()
with backend.guarded(link=link):
    table = backend.group_table(cfg, tuple(by))
sorts = [*by, *GROUP_SORTS]
s1, s2 = st.columns([3, 1], vertical_alignment="bottom")
link.seed("grp_sort", "sort", sorts)
if st.session_state.get("grp_sort") not in sorts:  # a column no longer grouped by: the groups' own order
    st.session_state["grp_sort"] = by[0]
sort = s1.selectbox("Sort by", sorts, key="grp_sort")
link.seed("grp_desc", "desc", absent="0", parse=lambda text: text == "1")
desc = s2.toggle("High to low", key="grp_desc")
link.keep(sort=None if sort == by[0] else sort, desc=1 if desc else None)
shown = table.sort_values(sort, ascending=not desc, kind="stable", na_position="last").reset_index(drop=True)
st.caption(f"{len(shown):,} groups of {int(shown['count'].sum()):,} episode records (a record per episode, method "
           f"and seed); SR, mAcc (steps right / T, averaged over episodes) and mIoU (per episode) in %; low–high: the "
           f"{round(CONFIDENCE * 100)}% percentile bootstrap interval over the group's episodes (none for a group of "
           "one). Click a header to sort the view; the CSV holds the table as sorted here.")
show_table(shown, "kepp_groups_" + "_".join(by), key="grp_table", hide_index=True,
           height=min(38 + 35 * (len(shown) + 1), 640))  # a short table whole, a long one scrolls
if not cfg.presentation:
    st.caption("Records: " + ", ".join(md_code(s) for s in sorted(preds["source"].unique())[:20])
               + (" …" if preds["source"].nunique() > 20 else ""))
link.publish()
with link_col:
    links.copy_link(link, "grp_link")
