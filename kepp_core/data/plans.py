"""Reader and writer for the plans-JSONL interchange format, one video per line::

    {"video": str, "task": str, "split": "train"|"test" (optional), "steps": [label, ...],
     "segments": [[start, end], ...] (optional, same length as steps),
     "duration": float (optional), "features": path (optional, relative to the file)}

Without ``split`` on a line, that video gets a seeded 70/30 split by video id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kepp_core.data.feature_files import find_file, read_feature_shape
from kepp_core.data.records import (SPLITS, Dataset, Step, Task, Video, check_segments, parse_duration,
                                   seeded_split, vocabulary_from)
from kepp_core.errors import KeppError
from kepp_core.io import atomic_open, iter_jsonl


def _natural_key(s: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits only: "²".isdigit() is True, int("²") fails


def _resolve(root: Path) -> Path:
    if root.is_dir():
        root = root / "plans.jsonl"
    if not root.is_file():
        raise KeppError(f"{root}: file not found (expected a plans .jsonl file or a folder with plans.jsonl)")
    return root


def load_plans(root: str | Path, features: str | Path | None = None, seed: int = 0,
               name: str = "plans") -> Dataset:
    """Load a plans-JSONL file. Labels that are all integers are ordered numerically."""
    path = _resolve(Path(root))
    feat_dir = Path(features) if features is not None else path.parent / "features"
    if features is not None and not feat_dir.is_dir():
        raise KeppError(f"{feat_dir}: feature folder not found")
    rows = []
    seen_ids = set()
    for where, rec in iter_jsonl(path):
        for key in ("video", "task", "steps"):
            if key not in rec:
                raise KeppError(f"{where}: missing key {key!r} (expected video, task, steps)")
        steps = rec["steps"]
        if (not isinstance(steps, list)
                or not all(isinstance(s, (str, int)) and not isinstance(s, bool) for s in steps)):
            raise KeppError(f"{where}: 'steps' must be a list of step labels")
        if not steps:
            raise KeppError(f"{where}: 'steps' is empty (expected at least one step label)")
        steps = [str(s) for s in steps]
        if any(not s.strip() for s in steps):
            raise KeppError(f"{where}: 'steps' holds an empty step label")
        split = rec.get("split")
        if split is not None and split not in SPLITS:
            raise KeppError(f"{where}: split {split!r} is not 'train' or 'test'")
        vid = str(rec["video"])
        if vid in seen_ids:
            raise KeppError(f"{where}: duplicate video id {vid!r}")
        seen_ids.add(vid)
        segs = rec.get("segments")
        if segs is not None:
            if (not isinstance(segs, list) or len(segs) != len(steps)
                    or not all(isinstance(s, list) and len(s) == 2 for s in segs)):
                raise KeppError(f"{where}: 'segments' must be {len(steps)} [start, end] pairs "
                                f"(one per step)")
            try:
                segs = [(float(s), float(e)) for s, e in segs]
            except (TypeError, ValueError):
                raise KeppError(f"{where}: segment times must be numbers") from None
        duration = parse_duration(rec.get("duration"), where)
        if segs is not None:
            check_segments(segs, where, duration)
        feat = rec.get("features")
        if feat is not None and not isinstance(feat, str):
            raise KeppError(f"{where}: 'features' must be a file path, got {feat!r}")
        feat = (path.parent / feat) if feat else find_file(feat_dir, [f"{vid}.npy"])
        if feat is not None and not Path(feat).is_file():
            raise KeppError(f"{where}: feature file {feat} not found")
        if feat is not None and duration is None:
            duration = float(read_feature_shape(feat)[0])
            if segs is not None:
                check_segments(segs, f"{where} (features {feat})", duration)
        rows.append((vid, str(rec["task"]), split, steps, segs, duration, feat))
    if not rows:
        raise KeppError(f"{path}: no plans found")

    labels = [s for r in rows for s in r[3]]
    if all(_INTEGER.fullmatch(lab) for lab in labels):
        actions = sorted(set(labels), key=int)
    else:
        actions = vocabulary_from(labels)
    index = {a: i for i, a in enumerate(actions)}
    auto = seeded_split([r[0] for r in rows if r[2] is None], seed=seed)
    videos, task_steps = [], {}
    for vid, task, split, steps, segs, duration, feat in rows:
        if segs is not None:
            order = sorted(range(len(steps)), key=lambda k: segs[k])
            st = [Step(index[steps[k]], *segs[k]) for k in order]
        else:
            st = [Step(index[s]) for s in steps]
        task_steps.setdefault(task, []).extend(steps)
        videos.append(Video(id=vid, task=task, split=split or auto[vid], steps=st,
                            duration=float(duration) if duration is not None else None,
                            feature_file=Path(feat) if feat is not None else None))
    tasks = {t: Task(id=t, name=t, steps=tuple(sorted(set(s), key=lambda x: index[x])))
             for t, s in task_steps.items()}
    return Dataset(name=name, actions=actions, tasks=tasks, videos=videos, root=path.parent,
                   meta={"file": str(path)})


def write_plans(dataset: Dataset, path: str | Path) -> None:
    """Write a dataset as plans-JSONL (atomically)."""
    with atomic_open(path, "w", encoding="utf-8") as f:
        for v in dataset.videos:
            rec = {"video": v.id, "task": v.task, "split": v.split, "steps": dataset.labels(v.plan)}
            if v.has_segments:
                rec["segments"] = [[s.start, s.end] for s in v.steps]
            if v.duration is not None:
                rec["duration"] = v.duration
            f.write(json.dumps(rec) + "\n")
