"""Split lists: the data-list format of the procedure-planning literature as a dataset (``split-lists``).

PDPP, KEPP, MTID and ViterbiPlanNet read their train and test episodes from JSON lists, one file
per split and horizon (ViterbiPlanNet's unified benchmark ships them: ``train70_3.json`` /
``test30_3.json`` for NIV, ``train_list_3_133.json`` / ``test_list_3_133.json`` for CrossTask, ...).
A list is a JSON array of episodes, each every window of ``T`` consecutive steps of a video::

    [{"id": {"feature": "<path>/changing_tire_0001.npy",
             "legal_range": [[start, end, action id], ...],      # T steps, seconds, as in the list
             "task_id": 0,
             "vid": "GNJfDOoVORM", "task": "23521",              # optional (CrossTask, COIN)
             "task_name": "Changing a car tire",                 # optional (ViterbiPlanNet)
             "actions": ["get things out", ...]},                # optional (ViterbiPlanNet): the steps' names
      "instruction_len": 9},                                     # optional: the video's number of steps
     ...]

Extra keys (KEPP's ``pred_list``, ``graph_action_path``) are ignored. A **taxonomy** file (ViterbiPlanNet's
``*_taxonomy*.json``: ``{"<task id>_<...>_<task name>": {"<action id>": "<step name>", ...}}``) names
the actions and tasks.

How a list becomes a dataset:

- **actions** are the lists' ids (an index here is the id in the files, so another code's
  predictions and these plans speak of the same actions); the vocabulary runs from 0 to the
  largest id the lists or the taxonomy name, each named by the taxonomy, else by the lists'
  ``actions``, else by its number. A name two ids share (CrossTask's 133 steps: "add onion" in
  two tasks) gets its task's name in brackets;
- **tasks** are the ``task_id`` (as text), named by ``task_name``, else by the taxonomy;
- **videos** are the feature files: a video's windows are consecutive entries, each one step on
  from the last (a list that breaks this is refused naming the entry), so the video's steps are
  its first window and the last step of every other; ``make_episodes`` gives back the list's
  episodes in the list's order. The video's id is ``vid``, else the feature file's stem. The
  steps keep the list's order and times (overlapping rounded times are kept as they are);
- **features** are found under the features folder by the list's file *name* (the list's own
  paths point into the machine that wrote it); without a features folder the dataset has plans
  and times but no observations. The feature files may be plain ``.npy`` arrays or the
  literature's pickled dicts with ``frames_features`` (:mod:`kepp_core.data.feature_files`).

The lists are given as a **split file** (TOML, the dataset's ``--root``; paths relative to it)::

    train = "train70_3.json"
    test = "test30_3.json"
    taxonomy = "niv_taxonomy.json"       # optional
    features = "processed_data"          # optional (--features overrides it)

or on the command line (``--train-list``, ``--test-list``, ``--taxonomy``): :class:`SplitFiles`.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, ClassVar

import msgspec

from kepp_core.data.episodes import make_episodes
from kepp_core.data.feature_files import FeatureShapes, file_names
from kepp_core.data.records import MAX_LABEL_CHARS, MAX_STEPS, MAX_VIDEO_SECONDS, SEGMENT_SLACK, Dataset, Step, Task, Video
from kepp_core.catalog import episode_id
from kepp_core.errors import KeppError
from kepp_core.io import MAX_PATH_CHARS, atomic_write_text, check_under, read_bytes, utf8_text, whole_number
from kepp_core.schema import Id, Int64, Meta, Struct, check_nesting, convert, decode_json

NAME = "split-lists"  # the dataset name (--dataset split-lists)
MAX_LIST_BYTES = 1 << 30  # the largest lists (CrossTask, COIN: tens of MB) are far below this
MAX_ACTION_ID = 1_000_000  # beyond this an id is not an action index (it would allocate a huge vocabulary)
_LIST_DEPTH = 6  # list → entry → id → legal_range → [start, end, action]: deeper is not a split list
_MAX_ID_DIGITS = 20  # a task or action id of more digits is no id (and int() of 4,300 digits is a ValueError)
SPLITS_KEYS = ("train", "test", "taxonomy", "features")

FilePath = Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS, pattern=r"^[^\x00]*$")]
Label = Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)]


@dataclass(frozen=True, kw_only=True)
class SplitFiles:
    """The files of a split-lists dataset: the train and test lists (one file each), the optional
    taxonomy and the optional features folder."""

    train: Path
    test: Path
    taxonomy: Path | None = None
    features: Path | None = None


class _SplitFile(Struct, forbid_unknown_fields=True):
    HINTS: ClassVar[dict[str, str]] = {k: "a file path" for k in SPLITS_KEYS}
    train: FilePath
    test: FilePath
    taxonomy: FilePath | None = None
    features: FilePath | None = None


def read_split_file(path: str | Path, roots: Sequence[Path] | None = None) -> SplitFiles:
    """The :class:`SplitFiles` a split file (TOML, see the module docstring) names, relative to it."""
    path = check_under(path, roots)
    if not path.is_file():
        raise KeppError(f"{path}: split file not found (a TOML file with train = \"...\" and test = \"...\")")
    text = utf8_text(read_bytes(path, limit=1 << 20), str(path))
    check_nesting(text, str(path), 2, syntax="toml")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise KeppError(f"{path}: not valid TOML ({e})") from None
    spec = convert(data, _SplitFile, str(path))
    here = path.parent

    def at(p: str | None) -> Path | None:
        return None if p is None else check_under(here / p, roots, str(path))

    return SplitFiles(train=at(spec.train), test=at(spec.test), taxonomy=at(spec.taxonomy), features=at(spec.features))


# --- one list ------------------------------------------------------------------------------------------------
class _Episode(Struct):
    """The ``id`` object of a list entry (extra keys are ignored)."""

    HINTS: ClassVar[dict[str, str]] = {
        "legal_range": "a list of [start, end, action id] steps (seconds >= 0, an id 0..1,000,000)",
        "feature": "a feature file path", "task_id": "a task id or number", "actions": "a list of step names"}
    feature: FilePath
    legal_range: Annotated[list[tuple[Annotated[float, Meta(ge=0, le=MAX_VIDEO_SECONDS)],
                                      Annotated[float, Meta(ge=0, le=MAX_VIDEO_SECONDS)],
                                      Annotated[int, Meta(ge=0, le=MAX_ACTION_ID)]]],
                           Meta(min_length=1, max_length=MAX_STEPS)]
    task_id: Id | Int64
    vid: Id | None = None
    task: Id | Int64 | None = None
    task_name: Label | None = None
    actions: Annotated[list[Label], Meta(max_length=MAX_STEPS)] | None = None


class _Entry(Struct):
    HINTS: ClassVar[dict[str, str]] = {"id": "an object with feature, legal_range and task_id",
                                       "instruction_len": "a number of steps"}
    id: _Episode
    instruction_len: Int64 | None = None


_ENTRY = msgspec.json.Decoder(_Entry)
_RAW = msgspec.json.Decoder(list[msgspec.Raw])


@dataclass(frozen=True)
class ListedEpisode:
    """One checked entry of a split list: where it is (``where``: ``FILE: entry K``, 0-based), the
    feature file's name (the video's key), the video id, the task and its name, the steps
    ``(start, end, action id)`` and the step names the list gives (or None)."""

    where: str
    feature: str
    video: str
    task: str
    task_name: str | None
    steps: tuple[tuple[float, float, int], ...]
    names: tuple[str, ...] | None

    @property
    def plan(self) -> tuple[int, ...]:
        """The episode's action ids."""
        return tuple(a for _, _, a in self.steps)


