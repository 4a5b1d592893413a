"""Where rows lie in the records table: the row numbers of a method at a horizon, and of an episode at a horizon,
found on integer codes made once per version of the records (:func:`components.records.backend.records_index`), and
the values the pages' filters offer (methods, horizons, tasks, sources, seeds). At the field's scale (835,200 rows)
comparing a column of texts with one value takes about 50 ms; the pages asked it several times a run.

>>> import pandas as pd
>>> t = pd.DataFrame({"method": ["a", "b", "a", "b"], "horizon": [3, 3, 4, 4], "episode": ["x", "x", "y", "y"],
...                   "task": ["t", "t", "u", "u"], "source": ["f", "f", "f", "f"], "seed": [0, 0, 0, 0]})
>>> index = RecordsIndex(t)
>>> index.rows_of("a", 4).tolist(), index.episode_rows("x", 3).tolist(), index.horizons_of("b"), index.methods
([2], [0, 1], [3, 4], ['a', 'b'])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["RecordsIndex"]


class RecordsIndex:
    """Row numbers of a records table (the app's predictions table, read-only) by method, horizon and episode, and
    the values its filters offer, made in one pass over the table's columns."""

    def __init__(self, preds: pd.DataFrame) -> None:
        # small integer types: a session that showed an older version keeps its index for minutes
        method, methods = pd.factorize(preds["method"], sort=True)
        self.methods: list[str] = [str(m) for m in methods]
        self._method = method.astype(np.int16)
        self._horizon = preds["horizon"].to_numpy(dtype=np.int16)
        episode, episodes = pd.factorize(preds["episode"])
        self._episode_of = pd.Index(episodes)
        self._by_episode = np.argsort(episode, kind="stable").astype(np.int32)  # rows by episode, in the table's order
        self._starts = np.searchsorted(episode[self._by_episode], np.arange(len(episodes) + 1))
        pairs = pd.DataFrame({"m": method, "h": self._horizon}).drop_duplicates()
        self._horizons = {self.methods[m]: sorted(int(h) for h in g["h"]) for m, g in pairs.groupby("m")}
        self.horizons: list[int] = sorted({int(h) for h in pairs["h"]})
        self.tasks: list[str] = sorted(str(t) for t in preds["task"].dropna().unique())
        self.sources: list[str] = sorted(str(s) for s in preds["source"].dropna().unique())
        self.seeds: int = int(preds["seed"].nunique(dropna=True))

    def release(self) -> None:
        """Let go of the arrays, for the index of a superseded version of the records (an app's sessions may keep
        it for minutes): it then finds no rows and offers no values."""
        self.methods, self.horizons, self.tasks, self.sources, self.seeds = [], [], [], [], 0
        self._method, self._horizon = np.empty(0, np.int16), np.empty(0, np.int16)
        self._episode_of, self._by_episode, self._starts = pd.Index([]), np.empty(0, np.int32), np.zeros(1, np.int64)
        self._horizons = {}

    def horizons_of(self, method: str) -> list[int]:
        """The horizons ``method`` has rows at."""
        return self._horizons.get(method, [])

    def rows_of(self, method: str, horizon: int) -> np.ndarray:
        """The row numbers of ``method`` at ``horizon``, in the table's order."""
        if method not in self.methods:
            return np.empty(0, dtype=np.int64)
        code = self.methods.index(method)
        return np.flatnonzero((self._method == code) & (self._horizon == int(horizon)))

    def episode_rows(self, episode: str, horizon: int) -> np.ndarray:
        """The row numbers of ``episode`` at ``horizon`` (every method and seed), in the table's order."""
        try:
            code = self._episode_of.get_loc(episode)
        except KeyError:
            return np.empty(0, dtype=np.int64)
        rows = self._by_episode[self._starts[code]:self._starts[code + 1]]
        return rows[self._horizon[rows] == int(horizon)]
