"""Training data that does not sit whole in memory (docs, At scale).

Two pieces:

- :class:`MappedRows`: the start or goal observation windows ``[N, M·D]`` of every training
  episode, written once to a float32 ``.npy`` file and read back through a memory map. Indexing
  with a batch of episode indices reads only those rows; the file is written chunk by chunk
  (never a whole ``[N, M·D]`` array in memory), atomically, and reused while the episodes,
  their windows and their feature files are unchanged.
- :class:`ConditionRows`: the P²KG condition rows ``[N, T, A]`` of the episodes, made per
  batch from the episodes' endpoint pairs (the retriever caches each distinct pair), so the
  dense ``N × T × A`` array never exists.

Both index like a tensor (``rows[idx]``, ``rows[a:b]``, ``len(rows)``, ``rows.shape``), which
is all training and batched sampling need.

>>> import tempfile, numpy as np
>>> f = Path(tempfile.mkdtemp()) / "w.npy"
>>> np.save(f, np.arange(12, dtype=np.float32).reshape(4, 3))
>>> rows = MappedRows(f)
>>> rows[torch.tensor([2, 0])].tolist(), rows.subset([3, 1]).shape
([[6.0, 7.0, 8.0], [0.0, 1.0, 2.0]], (2, 3))
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from kepp_core.data.episodes import Episode, common_dim, observations
from kepp_core.errors import KeppError
from kepp_core.io import atomic_path

CHUNK = 4096  # episodes whose windows are read from feature files at a time


class MappedRows:
    """Rows of a 2-D float32 ``.npy`` file, read through a memory map (optionally a subset of
    its rows, in a given order)."""

    def __init__(self, path: str | Path, index: np.ndarray | None = None) -> None:
        self.path = Path(path)
        self._array = np.load(self.path, mmap_mode="r", allow_pickle=False)
        if self._array.ndim != 2:
            raise KeppError(f"{self.path}: expected a 2-D array of observation windows, got shape {self._array.shape}")
        self.index = None if index is None else np.asarray(index, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._array) if self.index is None else len(self.index)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), int(self._array.shape[1])

    def _rows(self, idx) -> np.ndarray:
        if isinstance(idx, slice):
            idx = np.arange(len(self))[idx]
        idx = np.asarray(idx.cpu() if isinstance(idx, torch.Tensor) else idx, dtype=np.int64).reshape(-1)
        return idx if self.index is None else self.index[idx]

    def __getitem__(self, idx) -> torch.Tensor:
        rows = self._rows(idx)
        order = np.argsort(rows, kind="stable")  # read the file front to back, then restore the order
        out = np.empty((len(rows), self._array.shape[1]), dtype=np.float32)
        out[order] = self._array[rows[order]]
        return torch.from_numpy(out)

    def subset(self, idx) -> MappedRows:
        """The rows ``idx`` (a view on the same file)."""
        return MappedRows(self.path, self._rows(idx))

    def chunks(self, size: int = CHUNK):
        """The rows in order, ``size`` at a time (tensors)."""
        for i in range(0, len(self), size):
            yield self[i:i + size]


class ConditionRows:
    """Aggregated top-``R`` P²KG recommendations ``[N, T, A]`` for endpoint pairs ``[N, 2]``,
    made when indexed (a :class:`~kepp_core.graph.retrieval.Retriever` caches each pair)."""

    def __init__(self, retriever, endpoints: torch.Tensor, horizon: int) -> None:
        self.retriever, self.endpoints, self.horizon = retriever, torch.as_tensor(endpoints).long(), horizon

    def __len__(self) -> int:
        return len(self.endpoints)

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self), self.horizon, self.retriever.graph.num_actions

    def __getitem__(self, idx) -> torch.Tensor:
        pairs = self.endpoints[idx].reshape(-1, 2)
        return torch.from_numpy(self.retriever.conditions([tuple(p) for p in pairs.tolist()], self.horizon))

    def cat(self, other: ConditionRows) -> ConditionRows:
        """These rows followed by ``other``'s (same retriever and horizon)."""
        return ConditionRows(self.retriever, torch.cat([self.endpoints, other.endpoints]), self.horizon)


def window_key(episodes: Sequence[Episode], dim: int) -> str:
    """A digest of what the windows file holds: the episodes' ids, windows and feature files
    (path, size, modification time) and the feature size."""
    h = hashlib.sha1(str(dim).encode())
    files: dict[str, tuple] = {}
    for ep in episodes:
        h.update(f"{ep.id}|{ep.start_window}|{ep.goal_window}|{ep.video.feature_file}\n".encode())
        f = ep.video.feature_file
        if f is not None and str(f) not in files:
            st = Path(f).stat() if Path(f).is_file() else None
            files[str(f)] = (st.st_size, st.st_mtime_ns) if st else None
    h.update(json.dumps(sorted(files.items()), default=str).encode())
    return h.hexdigest()[:16]


def mapped_observations(episodes: Sequence[Episode], folder: str | Path, progress: bool = False
                        ) -> tuple[MappedRows, MappedRows]:
    """Start and goal windows of ``episodes`` as memory-mapped rows, from ``FOLDER/<key>-{start,goal}.npy``
    (written first when missing: chunk by chunk, atomically)."""
    folder = Path(folder)
    dim = common_dim(ep.video.feature_file for ep in episodes)
    key = window_key(episodes, dim)
    paths = [folder / f"{key}-start.npy", folder / f"{key}-goal.npy"]
    if not all(p.is_file() for p in paths):
        _write_windows(episodes, dim, paths, progress)
    return MappedRows(paths[0]), MappedRows(paths[1])


def _write_windows(episodes: Sequence[Episode], dim: int | None, paths: list[Path], progress: bool) -> None:
    """Write the start and goal windows of ``episodes`` into ``paths`` (temporary files, renamed when complete)."""
    first_s, _ = observations(episodes[:1], dim)
    width = first_s.shape[1]
    with atomic_path(paths[0]) as tmp_s, atomic_path(paths[1]) as tmp_g:
        arrays = [np.lib.format.open_memmap(t, mode="w+", dtype=np.float32, shape=(len(episodes), width))
                  for t in (tmp_s, tmp_g)]
        bar = tqdm(total=len(episodes), desc="observation windows", unit="ep", disable=not progress, leave=False)
        for i in range(0, len(episodes), CHUNK):
            s, g = observations(episodes[i:i + CHUNK], dim)
            arrays[0][i:i + len(s)] = s
            arrays[1][i:i + len(g)] = g
            bar.update(len(s))
        bar.close()
        for a in arrays:
            a.flush()
        del arrays


def observation_stats(starts, goals) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and (unbiased) standard deviation per column of the start and goal windows
    together; tensors are used as they are, mapped rows are read a chunk at a time."""
    if isinstance(starts, torch.Tensor) and isinstance(goals, torch.Tensor):
        obs = torch.cat([starts, goals])
        return obs.mean(0), (obs.std(0) if len(obs) > 1 else torch.ones(obs.shape[1]))
    total = torch.zeros(starts.shape[1], dtype=torch.float64)
    squares = torch.zeros_like(total)
    n = 0
    for rows in (starts, goals):
        for chunk in (rows.chunks() if isinstance(rows, MappedRows) else [rows]):
            c = chunk.double()
            total += c.sum(0)
            squares += (c * c).sum(0)
            n += len(c)
    mean = total / max(n, 1)
    var = (squares - n * mean * mean) / max(n - 1, 1)
    std = var.clamp_min(0).sqrt() if n > 1 else torch.ones_like(mean)
    return mean.float(), std.float()
