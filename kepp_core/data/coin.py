"""Reader for COIN's ``COIN.json`` (``{"database": {video_id: {...}}}``) with its ``subset`` split.

Actions (``actions=``):

- ``"steps"`` (default): one action per COIN step id, COIN's own step taxonomy (the action
  space of the procedure-planning literature). Each id belongs to one task; COIN gives 25
  labels to steps of two different tasks ("begin to run up" in pole vault and in triple
  jump): such labels are made unique by the task, ``"begin to run up (PractisePoleVault)"``
  (and by the step id where one task has two steps of the same label).
- ``"labels"``: one action per distinct label, merging those steps across tasks.

Either way the vocabulary is ordered by first appearance (videos in file order, steps by start).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import msgspec

from kepp_core.data.feature_files import FeatureShapes, file_names, find_file
from kepp_core.data.records import MAX_LABEL_CHARS, MAX_STEPS, Dataset, Step, Task, Video, check_segments, parse_duration
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.io import check_under, read_bytes
from kepp_core.schema import Id, Int64, Meta, Struct, check_id, decode_json

__all__ = ["load_coin"]

SUBSETS = {"training": "train", "testing": "test"}
MAX_ANNOTATION_BYTES = 2**30  # COIN.json is 5.5 MB: a gigabyte of annotations is not one
ACTION_MODES = ("steps", "labels")


def _resolve(root: Path) -> Path:
    if root.is_dir():
        root = root / "COIN.json"
    if not root.is_file():
        raise KeppError(f"{root}: file not found (expected COIN.json or a folder containing it)")
    return root


def load_coin(root: str | Path, features: str | Path | None = None, seed: int = 0,
              name: str = "coin", actions: str = "steps", roots: Sequence[Path] | None = None) -> Dataset:
    """Load COIN annotations (see the module docstring for ``actions``).

    ``features`` is an optional folder of per-second features, ``<video>.npy`` or the S3D
    release's ``<class>_<recipe_type>_<video>.npy``. ``roots`` (the app's allowed folders): every
    feature file must lie under one of them, symlinks resolved.
    """
    if actions not in ACTION_MODES:
        raise unknown_name_error("COIN action mode", actions, ACTION_MODES)
    path = _resolve(Path(root))
    db = decode_json(read_bytes(path, MAX_ANNOTATION_BYTES), CoinFile, str(path), lines=True).database

    feat_dir = Path(features) if features is not None else None
    if feat_dir is not None and not feat_dir.is_dir():
        raise KeppError(f"{feat_dir}: feature folder not found")

    raw = []
    keys: dict[str, None] = {}                     # action keys in first-appearance order
    key_label: dict[str, str] = {}
    key_task: dict[str, str] = {}
    for vid, rec in db.items():
        row, labelled = _read_video(vid, rec, f"{path}: video {vid!r}", actions)
        for key, label in labelled:                # annotation order: the first label names a key
            if key_label.setdefault(key, label) != label and actions == "steps":
                raise KeppError(f"{path}: video {vid!r}: step id {key!r} is labelled {label!r} here and "
                                f"{key_label[key]!r} before (expected one label per step id)")
            key_task.setdefault(key, row[1])
        for _, _, key, _ in row[4]:                # time order: the first appearance orders the keys
            keys.setdefault(key)
        raw.append(row)
    names = _display_names(keys, key_label, key_task)
    action_list = [names[k] for k in keys]
    index = {k: i for i, k in enumerate(keys)}

    task_steps: dict[str, dict[str, None]] = {}
    videos = []
    shapes = FeatureShapes()  # S3D pickles are read whole: the index spares that at every load
    feat_names = file_names(feat_dir) if feat_dir is not None else set()
    for vid, task, split, duration, steps, recipe in raw:
        if not steps:
            continue
        ts = task_steps.setdefault(task, {})
        for _, _, key, _ in steps:
            ts.setdefault(names[key])
        # <video>.npy, or the S3D release's <class>_<recipe_type>_<video>.npy
        feat = (find_file(feat_dir, [f"{vid}.npy", f"{task}_{recipe}_{vid}.npy"], feat_names)
                if feat_dir is not None else None)
        if feat is not None:
            check_under(feat, roots, f"{path}: video {vid!r}")
            n_sec, _ = shapes.shape(feat)
            if duration is None:
                duration = float(n_sec)
                check_segments([(s, e) for s, e, _, _ in steps], f"{path}: video {vid!r} (features {feat})", duration)
        videos.append(Video(id=vid, task=task, split=split, duration=duration,
                            steps=[Step(index[key], s, e) for s, e, key, _ in steps], feature_file=feat))
    shapes.save()
    tasks = {t: Task(id=t, name=t, steps=tuple(ts)) for t, ts in sorted(task_steps.items())}
    return Dataset(name=name, actions=action_list, tasks=tasks, videos=videos, root=path.parent,
                   meta={"file": str(path), "features": str(feat_dir) if feat_dir else None,
                         "actions": actions})


class CoinStep(Struct):
    """The schema of one step of a COIN record's ``annotation``."""

    HINTS: ClassVar[dict[str, str]] = {"label": "a step label", "segment": "[start, end] in seconds",
                                       "id": "a step id"}
    label: Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)]
    segment: tuple[float, float]
    id: Id | Int64 | None = None


