"""Results: metrics per method and horizon; browse test episodes; compare two methods."""

from __future__ import annotations

import streamlit as st

from components import backend, episodes
from components.charts import show_table
from components.config import page_setup
from components.text import dataset_caption, md_code
from kepp_core.api import PATTERN_LABELS, PATTERNS, default_method, metrics_table

cfg = page_setup("Results", "📊")
st.title("Results")

with backend.guarded():
    ds = backend.dataset(cfg)
    preds = backend.predictions(cfg)
st.caption(dataset_caption(cfg, ds))
if preds is None or not len(preds):
    st.info("No prediction records found. Write them with `kepp eval` and set 'Predictions' in the sidebar "
            "(a records file or a folder).")
    st.stop()
st.caption("Records: " + ", ".join(md_code(s) for s in sorted(preds["source"].unique())))

with backend.guarded():
    table = metrics_table(preds)
st.subheader("Metrics")
st.caption("SR: whole plan right; mAcc: steps right; mIoU: IoU of predicted and true action sets, per episode "
           "and per batch of 256 episodes (the COIN/NIV convention). All in %.")
show_table(table, "kepp_metrics", key="res_metrics", hide_index=True)

st.subheader("Test episodes")
f1, f2, f3, f4, f5 = st.columns(5)
task_names = {t: ds.tasks[t].name if t in ds.tasks else t for t in sorted(preds["task"].dropna().unique())}
task = f1.selectbox("Task", ["(all)", *task_names], key="res_task", format_func=lambda t: task_names.get(t, t))
hs = sorted(int(h) for h in preds["horizon"].unique())
horizon = f2.selectbox("T", hs, key="res_T")
methods = sorted(preds["method"].unique())
method = f3.selectbox("Method", methods, key="res_method", index=default_method(methods))
outcome = f4.selectbox("Outcome", ["all", "correct", "incorrect"], key="res_outcome")
pattern = f5.selectbox("Failure pattern", ["(any)", *PATTERNS], key="res_pattern",
                       format_func=lambda p: PATTERN_LABELS.get(p, p))
sel = preds[(preds["horizon"] == horizon) & (preds["method"] == method)]
if task != "(all)":
    sel = sel[sel["task"] == task]
if outcome != "all":
    sel = sel[sel["success"] == (outcome == "correct")]
if pattern != "(any)":
    sel = sel[sel["patterns"].str.contains(pattern, regex=False)]
st.caption(f"{len(sel)} episodes")
show_table(episodes.episode_table(sel, ds), "kepp_episodes", key="res_episodes", hide_index=True, height=260)

if len(sel):
    st.subheader("Compare methods on one episode")
    c1, c2 = st.columns([3, 2])
    ep = c1.selectbox("Episode", list(sel["episode"]), key="res_episode")
    same = preds[(preds["episode"] == ep) & (preds["horizon"] == horizon)]
    others = [m for m in sorted(same["method"].unique()) if m != method]
    default_b = next((m for m in ("kepp-nograph", "pdpp") if m in others), others[0] if others else None)
    b = c2.selectbox(f"Compare {method} with", others, index=others.index(default_b) if others else None,
                     key=f"res_cmp_{method}")
    episodes.show_episode(ds, same, [method] if b is None else [method, b])