def _file_name(path: str) -> str:
    """The file name of a path written on any machine (``/`` or ``\\`` separated)."""
    return PureWindowsPath(PurePosixPath(path).name).name


def read_split_list(path: str | Path, roots: Sequence[Path] | None = None) -> list[ListedEpisode]:
    """The checked entries of one split list, in order: every entry's keys, types and sizes
    (:class:`_Entry`), its steps (``0 <= start <= end``; as many names as steps), and one horizon
    for the whole list. A refusal is one KeppError naming the file, the entry and what was expected."""
    path = check_under(path, roots)
    try:
        data = read_bytes(path, MAX_LIST_BYTES)
    except FileNotFoundError:
        raise KeppError(f"{path}: split list not found") from None
    check_nesting(data, str(path), _LIST_DEPTH)
    raw = decode_json(data, list[msgspec.Raw], str(path), _RAW)
    if not raw:
        raise KeppError(f"{path}: the split list holds no episode")
    out, horizon = [], None
    for k, item in enumerate(raw):
        where = f"{path}: entry {k}"
        entry = decode_json(item, _Entry, where, _ENTRY).id
        steps = tuple((float(s), float(e), int(a)) for s, e, a in entry.legal_range)
        for j, (s, e, _a) in enumerate(steps):
            if e < s:
                raise KeppError(f"{where}: legal_range[{j}] = [{s:g}, {e:g}, ...]: the step ends before it starts "
                                "(expected [start, end, action id] with start <= end)")
        horizon = horizon or len(steps)
        if len(steps) != horizon:
            raise KeppError(f"{where}: legal_range has {len(steps)} steps, the list's first entry {horizon} "
                            "(a split list holds the episodes of one horizon T)")
        if entry.actions is not None and len(entry.actions) != len(steps):
            raise KeppError(f"{where}: 'actions' names {len(entry.actions)} steps for {len(steps)} in legal_range")
        name = _file_name(entry.feature)
        if not name:
            raise KeppError(f"{where}: 'feature' {entry.feature!r} names no file")
        video = entry.vid if entry.vid is not None else name.removesuffix(".npy")
        out.append(ListedEpisode(where, name, video, str(entry.task_id), entry.task_name, steps,
                                 tuple(entry.actions) if entry.actions is not None else None))
    return out


