"""Reader and writer for the plans-JSONL interchange format, one video per line::

    {"video": str, "task": str, "split": "train"|"test" (optional), "steps": [label, ...],
     "segments": [[start, end], ...] (optional, same length as steps),
     "duration": float (optional), "features": path (optional, relative to the file)}

Without ``split`` on a line, that video gets a seeded 70/30 split by video id.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator
from pathlib import Path

from kepp_core.data.feature_files import FeatureShapes, find_file
from kepp_core.data.records import (SPLITS, Dataset, Step, Task, Video, check_segments, parse_duration,
                                   seeded_split, vocabulary_from)
from kepp_core.errors import KeppError
from kepp_core.io import atomic_open, iter_jsonl


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
    shapes = FeatureShapes()
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
            duration = float(shapes.shape(feat)[0])
            if segs is not None:
                check_segments(segs, f"{where} (features {feat})", duration)
        rows.append((vid, str(rec["task"]), split, steps, segs, duration, feat))
    if not rows:
        raise KeppError(f"{path}: no plans found")
    shapes.save()

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


def _row_error(path: Path, lineno: int, message: str) -> KeppError:
    return KeppError(f"{path}:{lineno}: {message}")


def _stream_row(rec, path: Path, lineno: int, seed: int):
    """``(video, task, split, steps, plan steps)`` of one parsed line (see :func:`iter_plan_rows`)."""
    if type(rec) is not dict:
        raise _row_error(path, lineno, f"expected a JSON object, got {type(rec).__name__}")
    try:
        vid, task, steps = rec["video"], rec["task"], rec["steps"]
    except KeyError as e:
        raise _row_error(path, lineno, f"missing key {e.args[0]!r} (expected video, task, steps)") from None
    if type(steps) is not list or not set(map(type, steps)) <= {str, int}:
        raise _row_error(path, lineno, "'steps' must be a list of step labels")
    labels = tuple(steps) if all(type(x) is str for x in steps) else tuple(map(str, steps))
    split = rec.get("split")
    if split is None:
        split = seeded_split([str(vid)], seed=seed)[str(vid)]
    elif split not in SPLITS:
        raise _row_error(path, lineno, f"split {split!r} is not 'train' or 'test'")
    plan = labels
    segs = rec.get("segments")
    if segs is not None:  # the loader orders steps by their segments
        if (type(segs) is not list or len(segs) != len(labels)
                or not all(isinstance(x, list) and len(x) == 2 for x in segs)):
            raise _row_error(path, lineno, f"'segments' must be {len(labels)} [start, end] pairs (one per step)")
        try:
            segs = [(float(a), float(b)) for a, b in segs]
        except (TypeError, ValueError):
            raise _row_error(path, lineno, "segment times must be numbers") from None
        plan = tuple(labels[k] for k in sorted(range(len(labels)), key=lambda k: segs[k]))
    return str(vid), str(task), split, labels, plan


def iter_plan_rows(root: str | Path, seed: int = 0, progress: bool = False) -> Iterator[tuple[str, str, str, tuple, tuple]]:
    """Stream a plans-JSONL file in bounded memory: ``(video, task, split, steps, plan)``
    per line, ``steps`` as written and ``plan`` ordered by segments when given (as
    :func:`load_plans` orders them). Feature files are not looked at. Duplicate video ids
    are found with one 8-byte hash per line and raise a KeppError after the last line.
    """
    path = _resolve(Path(root))
    hashes = array("q")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc=path.name, dynamic_ncols=True)
    loads, done = json.loads, 0
    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            try:
                rec = loads(line)
            except json.JSONDecodeError as e:
                if not line.strip():
                    continue
                raise _row_error(path, lineno, f"invalid JSON ({e.msg} at column {e.colno})") from None
            row = _stream_row(rec, path, lineno, seed)
            hashes.append(hash(row[0]))
            if bar is not None:
                done += len(line)
                if lineno & 0xFFFF == 0:
                    bar.update(done)
                    done = 0
            yield row
    if bar is not None:
        bar.update(done)
        bar.close()
    if not hashes:
        raise KeppError(f"{path}: no plans found")
    _check_unique_ids(path, hashes)


def _check_unique_ids(path: Path, hashes: array) -> None:
    """Raise a KeppError naming a duplicate video id (hash collisions are re-checked by id)."""
    import numpy as np

    h = np.sort(np.frombuffer(hashes, dtype=np.int64))
    dup = h[1:][h[1:] == h[:-1]]
    if dup.size == 0:
        return
    suspects, seen = set(dup.tolist()), set()
    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            vid = str(json.loads(line)["video"])
            if hash(vid) in suspects:
                if vid in seen:
                    raise _row_error(path, lineno, f"duplicate video id {vid!r}")
                seen.add(vid)


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
