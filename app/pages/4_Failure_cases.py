"""Failure cases: failed test episodes by the paper's patterns, with the paper's statistics."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import backend, episodes
from components.charts import pattern_bars, show_figure, show_table
from components.config import page_setup
from components.text import dataset_caption
from kepp_core.api import PATTERN_LABELS, PATTERNS, default_method, failure_analysis

cfg = page_setup("Failure cases", "🔍")
st.title("Failure cases")
st.caption("Every failed test episode (plan ≠ ground truth) is filed under the first pattern that applies: "
           "wrong first/last step from the step model; ground truth starting and ending with the same step "
           "(the graph proposes loops); a repeated sub-sequence in the true or predicted plan; other.")

with backend.guarded():
    ds = backend.dataset(cfg)
    preds = backend.predictions(cfg)
st.caption(dataset_caption(cfg, ds))
if preds is None or not len(preds):
    st.info("No prediction records found. Write them with `kepp eval` and set 'Predictions' in the sidebar.")
    st.stop()

c1, c2 = st.columns(2)
methods = sorted(preds["method"].unique())
method = c1.selectbox("Method", methods, key="fail_method", index=default_method(methods))
hs = sorted(int(h) for h in preds.loc[preds["method"] == method, "horizon"].unique())
horizon = c2.selectbox("T", hs, key="fail_T")
run = preds[(preds["method"] == method) & (preds["horizon"] == horizon)].reset_index(drop=True)

_, stats, failures = failure_analysis(run)
left, right = st.columns([3, 2])
with left:
    st.subheader("Statistics")
    table = pd.DataFrame(stats.as_rows())
    table["value"] = [round(v, 2) if isinstance(v, float) else v for v in table["value"]]
    show_table(table, f"failure_stats_{method}_T{horizon}", key="fail_stats", hide_index=True)
    st.caption("Paper column: CrossTask, T=4, R=2 (supplement B.5). Top-1 path shares count episodes with a graph path.")
with right:
    st.subheader("Patterns")
    fig = pattern_bars([PATTERN_LABELS[p] for p in PATTERNS], [stats.pattern_counts[p] for p in PATTERNS])
    show_figure(fig, f"failure_patterns_{method}_T{horizon}", key="fail_patterns")

if not failures:
    st.success("No failures for this method and horizon.")
    st.stop()
st.subheader("Browse failures")
pattern = st.radio("Pattern", PATTERNS, horizontal=True, key="fail_pattern",
                   format_func=lambda p: f"{PATTERN_LABELS[p]} ({stats.pattern_counts[p]})")
chosen = [f for f in failures if f.primary == pattern]
if not chosen:
    st.info("No failure has this pattern.")
    st.stop()
ids = [f.outcome.episode for f in chosen]
rows = run[run["episode"].isin(ids)].copy()
rows["pattern"] = pattern
show_table(episodes.episode_table(rows, ds), f"failures_{pattern}", key="fail_table", hide_index=True, height=220)
ep = st.selectbox("Episode", ids, key="fail_episode")
f = chosen[ids.index(ep)]
st.markdown("Patterns that apply: " + ", ".join(f"**{PATTERN_LABELS[p]}**" for p in f.patterns))
same = preds[(preds["episode"] == ep) & (preds["horizon"] == horizon)]
episodes.show_episode(ds, same, [method])