def list_horizon(episodes: Sequence[ListedEpisode]) -> int:
    """The horizon T of a split list's episodes."""
    return len(episodes[0].steps)


@dataclass
class _ListVideo:
    """A video rebuilt from its consecutive windows in one list."""

    first: ListedEpisode
    steps: list[tuple[float, float, int]]
    names: list[str | None]
    wheres: list[str]  # the entry each step first appears in


def _videos(episodes: Sequence[ListedEpisode], split: str, seen: dict[str, str]) -> dict[str, _ListVideo]:
    """The videos of one list, in order: each video's windows must be consecutive entries, one
    step apart (the only way the list's episodes are the windows of its plans)."""
    videos: dict[str, _ListVideo] = {}
    last = None
    for ep in episodes:
        names = list(ep.names) if ep.names is not None else [None] * len(ep.steps)
        v = videos.get(ep.feature)
        if v is None:
            if ep.feature in seen:
                raise KeppError(f"{ep.where}: video {ep.feature} is also in the {seen[ep.feature]} list "
                                "(a video belongs to one split)")
            seen[ep.feature] = split
            videos[ep.feature] = _ListVideo(ep, list(ep.steps), names, [ep.where] * len(ep.steps))
        else:
            if last != ep.feature:
                raise KeppError(f"{ep.where}: {ep.feature} comes back after other videos (expected a video's "
                                "episodes as consecutive entries)")
            if list(ep.steps[:-1]) != v.steps[len(v.steps) - len(ep.steps) + 1:]:
                raise KeppError(f"{ep.where}: the steps of {ep.feature} do not continue the previous entry's "
                                "(expected each window one step on from the last)")
            if ep.task != v.first.task:
                raise KeppError(f"{ep.where}: task_id {ep.task} for {ep.feature}, task_id {v.first.task} before")
            v.steps.append(ep.steps[-1])
            v.names.append(names[-1])
            v.wheres.append(ep.where)
        last = ep.feature
    return videos


