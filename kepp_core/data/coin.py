"""Reader for COIN's ``COIN.json`` (``{"database": {video_id: {...}}}``) with its ``subset`` split."""

from __future__ import annotations

import json
from pathlib import Path

from kepp_core.data.features import find_file, read_feature_shape
from kepp_core.data.records import Dataset, Step, Task, Video
from kepp_core.errors import KeppError

SUBSETS = {"training": "train", "testing": "test"}


def _resolve(root: Path) -> Path:
    if root.is_dir():
        root = root / "COIN.json"
    if not root.is_file():
        raise KeppError(f"{root}: file not found (expected COIN.json or a folder containing it)")
    return root


def load_coin(root: str | Path, features: str | Path | None = None, seed: int = 0,
              name: str = "coin") -> Dataset:
    """Load COIN annotations; actions are step labels ordered by COIN's step id.

    ``features`` is an optional folder of per-second features, ``<video>.npy`` or the S3D
    release's ``<class>_<recipe_type>_<video>.npy``.
    """
    path = _resolve(Path(root))
    try:
        db = json.loads(path.read_text(encoding="utf-8"))["database"]
    except json.JSONDecodeError as e:
        raise KeppError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except (KeyError, TypeError):
        raise KeppError(f"{path}: expected an object with a 'database' key") from None
    if not isinstance(db, dict):
        raise KeppError(f"{path}: 'database' must map video ids to records")

    feat_dir = Path(features) if features is not None else None
    if feat_dir is not None and not feat_dir.is_dir():
        raise KeppError(f"{feat_dir}: feature folder not found")

    label_ids: dict[str, int] = {}
    raw = []
    for vid, rec in db.items():
        where = f"{path}: video {vid!r}"
        try:
            subset = rec["subset"]
            task = str(rec["class"])
            ann = rec["annotation"]
            duration = float(rec["duration"]) if rec.get("duration") is not None else None
        except (KeyError, TypeError, ValueError):
            raise KeppError(f"{where}: expected keys 'class', 'subset', 'duration', 'annotation'") from None
        if subset not in SUBSETS:
            raise KeppError(f"{where}: subset {subset!r} is not 'training' or 'testing'")
        steps = []
        for k, a in enumerate(ann):
            try:
                label, (s, e) = str(a["label"]), a["segment"]
                s, e, sid = float(s), float(e), int(a.get("id", 10**9))
            except (KeyError, TypeError, ValueError):
                raise KeppError(f"{where}, annotation {k}: expected 'label', 'segment' [start, end], 'id'") from None
            if e < s or s < 0:
                raise KeppError(f"{where}, annotation {k}: segment [{s}, {e}] is invalid")
            label_ids[label] = min(label_ids.get(label, sid), sid)
            steps.append((s, e, label))
        steps.sort(key=lambda t: (t[0], t[1]))
        raw.append((vid, task, SUBSETS[subset], duration, steps, rec.get("recipe_type")))

    actions = sorted(label_ids, key=lambda lab: (label_ids[lab], lab))
    index = {a: i for i, a in enumerate(actions)}
    task_steps: dict[str, dict[str, int]] = {}
    videos = []
    for vid, task, split, duration, steps, recipe in raw:
        if not steps:
            continue
        ts = task_steps.setdefault(task, {})
        for _, _, lab in steps:
            ts.setdefault(lab, label_ids[lab])
        # <video>.npy, or the S3D release's <class>_<recipe_type>_<video>.npy
        feat = (find_file(feat_dir, [f"{vid}.npy", f"{task}_{recipe}_{vid}.npy"])
                if feat_dir is not None else None)
        if feat is not None:
            n_sec, _ = read_feature_shape(feat)
            duration = duration if duration is not None else float(n_sec)
        videos.append(Video(id=vid, task=task, split=split, duration=duration,
                            steps=[Step(index[lab], s, e) for s, e, lab in steps], feature_file=feat))
    tasks = {t: Task(id=t, name=t, steps=tuple(sorted(ts, key=lambda lab: ts[lab])))
             for t, ts in sorted(task_steps.items())}
    return Dataset(name=name, actions=actions, tasks=tasks, videos=videos, root=path.parent,
                   meta={"file": str(path), "features": str(feat_dir) if feat_dir else None})
