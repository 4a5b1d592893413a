"""Training: loss and validation curves of training runs, several overlaid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components import backend
from components.charts import VAL_SCORE_HELP, run_colours, show_figure, show_table, training_curves
from components.config import page_setup

cfg = page_setup("Training", "📈")
st.title("Training curves")
st.caption("Each run folder holds the `metrics.jsonl` log written by `kepp train` (one line per logging step). "
           "The marker on a validation curve is the step whose weights were kept (best val_score). "
           "Each run keeps one colour in every chart.")

with backend.guarded():
    roots = backend.workspace(cfg).runs_roots()
runs = backend.find_runs(tuple(str(r) for r in roots))
if not runs:
    where = ", ".join(f"`{r}`" for r in roots) or "`runs/` or `assets/`"
    st.info(f"No training runs found under {where}. Train with `kepp train ...` or set 'Runs' in the sidebar.")
    st.stop()


def run_name(run: str) -> str:
    """A run's path relative to the root it was found under."""
    for root in roots:
        try:
            return str(Path(run).relative_to(root)) or Path(run).name
        except ValueError:
            continue
    return run


names = {run_name(r): r for r in runs}
chosen = st.multiselect("Runs", list(names), default=list(names)[: min(4, len(names))], key="train_runs")
if not chosen:
    st.info("Choose one or more runs.")
    st.stop()

frames = {}
for name in chosen:
    run = names[name]
    with backend.guarded(stop=False):
        df = backend.read_run_log(run, (Path(run) / backend.LOG_NAME).stat().st_mtime)
        if len(df):
            frames[name] = df
if not frames:
    st.warning("The chosen runs have empty logs.")
    st.stop()

metrics = sorted({c for df in frames.values() for c in df.columns
                  if c not in ("step", "epoch", "time", "lr") and df[c].dtype.kind in "fi"})
c1, c2 = st.columns(2)
x_axis = c1.radio("x axis", ["epoch", "step", "time"], horizontal=True, key="train_x")
default = [m for m in ("loss", "val_score") if m in metrics] or metrics[:1]
ys = c2.multiselect("Curves", metrics, default=default, key="train_y")
c3, c4 = st.columns(2)
smoothing = c3.slider("Smoothing", 0.0, 0.95, 0.0, 0.05, key="train_smooth",
                      help="exponential moving average of each curve (0: none); the raw curve stays, faint")
log_y = c4.toggle("Log scale (y)", key="train_log", help="a logarithmic y axis (losses spanning decades)")
if "val_score" in ys or any(m.startswith("val_") for m in ys):
    st.caption(VAL_SCORE_HELP)

kept = {name: ((backend.read_run_config(names[name]).get("training") or {}).get("best") or {}).get("step")
        for name in frames}
colours = run_colours(chosen)  # one colour per run in every chart
for metric in ys:
    show_figure(training_curves(frames, metric, x_axis, kept, colours, smoothing, log_y), f"training_{metric}",
                key=f"train_{metric}")

rows = []
for name, df in frames.items():
    conf = backend.read_run_config(names[name])
    training = conf.get("training") or {}
    best = training.get("best") or {}
    rows.append({"run": name, "kind": conf.get("kind"), "steps": int(df["step"].max()),
                 "epochs": float(df["epoch"].max()) if "epoch" in df else None,
                 "final loss": float(df["loss"].dropna().iloc[-1]) if "loss" in df and df["loss"].notna().any() else None,
                 "kept step": best.get("step"), "best val score": best.get("score"),
                 "stopped early": training.get("stopped_early"), "seconds": training.get("seconds")})
st.subheader("Runs")
show_table(pd.DataFrame(rows), "training_runs", key="train_runs_table")