# --- taxonomy and vocabulary -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Taxonomy:
    """ViterbiPlanNet's taxonomy: each action id's name and task, and each task's name."""

    actions: dict[int, str]
    action_task: dict[int, str]
    task_names: dict[str, str]


def read_taxonomy(path: str | Path, roots: Sequence[Path] | None = None) -> Taxonomy:
    """A taxonomy file ``{"<task id>_<...>_<task name>": {"<action id>": "<step name>"}}``: the task
    id is the text before the first ``_``, its name the text after the last one."""
    path = check_under(path, roots)
    try:
        data = read_bytes(path, 64 << 20)
    except FileNotFoundError:
        raise KeppError(f"{path}: taxonomy file not found") from None
    check_nesting(data, str(path), 2)
    tasks = decode_json(data, dict[Annotated[str, Meta(min_length=1, max_length=MAX_LABEL_CHARS)],
                                   dict[str, Label]], str(path))
    actions, action_task, names = {}, {}, {}
    for key, steps in tasks.items():
        task, _, rest = key.partition("_")
        number = whole_number(task, _MAX_ID_DIGITS)
        if number is None or not rest:
            raise KeppError(f"{path}: task key {key[:60]!r}: expected '<task id>_<task name>' with the id in ASCII "
                            f"digits (e.g. '0_Changing a car tire')")
        task, name = str(number), rest.rpartition("_")[2]
        names[task] = name
        for a, label in steps.items():
            action = whole_number(a, _MAX_ID_DIGITS)
            if action is None or action > MAX_ACTION_ID:
                raise KeppError(f"{path}: {key[:60]!r}: action id {a[:20]!r}{'...' if len(a) > 20 else ''}: expected "
                                f"a whole number 0..{MAX_ACTION_ID:,} in ASCII digits")
            if actions.get(action, label) != label:
                raise KeppError(f"{path}: action id {action} is named {actions[action]!r} and {label!r}")
            actions[action] = label
            action_task.setdefault(action, task)
    return Taxonomy(actions, action_task, names)


def _vocabulary(videos: Sequence[_ListVideo], taxonomy: Taxonomy | None, task_names: dict[str, str]) -> list[str]:
    """The action names, index = id: the taxonomy's, else the lists' ``actions``, else the number; a
    name two ids share gets its task's name in brackets (and the id, if that is shared too)."""
    named: dict[int, str] = {}
    for v in videos:
        for (_, _, a), name, where in zip(v.steps, v.names, v.wheres):
            if taxonomy is not None and a not in taxonomy.actions:
                raise KeppError(f"{where}: action id {a} is not in the taxonomy")
            known = taxonomy.actions[a] if taxonomy is not None else named.get(a)
            if name is not None and known is not None and name != known:
                raise KeppError(f"{where}: step {name!r} has action id {a}, which "
                                f"{'the taxonomy' if taxonomy is not None else 'another entry'} names {known!r}")
            if name is not None:
                named[a] = name
    if taxonomy is not None:
        named = dict(taxonomy.actions)
    size = 1 + max([a for v in videos for _, _, a in v.steps] + list(named))
    labels = [named.get(a, str(a)) for a in range(size)]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    task_of = dict(taxonomy.action_task) if taxonomy is not None else {}
    for v in videos:  # without a taxonomy: the task an action first appears in
        for _, _, a in v.steps:
            task_of.setdefault(a, v.first.task)
    for a, label in enumerate(labels):
        if counts[label] > 1 and a in task_of:
            labels[a] = f"{label} ({task_names.get(task_of[a], task_of[a])})"
    if len(set(labels)) < len(labels):
        seen: dict[str, int] = {}
        for label in labels:
            seen[label] = seen.get(label, 0) + 1
        labels = [f"{label} #{a}" if seen[label] > 1 else label for a, label in enumerate(labels)]
    return labels


