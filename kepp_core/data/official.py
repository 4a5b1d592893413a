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

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, ClassVar

import msgspec

from kepp_core.data.records import MAX_STEPS, Dataset, Step, Task, Video
from kepp_core.errors import KeppError
from kepp_core.io import check_under, iter_lines
from kepp_core.schema import Id, Meta, Name, Struct, decode_json

NO_TASK = ""  # the task of a line without "task"
MAX_ACTION_ID = 1_000_000  # beyond this an id is not an action index (and would allocate a huge vocabulary)


def official_actions(num_actions: int) -> list[str]:
    """The vocabulary of official action ids ``0 .. num_actions-1`` (labels are the ids)."""
    return [str(i) for i in range(num_actions)]


class OfficialRow(Struct):
    """The schema of one line of an official training list."""

    HINTS: ClassVar[dict[str, str]] = {
        "legal_range": f"a list of action ids (integers 0..{MAX_ACTION_ID:,})", "task": "a task id or number"}
    vid: Id
    legal_range: Annotated[list[Annotated[int, Meta(ge=0, le=MAX_ACTION_ID)]], Meta(min_length=1, max_length=MAX_STEPS)]
    task: Name | Annotated[int, Meta(ge=0, le=2**63 - 1)] | None = None


_ROW = msgspec.json.Decoder(OfficialRow)


def load_official_list(root: str | Path, features: str | Path | None = None, seed: int = 0,
                       name: str = "official-list", roots: Sequence[Path] | None = None) -> Dataset:
    """Read an official training list (see the module docstring); ``features`` and ``seed``
    are accepted for the loader interface and unused (no times, no split to draw)."""
    path = check_under(root, roots)
    if not path.exists():
        raise KeppError(f"{path}: official training list not found (JSON lines with vid, legal_range)")
    rows, seen = [], {}
    for where, raw in iter_lines(path):
        row = decode_json(raw, OfficialRow, where, _ROW)
        if row.vid in seen:
            raise KeppError(f"{where}: duplicate vid {row.vid!r} (first on line {seen[row.vid]})")
        seen[row.vid] = where.rpartition(":")[2]
        rows.append((row.vid, NO_TASK if row.task is None else str(row.task), row.legal_range))
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
