"""Records by themselves: the steps of prediction records of no known dataset, named, as a :class:`Dataset` of no
videos (what the app browses them with: its Results and Failure cases pages need the step and task names only).

A step is named by a taxonomy file given on the command line (``kepp app --taxonomy FILE``), else by the records'
own labels (``gt_labels``, ``endpoint_labels``, as ``kepp eval --records`` writes them), else by its id ("step 17").
A taxonomy file is one of:

- JSON, ``{"<action id>": "<step name>", ...}``;
- JSON, ViterbiPlanNet's ``{"<task id>_<...>_<task name>": {"<action id>": "<step name>"}}``
  (:func:`kepp_core.data.split_lists.read_taxonomy`);
- CSV with the header ``id,name``, one step a line.

Every id is a whole number in ASCII digits, every name non-empty text, an id named once; anything else is one
line naming the file, the line or key, the value and what was expected.

>>> records_dataset({"t1": 3}, {0: "crack egg"}).actions
['crack egg', 'step 1', 'step 2']
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated

from kepp_core.data.records import MAX_LABEL_CHARS, Dataset, Task
from kepp_core.data.split_lists import MAX_ACTION_ID, read_taxonomy
from kepp_core.errors import KeppError, printable
from kepp_core.io import check_under, read_bytes, utf8_text, whole_number
from kepp_core.schema import Meta, check_nesting, decode_json

__all__ = ["RECORDS_DATASET", "read_step_names", "records_dataset", "step_name"]

RECORDS_DATASET = "records"  # the name of the dataset of records by themselves
MAX_TAXONOMY_BYTES = 64 << 20
_ID_DIGITS = len(str(MAX_ACTION_ID))


def step_name(action: int) -> str:
    """The name of a step nothing names: its id.

    >>> step_name(17)
    'step 17'
    """
    return f"step {action}"


def read_step_names(path: str | Path, roots: Sequence[Path] | None = None) -> dict[int, str]:
    """Action id -> step name of the taxonomy file ``path`` (the module docstring's formats), checked strictly:
    a KeppError of one line naming the file, the line or key and what was expected."""
    path = Path(check_under(path, roots))
    try:
        data = read_bytes(path, MAX_TAXONOMY_BYTES)
    except FileNotFoundError:
        raise KeppError(f"{path}: taxonomy file not found") from None
    except IsADirectoryError:
        raise KeppError(f"{path}: is a folder (expected a taxonomy file: JSON or CSV of id -> name)") from None
    if path.suffix.lower() == ".csv":
        return _csv_names(path, utf8_text(data, str(path)))
    if path.suffix.lower() != ".json":
        raise KeppError(f"{path}: expected a taxonomy file ending in .json or .csv (id -> step name)")
    check_nesting(data, str(path), 2)
    raw = decode_json(data, dict[Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)], object], str(path))
    if raw and all(isinstance(v, dict) for v in raw.values()):  # ViterbiPlanNet's: steps under their tasks
        return dict(read_taxonomy(path, roots).actions)
    return {_action_id(path, f"key {k[:40]!r}", k): _name(path, f"key {k[:40]!r}", v) for k, v in raw.items()}


def _csv_names(path: Path, text: str) -> dict[int, str]:
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or [h.strip().lower() for h in header] != ["id", "name"]:
        raise KeppError(f"{path}: line 1: {printable(','.join(header or []))[:60]!r}: expected the header 'id,name'")
    names: dict[int, str] = {}
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        if len(row) != 2:
            raise KeppError(f"{path}: line {line}: {len(row)} fields: expected 2 (id,name)")
        action = _action_id(path, f"line {line}", row[0].strip())
        if action in names:
            raise KeppError(f"{path}: line {line}: action id {action} is named twice ({names[action]!r} before)")
        names[action] = _name(path, f"line {line}", row[1].strip())
    return names


def _action_id(path: Path, where: str, text: str) -> int:
    action = whole_number(text, _ID_DIGITS)
    if action is None or action > MAX_ACTION_ID:
        raise KeppError(f"{path}: {where}: action id {printable(text[:20])!r}: expected a whole number "
                        f"0..{MAX_ACTION_ID:,} in ASCII digits")
    return action


def _name(path: Path, where: str, value) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_CHARS:
        raise KeppError(f"{path}: {where}: step name {printable(repr(value)[:40])}: expected text of 1 to "
                        f"{MAX_LABEL_CHARS} characters")
    return value


def records_dataset(tasks: Mapping[str, int], names: Mapping[int, str], size: int | None = None) -> Dataset:
    """The dataset of records by themselves: ``tasks`` (task id -> the largest action id + 1 its records name, or
    any count), actions ``0..size-1`` (default: what the tasks name) named by ``names``, else by their id
    (:func:`step_name`); tasks named by their id; no videos (nothing to play or plan from)."""
    size = max([*tasks.values(), *(a + 1 for a in names), 0]) if size is None else size
    actions = [names.get(a) or step_name(a) for a in range(size)]
    return Dataset(name=RECORDS_DATASET, actions=actions, tasks={t: Task(id=t, name=t) for t in tasks},
                   videos=[], meta={"records_alone": True})