# --- the dataset -----------------------------------------------------------------------------------------------
def load_split_lists(root: str | Path | None = None, features: str | Path | None = None, seed: int = 0,
                     roots: Sequence[Path] | None = None, lists: SplitFiles | None = None,
                     name: str = NAME) -> Dataset:
    """The dataset of a train list and a test list (the module docstring says how): ``lists``, or
    the split file ``root`` names; ``features`` (a folder) overrides the split file's. ``seed`` is
    accepted for the loader interface and unused (the lists are the split)."""
    if lists is None:
        if root is None:
            raise KeppError("dataset 'split-lists' needs its lists: --train-list and --test-list, or --root SPLIT.toml")
        lists = read_split_file(root, roots)
    feature_dir = Path(features) if features is not None else lists.features
    taxonomy = read_taxonomy(lists.taxonomy, roots) if lists.taxonomy is not None else None
    seen: dict[str, str] = {}
    parts = {split: _videos(read_split_list(path, roots), split, seen)
             for split, path in (("train", lists.train), ("test", lists.test))}
    every = [v for part in parts.values() for v in part.values()]
    task_names = _task_names(every, taxonomy)
    actions = _vocabulary(every, taxonomy, task_names)
    files = _feature_files(every, feature_dir, roots)
    videos, ids, task_steps = [], {}, {}
    for split, part in parts.items():
        for key, v in part.items():
            vid = v.first.video
            if ids.setdefault(vid, key) != key:
                raise KeppError(f"{v.first.where}: video id {vid!r} names {key} and {ids[vid]} (expected one video per id)")
            feat, seconds = files.get(key, (None, None))
            if seconds is not None:
                _check_times(v, seconds, feat)
            videos.append(Video(id=vid, task=v.first.task, split=split, steps=[Step(a, s, e) for s, e, a in v.steps],
                                duration=seconds, feature_file=feat))
            task_steps.setdefault(v.first.task, []).extend(a for _, _, a in v.steps)
    tasks = {t: Task(id=t, name=task_names.get(t, t), steps=tuple(actions[a] for a in dict.fromkeys(sorted(s))))
             for t, s in task_steps.items()}
    meta = {"file": str(lists.test), "lists": {"train": str(lists.train), "test": str(lists.test),
                                               "taxonomy": None if lists.taxonomy is None else str(lists.taxonomy)}}
    return Dataset(name=name, actions=actions, tasks=tasks, videos=videos, root=Path(lists.test).parent, meta=meta)


def _task_names(videos: Sequence[_ListVideo], taxonomy: Taxonomy | None) -> dict[str, str]:
    """Each task's name: its entries' ``task_name`` (one per task), else the taxonomy's."""
    names = dict(taxonomy.task_names) if taxonomy is not None else {}
    given: dict[str, tuple[str, str]] = {}
    for v in videos:
        t, n = v.first.task, v.first.task_name
        if n is None:
            continue
        if t in given and given[t][0] != n:
            raise KeppError(f"{v.first.where}: task_id {t} is named {n!r}, and {given[t][0]!r} at {given[t][1]}")
        given[t] = (n, v.first.where)
    return {**names, **{t: n for t, (n, _) in given.items()}}


def _feature_files(videos: Sequence[_ListVideo], folder: Path | None,
                   roots: Sequence[Path] | None) -> dict[str, tuple[Path, float]]:
    """Each video's feature file under ``folder`` (by the list's file name) and its seconds; a
    missing file is a KeppError naming the entry. No folder: no features."""
    if folder is None:
        return {}
    check_under(folder, roots)
    if not folder.is_dir():
        raise KeppError(f"{folder}: feature folder not found")
    listing, shapes, out = file_names(folder), FeatureShapes(), {}
    for v in videos:
        key = v.first.feature
        if key not in listing:
            raise KeppError(f"{v.first.where}: feature file {key} not found in {folder} (the list's file names are "
                            "looked up in the features folder)")
        out[key] = (folder / key, float(shapes.shape(folder / key)[0]))
    shapes.save()
    return out


