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


# --- a plans dataset with a records folder of two files (the app on records that change under it) ---------------------
RECORD_ACTIONS = [f"step {a}" for a in range(6)]


def small_record(n: int) -> dict:
    """The ``n``-th record of :func:`write_records_world`'s files (one method, T=3; every other plan wrong)."""
    gt = [n % 6, (n + 1) % 6, (n + 2) % 6]
    plan = gt if n % 2 else [gt[0], (gt[1] + 1) % 6, gt[2]]
    return {"seed": 0, "T": 3, "episode": f"t/v{n % 4}/{n}:3", "video": f"v{n % 4}", "task": "t", "gt": gt,
            "plans": {"pdpp": plan}, "success": {"pdpp": int(plan == gt)},
            "acc": {"pdpp": sum(a == b for a, b in zip(plan, gt)) / 3}}


def write_records_world(root: Path) -> tuple[Path, Path]:
    """A plans-JSONL dataset of six actions (``root/plans.jsonl``) and a records folder (``root/records``) of two
    files of ten records each, ``edited.jsonl`` and ``kept.jsonl``."""
    plans = root / "plans.jsonl"
    plans.write_text("".join(json.dumps({"video": f"v{v}", "task": "t", "split": "test" if v < 4 else "train",
                                         "steps": RECORD_ACTIONS}) + "\n" for v in range(8)), encoding="utf-8")
    folder = root / "records"
    folder.mkdir()
    for name, lines in (("edited.jsonl", range(0, 10)), ("kept.jsonl", range(100, 110))):
        (folder / name).write_text("".join(json.dumps(small_record(n)) + "\n" for n in lines), encoding="utf-8")
    return plans, folder
