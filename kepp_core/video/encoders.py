"""Feature encoders: decoded frames ``[N, H, W, 3]`` uint8 at ``fps`` → per-second features
``[seconds, D]`` float32, with ``seconds = ceil(N / fps)`` (second ``k`` pools the frames shown
during ``[k, k+1)``).

Four kinds, chosen by a spec string (``get_encoder``):

- ``"builtin"``: :class:`BuiltinEncoder`, deterministic, no weights (see its docstring);
- ``"s3d:PATH"``: the S3D HowTo100M text-video network whose per-second features the official
  KEPP, PDPP and P3IV models were trained on (:mod:`kepp_core.video.s3d_spec`: the spec's
  options and the sampling; :class:`kepp_core.video.s3d.S3DEncoder`);
- ``"package.module:function"``: a Python callable ``f(frames, fps) -> [seconds, D]`` (a class
  there is instantiated without arguments first);
- ``"path/to/encoder.pt"``: a TorchScript module whose ``forward(frames: Tensor, fps: float)``
  takes the uint8 tensor ``[N, H, W, 3]`` and returns ``[seconds, D]``.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import warnings
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kepp_core.errors import KeppError, first_line
from kepp_core.safe_load import check_archive_pickles
from kepp_core.video.s3d_spec import TORCHSCRIPT_SUFFIXES, S3DSpec, is_s3d
from kepp_core.io import has_suffix

__all__ = ["BuiltinEncoder", "CallableEncoder", "FeatureEncoder", "TorchScriptEncoder", "get_encoder", "seconds_of"]


@runtime_checkable
class FeatureEncoder(Protocol):
    """What ``encode_video`` needs from an encoder.

    ``name`` identifies the encoder in the feature cache; ``sample_fps`` (or None: the video's
    own rate) is the frame rate it wants; ``frame_size`` (or None) a ``(width, height)`` to
    resize to while decoding.
    """

    name: str
    sample_fps: float | None
    frame_size: tuple[int, int] | None

    def __call__(self, frames: np.ndarray, fps: float) -> np.ndarray: ...


def seconds_of(n_frames: int, fps: float) -> int:
    """Number of per-second feature rows for ``n_frames`` frames at ``fps``.

    >>> seconds_of(80, 8.0), seconds_of(81, 8.0), seconds_of(1, 30.0)
    (10, 11, 1)
    """
    return max(1, int(math.ceil(n_frames / fps - 1e-6)))


def second_of_frame(n_frames: int, fps: float) -> np.ndarray:
    """The second each frame belongs to: ``floor(i / fps)``."""
    return np.floor(np.arange(n_frames) / fps + 1e-6).astype(np.int64)


def _cell_edges(n: int, cells: int) -> np.ndarray:
    return np.linspace(0, n, cells + 1).round().astype(np.int64)[:-1]


def grid_pool(x: np.ndarray, cells: int) -> np.ndarray:
    """Mean over a ``cells × cells`` grid of the spatial axes 1, 2 of ``x`` (any frame size).

    >>> grid_pool(np.arange(16, dtype=np.float32).reshape(1, 4, 4), 2)[0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    h, w = x.shape[1], x.shape[2]
    rows, cols = _cell_edges(h, cells), _cell_edges(w, cells)
    s = np.add.reduceat(np.add.reduceat(x, rows, axis=1), cols, axis=2)
    rh = np.diff(np.append(rows, h)).astype(np.float32)
    cw = np.diff(np.append(cols, w)).astype(np.float32)
    area = (rh[:, None] * cw[None, :]).reshape(1, cells, cells, *([1] * (x.ndim - 3)))
    return (s / area).astype(np.float32)


def _per_second(x: np.ndarray, sec: np.ndarray, seconds: int) -> np.ndarray:
    """Mean of rows of ``x`` (first axis = frames) grouped by their second."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    out = np.zeros((seconds, flat.shape[1]))
    starts = np.searchsorted(sec, np.arange(seconds))
    present = np.unique(sec)
    out[present] = np.add.reduceat(flat, starts[present], axis=0)
    counts = np.bincount(sec, minlength=seconds).astype(np.float64)
    filled = counts > 0
    out[filled] /= counts[filled, None]
    # a second without frames (fps < 1) repeats the previous one
    for k in np.flatnonzero(~filled):
        out[k] = out[k - 1] if k > 0 else 0.0
    return out.astype(np.float32)


class BuiltinEncoder:
    """Deterministic per-second appearance and motion features; no learned weights.

    For every second of video (frames decoded at up to 8 fps, resized to 64×64) it computes

    ========================  ====  ==================================================
    block                     dims  what it captures
    ========================  ====  ==================================================
    colour layout 6×6×3       108   mean RGB per grid cell: which objects are where
    motion energy 6×6          36   mean |frame difference| per cell: where things move
    brightness change 6×6      36   last minus first frame of the second, per cell:
                                    direction of change (things appearing/leaving)
    colour histogram 4×4×4     64   joint RGB histogram: which colours are present
    global statistics          12   mean and std of R, G, B; histogram of motion
                                    magnitude (6 bins)
    ========================  ====  ==================================================

    D = 256. Each block is scaled to a comparable range. It suits the demo world because
    there every action has a colour (its object), a place and a motion pattern, and the
    scene's state accumulates visibly: exactly what colour layout, histograms and motion
    energy summarise. On real footage it is a weak baseline; use a learned encoder there
    (``module:function`` or a TorchScript file) or the precomputed S3D features.

    >>> enc = BuiltinEncoder()
    >>> enc(np.zeros((16, 96, 96, 3), np.uint8), fps=8.0).shape
    (2, 256)
    """

    name = "builtin-v1"
    dim = 256
    sample_fps: float | None = 8.0
    frame_size: tuple[int, int] | None = (64, 64)
    GRID = 6

    def __call__(self, frames: np.ndarray, fps: float) -> np.ndarray:
        frames = np.asarray(frames)
        if frames.ndim != 4 or frames.shape[-1] != 3 or len(frames) == 0 or frames.dtype != np.uint8:
            raise KeppError(f"builtin encoder expects uint8 frames [N, H, W, 3] with N > 0, "
                            f"got {frames.dtype} {frames.shape}")
        n = len(frames)
        seconds = seconds_of(n, fps)
        sec = second_of_frame(n, fps)
        x = frames.astype(np.float32)
        x *= 1.0 / 255.0
        grid = grid_pool(x, self.GRID)                                   # [N, 6, 6, 3]
        lum = x[..., 0] * 0.299
        lum += x[..., 1] * 0.587
        lum += x[..., 2] * 0.114                                         # [N, H, W]
        diff = np.empty_like(lum)
        np.subtract(lum[1:], lum[:-1], out=diff[1:])
        np.abs(diff, out=diff)
        # the first frame of the video has no predecessor: copy the next frame's motion
        diff[0] = diff[1] if n > 1 else 0.0
        motion = grid_pool(diff, self.GRID)                              # [N, 6, 6]

        colour = _per_second(grid, sec, seconds)                         # [S, 108]
        energy = _per_second(motion, sec, seconds) * 8.0                 # [S, 36]
        lum_grid = grid @ np.array([0.299, 0.587, 0.114], np.float32)   # [N, 6, 6]
        lum_grid = lum_grid.reshape(n, -1)
        first = np.searchsorted(sec, np.arange(seconds), side="left").clip(0, n - 1)
        last = (np.searchsorted(sec, np.arange(seconds), side="right") - 1).clip(0, n - 1)
        change = (lum_grid[last] - lum_grid[first]) * 4.0                # [S, 36]

        q = frames >> 6                                                  # 4 levels per channel
        bins = q[..., 0] * np.uint8(16) + q[..., 1] * np.uint8(4) + q[..., 2]
        hist = np.stack([np.bincount(bins[sec == k].ravel(), minlength=64) for k in range(seconds)])
        hist = hist.astype(np.float32) / np.maximum(hist.sum(1, keepdims=True), 1.0)
        hist = np.sqrt(hist) * 2.0                                       # Hellinger: rare colours count

        mean_rgb = grid.mean(axis=(1, 2))
        std_rgb = grid.std(axis=(1, 2))                                  # spread of colours over the layout
        mag = np.digitize(motion.mean(axis=(1, 2)), [0.005, 0.01, 0.02, 0.04, 0.08])
        mag_hist = np.eye(6, dtype=np.float32)[mag]
        glob = _per_second(np.concatenate([mean_rgb, std_rgb * 2.0, mag_hist], 1), sec, seconds)

        return np.concatenate([colour, energy, change, hist, glob], axis=1).astype(np.float32)


class CallableEncoder:
    """A Python callable ``f(frames [N,H,W,3] uint8, fps) -> [seconds, D]`` used as an encoder."""

    def __init__(self, fn, name: str, sample_fps: float | None = None,
                 frame_size: tuple[int, int] | None = None) -> None:
        self.fn = fn
        self.name = name
        self.sample_fps = getattr(fn, "sample_fps", sample_fps)
        self.frame_size = getattr(fn, "frame_size", frame_size)

    def __call__(self, frames: np.ndarray, fps: float) -> np.ndarray:
        return np.asarray(self.fn(frames, fps))


class TorchScriptEncoder:
    """A TorchScript file whose ``forward(frames: Tensor[N,H,W,3] uint8, fps: float)`` returns
    ``[seconds, D]``. Runs on the CPU without gradients."""

    def __init__(self, path: str | Path) -> None:
        import torch

        self.path = Path(path)
        if not self.path.is_file():
            raise KeppError(f"{self.path}: TorchScript encoder file not found")
        check_archive_pickles(self.path, "TorchScript encoder")  # a regular file, its pickles bounded
        try:
            with warnings.catch_warnings():  # torch 2.13 marks TorchScript deprecated; files still load
                warnings.simplefilter("ignore", DeprecationWarning)
                self.module = torch.jit.load(str(self.path), map_location="cpu")
        except Exception as e:
            raise KeppError(f"{self.path}: not a loadable TorchScript module ({first_line(e)})") from None
        self.module.eval()
        digest = hashlib.sha1(self.path.read_bytes()).hexdigest()[:12]
        self.name = f"torchscript:{self.path.name}@{digest}"
        self.sample_fps = None
        self.frame_size = None

    def __call__(self, frames: np.ndarray, fps: float) -> np.ndarray:
        import torch

        with torch.inference_mode():
            try:
                out = self.module(torch.from_numpy(np.ascontiguousarray(frames)), float(fps))
            except Exception as e:
                raise KeppError(f"TorchScript encoder {self.path}: its forward failed on frames "
                                f"{tuple(frames.shape)} ({first_line(e)})") from None
        if not isinstance(out, torch.Tensor):
            raise KeppError(f"TorchScript encoder {self.path}: its forward returned a {type(out).__name__}, "
                            f"expected a tensor [seconds, D]")
        return out.detach().cpu().numpy()


def get_encoder(spec: str | FeatureEncoder = "builtin", device: str | None = None) -> FeatureEncoder:
    """An encoder from a spec: ``"builtin"`` (or its recorded name ``"builtin-v1"``, as a
    feature cache's ``features.json`` names it), ``"s3d:PATH[,options]"``, ``"module:function"``
    or a ``.pt`` TorchScript path. ``device``: where an S3D network runs when its spec names no
    ``device=`` (default: the command's, :func:`kepp_core.devices.chosen`).

    >>> get_encoder("builtin").name
    'builtin-v1'
    >>> get_encoder("builtin-v1").name
    'builtin-v1'
    """
    if not isinstance(spec, str):
        if callable(spec):
            return spec if hasattr(spec, "name") else CallableEncoder(spec, name=f"callable:{spec!r}")
        raise KeppError(f"encoder must be a spec string or a callable, got {type(spec).__name__}")
    if spec in ("builtin", BuiltinEncoder.name):
        return BuiltinEncoder()
    if is_s3d(spec):
        from kepp_core.video.s3d import S3DEncoder

        return S3DEncoder(S3DSpec.parse(spec).on(device))
    if has_suffix(spec, *TORCHSCRIPT_SUFFIXES) or Path(spec).is_file():
        return TorchScriptEncoder(spec)
    module_name, sep, attr = spec.removeprefix("callable:").partition(":")
    if not sep or not module_name or not attr:
        raise KeppError(f"encoder {spec!r} is not 'builtin', 'module:function' or a TorchScript .pt file")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise KeppError(f"encoder {spec!r}: cannot import module {module_name!r} ({e})") from None
    try:
        fn = getattr(module, attr)
    except AttributeError:
        raise KeppError(f"encoder {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if isinstance(fn, type):
        fn = fn()
    if not callable(fn):
        raise KeppError(f"encoder {spec!r} is not callable")
    check_takes_frames(fn, spec)
    return CallableEncoder(fn, name=f"callable:{spec}")


def check_takes_frames(fn, spec: str) -> None:
    """Refuse, before it is ever called, a callable that cannot be called as ``fn(frames, fps)``
    (``os:system`` takes one argument; a builtin without a signature cannot be checked).

    >>> check_takes_frames(lambda frames, fps: frames, "pkg:f")
    >>> import os
    >>> check_takes_frames(os.system, "os:system")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: encoder 'os:system' does not take (frames, fps): expected a function f(frames, fps) -> [seconds, D]
    """
    try:
        inspect.signature(fn).bind(np.zeros((1, 1, 1, 3), np.uint8), 1.0)
    except (TypeError, ValueError):
        raise KeppError(f"encoder {spec!r} does not take (frames, fps): expected a function "
                        f"f(frames, fps) -> [seconds, D]") from None


def encoder_name(spec: str) -> str:
    """The name an encoder spec records in a feature cache, computed without loading anything
    (for TorchScript: the file's name and content digest; for S3D: :attr:`S3DSpec.name`).

    >>> encoder_name("builtin"), encoder_name("my_pkg.enc:s3d")
    ('builtin-v1', 'callable:my_pkg.enc:s3d')
    """
    if spec in ("builtin", BuiltinEncoder.name):
        return BuiltinEncoder.name
    if is_s3d(spec):
        return S3DSpec.parse(spec).name
    path = Path(spec)
    if has_suffix(spec, *TORCHSCRIPT_SUFFIXES) or path.is_file():
        if not path.is_file():
            raise KeppError(f"{path}: TorchScript encoder file not found")
        return f"torchscript:{path.name}@{hashlib.sha1(path.read_bytes()).hexdigest()[:12]}"
    return f"callable:{spec}"


def trusted_encoder_spec(name: str, trusted: tuple[str, ...] | list[str] = ()) -> str:
    """The ``get_encoder`` spec for the encoder a feature cache's ``features.json`` names, if it
    may be loaded: the built-in encoder, or one of the ``trusted`` specs (given by the person
    running the program, e.g. ``kepp app --encoder SPEC``). A dataset folder never chooses code
    to import or a TorchScript file to run: any other name is a KeppError.

    >>> trusted_encoder_spec("builtin-v1")
    'builtin'
    >>> trusted_encoder_spec("callable:my_pkg.enc:s3d", ["my_pkg.enc:s3d"])
    'my_pkg.enc:s3d'
    """
    if name == BuiltinEncoder.name:
        return "builtin"
    if name.startswith("builtin"):
        raise KeppError(f"the dataset's features were made by encoder {name!r}, but this build's built-in "
                        f"encoder is {BuiltinEncoder.name!r}: re-extract them with 'kepp features extract --force'")
    for spec in trusted:
        if encoder_name(spec) == name:
            return spec
    raise KeppError(f"the dataset's features were made by encoder {name!r}, which is not loaded unless the "
                    f"person running the app names it: start the app with 'kepp app --encoder SPEC' "
                    f"(or 'encoders = [...]' in its config file)")


def encoder_dim(spec: str) -> int | None:
    """The feature width an encoder spec gives, where it is known without running it (the
    built-in and S3D encoders), else None.

    >>> encoder_dim("builtin"), encoder_dim("s3d:w.pth,output=mixed_5c"), encoder_dim("pkg.enc:f")
    (256, 1024, None)
    """
    if spec in ("builtin", BuiltinEncoder.name):
        return BuiltinEncoder.dim
    if is_s3d(spec):
        return S3DSpec.parse(spec).dim
    return None


def check_features(feats, n_frames: int, fps: float, encoder: FeatureEncoder, where: str) -> np.ndarray:
    """Validate an encoder's output: ``[seconds_of(n_frames, fps), D]``, finite, float32."""
    arr = np.asarray(feats)
    expected = seconds_of(n_frames, fps)
    if arr.ndim != 2 or arr.shape[0] != expected or arr.shape[1] < 1:
        raise KeppError(f"{where}: encoder {encoder.name} returned shape {tuple(arr.shape)}, "
                        f"expected [{expected}, D] (one row per second)")
    arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise KeppError(f"{where}: encoder {encoder.name} returned non-finite values")
    return arr