def _check_times(v: _ListVideo, seconds: float, feature: Path) -> None:
    """A step that starts after the video's features end is a list for another video (a step may
    end a little past them: the lists' times are rounded, and windows are clamped to the video)."""
    for s, _e, a in v.steps:
        if s > seconds + SEGMENT_SLACK:
            raise KeppError(f"{v.first.where}: a step of action {a} starts at {s:g} s, after the {seconds:g} s of "
                            f"features in {feature}")


# --- writing lists ---------------------------------------------------------------------------------------------
def split_list_entries(ds: Dataset, horizon: int, split: str, feature_name=None) -> list[dict]:
    """A dataset's episodes of ``horizon`` in ``split`` as split-list entries (ViterbiPlanNet's shape:
    ``vid``, ``feature``, ``legal_range`` with the dataset's action indices, ``task_id``,
    ``task_name``, ``actions``; ``instruction_len``); ``feature_name(video)`` names each feature file
    (default: the video's own file's name); ``task_id`` is the task's place in the dataset. Times
    are written as they are (not rounded)."""
    task_ids = {t: k for k, t in enumerate(ds.tasks)}
    out = []
    for ep in make_episodes(ds, horizon, split):
        v = ep.video
        if not v.has_segments:
            raise KeppError(f"video {v.id!r} has no step times (a split list gives every step's start and end)")
        steps = v.steps[ep.first:ep.first + horizon]
        name = feature_name(v) if feature_name is not None else (v.feature_file.name if v.feature_file else f"{v.id}.npy")
        out.append({"id": {"vid": v.id, "feature": name,
                           "legal_range": [[_number(s.start), _number(s.end), s.action] for s in steps],
                           "task_id": task_ids[v.task], "task_name": ds.tasks[v.task].name,
                           "actions": ds.labels(ep.actions)},
                    "instruction_len": len(v.steps)})
    return out


def _number(x: float) -> Any:
    """A time as JSON writes it best: a whole number as an int."""
    return int(x) if math.isfinite(x) and float(x).is_integer() else x


def write_split_list(path: str | Path, entries: list[dict]) -> None:
    """Write split-list entries as a JSON list (atomically)."""
    atomic_write_text(path, json.dumps(entries, indent=1) + "\n")


def write_taxonomy(path: str | Path, ds: Dataset) -> None:
    """Write a dataset's actions as a taxonomy (``"<k>_<task name>"`` → ``{action index: name}``), so a
    list written from it reads back with the same names."""
    out = {}
    for k, (t, task) in enumerate(ds.tasks.items()):
        out[f"{k}_{task.name}"] = {str(a): ds.actions[a] for a in ds.task_actions(t)}
    atomic_write_text(path, json.dumps(out, indent=1) + "\n")


def list_vocabulary(episodes: Sequence[ListedEpisode], taxonomy: Taxonomy | None = None) -> tuple[list[str], dict[int, str]]:
    """The action names of one list (index = id, as :func:`load_split_lists` names them) and each
    id's name as the files write it (the taxonomy's or the list's ``actions``, before a shared name
    gets its task)."""
    videos = list(_videos(episodes, "test", {}).values())
    labels = _vocabulary(videos, taxonomy, _task_names(videos, taxonomy))
    raw = dict(taxonomy.actions) if taxonomy is not None else {}
    for v in videos:
        for (_, _, a), name in zip(v.steps, v.names):
            if name is not None:
                raw.setdefault(a, name)
    return labels, raw


def listed_episode_ids(episodes: Sequence[ListedEpisode]) -> list[str]:
    """The episode id (:func:`kepp_core.catalog.episode_id`) of every entry of one list, in order:
    the id the dataset's episode of that window has."""
    ids, first, last = [], 0, None
    for ep in episodes:
        first = first + 1 if ep.feature == last else 0
        ids.append(episode_id(ep.task, ep.video, first, len(ep.steps)))
        last = ep.feature
    return ids


__all__ = ["NAME", "ListedEpisode", "SplitFiles", "Taxonomy", "list_horizon", "list_vocabulary", "listed_episode_ids",
           "load_split_lists",
           "read_split_file", "read_split_list", "read_taxonomy", "split_list_entries", "write_split_list",
           "write_taxonomy"]
