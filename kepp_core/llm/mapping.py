"""Mapping free-text steps to the dataset's actions: nearest neighbour (k=1) by cosine
similarity of sentence embeddings.

The embedder is pluggable: any callable ``labels -> [N, D]`` array (rows need not be
normalised; they are normalised here).

>>> from kepp_core.llm.embedding import LexicalEmbedder
>>> mapper = ActionMapper(["pour water", "jack up car", "stir"], LexicalEmbedder(dim=512))
>>> mapper.map(["Pour the water", "stir it"])[0]
[0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kepp_core.errors import KeppError
from kepp_core.llm.embedding import Embedder, make_embedder

__all__ = ["ActionMapper"]


def _unit_rows(x: np.ndarray, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise KeppError(f"the embedder returned an array of shape {x.shape} for {what}, expected [N, D]")
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class ActionMapper:
    """Nearest dataset action (k=1, cosine similarity) of each text; ties go to the lower
    action index. Action embeddings are computed once, on first use."""

    def __init__(self, actions: Sequence[str], embedder: Embedder | str = "minilm") -> None:
        if not actions:
            raise KeppError("cannot map steps to an empty action vocabulary")
        self.actions = list(actions)
        self.embedder = make_embedder(embedder) if isinstance(embedder, str) else embedder
        self._matrix: np.ndarray | None = None
        self._memo: dict[str, tuple[int, float]] = {}  # text -> (action, similarity)

    @property
    def name(self) -> str:
        return getattr(self.embedder, "name", type(self.embedder).__name__)

    @property
    def matrix(self) -> np.ndarray:
        """Unit-length embeddings of the dataset's actions ``[A, E]`` (computed once)."""
        if self._matrix is None:
            self._matrix = _unit_rows(self.embedder(self.actions), "the dataset actions")
            if self._matrix.shape[0] != len(self.actions):
                raise KeppError(f"the embedder returned {self._matrix.shape[0]} rows for "
                                f"{len(self.actions)} actions")
        return self._matrix

    def map(self, texts: Sequence[str]) -> tuple[list[int], list[float]]:
        """Action indices and cosine similarities of the nearest action of each text."""
        new = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if new:
            matrix = self.matrix
            q = _unit_rows(self.embedder(new), "the generated steps")
            if q.shape != (len(new), matrix.shape[1]):
                raise KeppError(f"the embedder gives {q.shape[1]}-d vectors for steps but "
                                f"{matrix.shape[1]}-d for actions")
            sims = q @ matrix.T
            best = sims.argmax(axis=1)
            for k, text in enumerate(new):
                self._memo[text] = (int(best[k]), float(sims[k, best[k]]))
        hits = [self._memo[t] for t in texts]
        return [a for a, _ in hits], [s for _, s in hits]
