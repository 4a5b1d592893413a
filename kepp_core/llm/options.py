"""The options of the LLM recommendation, as a plain dataclass (the command line's flags that
fill it live in :mod:`kepp_core.commands.llm_args`), and the recommender they configure.

>>> LLMOptions(url="http://127.0.0.1:8080/v1", model="llama").config(env={}).endpoint
'http://127.0.0.1:8080/v1/chat/completions'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kepp_core.data.records import Dataset
from kepp_core.llm.client import ChatClient, LLMConfig
from kepp_core.llm.recommend import ENDPOINT_FALLBACK, Fallback, LLMRecommender

__all__ = ["LLMOptions"]

DEFAULT_CACHE = "runs/llm-cache"


@dataclass(frozen=True)
class LLMOptions:
    """How to ask the LLM: endpoint ``url`` and ``model`` (None: from the environment), the
    reply ``cache`` folder, the ``mapper`` embedding of generated steps, ``queries`` per
    ``(a_1, a_T, T)`` majority-voted on ``vote_on``, the plausibility check (``verify``,
    ``keep_unverified``), ``on_error`` and the request's ``timeout``, ``retries`` and
    ``temperature``."""

    url: str | None = None
    model: str | None = None
    cache: str | None = DEFAULT_CACHE
    mapper: str = "minilm"
    queries: int = 3
    vote_on: str = "text"
    verify: bool = True
    keep_unverified: bool = False
    on_error: str = "fallback"
    timeout: float = 60.0
    retries: int = 2
    temperature: float = 0.7

    def config(self, env: Mapping[str, str] | None = None) -> LLMConfig:
        """The chat client's config (the key only from the environment)."""
        return LLMConfig.from_env(env, base_url=self.url, model=self.model, timeout=self.timeout,
                                  retries=self.retries, temperature=self.temperature)

    def recommender(self, dataset: Dataset | Sequence[str],
                    fallback: Fallback | Callable[[int, int, int], Sequence[int]] = ENDPOINT_FALLBACK,
                    env: Mapping[str, str] | None = None) -> LLMRecommender:
        """An :class:`LLMRecommender` with these options; pass ``graph_fallback(retriever)`` as
        ``fallback`` to fall back on the P²KG path."""
        client = ChatClient(self.config(env), self.cache or None)
        return LLMRecommender(client, dataset, self.mapper, queries=self.queries, verify=self.verify,
                              require_verified=not self.keep_unverified, vote_on=self.vote_on,
                              fallback=fallback, on_error=self.on_error)
