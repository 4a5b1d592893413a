"""Scenes for a live demo: curated episodes chosen from the prediction records (a clean success,
a wrong-endpoint failure, a repeated-step failure, a long horizon, an uploaded video), each with
the Plan page query that opens it (plain Python: no widget is drawn here)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from components.ui import plan_link
from components.ui.names import default_method
from components.records.urls import plan_query
from kepp_core import api
from kepp_core.catalog import pattern_label

__all__ = ["SCENE_KINDS", "choose_scenes", "remembered_scenes"]

SCENES_FORMAT = 2  # in the key of the scenes remembered on disk: 2, their queries name the record (rec, seed)
SCENE_KINDS = {
    "success": "A clean success",
    "wrong_endpoint": "A wrong-endpoint failure",
    "repeated": "A repeated-step failure",
    "long": "A long horizon (T=6)",
    "upload": "An uploaded video",
}


def _confidence(scores) -> float:
    """The smaller of a row's two endpoint scores (0 without a step model)."""
    return float(min(scores)) if scores else 0.0


def choose_scenes(preds, method: str | None = None, horizons: Iterable[int] | None = None,
                  videos: Iterable[str] | None = None, upload_example: bool | Iterable[str] = False,
                  unplannable: Iterable[str] = ()) -> list[dict]:
    """Curated examples for a live demo, chosen from a predictions table: a clean success (the
    whole plan and both endpoints right, confident endpoints, KEPP's other variants right too), a
    wrong-endpoint failure, a repeated-step failure, a long horizon (T=6, or the longest) and an
    uploaded video's episode when the records hold one. ``horizons``/``videos`` keep only episodes
    the app can open (trained horizons, playable videos). ``upload_example``: when the records hold
    no uploaded video, one of the dataset's playable videos (another success, on another video than
    the clean success) is offered as an upload instead: the Plan page loads its file the way it
    loads a user's upload and encodes it from its pixels (its query: ``source=upload``,
    ``upload=<video>``); ``upload_example`` may name the videos that can serve (those with a video file:
    a video of features alone cannot be loaded as an upload; none: no upload scene). ``unplannable``: the
    dataset's videos the page cannot open (no features, too few steps): their records are no scene, and
    never an uploaded video's. Each scene: kind, name, description, episode, method, T, success and the
    Plan page ``query``; the order is fixed and the choice deterministic (same records, same scenes)."""
    if preds is None or not len(preds):
        return []
    methods = sorted(preds["method"].unique())
    method = method if method in methods else methods[default_method(methods)]
    df = preds[preds["method"] == method]
    lacking = {str(v) for v in unplannable}
    if lacking:
        df = df[~df["video"].astype(str).isin(lacking)]
    if horizons is not None:
        df = df[df["horizon"].isin([int(h) for h in horizons])]
    known = None if videos is None else {str(v) for v in videos}
    local = df if known is None else df[df["video"].astype(str).isin(known)]
    right = preds[preds["success"]].groupby("episode")["method"].nunique()
    picks: list[tuple[str, object]] = []
    ok = local[local["success"]]
    if len(ok):  # the columns, not a dict per row: tens of thousands of rows
        shortest = int(ok["horizon"].min())
        keys = zip(ok["episode"], ok["horizon"], ok["endpoint_scores"])
        best = min(enumerate(keys), key=lambda ik: (-int(right.get(ik[1][0], 0)), int(ik[1][1]) != shortest,
                                                     -_confidence(ik[1][2]), ik[1][0]))[0]
        picks.append(("success", ok.iloc[best]))
    for kind, pattern in (("wrong_endpoint", "wrong_endpoint"), ("repeated", "repeated_subsequence")):
        bad = local[local["patterns"].str.contains(pattern, regex=False)]
        if len(bad):
            bad = bad.assign(_c=[-_confidence(x) for x in bad["endpoint_scores"]])
            picks.append((kind, bad.sort_values(["horizon", "_c", "episode"]).iloc[0]))
    if len(local):
        longest = 6 if (local["horizon"] == 6).any() else int(local["horizon"].max())
        if longest > 3:
            long = local[local["horizon"] == longest].sort_values(["success", "episode"], ascending=[False, True])
            picks.append(("long", long.iloc[0]))
    if known is not None:
        up = df[~df["video"].astype(str).isin(known)]
        if len(up):
            picks.append(("upload", up.sort_values("episode").iloc[0]))
        elif upload_example and len(ok):
            files = None if upload_example is True else {str(v) for v in upload_example}
            servable = ok if files is None else ok[ok["video"].astype(str).isin(files)]
            if len(servable):
                return [_scene(kind, row) for kind, row in picks] + [_upload_example(servable, picks)]
    return [_scene(kind, row) for kind, row in picks]


