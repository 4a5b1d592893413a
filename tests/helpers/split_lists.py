"""Small split lists written by the tests in the field's data-list shapes (never the published lists):
ViterbiPlanNet's (``task_name``, ``actions``, a taxonomy) and PDPP's / KEPP's (``vid``, ``feature``,
``legal_range``, ``task_id`` only), with feature files in either convention."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np

# Two tasks, eight actions; action 2 and 6 share a name across the tasks (as CrossTask's 133 steps do).
TAXONOMY = {"0_11_Make Tea": {"0": "boil water", "1": "add tea", "2": "stir", "3": "pour cup"},
            "1_22_Plant Seedling": {"4": "dig hole", "5": "place seedling", "6": "stir", "7": "water plant"}}
NAMES = {int(a): n for steps in TAXONOMY.values() for a, n in steps.items()}
TASK_NAMES = {0: "Make Tea", 1: "Plant Seedling"}
DIM = 8

# (video, task id, steps (start, end, action id), split, feature seconds)
VIDEOS = [
    ("tea_0001", 0, [(2, 6, 0), (7, 9, 1), (10, 14, 2), (15, 18, 3)], "train", 22),
    ("tea_0002", 0, [(1, 4, 0), (5, 8, 1), (8, 12, 3)], "train", 16),
    ("plant_0001", 1, [(3, 8, 4), (9, 12, 5), (12, 15, 7), (16, 19, 6), (19, 24, 7)], "train", 26),
    ("tea_0003", 0, [(0, 3, 0), (4, 6, 1), (6, 9, 2), (10, 12, 1), (13, 17, 3)], "test", 20),
    ("plant_0002", 1, [(2, 5, 4), (6, 10, 5), (11, 14, 7)], "test", 15),
    ("plant_0003", 1, [(1, 4, 4), (3, 9, 5), (10, 12, 6), (13, 15, 7)], "test", 18),  # overlapping rounded times
]


def entries(horizon: int, split: str, shape: str = "vpn", with_actions: bool = True,
            feature_root: str = "/data/other-machine/processed_data") -> list[dict]:
    """The episodes of ``horizon`` of ``split`` as list entries in ``shape`` ``vpn`` or ``pdpp``."""
    out = []
    for name, task, steps, sp, _seconds in VIDEOS:
        if sp != split:
            continue
        for first in range(len(steps) - horizon + 1):
            window = steps[first:first + horizon]
            ep = {"feature": f"{feature_root}/{name}.npy", "legal_range": [list(s) for s in window], "task_id": task}
            if shape == "vpn":
                ep["task_name"] = TASK_NAMES[task]
                if with_actions:
                    ep["actions"] = [NAMES[a] for _, _, a in window]
            else:
                ep = {"vid": name, **ep, "pred_list": [window[0][2], 0, window[-1][2]]}  # KEPP's extra keys
            out.append({"id": ep, "instruction_len": len(steps)})
    return out


def write_features(folder: Path, convention: str = "plain", seed: int = 0) -> Path:
    """Feature files ``<video>.npy`` of every video: ``plain`` arrays, ``dict`` (``np.save`` of a dict)
    or ``pickle`` (a dict pickled as it is, as P3IV's scripts wrote them)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, _task, steps, _sp, seconds in VIDEOS:
        feats = rng.normal(size=(seconds, DIM)).astype(np.float32)
        path = folder / f"{name}.npy"
        record = {"frames_features": feats, "num_steps": np.int64(len(steps)), "name": name,
                  "steps_ids": np.array([a for _, _, a in steps]), "cls": 3}
        if convention == "plain":
            np.save(path, feats)
        elif convention == "dict":
            np.save(path, record, allow_pickle=True)
        else:
            path.write_bytes(pickle.dumps(record, protocol=4))
    return folder


def write_lists(folder: Path, horizon: int = 3, shape: str = "vpn", with_actions: bool = True,
                taxonomy: bool = True, features: str | None = "plain", split_file: bool = True) -> dict:
    """Train and test lists (and a taxonomy, features, a split file) in ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in ("train", "test"):
        paths[split] = folder / f"{split}_{horizon}.json"
        paths[split].write_text(json.dumps(entries(horizon, split, shape, with_actions), indent=1))
    if taxonomy:
        paths["taxonomy"] = folder / "toy_taxonomy.json"
        paths["taxonomy"].write_text(json.dumps(TAXONOMY, indent=1))
    if features is not None:
        paths["features"] = write_features(folder / "feats", features)
    if split_file:
        lines = [f'{k} = "{Path(p).name if k != "features" else "feats"}"' for k, p in paths.items()]
        paths["root"] = folder / "split.toml"
        paths["root"].write_text("\n".join(lines) + "\n")
    return paths


def made_up_plan(gt: list[int], k: int) -> list[int]:
    """A made-up method's plan of the list's entry ``k``: right on even entries, its middle step wrong on odd ones."""
    plan = list(gt)
    if k % 2:
        plan[1] = (plan[1] + 1) % 8
    return plan


def write_vpn_predictions(path: Path, test_list: Path) -> list[list[int]]:
    """ViterbiPlanNet's ``T<h>_predictions.json`` of :func:`made_up_plan` on ``test_list``; returns the
    list's ground-truth plans."""
    from kepp_core.data.split_lists import read_split_list

    gt = [list(ep.plan) for ep in read_split_list(test_list)]
    path.write_text(json.dumps({str(k): {"pred": made_up_plan(g, k), "true": g} for k, g in enumerate(gt)}, indent=4))
    return gt


def lists_with_predictions(folder: Path) -> dict[str, Path]:
    """The split lists of :func:`write_lists` under ``folder/lists`` and, as ``"vpn"``, ViterbiPlanNet
    predictions for their test list (``folder/T3_predictions.json``)."""
    p = write_lists(folder / "lists")
    p["vpn"] = folder / "T3_predictions.json"
    write_vpn_predictions(p["vpn"], p["test"])
    return p
