"""Tiny worlds, tiny training configs and the real command line, for the training, evaluation
and protocol tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from kepp_core.paths import REPO_ROOT

REPO = REPO_ROOT


def tiny_world(root: Path, seed: int = 0, videos: int = 60, dim: int = 8, tasks: int = 3) -> Path:
    """A small CrossTask-layout world with informative features: every second of a step is
    that action's prototype plus noise, so start/goal observations reveal ``a_1``/``a_T``.
    Each task follows its step order with occasional skips, so the graph is informative."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(exist_ok=True)
    (root / "features").mkdir(exist_ok=True)
    blocks, steps_of = [], {}
    for t in range(tasks):
        steps = [f"t{t} step {k}" for k in range(6)]
        steps[-1] = "finish"  # one action shared by every task
        steps_of[str(100 + t)] = steps
        blocks.append(f"{100 + t}\ntask {t}\nhttp://example.org/{t}\n{len(steps)}\n{','.join(steps)}\n")
    (root / "tasks_primary.txt").write_text("\n".join(blocks), encoding="utf-8")
    actions = list(dict.fromkeys(s for st in steps_of.values() for s in st))
    proto = rng.normal(0, 1, (len(actions), dim)).astype(np.float32)
    for i in range(videos):
        tid = str(100 + i % tasks)
        steps = steps_of[tid]
        plan = [k for k in range(len(steps)) if k in (0, len(steps) - 1) or rng.random() > 0.25]
        t, rows, lines = 0, [], []
        for k in plan:
            gap = int(rng.integers(1, 3))
            rows += [rng.normal(0, 1, dim) for _ in range(gap)]
            t += gap
            length = int(rng.integers(3, 6))
            a = actions.index(steps[k])
            rows += [proto[a] * 2 + rng.normal(0, 0.5, dim) for _ in range(length)]
            lines.append(f"{k + 1},{t},{t + length}")
            t += length
        rows += [rng.normal(0, 1, dim) for _ in range(2)]
        (root / "annotations" / f"{tid}_v{i:03d}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        np.save(root / "features" / f"{tid}_v{i:03d}.npy", np.asarray(rows, dtype=np.float32))
    return root


TINY = dict(n_steps=10, dim=16, mults=(1, 2), batch_size=32, train_steps=40, lr=3e-3, warmup=5, decay=[(30, 0.5)],
            log_every=10, val_every=20, sampler="ddim", sampler_steps=4)


def tiny_cfg(**kw):
    from kepp_core.training import preset

    return preset("demo", **{**TINY, **kw})


def kepp(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kepp_core", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "KEPP_THREADS": "1", **(env or {})}, timeout=600)


def spec_file(path: Path, spec: dict, train: dict) -> Path:
    """``spec`` and its ``[train]`` table written as TOML to ``path`` (JSON values are TOML values here)."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in spec.items()] + ["[train]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in train.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def untrained_protocol(base: Path, methods: list[str], horizons: list[int], seeds: int = 3, **spec) -> tuple[Path, Path]:
    """A real ``kepp protocol`` output on a tiny world with ``methods`` that need no training (a
    second or two): the world and the output folder (``spec``: more spec keys)."""
    from kepp_core.experiments.protocol import parse_spec, run_protocol

    world = tiny_world(base / "world", seed=4)
    run_protocol(parse_spec({"dataset": "demo", "root": str(world), "horizons": horizons, "methods": methods,
                             "seeds": seeds, "out": str(base / "out"), **spec}), log=lambda s: None)
    return world, base / "out"