def remembered_scenes(files: Sequence[str | Path], read: Callable[[], object], horizons: Iterable[int] | None = None,
                      videos: Iterable[str] | None = None, upload_example: bool | Iterable[str] = False,
                      unplannable: Iterable[str] = ()) -> list[dict]:
    """:func:`choose_scenes` of the records in ``files``, remembered on disk across runs
    (:func:`kepp_core.api.remembered`): ``read()`` gives their table and is called only when the
    scenes of these files and arguments are not remembered yet. The key is made of the files'
    paths, sizes and modification times, the horizons, the videos, ``upload_example`` and ``unplannable``, so a
    changed file is judged again. The app's first page shows its scenes without judging every
    record at each start (at COIN scale, 134,000 rows: 2 to 3 s)."""
    stats = [[str(f), st.st_size, st.st_mtime_ns] for f, st in ((f, os.stat(f)) for f in files)]
    hs = sorted(int(h) for h in horizons) if horizons is not None else None
    ids = _digest(videos) if videos is not None else None
    example = upload_example if isinstance(upload_example, bool) else _digest(upload_example)
    key = json.dumps([SCENES_FORMAT, stats, hs, ids, example, _digest(unplannable)])
    return api.remembered("scenes", key, lambda: choose_scenes(read(), horizons=horizons, videos=videos,
                                                                 upload_example=upload_example, unplannable=unplannable))


def _digest(ids: Iterable[str]) -> str:
    """A short fixed name of a set of video ids (a key part)."""
    return hashlib.sha1("\n".join(sorted(map(str, ids))).encode()).hexdigest()


def _upload_example(ok, picks: list) -> dict:
    """The upload scene of a dataset video: a confident success at the shortest horizon, on another
    video than the clean success's where there is one."""
    taken = {str(row["video"]) for kind, row in picks if kind == "success"}
    short = ok[ok["horizon"] == ok["horizon"].min()]
    other = ~short["video"].astype(str).isin(taken)
    short = short[other] if other.any() else short
    keys = list(zip(short["endpoint_scores"], short["episode"]))
    row = short.iloc[min(range(len(keys)), key=lambda i: (-_confidence(keys[i][0]), keys[i][1]))]
    scene = _scene("upload", row)
    # planned live, as a user's upload is (the records hold the dataset video's episode, not an upload's)
    scene["query"] = {**plan_link.without(scene["query"], "video", "rec", "seed"),
                      **plan_link.query(source="upload", upload=scene["video"], plan=True)}
    scene["description"] = "a test video loaded as an upload (encoded from its pixels, no annotations)"
    return scene


def _scene(kind: str, row) -> dict:
    """One scene from a predictions-table row."""
    row = dict(row)
    name = SCENE_KINDS[kind]
    if kind == "long":
        name = f"A long horizon (T={int(row['horizon'])})"
    return {"kind": kind, "name": name, "episode": row["episode"], "method": row["method"],
            "T": int(row["horizon"]), "task": row.get("task"), "video": str(row.get("video")),
            "success": bool(row["success"]), "pattern": row.get("pattern") or "",
            "description": ("plan right" if row["success"] else f"failure: {pattern_label(row.get('pattern'))}"),
            "query": plan_query(row)}
