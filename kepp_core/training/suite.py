"""Training every model one horizon needs for planning and for the evaluation table.

Layout of a models folder (what :class:`kepp_core.planner.KEPPPlanner.from_models` and
``kepp eval`` read)::

    ROOT/T<h>/step/              step model
    ROOT/T<h>/plan-graph-R1/     KEPP planning model, R = 1 (+ graph.json)
    ROOT/T<h>/plan-graph-R2/     KEPP planning model, R = 2
    ROOT/T<h>/plan-none/         planning model without the graph condition
    ROOT/T<h>/plan-task/         PDPP: task-class condition
    ROOT/T<h>/task-classifier/   PDPP's task classifier
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.training.config import TrainConfig
from kepp_core.training.trainers import train_plan_model, train_step_model, train_task_classifier

MEMBERS = ("step", "plan-graph-R1", "plan-graph-R2", "plan-none", "plan-task", "task-classifier")
# What the KEPP planner alone needs (``kepp demo`` trains these when no checkpoints are shipped).
PLANNER_MEMBERS = ("step", "plan-graph-R1")


def train_horizon(ds: Dataset, cfg: TrainConfig, root: str | Path, members=MEMBERS, progress: bool = True,
                  log=print) -> dict[str, dict]:
    """Train ``members`` for horizon ``cfg.horizon`` into ``ROOT/T<h>/``; returns their summaries."""
    bad = [m for m in members if m not in MEMBERS]
    if bad:
        raise KeppError(f"unknown model(s) {bad} (expected some of {', '.join(MEMBERS)})")
    hdir = Path(root) / f"T{cfg.horizon}"
    out: dict[str, dict] = {}
    step_dir = hdir / "step"
    for name in MEMBERS:
        if name not in members:
            continue
        t0 = time.time()
        if name == "step":
            out[name] = train_step_model(ds, cfg, step_dir, progress=progress)
        elif name.startswith("plan-graph-R"):
            c = replace(cfg, condition="graph", R=int(name.rsplit("R", 1)[1]))
            out[name] = train_plan_model(ds, c, hdir / name, step_dir=step_dir, progress=progress)
        elif name == "plan-none":
            out[name] = train_plan_model(ds, replace(cfg, condition="none"), hdir / name, progress=progress)
        elif name == "plan-task":
            out[name] = train_plan_model(ds, replace(cfg, condition="task"), hdir / name, progress=progress)
        else:
            out[name] = train_task_classifier(ds, cfg, hdir / name, progress=progress)
        log(f"T={cfg.horizon} {name}: {time.time() - t0:.1f}s, best validation {out[name].get('best')}")
    return out
