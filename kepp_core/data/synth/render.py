"""Rendering the synthetic world with numpy: a table-top scene per video, one look per action.

Every action gets a look from the words of its name (``look_of``): the first word (the verb)
fixes the motion pattern, tool shape and tool colour; the other words (the object) fix the
object's colour, shape and place. So "add sugar" and "add milk" move alike and differ in
colour, "pour water" and "boil water" share the water's colour. The scene keeps state: each
finished step leaves a token on the shelf at the top, a small mark where it happened and a
change in the bowl's fill level and colour. Nuisances vary per video: background and table
colours, lighting and tint, camera jitter, moving distractors, sensor noise, speed.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["ActionLook", "Knobs", "look_of", "render_video"]

MOTIONS = ("circle", "chop", "sweep", "drop", "pour", "twist", "pulse", "lift", "slide", "shake")
SHAPES = ("disk", "square", "ring", "triangle", "diamond", "hbar", "vbar", "cross")

# Motions of common verbs, so the built-in tasks move as their names say; other verbs hash.
VERB_MOTION = {
    "stir": "circle", "whisk": "circle", "mix": "circle",
    "cut": "chop", "chop": "chop", "press": "chop", "dig": "chop", "crack": "chop",
    "wipe": "sweep", "scrape": "sweep", "spray": "shake", "dry": "sweep", "clean": "sweep",
    "add": "drop", "place": "drop", "put": "drop",
    "pour": "pour", "fill": "pour",
    "tighten": "twist", "loosen": "twist", "grind": "twist", "squeeze": "twist",
    "boil": "pulse", "heat": "pulse", "steep": "pulse",
    "remove": "lift", "jack": "lift", "lift": "lift", "flip": "lift",
    "serve": "slide", "mount": "slide", "lower": "slide", "take": "slide",
    "check": "shake", "label": "shake", "shake": "shake",
}

# Colours of common objects (RGB 0..1); other words get a colour from their hash.
WORD_COLOUR = {
    "water": (0.20, 0.45, 0.95), "sugar": (0.96, 0.96, 0.92), "milk": (0.98, 0.95, 0.85),
    "tea": (0.55, 0.30, 0.10), "bag": (0.85, 0.75, 0.55), "coffee": (0.30, 0.17, 0.08),
    "beans": (0.35, 0.20, 0.10), "lemon": (0.98, 0.90, 0.15), "ice": (0.75, 0.95, 1.00),
    "egg": (0.95, 0.85, 0.60), "flour": (0.93, 0.92, 0.88), "batter": (0.95, 0.85, 0.45),
    "pan": (0.25, 0.25, 0.28), "butter": (1.00, 0.90, 0.40), "pancake": (0.80, 0.60, 0.30),
    "plate": (0.90, 0.90, 0.95), "cup": (0.85, 0.30, 0.30), "pot": (0.80, 0.40, 0.25),
    "hole": (0.30, 0.20, 0.12), "seedling": (0.20, 0.75, 0.20), "soil": (0.40, 0.28, 0.15),
    "fertilizer": (0.60, 0.30, 0.75), "nuts": (0.60, 0.60, 0.65), "car": (0.85, 0.10, 0.10),
    "wheel": (0.10, 0.10, 0.10), "wedge": (0.95, 0.60, 0.10), "pressure": (0.30, 0.85, 0.85),
    "cleaner": (0.30, 0.90, 0.70), "glass": (0.65, 0.90, 0.95), "bucket": (0.20, 0.35, 0.80),
}
STOP_WORDS = {"a", "an", "the", "of", "to", "in", "on", "up", "and", "with", "into", "from"}


def _word_rng(word: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha1(word.encode()).hexdigest()[:12], 16))


def _hash_colour(word: str) -> np.ndarray:
    r = _word_rng("colour:" + word)
    hue, sat, val = r.random(), 0.5 + 0.5 * r.random(), 0.5 + 0.5 * r.random()
    k = (np.array([5.0, 3.0, 1.0]) + hue * 6) % 6
    return val - val * sat * np.clip(np.minimum(k, 4 - k), 0, 1)


@dataclass(frozen=True)
class ActionLook:
    """How one action appears: motion, tool and object."""

    motion: str
    tool_shape: str
    tool_colour: tuple[float, float, float]
    obj_shape: str
    obj_colour: tuple[float, float, float]
    anchor: tuple[float, float]  # fractions of (width, height)
    speed: float                 # motion cycles per second
    amplitude: float             # fraction of the frame size


def look_of(label: str, similarity: float = 0.0) -> ActionLook:
    """The look of an action from the words of its label; ``similarity`` in [0, 1] pulls all
    colours toward grey and shrinks motions (harder to tell actions apart).

    >>> look_of("add sugar").motion, look_of("add milk").motion
    ('drop', 'drop')
    """
    words = [w for w in label.lower().replace(";", " ").replace("-", " ").split() if w not in STOP_WORDS]
    words = words or [label.lower() or "?"]
    verb, nouns = words[0], words[1:] or words[:1]
    vr = _word_rng("verb:" + verb)
    motion = VERB_MOTION.get(verb, MOTIONS[int(vr.integers(len(MOTIONS)))])
    tool_shape = SHAPES[int(vr.integers(len(SHAPES)))]
    tool_colour = _hash_colour("tool:" + verb)
    speed = 0.6 + 0.9 * vr.random()
    amplitude = 0.08 + 0.08 * vr.random()
    cols = [np.array(WORD_COLOUR[w]) if w in WORD_COLOUR else _hash_colour(w) for w in nouns]
    obj_colour = np.mean(cols, axis=0)
    nr = _word_rng("noun:" + nouns[-1])
    obj_shape = SHAPES[int(nr.integers(len(SHAPES)))]
    side = -1 if nr.random() < 0.5 else 1
    anchor = (0.5 + side * (0.18 + 0.14 * nr.random()), 0.42 + 0.16 * nr.random())
    s = float(np.clip(similarity, 0.0, 1.0))
    grey = np.array([0.55, 0.55, 0.55])
    return ActionLook(
        motion=motion, tool_shape=tool_shape,
        tool_colour=tuple(float(c) for c in (1 - s) * tool_colour + s * grey),
        obj_shape=obj_shape, obj_colour=tuple(float(c) for c in (1 - s) * obj_colour + s * grey),
        anchor=(float(0.5 + (anchor[0] - 0.5) * (1 - 0.6 * s)), float(anchor[1])),
        speed=float(speed), amplitude=float(amplitude * (1 - 0.5 * s)))


@lru_cache(maxsize=256)
def sprite(shape: str, size: int) -> np.ndarray:
    """An alpha mask ``[size, size]`` float32 of a shape."""
    c = (size - 1) / 2
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    dx, dy = (x - c) / (size / 2), (y - c) / (size / 2)
    r = np.sqrt(dx**2 + dy**2)
    m = {
        "disk": r <= 0.95,
        "square": (np.abs(dx) <= 0.8) & (np.abs(dy) <= 0.8),
        "ring": (r <= 0.95) & (r >= 0.55),
        "triangle": (dy >= -0.9) & (dy <= 0.8) & (np.abs(dx) <= (dy + 0.9) * 0.55),
        "diamond": np.abs(dx) + np.abs(dy) <= 0.95,
        "hbar": (np.abs(dx) <= 0.95) & (np.abs(dy) <= 0.3),
        "vbar": (np.abs(dx) <= 0.3) & (np.abs(dy) <= 0.95),
        "cross": ((np.abs(dx) <= 0.25) | (np.abs(dy) <= 0.25)) & (r <= 1.0),
    }[shape]
    return m.astype(np.float32)


def paste(frame: np.ndarray, mask: np.ndarray, colour, x: float, y: float, alpha: float = 1.0) -> None:
    """Blend ``colour`` into ``frame`` (float32 ``[H, W, 3]``, 0..255) through ``mask``
    centred at ``(x, y)``, clipped at the borders."""
    h, w = frame.shape[:2]
    mh, mw = mask.shape
    x0, y0 = int(round(x - mw / 2)), int(round(y - mh / 2))
    fx0, fy0, fx1, fy1 = max(x0, 0), max(y0, 0), min(x0 + mw, w), min(y0 + mh, h)
    if fx0 >= fx1 or fy0 >= fy1:
        return
    a = mask[fy0 - y0:fy1 - y0, fx0 - x0:fx1 - x0, None] * alpha
    region = frame[fy0:fy1, fx0:fx1]
    region += a * (np.asarray(colour, np.float32) * 255.0 - region)


@dataclass(frozen=True)
class Knobs:
    """Rendering and timing knobs (see ``DIFFICULTIES`` for the presets)."""

    fps: int = 8
    size: int = 96
    noise: float = 0.055       # std of pixel noise, fraction of the 0..255 range
    jitter: float = 2.0        # camera shake, pixels
    distractors: float = 2.0   # mean number of moving distractor objects per video
    lighting: float = 0.2      # strength of per-video lighting/tint changes and flicker
    similarity: float = 0.3    # 0: actions look as distinct as their names; 1: all grey, small motions
    idle: float = 0.8          # mean idle seconds between steps
    step_min: float = 1.5      # step duration range, seconds
    step_max: float = 3.5


@dataclass(frozen=True)
class Segment:
    label: str
    start: float
    end: float


def _scene_colours(rng: np.random.Generator, task_key: str):
    tr = _word_rng("task:" + task_key)
    base_bg = _hash_colour("bg:" + task_key) * 0.5 + 0.35
    bg = np.clip(base_bg + rng.normal(0, 0.08, 3), 0, 1)
    table = np.clip(_hash_colour("table:" + task_key) * 0.6 + 0.2 + rng.normal(0, 0.06, 3), 0, 1)
    bowl = np.clip(_hash_colour("bowl:" + task_key) * 0.7 + 0.15, 0, 1)
    return bg, table, bowl, 0.62 + 0.06 * tr.random()


@dataclass
class _Backdrop:
    """The static scene of one video and where its table and bowl are."""

    image: np.ndarray  # [n, n, 3] float32
    table_y: float
    bowl: np.ndarray
    bowl_x: float
    bowl_w: int
    bowl_h: int
    bx0: int
    by0: int
    by1: int


def _backdrop(rng: np.random.Generator, task_key: str, n: int) -> _Backdrop:
    bg, table, bowl, table_y = _scene_colours(rng, task_key)
    ty = int(table_y * n)
    static = np.empty((n, n, 3), np.float32)
    grad = np.linspace(0.85, 1.1, n, dtype=np.float32)[:, None, None]
    static[:] = (bg[None, None, :] * grad * 255).astype(np.float32)
    static[ty:] = table * 255
    # a faint per-video texture on the table
    static[ty:] += rng.normal(0, 6, (n - ty, n, 1)).astype(np.float32)
    bowl_x = n * (0.5 + rng.uniform(-0.04, 0.04))
    bowl_w, bowl_h = int(0.30 * n), int(0.16 * n)
    bx0, by1 = int(bowl_x - bowl_w / 2), ty + int(0.06 * n)
    by0 = by1 - bowl_h
    static[by0:by1, bx0:bx0 + bowl_w] = bowl * 255 * 0.8
    return _Backdrop(static, table_y, bowl, bowl_x, bowl_w, bowl_h, bx0, by0, by1)


@dataclass
class _Nuisance:
    """Per-video nuisances: action speed, lighting, distractors, noise and camera shake."""

    speed: float
    gain: float
    tint: np.ndarray
    bias: float
    flicker_period: float
    distractors: list
    noise_bank: np.ndarray | None
    shifts: np.ndarray  # [frames, 2] camera offsets
    rest: tuple[float, float]  # where the idle hand rests


def _nuisance(rng: np.random.Generator, knobs: Knobs, n: int, frames_total: int, table_y: float) -> _Nuisance:
    speed = rng.uniform(0.8, 1.25)
    gain = 1 + knobs.lighting * rng.uniform(-1, 1)
    tint = (1 + knobs.lighting * 0.3 * rng.uniform(-1, 1, 3)).astype(np.float32)
    bias = knobs.lighting * rng.uniform(-0.15, 0.15) * 255
    flicker_period = rng.uniform(3, 9)
    n_distract = int(rng.poisson(knobs.distractors)) if knobs.distractors > 0 else 0
    distract = [(rng.uniform(0, n), rng.uniform(0, table_y * n), rng.uniform(-8, 8), rng.uniform(-3, 3),
                 rng.random(3), SHAPES[int(rng.integers(len(SHAPES)))], int(rng.integers(5, 11)))
                for _ in range(n_distract)]
    noise_bank = (rng.standard_normal((6, n, n, 3)) * (knobs.noise * 255)).astype(np.float32) \
        if knobs.noise > 0 else None
    # camera jitter: a bounded smooth random walk
    walk = np.cumsum(rng.normal(0, max(knobs.jitter, 1e-6) * 0.5, (frames_total, 2)), axis=0)
    shifts = np.clip(np.round(walk * 0.5), -knobs.jitter, knobs.jitter).astype(int) if knobs.jitter > 0 \
        else np.zeros((frames_total, 2), int)
    rest = (n * rng.uniform(0.1, 0.9), n * rng.uniform(0.3, 0.5))
    return _Nuisance(speed, gain, tint, bias, flicker_period, distract, noise_bank, shifts, rest)


def _finish_step(scene: np.ndarray, lk: ActionLook, done: int, fill: float, fill_colour: np.ndarray,
                 bd: _Backdrop, n: int) -> tuple[float, np.ndarray]:
    """A finished step changes the scene for good: shelf token, mark, bowl fill."""
    slot = done % 12
    paste(scene, sprite(lk.obj_shape, 6), lk.obj_colour, 5 + slot * 7.5, 6 + 7 * (done // 12 % 2))
    ax, ay = lk.anchor[0] * n, lk.anchor[1] * n
    paste(scene, sprite(lk.tool_shape, 5), lk.obj_colour, ax, min(ay + 0.18 * n, n - 3), 0.8)
    fill = min(1.0, fill + 0.12)
    fill_colour = 0.6 * fill_colour + 0.4 * np.asarray(lk.obj_colour)
    level = int(round(fill * (bd.bowl_h - 2)))
    if level > 0:
        scene[bd.by1 - 1 - level:bd.by1 - 1, bd.bx0 + 1:bd.bx0 + bd.bowl_w - 1] = fill_colour * 255
    return fill, fill_colour


def _camera(frame: np.ndarray, t: float, i: int, nz: _Nuisance, knobs: Knobs, rng: np.random.Generator) -> np.ndarray:
    """Lighting, camera shake and pixel noise on one frame."""
    if knobs.lighting > 0:
        flick = 1 + knobs.lighting * 0.08 * math.sin(2 * math.pi * t / nz.flicker_period)
        frame *= nz.tint * (nz.gain * flick)
        frame += nz.bias
    dx, dy = nz.shifts[i]
    if dx or dy:
        frame = np.roll(frame, (int(dy), int(dx)), axis=(0, 1))
    if nz.noise_bank is not None:
        frame += nz.noise_bank[int(rng.integers(len(nz.noise_bank)))]
    return frame


def render_video(segments: list[Segment], duration: int, looks: dict[str, ActionLook], knobs: Knobs,
                 rng: np.random.Generator, task_key: str) -> np.ndarray:
    """Frames ``[duration·fps, size, size, 3]`` uint8 of one video.

    ``segments`` are the steps in order; a frame shows the step whose segment covers it (the
    last one started if several do), or an idle scene.
    """
    fps, n = knobs.fps, knobs.size
    frames_total = int(duration * fps)
    bd = _backdrop(rng, task_key, n)
    nz = _nuisance(rng, knobs, n, frames_total, bd.table_y)
    out = np.empty((frames_total, n, n, 3), np.uint8)
    done = 0                   # steps finished so far (state shown in the scene)
    scene = bd.image.copy()
    fill, fill_colour = 0.0, bd.bowl * 0.8
    for i in range(frames_total):
        t = (i + 0.5) / fps
        while done < len(segments) and segments[done].end <= t:
            fill, fill_colour = _finish_step(scene, looks[segments[done].label], done, fill, fill_colour, bd, n)
            done += 1
        frame = scene.copy()
        active = None
        for k in range(done, len(segments)):
            if segments[k].start <= t < segments[k].end:
                active = k
            if segments[k].start > t:
                break
        if active is not None:
            seg = segments[active]
            frac = (t - seg.start) / max(seg.end - seg.start, 1e-6)
            _draw_action(frame, looks[seg.label], (t - seg.start) * nz.speed, frac, n, bd.bowl_x, bd.by0, rng)
        else:
            wob = 2 * math.sin(t * 1.3)
            paste(frame, sprite("disk", 9), (0.9, 0.75, 0.65), nz.rest[0] + wob, nz.rest[1])  # the idle hand
        for (x0, y0, vx, vy, col, shp, sz) in nz.distractors:
            paste(frame, sprite(shp, sz), col, (x0 + vx * t) % n, (y0 + vy * t) % (bd.table_y * n))
        frame = _camera(frame, t, i, nz, knobs, rng)
        np.clip(frame, 0, 255, out=frame)
        out[i] = frame
    return out


def _draw_action(frame, lk: ActionLook, tau: float, frac: float, n: int, bowl_x: float, bowl_top: int,
                 rng: np.random.Generator) -> None:
    ax, ay = lk.anchor[0] * n, lk.anchor[1] * n
    amp = lk.amplitude * n
    ph = 2 * math.pi * lk.speed * tau
    obj = sprite(lk.obj_shape, 13)
    tool = sprite(lk.tool_shape, 11)
    m = lk.motion
    ox, oy = ax, ay
    if m == "circle":
        x, y = ax + amp * math.cos(ph), ay + 0.6 * amp * math.sin(ph)
    elif m == "chop":
        x, y = ax, ay - 1.5 * amp * abs(math.sin(ph / 2))
    elif m == "sweep":
        x, y = ax + 1.5 * amp * math.sin(ph), ay - 0.1 * n
    elif m == "drop":
        phase = (lk.speed * tau) % 1.0
        x, y = ax, ay - 0.25 * n
        ox, oy = bowl_x + (ax - bowl_x) * 0.3, ay - 0.25 * n + phase * (bowl_top - ay + 0.25 * n)
    elif m == "pour":
        x, y = bowl_x + 0.08 * n, bowl_top - 0.22 * n
        width = 2 + int(2 * abs(math.sin(ph)))
        y0, y1 = int(y + 4), int(bowl_top)
        x0 = int(x - 4)
        if y1 > y0:
            frame[max(y0, 0):y1, max(x0, 0):x0 + width] = np.asarray(lk.obj_colour, np.float32) * 255
        ox, oy = x, y
    elif m == "twist":
        x, y = ax, ay
        tool = sprite("hbar" if math.sin(ph * 2) > 0 else "vbar", 13)
    elif m == "pulse":
        x, y = ax, ay
        tool = sprite(lk.tool_shape, 9 + 2 * int(3 * (1 + math.sin(ph)) / 2) * 2)
    elif m == "lift":
        x, y = ax, ay - 2.5 * amp * frac
        ox, oy = x, y + 6
    elif m == "slide":
        x, y = ax + (frac - 0.5) * 4 * amp, ay
        ox, oy = x, y + 6
    else:  # shake
        x, y = ax + rng.uniform(-1, 1) * 0.4 * amp, ay + rng.uniform(-1, 1) * 0.4 * amp
    paste(frame, obj, lk.obj_colour, ox, oy)
    paste(frame, tool, lk.tool_colour, x, y)
