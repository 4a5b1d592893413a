"""Training: loss and validation curves of training runs, several overlaid.

Its state lives in the URL (restored on load and reload): ``runs`` and ``y`` (comma-separated
run names and curves), ``x`` (epoch/step/time), ``smooth`` and ``log=1``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components.ui import links
from components.records import backend
from components.ui.charts import VAL_SCORE_HELP, run_colours, show_figure, show_table, training_curves
from components.ui.config import missing, page_setup
from kepp_core.catalog import LOG_FILE

cfg = page_setup("Training")
title_col, link_col = st.columns([5, 1], vertical_alignment="bottom")
title_col.title("Training curves")
st.caption("Each run folder holds the `metrics.jsonl` log written by `kepp train` (one line per logging step). "
           "The marker on a validation curve is the step whose weights were kept (best val_score). "
           "Each run keeps one colour in every chart.")

with backend.guarded():
    roots, runs = backend.runs(cfg)
if not runs:
    where = ", ".join(f"`{r}`" for r in roots) or "`runs/` or `assets/`"
    missing(f"No training runs found under {where}: there are no curves to draw.",
            "`kepp train ...` writes a run folder with its `metrics.jsonl`; start the app with `kepp app --runs DIR` "
            "or set **Runs** under *Data and models* in the sidebar.")
    st.stop()


def run_name(run: str) -> str:
    """A run's path relative to the root it was found under."""
    for root in roots:
        try:
            return str(Path(run).relative_to(root)) or Path(run).name
        except ValueError:
            continue
    return run


def listed(options: list[str]):
    """A parser of a comma-separated URL list: the entries among ``options`` (at least one)."""
    def parse(text: str) -> list[str]:
        picked = [x for x in text.split(",") if x in options]
        if not picked:
            raise ValueError(text)
        return picked
    return parse


def share(link: links.PageLink) -> None:
    """Write the page's state to the URL and show the copy-link control (before any stop)."""
    link.publish()
    with link_col:
        links.copy_link(link, "train_link")


names = {run_name(r): r for r in runs}
link = links.PageLink("training")
link.seed("train_runs", "runs", parse=listed(list(names)))
chosen = st.multiselect("Runs", list(names), key="train_runs",
                        **links.default_kwargs("train_runs", default=list(names)[: min(4, len(names))]))
link.keep(runs=",".join(chosen) or None)
if not chosen:
    share(link)
    st.info("Choose one or more runs.")
    st.stop()

frames = {}
for name in chosen:
    run = names[name]
    with backend.guarded(stop=False):
        df = backend.read_run_log(run, (Path(run) / LOG_FILE).stat().st_mtime)
        if len(df):
            frames[name] = df
if not frames:
    share(link)
    st.warning("The chosen runs have empty logs.")
    st.stop()

metrics = sorted({c for df in frames.values() for c in df.columns
                  if c not in ("step", "epoch", "time", "lr") and df[c].dtype.kind in "fi"})
c1, c2 = st.columns(2)
link.seed("train_x", "x", ["epoch", "step", "time"], absent="epoch")
x_axis = c1.radio("x axis", ["epoch", "step", "time"], horizontal=True, key="train_x")
default = [m for m in ("loss", "val_score") if m in metrics] or metrics[:1]
link.seed("train_y", "y", parse=listed(metrics))
if "train_y" in st.session_state:  # keep only curves these runs log
    st.session_state["train_y"] = [m for m in st.session_state["train_y"] if m in metrics]
ys = c2.multiselect("Curves", metrics, key="train_y", **links.default_kwargs("train_y", default=default))
c3, c4 = st.columns(2)
link.seed("train_smooth", "smooth", [round(0.05 * k, 2) for k in range(20)], absent="0")
smoothing = c3.slider("Smoothing", 0.0, 0.95, step=0.05, key="train_smooth",
                      help="exponential moving average of each curve (0: none); the raw curve stays, faint",
                      **links.default_kwargs("train_smooth", value=0.0))
link.seed("train_log", "log", [True, False], lambda v: v == "1", absent="0")
log_y = c4.toggle("Log scale (y)", key="train_log", help="a logarithmic y axis (losses spanning decades)")
link.keep(x=None if x_axis == "epoch" else x_axis, y=",".join(ys) or None,
          smooth=f"{smoothing:g}" if smoothing else None, log="1" if log_y else None)
share(link)
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
