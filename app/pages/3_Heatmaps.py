"""Heatmaps: step transition matrices of one task (training plans, test plans, a method's
predictions) in the same action order, and their difference."""

from __future__ import annotations

import streamlit as st

from components import backend
from components.charts import heatmap, heatmap_panels, show_figure, show_table
from components.config import page_setup
from components.text import dataset_caption
from kepp_core import api

cfg = page_setup("Heatmaps", "🟥")
st.title("Step transition heatmaps")
st.caption("Row *i*, column *j*: how often step *j* directly follows step *i*, normalised per row "
           "(each row sums to 1 where the step is followed by anything). Same action order in every heatmap.")

with backend.guarded():
    ds = backend.dataset(cfg)
    graph = backend.graph(cfg)
st.caption(dataset_caption(cfg, ds))

tasks = sorted(ds.tasks)
task_names = {t: ds.tasks[t].name for t in tasks}
c1, c2, c3 = st.columns([2, 2, 1])
task = c1.selectbox("Task", tasks, key="heat_task", format_func=lambda t: task_names.get(t, t))

preds = None
with backend.guarded(stop=False):
    preds = backend.predictions(cfg)
if preds is not None and len(preds):
    methods = sorted(preds["method"].unique())
    method = c2.selectbox("Predictions of", methods, key="heat_method",
                          index=api.default_method(methods))
    hs = sorted(int(h) for h in preds.loc[preds["method"] == method, "horizon"].unique())
    horizon = c3.selectbox("T", hs, key="heat_T")
    sel = preds[(preds["method"] == method) & (preds["horizon"] == horizon) & (preds["task"] == task)]
    predicted = [tuple(p) for p in sel["plan"]]
else:
    method, horizon, predicted = None, None, []
    c2.info("No prediction records loaded: only training and test plans are shown.")

train_plans = [v.plan for v in ds.split("train") if v.task == task]
test_plans = [v.plan for v in ds.split("test") if v.task == task]
with backend.guarded():
    order = api.heatmap_order(ds, task, [*train_plans, *test_plans, *predicted])
    labels = [ds.actions[a] for a in order]
    mats = {"training plans": api.transitions(train_plans, order, labels),
            "test plans": api.transitions(test_plans, order, labels)}
    if predicted:
        mats[f"{method} predictions (T={horizon}, test)"] = api.transitions(predicted, order, labels)
    marked = {ds.actions[a] for a in api.out_of_task(ds, task, order)}

st.caption(f"{len(train_plans)} training plans, {len(test_plans)} test plans"
           + (f", {len(predicted)} predicted plans" if predicted else "") + f" · {len(order)} actions "
           "(the task's own steps first, then others that occur)"
           + (f" · :red[✱ red: {len(marked)} action{'s' if len(marked) > 1 else ''} outside the task's step list]"
              if marked else ""))
show_figure(heatmap_panels(mats, marked), f"heatmaps_{task}", key="heat_panels")
as_tables = st.toggle("Show the matrices as tables", key="heat_tables")
cols = st.columns(len(mats))
for col, (name, df) in zip(cols, mats.items()):
    short = name.split()[0]
    with col:
        table = df.reset_index(names="from")
        if as_tables:
            st.caption(name)
            show_table(table, f"transitions_{task}_{short}", key=f"heat_tbl_{short}", height=200)
        else:
            st.download_button(f"{name.split(' (')[0]} (CSV)", table.to_csv(index=False).encode(),
                               file_name=f"transitions_{task}_{short}.csv", mime="text/csv",
                               key=f"heat_csv_{short}", on_click="ignore")

st.subheader("Difference")
names = list(mats)
d1, d2 = st.columns(2)
a = d1.selectbox("A", names, index=len(names) - 1, key="heat_diff_a")
b = d2.selectbox("minus B", names, index=1 if len(names) > 1 else 0, key="heat_diff_b")
diff = mats[a] - mats[b]
show_figure(heatmap(diff, f"{a} − {b}", diverging=True, marked=marked), f"heatmap_{task}_difference", key="heat_diff")
st.caption(f"Mean absolute difference: {float(abs(diff.to_numpy()).mean()):.4f}")
