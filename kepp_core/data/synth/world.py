"""Generating the synthetic world: annotations, videos and features in the CrossTask layout.

    OUT/tasks_primary.txt, OUT/annotations/<task>_<video>.csv, OUT/videos_val.csv (test split),
    OUT/videos/<task>_<video>.mp4, OUT/features/<task>_<video>.npy (+ features.json),
    OUT/world.json (seed, knobs, version), OUT/.complete (written last)

Every file is written atomically; ``.complete`` holds the fingerprint of the knobs, so a
half-built or differently-configured world is detected (and rebuilt by ``ensure_world``).
Each video has its own seeded generator, so the result does not depend on the number of
worker processes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from kepp_core.data.coin import load_coin
from kepp_core.data.plans import load_plans
from kepp_core.data.records import seeded_split
from kepp_core.data.split_lists import load_split_lists
from kepp_core.data.synth.procedures import TASKS
from kepp_core.data.synth.render import Knobs, Segment, look_of, render_video
from kepp_core.catalog import MAX_SEED
from kepp_core.errors import KeppError, unknown_name_error
from kepp_core.paths import REPO_ROOT, cache_folder
from kepp_core.io import (FolderBusy, atomic_open, atomic_write_json, atomic_write_text, read_bytes,
                          has_suffix, read_json, remove_stale_temporaries, writer_lock)
from kepp_core.video.encode import encode_video, save_features, write_manifest
from kepp_core.video.encoders import BuiltinEncoder
from kepp_core.video.write import write_video

__all__ = [
    "DEFAULT_VIDEOS", "DIFFICULTIES", "KNOB_NAMES", "WORLD_VERSION", "default_world_root", "ensure_world",
    "generate_world", "knobs_for", "world_fingerprint", "world_ready",
]

WORLD_VERSION = 1
DEFAULT_VIDEOS = 300
MARKER = ".complete"

DIFFICULTIES: dict[str, Knobs] = {
    "easy": Knobs(noise=0.02, jitter=0.0, distractors=0.0, lighting=0.05, similarity=0.0, idle=0.8),
    "default": Knobs(),
    "hard": Knobs(noise=0.12, jitter=3.0, distractors=4.0, lighting=0.35, similarity=0.6, idle=1.2),
}
KNOB_NAMES = tuple(f for f in Knobs.__dataclass_fields__)


def default_world_root() -> Path:
    """Where the default demo world is cached: ``$KEPP_HOME/demo-world`` (``~/.cache/kepp``)."""
    return cache_folder("demo-world")


MAX_KNOB_SECONDS = 600.0  # a rendered step or idle gap of more than 10 minutes is a typo
MAX_DISTRACTORS = 32


def knobs_for(difficulty: str = "default", **overrides) -> Knobs:
    """The knobs of a difficulty preset with some of them overridden (None: keep)."""
    if difficulty not in DIFFICULTIES:
        raise unknown_name_error("difficulty", difficulty, DIFFICULTIES)
    unknown = set(overrides) - set(KNOB_NAMES)
    if unknown:
        raise unknown_name_error("world knob", sorted(unknown)[0], KNOB_NAMES)
    knobs = replace(DIFFICULTIES[difficulty], **{k: v for k, v in overrides.items() if v is not None})
    if knobs.size % 2 or not 32 <= knobs.size <= 512:
        raise KeppError(f"frame size {knobs.size} must be even and between 32 and 512")
    if not 1 <= knobs.fps <= 60:
        raise KeppError(f"fps {knobs.fps} must be between 1 and 60")
    for name in KNOB_NAMES:
        if not math.isfinite(getattr(knobs, name)):
            raise KeppError(f"knob {name}={getattr(knobs, name)} must be a finite number")
    for name in ("step_max", "idle"):
        if getattr(knobs, name) > MAX_KNOB_SECONDS:
            raise KeppError(f"knob {name}={getattr(knobs, name)} is too long (at most {MAX_KNOB_SECONDS:g} s)")
    if knobs.distractors > MAX_DISTRACTORS or knobs.jitter > MAX_DISTRACTORS:
        raise KeppError(f"knobs distractors={knobs.distractors}, jitter={knobs.jitter}: at most {MAX_DISTRACTORS}")
    if not 0 < knobs.step_min <= knobs.step_max:
        raise KeppError(f"step durations need 0 < step_min <= step_max, got {knobs.step_min}, {knobs.step_max}")
    for name in ("noise", "jitter", "distractors", "lighting", "idle"):
        if getattr(knobs, name) < 0:
            raise KeppError(f"knob {name}={getattr(knobs, name)} must be >= 0")
    if not 0 <= knobs.similarity <= 1:
        raise KeppError(f"knob similarity={knobs.similarity} must be in [0, 1]")
    return knobs


@dataclass
class VideoSpec:
    """One video to render: where it goes and what happens in it."""

    index: int
    task: str
    id: str
    split: str
    segments: list[Segment]
    duration: int  # whole seconds

    @property
    def stem(self) -> str:
        return f"{self.task}_{self.id}"


def sample_timeline(steps: list[str], knobs: Knobs, rng: np.random.Generator) -> tuple[list[Segment], int]:
    """Segments for a plan: steps of ``step_min..step_max`` seconds separated by idle gaps
    (mean ``idle``), with idle lead-in and tail; times on the frame grid.

    >>> segs, dur = sample_timeline(["a", "b"], Knobs(), np.random.default_rng(0))
    >>> [s.label for s in segs], segs[0].start < segs[0].end <= segs[1].start < segs[1].end <= dur
    (['a', 'b'], True)
    """
    q = 1.0 / knobs.fps

    def snap(x: float) -> float:
        return round(round(x / q) * q, 4)

    t = snap(rng.uniform(1.0, 2.5))
    segs = []
    for label in steps:
        d = max(q * 4, snap(rng.uniform(knobs.step_min, knobs.step_max)))
        segs.append(Segment(label, t, snap(t + d)))
        t = snap(t + d + rng.uniform(0.2, 2 * knobs.idle - 0.2 if knobs.idle > 0.2 else 0.2) * (knobs.idle > 0))
    end = segs[-1].end + rng.uniform(1.0, 2.5)
    return segs, int(np.ceil(end))


def _fingerprint(config: dict) -> str:
    return hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _safe(s: str, what: str) -> str:
    """A name usable in file names; for task ids also free of "_" (the loader splits on it)."""
    out = re.sub(r"[^A-Za-z0-9.\-]+" if what == "task" else r"[^A-Za-z0-9._\-]+", "-", s).strip("-.")
    return out or "x"


def _builtin_specs(seed: int, videos: int, knobs: Knobs) -> tuple[list[tuple[str, str, list[str]]], list[VideoSpec]]:
    tasks = [(t.id, t.name, t.steps) for t in TASKS]
    ids = [f"{TASKS[i % len(TASKS)].id}_{i:04d}" for i in range(videos)]
    split = seeded_split(ids, seed=seed)
    specs = []
    for i in range(videos):
        task = TASKS[i % len(TASKS)]
        rng = np.random.default_rng([seed, i, 1])
        plan = task.procedure.sample(rng)
        segs, dur = sample_timeline(plan, knobs, rng)
        specs.append(VideoSpec(i, task.id, f"{i:04d}", split[ids[i]], segs, dur))
    return tasks, specs


def _timeline(v) -> list[tuple[float, float]] | None:
    """The video's step times to render, in plan order: its own, a step that overlaps the next one
    ending where the next begins (a split list's rounded times); None where its steps do not start one
    after the other (a split list's out-of-order times), and the video is rendered on an invented
    timeline, its plan as it is."""
    if not v.has_segments or any(b.start <= a.start for a, b in zip(v.steps, v.steps[1:])):
        return None
    return [(s.start, min(s.end, n.start) if n is not None else s.end)
            for s, n in zip(v.steps, [*v.steps[1:], None])]


def _plans_specs(source: Path, seed: int, videos: int | None, knobs: Knobs):
    if has_suffix(source, ".toml"):
        ds = load_split_lists(source)
    elif has_suffix(source, ".json") or (source.is_dir() and (source / "COIN.json").is_file()):
        ds = load_coin(source)
    else:
        ds = load_plans(source, seed=seed)
    label = {a: ds.actions[a].replace(",", ";").strip() or f"step {a}" for a in range(ds.num_actions)}
    task_ids: dict[str, str] = {}
    for t in ds.tasks:
        base, k = _safe(t, "task"), 1
        tid = base
        while tid in task_ids.values():
            k += 1
            tid = f"{base}-{k}"
        task_ids[t] = tid
    chosen = [v for v in ds.videos if v.steps]
    if not chosen:
        raise KeppError(f"{source}: no video has any steps to render")
    if videos is not None and videos < len(chosen):
        # an even spread over the file, so every task keeps some videos
        picks = np.unique(np.round(np.linspace(0, len(chosen) - 1, videos)).astype(int))
        chosen = [chosen[k] for k in picks]
    specs, used_steps = [], {t: [] for t in ds.tasks}
    seen_ids = set()
    for i, v in enumerate(chosen):
        steps = [label[s.action] for s in v.steps]
        used_steps[v.task].extend(steps)
        rng = np.random.default_rng([seed, i, 2])
        times = _timeline(v)
        if times is not None:
            segs = [Segment(label[s.action], float(start), float(max(end, start + 1.0 / knobs.fps)))
                    for s, (start, end) in zip(v.steps, times)]
            end = max(s.end for s in segs)
            dur = int(np.ceil(max(end + 1.0, v.duration or 0)))
        else:
            segs, dur = sample_timeline(steps, knobs, rng)
        vid = _safe(v.id, "video")
        while (task_ids[v.task], vid) in seen_ids:
            vid += "-b"
        seen_ids.add((task_ids[v.task], vid))
        specs.append(VideoSpec(i, task_ids[v.task], vid, v.split, segs, dur))
    tasks = [(task_ids[t], ds.tasks[t].name, list(dict.fromkeys(used_steps[t])))
             for t in ds.tasks if used_steps[t]]
    return tasks, specs


def _write_annotations(out: Path, tasks, specs: list[VideoSpec]) -> None:
    blocks = []
    for tid, name, steps in tasks:
        blocks.append(f"{tid}\n{name}\nsynthetic://{tid}\n{len(steps)}\n{','.join(steps)}\n")
    atomic_write_text(out / "tasks_primary.txt", "\n".join(blocks))
    index = {tid: {s: k + 1 for k, s in enumerate(steps)} for tid, _, steps in tasks}
    for sp in specs:
        lines = "".join(f"{index[sp.task][s.label]},{s.start:.3f},{s.end:.3f}\n" for s in sp.segments)
        atomic_write_text(out / "annotations" / f"{sp.stem}.csv", lines)
    with atomic_open(out / "videos_val.csv", "w", encoding="utf-8") as f:
        for sp in specs:
            if sp.split == "test":
                f.write(f"{sp.task},{sp.id},synthetic://{sp.stem}\n")


def build_video(job: tuple) -> float:
    """Render, encode, decode and featurise one video (run in a worker process); returns its
    seconds. Skips work whose outputs already exist (resuming an interrupted build)."""
    out, seed, spec, knobs_dict, looks = job
    out, knobs = Path(out), Knobs(**knobs_dict)
    mp4 = out / "videos" / f"{spec.stem}.mp4"
    npy = out / "features" / f"{spec.stem}.npy"
    if not mp4.is_file():
        rng = np.random.default_rng([seed, spec.index, 3])
        frames = render_video(spec.segments, spec.duration, looks, knobs, rng, spec.task)
        write_video(mp4, frames, knobs.fps)
    if not npy.is_file():
        # features of the decoded file, exactly as for an uploaded video
        save_features(npy, encode_video(mp4, BuiltinEncoder()))
    return float(spec.duration)


def generate_world(out: str | os.PathLike, seed: int = 0, videos: int | None = None,
                   difficulty: str = "default", from_plans: str | os.PathLike | None = None,
                   workers: int | None = None, progress: bool = True, **knob_overrides) -> Path:
    """Write a complete synthetic dataset (CrossTask layout, mp4 videos, builtin features) to ``out``.

    ``videos`` limits the number of videos (default 300, or all plans of ``from_plans``);
    ``from_plans`` renders the plans of a plans-JSONL or COIN annotation file, or of a split-lists
    split file (``.toml``), instead of the built-in tasks; ``knob_overrides`` change single knobs of the difficulty preset
    (noise, jitter, distractors, lighting, similarity, idle, step_min, step_max, fps, size).

    >>> generate_world("/tmp/world", videos=14)  # doctest: +SKIP
    PosixPath('/tmp/world')
    """
    out = Path(out)
    knobs = knobs_for(difficulty, **knob_overrides)
    if videos is not None and videos < 1:
        raise KeppError(f"videos must be at least 1, got {videos}")
    if not 0 <= seed <= MAX_SEED:
        raise KeppError(f"seed={seed}: expected a whole number from 0 to {MAX_SEED}")
    source = None
    if from_plans is not None:
        source = Path(from_plans)
        if not source.exists():
            raise KeppError(f"{source}: plans file not found (expected a plans .jsonl or COIN.json)")
    config = {"version": WORLD_VERSION, "seed": seed, "difficulty": difficulty, "knobs": asdict(knobs),
              "videos": videos if source is not None or videos is not None else DEFAULT_VIDEOS,
              "from_plans": None if source is None else
              {"file": source.name, "sha1": hashlib.sha1(read_bytes(source)).hexdigest()
               if source.is_file() else None},
              "encoder": BuiltinEncoder.name}
    fp = _fingerprint(config)
    started = time.perf_counter()
    if source is None:
        tasks, specs = _builtin_specs(seed, config["videos"], knobs)
    else:
        tasks, specs = _plans_specs(source, seed, videos, knobs)  # bad input fails before any write
    with writer_lock(out, "kepp data synth"):  # one writer: two seeds into one folder would mix two worlds
        _prepare(out, fp)
        _write_world(out, seed, config, fp, tasks, specs, knobs, workers, progress, started)
    return out


def _write_world(out: Path, seed: int, config: dict, fp: str, tasks, specs: list[VideoSpec], knobs: Knobs,
                 workers: int | None, progress: bool, started: float) -> None:
    """Write annotations, videos, features and ``world.json`` (then ``.complete``) into ``out``."""
    atomic_write_json(out / "world.json", {**config, "fingerprint": fp, "complete": False})
    _write_annotations(out, tasks, specs)
    labels = {s for _, _, steps in tasks for s in steps}
    looks = {lab: look_of(lab, knobs.similarity) for lab in labels}
    jobs = [(str(out), seed, sp, asdict(knobs), looks) for sp in specs]
    workers = max(1, min(workers or min(2, os.cpu_count() or 1), len(jobs)))
    bar = tqdm(total=len(jobs), desc="synthetic world", unit="video", disable=not progress, dynamic_ncols=True)
    seconds = 0.0
    try:
        if workers == 1 or len(jobs) < 8:
            for job in jobs:
                seconds += build_video(job)
                bar.update()
        else:
            _run_workers(out, seed, knobs, looks, specs, workers, bar)
            seconds = float(sum(sp.duration for sp in specs))
    finally:
        bar.close()
    write_manifest(out / "features", BuiltinEncoder.name, BuiltinEncoder.dim)
    summary = {**config, "fingerprint": fp, "complete": True,
               "tasks": [{"id": t, "name": n, "steps": s} for t, n, s in tasks],
               "num_videos": len(specs), "video_seconds": seconds,
               "test_videos": sum(sp.split == "test" for sp in specs),
               "build_seconds": round(time.perf_counter() - started, 2)}
    atomic_write_json(out / "world.json", summary)
    atomic_write_text(out / MARKER, fp + "\n")


def _run_workers(out: Path, seed: int, knobs: Knobs, looks: dict, specs: list[VideoSpec], workers: int,
                 bar) -> None:
    """Build videos in ``workers`` subprocesses (``kepp_core.data.synth.worker``), interleaved."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    package_root = str(REPO_ROOT)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    procs = []
    sel = selectors.DefaultSelector()
    try:
        for w in range(workers):
            job = {"out": str(out), "seed": seed, "knobs": asdict(knobs),
                   "looks": {k: asdict(v) for k, v in looks.items()},
                   "specs": [{**asdict(sp), "segments": [[g.label, g.start, g.end] for g in sp.segments]}
                             for sp in specs[w::workers]]}
            err = tempfile.TemporaryFile()
            p = subprocess.Popen([sys.executable, "-m", "kepp_core.data.synth.worker"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=err, env=env, text=True)
            p.stdin.write(json.dumps(job))
            p.stdin.close()
            procs.append((p, err))
            sel.register(p.stdout, selectors.EVENT_READ)
        open_pipes = len(procs)
        while open_pipes:
            for key, _ in sel.select():
                line = key.fileobj.readline()
                if not line:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
                elif line.startswith("done "):
                    bar.update()
        for p, err in procs:
            if p.wait() != 0:
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                raise KeppError(f"{out}: building videos failed in a worker process: {tail[0][:300]}")
    finally:
        for p, err in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            err.close()
        sel.close()


def _prepare(out: Path, fp: str) -> None:
    """Make ``out`` ready for a world with fingerprint ``fp``: keep a matching partial build
    (to resume it), clear a different world, refuse to touch a folder that is not a world."""
    if out.exists() and not out.is_dir():
        raise KeppError(f"{out}: exists and is not a folder")
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        return
    meta = out / "world.json"
    if not meta.is_file():
        raise KeppError(f"{out}: folder is not empty and is not a synthetic world (no world.json); "
                        f"choose another folder")
    try:
        old = read_json(meta, dict).get("fingerprint")
    except KeppError:
        old = None
    (out / MARKER).unlink(missing_ok=True)
    remove_stale_temporaries(out, recursive=True)  # half-written files of a killed build
    if old == fp:
        return  # same world: finish what is missing
    for sub in ("annotations", "videos", "features"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for f in ("tasks_primary.txt", "videos_val.csv", "world.json"):
        (out / f).unlink(missing_ok=True)


def world_fingerprint(root: str | os.PathLike) -> str | None:
    """The fingerprint of a complete world at ``root`` (None if absent or incomplete)."""
    marker = Path(root) / MARKER
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def world_ready(root: str | os.PathLike | None = None, seed: int = 0, videos: int | None = None,
                difficulty: str = "default", **knob_overrides) -> bool:
    """Whether the complete world of these settings is at ``root`` (default: ``default_world_root()``)
    already, so that :func:`ensure_world` has nothing to generate."""
    root = Path(root) if root is not None else default_world_root()
    config = {"version": WORLD_VERSION, "seed": seed, "difficulty": difficulty,
              "knobs": asdict(knobs_for(difficulty, **knob_overrides)),
              "videos": videos if videos is not None else DEFAULT_VIDEOS, "from_plans": None,
              "encoder": BuiltinEncoder.name}
    return world_fingerprint(root) == _fingerprint(config)


def ensure_world(root: str | os.PathLike | None = None, seed: int = 0, videos: int | None = None,
                 difficulty: str = "default", progress: bool = True, workers: int | None = None,
                 **knob_overrides) -> Path:
    """The complete world at ``root`` (default: ``default_world_root()``), generated only if it
    is missing, incomplete or was made with other settings. Processes that ask for it at once
    (the test suite's workers, two app sessions) build it once: the others wait for the builder's
    writer lock and then find it ready."""
    root = Path(root) if root is not None else default_world_root()
    while not world_ready(root, seed, videos, difficulty, **knob_overrides):
        try:
            return generate_world(root, seed=seed, videos=videos, difficulty=difficulty, progress=progress,
                                  workers=workers, **knob_overrides)
        except FolderBusy:  # another process is building it: wait for it, then look again
            with writer_lock(root, "wait for the demo world", wait=True):
                pass
    return root
