"""Reader for the CrossTask release layout (also what the synthetic world writes).

    ROOT/tasks_primary.txt          blocks: id, name, URL, number of steps, steps (comma-separated), blank
    ROOT/annotations/<task>_<video>.csv   lines ``step,start,end`` (1-based step of the task, seconds)
    ROOT/videos_val.csv             optional: ``task,video[,url]`` lines of the test split
    ROOT/features/<task>_<video>.npy or <video>.npy   optional per-second features ``[seconds, D]``
    ROOT/videos/<task>_<video>.mp4 or <video>.mp4     optional videos

Steps of different tasks with the same name are one action.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path

from kepp_core.data.feature_files import FeatureShapes, file_names, find_file
from kepp_core.data.file_index import FileIndex
from kepp_core.data.records import Dataset, Step, Task, Video, check_segments, seeded_split, vocabulary_from
from kepp_core.errors import KeppError
from kepp_core.io import check_under, has_suffix, read_text_utf8
from kepp_core.schema import check_id

__all__ = ["load_crosstask"]

TASKS_FILE = "tasks_primary.txt"
VAL_FILE = "videos_val.csv"
ANNOTATION_INDEX = "annotation-rows.json"  # in annotations/: the rows of each file (kepp_core.data.file_index)


def read_tasks(path: Path) -> list[Task]:
    """Parse ``tasks_primary.txt`` into tasks with their ordered step names."""
    if not path.is_file():
        raise KeppError(f"{path}: file not found (expected the CrossTask task list {TASKS_FILE})")
    lines = read_text_utf8(path).splitlines()
    tasks: list[Task] = []
    defined: dict[str, int] = {}  # task id -> line of its block: a second block would silently replace the first
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        block = lines[i : i + 5]
        if len(block) < 5:
            raise KeppError(f"{path}:{i + 1}: incomplete task block (expected 5 lines: id, name, URL, "
                            f"number of steps, comma-separated steps)")
        tid, name, _url, n_str, steps_str = (s.strip() for s in block)
        check_id(tid, "task id", f"{path}:{i + 1}")
        try:
            n = int(n_str)
        except ValueError:
            raise KeppError(f"{path}:{i + 4}: number of steps {n_str!r} is not an integer") from None
        steps = tuple(s.strip() for s in steps_str.split(","))
        if len(steps) != n or any(not s for s in steps):
            raise KeppError(f"{path}:{i + 5}: expected {n} non-empty comma-separated step names, "
                            f"found {len(steps)}")
        if tid in defined:
            raise KeppError(f"{path}:{i + 1}: task {tid!r} is defined twice (first at line {defined[tid]})")
        defined[tid] = i + 1
        tasks.append(Task(id=tid, name=name, steps=steps))
        i += 5
    if not tasks:
        raise KeppError(f"{path}: no tasks found")
    return tasks


def _read_val_ids(path: Path) -> dict[tuple[str, str], int] | None:
    """The ``(task, video)`` pairs of the test split, each with its line number."""
    if not path.is_file():
        return None
    out = {}
    for lineno, row in _csv_rows(path):
        if len(row) < 2:
            raise KeppError(f"{path}:{lineno}: expected 'task,video[,url]', got {len(row)} field(s)")
        out.setdefault((row[0].strip(), row[1].strip()), lineno)
    return out


def _check_val_known(path: Path, val: dict[tuple[str, str], int], videos: list[Video]) -> None:
    """A test-split line naming no annotated video would silently shrink (or empty) the test split."""
    known = {(v.task, v.id) for v in videos}
    for (tid, vid), lineno in sorted(val.items(), key=lambda kv: kv[1]):
        if (tid, vid) not in known:
            raise KeppError(f"{path}:{lineno}: video {vid!r} of task {tid!r} has no annotation file "
                            f"(expected annotations/{tid}_{vid}.csv)")


def _csv_rows(path: str | Path):
    """``(line number, row)`` of the non-blank rows of a UTF-8 CSV file."""
    for lineno, line in enumerate(read_text_utf8(path).splitlines(), 1):
        if not line.strip():
            continue
        if '"' not in line and "\0" not in line:  # what the csv module reads as a plain split (10,000 files)
            row = line.split(",")
        else:
            try:
                row = next(csv.reader([line]))
            except csv.Error as e:
                raise KeppError(f"{path}:{lineno}: malformed CSV ({e})") from None
        if "".join(row).strip():
            yield lineno, row


def _annotation_rows(path: str) -> list[list]:
    """The ``[step, start, end, line]`` rows of an annotation file, checked for what the file
    alone says (form, segment times); the checks against the task come after (:func:`_read_annotation`)."""
    rows = []
    for lineno, row in _csv_rows(path):
        if len(row) != 3:
            raise KeppError(f"{path}:{lineno}: expected 'step,start,end', got {len(row)} field(s)")
        try:
            k, start, end = int(row[0]), float(row[1]), float(row[2])
        except ValueError:
            # the line is not quoted: a file named by a dataset could be anything (its content is not echoed)
            raise KeppError(f"{path}:{lineno}: expected an integer step and numeric start,end") from None
        check_segments([(start, end)], f"{path}:{lineno}")
        rows.append([k, start, end, lineno])
    if not rows:
        raise KeppError(f"{path}: no steps (expected lines 'step,start,end')")
    return rows


def _rows_valid(rows) -> bool:
    """Whether remembered annotation rows are what :func:`_annotation_rows` makes: a non-empty
    list of ``[step, start, end, line]`` with whole numbers and finite, ordered times."""
    def number(x) -> bool:
        return type(x) in (int, float) and math.isfinite(x)

    return type(rows) is list and bool(rows) and all(
        type(r) is list and len(r) == 4 and type(r[0]) is int and number(r[1]) and number(r[2])
        and 0 <= r[1] <= r[2] and type(r[3]) is int for r in rows)


def _rows_of_task(rows: list[list], task: Task) -> bool:
    """Whether remembered rows name steps of ``task`` at real line numbers (a row the file itself
    held otherwise: the index is read again, never believed)."""
    return all(1 <= r[0] <= len(task.steps) and r[3] >= 1 for r in rows)


def _read_annotation(path: str, rows: list[list], task: Task, n_actions_of_task: list[int]) -> list[Step]:
    steps = []
    for k, start, end, lineno in rows:
        if not 1 <= k <= len(task.steps):
            raise KeppError(f"{path}:{lineno}: step {k} is not a step of task {task.id} "
                            f"(expected 1..{len(task.steps)})")
        steps.append((start, end, n_actions_of_task[k - 1], lineno))
    steps.sort(key=lambda s: (s[0], s[1]))
    check_segments([(s, e) for s, e, _, _ in steps], path)
    return [Step(a, s, e) for s, e, a, _ in steps]


def load_crosstask(root: str | Path, features: str | Path | None = None, seed: int = 0,
                   name: str = "crosstask", roots: Sequence[Path] | None = None) -> Dataset:
    """Load a CrossTask-layout dataset.

    ``features`` overrides the feature folder (default ``ROOT/features``). Without
    ``videos_val.csv`` the split is a seeded 70/30 split by video. ``roots`` (the app's allowed
    folders): every file read or kept (task list, annotations, features, videos) must lie under
    one of them once symlinks are resolved.
    """
    root = Path(root)
    if not root.is_dir():
        raise KeppError(f"{root}: dataset folder not found (expected a CrossTask-layout folder)")
    tasks = read_tasks(check_under(root / TASKS_FILE, roots))
    actions = vocabulary_from(s for t in tasks for s in t.steps)
    index = {a: i for i, a in enumerate(actions)}
    by_id = {t.id: t for t in tasks}
    task_actions = {t.id: [index[s] for s in t.steps] for t in tasks}
    ann_dir = root / "annotations"
    if not ann_dir.is_dir():
        raise KeppError(f"{ann_dir}: folder not found (expected annotations/<task>_<video>.csv)")
    feat_dir = Path(features) if features is not None else root / "features"
    if features is not None and not feat_dir.is_dir():
        raise KeppError(f"{feat_dir}: feature folder not found")
    video_dir = root / "videos"
    val = _read_val_ids(check_under(root / VAL_FILE, roots))

    videos: list[Video] = []
    # a COIN-scale world: two small indexes read instead of 20,000 files (kepp_core.data.file_index)
    annotations = FileIndex(ANNOTATION_INDEX, "kepp-annotation-rows", _annotation_rows, _rows_valid)
    shapes = FeatureShapes()
    feat_names, video_names = file_names(feat_dir), file_names(video_dir)
    ann_text = str(ann_dir)  # paths as text: pathlib costs more than the rest of the loop at 10,000 files
    for file in sorted(n for n in file_names(ann_dir) if has_suffix(n, ".csv")):  # one folder: names order as paths do
        path = os.path.join(ann_text, file)
        tid, sep, vid = file[:-len(".csv")].partition("_")
        if not sep or tid not in by_id:
            raise KeppError(f"{path}: file name must be <task>_<video>.csv with a task id from "
                            f"{TASKS_FILE} (known: {', '.join(sorted(by_id))})")
        task = by_id[tid]
        check_id(vid, "video id", path)
        rows = annotations.get(check_under(path, roots), valid=lambda rows: _rows_of_task(rows, task))
        steps = _read_annotation(path, rows, task, task_actions[tid])
        feat = find_file(feat_dir, [f"{tid}_{vid}.npy", f"{vid}.npy"], feat_names)
        mp4 = find_file(video_dir, [f"{tid}_{vid}.mp4", f"{vid}.mp4"], video_names)
        for named in (feat, mp4):
            if named is not None and roots is not None:
                check_under(named, roots, path)
        duration = None
        if feat is not None:
            duration = float(shapes.shape(feat)[0])
            last = max(s.end for s in steps)
            if last > duration + 1.0:
                raise KeppError(f"{path}: segment ends at {last:g}s, beyond the video "
                                f"({duration:g}s of features in {feat})")
        videos.append(Video(id=vid, task=tid, steps=steps, duration=duration,
                            feature_file=feat, video_file=mp4))
    if not videos:
        raise KeppError(f"{ann_dir}: no annotation files found")
    annotations.save()
    shapes.save()
    if val is not None:
        _check_val_known(root / VAL_FILE, val, videos)
        for v in videos:
            v.split = "test" if (v.task, v.id) in val else "train"
    else:
        split = seeded_split([f"{v.task}_{v.id}" for v in videos], seed=seed)
        for v in videos:
            v.split = split[f"{v.task}_{v.id}"]
    return Dataset(name=name, actions=actions, tasks={t.id: t for t in tasks}, videos=videos,
                   root=root, meta={"features": str(feat_dir)})