class CoinVideo(Struct):
    """The schema of one video record of ``COIN.json``'s ``database`` (other keys are ignored)."""

    HINTS: ClassVar[dict[str, str]] = {
        "class": "a task id", "subset": "'training' or 'testing'", "duration": "a number of seconds",
        "annotation": "a list of steps with 'label', 'segment' [start, end] and 'id'",
        "recipe_type": "a recipe type id"}
    task: Id = msgspec.field(name="class")
    subset: Literal["training", "testing"]
    annotation: Annotated[list[CoinStep], Meta(min_length=1, max_length=MAX_STEPS)]
    duration: float | None = None
    recipe_type: Id | Int64 | None = None


class CoinFile(Struct):
    """``COIN.json``: the records are decoded one by one (:class:`CoinVideo`), so an error names its video."""

    HINTS: ClassVar[dict[str, str]] = {"database": "an object mapping video ids to records"}
    database: dict[str, msgspec.Raw]


_VIDEO = msgspec.json.Decoder(CoinVideo)


def _read_video(vid: str, raw: msgspec.Raw, where: str, actions: str) -> tuple[tuple, list[tuple[str, str]]]:
    """``(id, task, split, duration, steps, recipe_type)`` of one COIN record, its steps
    ``(start, end, action key, label)`` sorted by time and checked against the duration, and
    the ``(key, label)`` pairs in annotation order."""
    check_id(vid, "video id", where)
    rec = decode_json(raw, CoinVideo, where, _VIDEO)
    duration = parse_duration(rec.duration, where)
    steps = []
    for k, a in enumerate(rec.annotation):
        label, (s, e) = a.label, a.segment
        if not label.strip():
            raise KeppError(f"{where}, annotation {k}: empty step label")
        check_segments([(s, e)], f"{where}, annotation {k}", duration)
        sid = label if a.id is None else str(a.id)
        steps.append((s, e, sid if actions == "steps" else label, label))
    labelled = [(key, label) for _, _, key, label in steps]
    steps.sort(key=lambda t: (t[0], t[1]))
    check_segments([(s, e) for s, e, _, _ in steps], where, duration)
    recipe = None if rec.recipe_type is None else str(rec.recipe_type)
    return (vid, rec.task, SUBSETS[rec.subset], duration, steps, recipe), labelled


def _display_names(keys, key_label: dict[str, str], key_task: dict[str, str]) -> dict[str, str]:
    """Display names: the label, made unique by the task where two step ids share it."""
    by_label = defaultdict(list)
    for key in keys:
        by_label[key_label[key]].append(key)
    names = {}
    for label, group in by_label.items():
        tasks_of = [key_task[k] for k in group]
        for k in group:
            if len(group) == 1:
                names[k] = label
            elif tasks_of.count(key_task[k]) == 1:
                names[k] = f"{label} ({key_task[k]})"
            else:  # the same label twice within one task: only the step id tells them apart
                names[k] = f"{label} ({key_task[k]}, step {k})"
    return names
