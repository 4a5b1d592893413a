"""The official KEPP repository's training lists as a plans source (dataset ``official-list``).

One JSON object per line, ``{"vid": str, "task": str (optional), "legal_range": [action id, ...]}``
(the official repository's ``PKG/data/train_graph_lists``). Action ids are the official
models' indices, so the vocabulary is the ids ``"0" .. "<max id>"`` in order (an id no plan
uses keeps its place) and an index here is the same number as in the official code. Every
video is a training video (the lists are training lists); plans carry no times, so they give
graphs and plans, not observations.

>>> official_actions(3)
['0', '1', '2']
"""

from __future__ import annotations

from pathlib import Path

from kepp_core.data.records import Dataset, Step, Task, Video
from kepp_core.errors import KeppError
from kepp_core.io import parse_json, read_text_utf8

NO_TASK = ""  # the task of a line without "task"
MAX_ACTION_ID = 1_000_000  # beyond this an id is not an action index (and would allocate a huge vocabulary)


def official_actions(num_actions: int) -> list[str]:
    """The vocabulary of official action ids ``0 .. num_actions-1`` (labels are the ids)."""
    return [str(i) for i in range(num_actions)]


def _line(path: Path, lineno: int, text: str) -> tuple[str, str, list[int]]:
    rec = parse_json(text, f"{path}:{lineno}", lines=False)
    if type(rec) is not dict:
        raise KeppError(f"{path}:{lineno}: expected a JSON object with vid and legal_range")
    for key in ("vid", "legal_range"):
        if key not in rec:
            raise KeppError(f"{path}:{lineno}: missing key {key!r} (expected vid, legal_range, optional task)")
    ids = rec["legal_range"]
    if type(ids) is not list or not all(type(a) is int for a in ids):
        raise KeppError(f"{path}:{lineno}: 'legal_range' must be a list of action ids (integers)")
    if not ids:
        raise KeppError(f"{path}:{lineno}: 'legal_range' is empty")
    bad = next((a for a in ids if not 0 <= a <= MAX_ACTION_ID), None)
    if bad is not None:
        raise KeppError(f"{path}:{lineno}: action id {bad} is outside 0..{MAX_ACTION_ID}")
    task = rec.get("task", NO_TASK)
    if not isinstance(task, (str, int)) or isinstance(task, bool):
        raise KeppError(f"{path}:{lineno}: 'task' must be a string or a number")
    return str(rec["vid"]), str(task), ids


def load_official_list(root: str | Path, features: str | Path | None = None, seed: int = 0,
                       name: str = "official-list") -> Dataset:
    """Read an official training list (see the module docstring); ``features`` and ``seed``
    are accepted for the loader interface and unused (no times, no split to draw)."""
    path = Path(root)
    if not path.is_file():
        raise KeppError(f"{path}: official training list not found (JSON lines with vid, legal_range)")
    rows, seen = [], {}
    for lineno, text in enumerate(read_text_utf8(path).splitlines(), 1):
        if not text.strip():
            continue
        vid, task, ids = _line(path, lineno, text)
        if vid in seen:
            raise KeppError(f"{path}:{lineno}: duplicate vid {vid!r} (first on line {seen[vid]})")
        seen[vid] = lineno
        rows.append((vid, task, ids))
    if not rows:
        raise KeppError(f"{path}: no plans found")
    actions = official_actions(max(a for _, _, ids in rows for a in ids) + 1)
    videos, task_actions = [], {}
    for vid, task, ids in rows:
        videos.append(Video(id=vid, task=task, split="train", steps=[Step(a) for a in ids]))
        task_actions.setdefault(task, set()).update(ids)
    tasks = {t: Task(id=t, name=t or "(no task)", steps=tuple(actions[a] for a in sorted(s)))
             for t, s in task_actions.items()}
    return Dataset(name=name, actions=actions, tasks=tasks, videos=videos, root=path.parent,
                   meta={"file": str(path)})


__all__ = ["NO_TASK", "load_official_list", "official_actions"]
