"""Small datasets written or built in memory for the loader and graph tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kepp_core.data import Dataset, Step, Task, Video

def write_crosstask(root: Path, with_features: bool = True, dim: int = 8) -> Path:
    (root / "annotations").mkdir(parents=True)
    (root / "tasks_primary.txt").write_text(
        "101\nMake Tea\nhttp://x\n4\nboil water,pour water,add tea,stir\n\n"
        "102\nMake Lemonade\nhttp://y\n3\nsqueeze lemon,pour water,stir\n\n")
    plans = {
        "101_a": [(1, 0, 2), (2, 3, 5), (3, 6, 7), (4, 8, 9)],
        "101_b": [(1, 1, 2), (2, 2.5, 4), (4, 5, 6), (3, 7, 8), (4, 9, 11)],
        "102_c": [(1, 0, 3), (2, 4, 6), (3, 7, 9)],
        "102_d": [(2, 5, 6), (1, 0, 2), (3, 7, 9)],  # out of order on purpose
    }
    rng = np.random.default_rng(0)
    if with_features:
        (root / "features").mkdir()
    for name, rows in plans.items():
        (root / "annotations" / f"{name}.csv").write_text("".join(f"{k},{s},{e}\n" for k, s, e in rows))
        if with_features:
            np.save(root / "features" / f"{name}.npy", rng.normal(size=(12, dim)).astype(np.float32))
    (root / "videos_val.csv").write_text("102,d,http://z\n")
    return root


def small_dataset(actions=("crack egg", "whisk", "pour", "fry"), name="toy") -> Dataset:
    plans = {"v1": ("omelette", "train", [0, 1, 1, 3]), "v2": ("omelette", "train", [0, 1, 3]),
             "v3": ("pancake", "train", [2, 1, 3]), "v4": ("omelette", "test", [0, 1, 2, 3])}
    videos = [Video(v, t, [Step(a) for a in p], split=s) for v, (t, s, p) in plans.items()]
    tasks = {"omelette": Task("omelette", "Make an omelette"), "pancake": Task("pancake", "Make pancakes")}
    return Dataset(name, list(actions), tasks, videos)


PLAN_ROWS = [{"video": f"v{i}", "task": "t", "split": "train" if i < 4 else "test",
              "steps": ["a", "b", "c"][: 2 + i % 2], "segments": [[0, 1], [1, 2], [2, 3]][: 2 + i % 2],
              "duration": 10} for i in range(6)]


def write_small_plans(path: Path, last: bytes = b"") -> Path:
    """Six valid plans-JSONL lines (four train, two test) and then ``last`` as it is."""
    path.write_bytes(b"".join((json.dumps(r) + "\n").encode() for r in PLAN_ROWS) + last)
    return path
