"""Reader and writer for the plans-JSONL interchange format, one video per line::

    {"video": str, "task": str, "split": "train"|"test" (optional), "steps": [label, ...],
     "segments": [[start, end], ...] (optional, same length as steps),
     "duration": float (optional), "features": path (optional, relative to the file)}

Without ``split`` on a line, that video gets a seeded 70/30 split by video id. ``video`` and
``task`` are ids (:data:`kepp_core.schema.Id`: non-empty, no control characters or path
separators; they name files such as ``features/<task>_<video>.npy``); a task's name here is its id.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import msgspec

from kepp_core.data.feature_files import FeatureShapes, find_file
from kepp_core.data.records import (MAX_LABEL_CHARS, MAX_STEPS, Dataset, Step, Task, Video, check_segments, parse_duration,
                                   seeded_split, vocabulary_from)
from kepp_core.errors import KeppError
from kepp_core.io import MAX_PATH_CHARS, atomic_open, check_under, iter_lines
from kepp_core.schema import Id, Int64, Meta, Struct, decode_json

__all__ = ["load_plans", "write_plans"]


_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits only: "²".isdigit() is True, int("²") fails


def _resolve(root: Path) -> Path:
    if root.is_dir():
        root = root / "plans.jsonl"
    if not root.is_file():
        raise KeppError(f"{root}: file not found (expected a plans .jsonl file or a folder with plans.jsonl)")
    return root


def load_plans(root: str | Path, features: str | Path | None = None, seed: int = 0,
               name: str = "plans", roots: Sequence[Path] | None = None) -> Dataset:
    """Load a plans-JSONL file. Labels that are all integers are ordered numerically. ``roots``
    (the app's allowed folders): every feature file a line names must lie under one of them."""
    path = _resolve(Path(root))
    feat_dir = Path(features) if features is not None else path.parent / "features"
    if features is not None and not feat_dir.is_dir():
        raise KeppError(f"{feat_dir}: feature folder not found")
    rows = []
    seen_ids = set()
    shapes = FeatureShapes()
    for where, raw in iter_lines(path):
        vid, task, split, steps, segs, duration, feat = check_plan_row(raw, where)
        if vid in seen_ids:
            raise KeppError(f"{where}: duplicate video id {vid!r}")
        seen_ids.add(vid)
        feat = (path.parent / feat) if feat else find_file(feat_dir, [f"{vid}.npy"])
        if feat is not None:
            check_under(feat, roots, where)
        if feat is not None and not Path(feat).is_file():
            raise KeppError(f"{where}: feature file {feat} not found")
        if feat is not None and duration is None:
            duration = float(shapes.shape(feat)[0])
            if segs is not None:
                check_segments(segs, f"{where} (features {feat})", duration)
        rows.append((vid, task, split, list(steps), segs, duration, feat))
    if not rows:
        raise KeppError(f"{path}: no plans found")
    shapes.save()

    actions = action_order(s for r in rows for s in r[3])
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


def action_order(labels) -> list[str]:
    """The action vocabulary of ``labels``: numeric order when every label is an ASCII integer,
    else :func:`vocabulary_from`'s order (the one rule for both the loader and the streamed build)."""
    labels = list(labels)
    if all(_INTEGER.fullmatch(lab) for lab in labels):
        return sorted(set(labels), key=int)
    return vocabulary_from(labels)




class PlanRow(Struct):
    """The schema of one plans-JSONL line (see the module docstring); extra keys are ignored."""

    HINTS: ClassVar[dict[str, str]] = {
        "steps": "a list of step labels", "split": "'train' or 'test'", "segments": "[start, end] pairs of seconds",
        "duration": "a number of seconds", "features": "a file path"}

    video: Id
    task: Id
    steps: Annotated[list[Annotated[str, Meta(max_length=MAX_LABEL_CHARS)] | Int64],
                     Meta(min_length=1, max_length=MAX_STEPS)]
    split: Literal["train", "test"] | None = None
    segments: list[tuple[float, float]] | None = None
    duration: float | None = None
    features: Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS, pattern=r"^[^\x00]*$")] | None = None


_ROW = msgspec.json.Decoder(PlanRow)


def check_plan_row(raw: bytes, where: str):
    """The checked fields of one plans-JSONL line (its bytes): ``(video, task, split or None,
    steps, segments or None, duration or None, features or None)``. The line is decoded by the
    :class:`PlanRow` schema (types, ids, sizes), then the rules between fields are checked; every
    per-line check of the format lives here, so :func:`load_plans` and :func:`iter_plan_rows`
    refuse the same lines."""
    rec = decode_json(raw, PlanRow, where, _ROW)
    steps = rec.steps
    steps = tuple(steps) if all(type(x) is str for x in steps) else tuple(map(str, steps))
    if any(not s.strip() for s in steps):
        raise KeppError(f"{where}: 'steps' holds an empty step label")
    segs = rec.segments
    if segs is not None and len(segs) != len(steps):
        raise KeppError(f"{where}: 'segments' must be {len(steps)} [start, end] pairs (one per step)")
    duration = parse_duration(rec.duration, where)
    if segs is not None:
        check_segments(segs, where, duration)
    return rec.video, rec.task, rec.split, steps, segs, duration, rec.features


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

        bar = tqdm(unit=" plans", unit_scale=True, desc=path.name, dynamic_ncols=True)
    done = 0
    for where, raw in iter_lines(path):  # the loader's reader and schema: the same lines refused
        vid, task, split, labels, segs, _duration, _feat = check_plan_row(raw, where)
        if split is None:
            split = seeded_split([vid], seed=seed)[vid]
        plan = labels if segs is None else tuple(labels[k] for k in sorted(range(len(labels)), key=lambda k: segs[k]))
        hashes.append(hash(vid))
        done += 1
        if bar is not None and done & 0xFFFF == 0:
            bar.update(0x10000)
        yield vid, task, split, labels, plan
    if bar is not None:
        bar.update(done & 0xFFFF)
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
                    raise KeppError(f"{path}:{lineno}: duplicate video id {vid!r}")
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
