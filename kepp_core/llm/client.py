"""A small client for OpenAI-compatible chat-completions endpoints (llama.cpp, vLLM, ...).

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature",
"max_tokens", "seed"}``; the reply text is ``choices[0].message.content``. Standard
library only (urllib). Transport problems are retried a bounded number of times with
exponential back-off; every failure ends as an :class:`LLMError` (a KeppError) whose
``kind`` says what went wrong: ``unreachable``, ``timeout``, ``http`` or ``malformed``.

Configuration comes from :class:`LLMConfig` or the environment::

    KEPP_LLM_URL=http://127.0.0.1:8080/v1  KEPP_LLM_MODEL=llama-2-13b-chat  KEPP_LLM_API_KEY=...

>>> cfg = LLMConfig.from_env({"KEPP_LLM_URL": "http://127.0.0.1:8080/v1", "KEPP_LLM_MODEL": "m"})
>>> cfg.endpoint
'http://127.0.0.1:8080/v1/chat/completions'
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kepp_core.errors import KeppError
from kepp_core.llm.cache import ResponseCache

__all__ = ["ERROR_KINDS", "ChatClient", "LLMConfig", "LLMError"]

ERROR_KINDS = ("unreachable", "timeout", "http", "malformed", "refusal", "implausible")
ENV_URL, ENV_MODEL, ENV_KEY = "KEPP_LLM_URL", "KEPP_LLM_MODEL", "KEPP_LLM_API_KEY"


class LLMError(KeppError):
    """A failed chat request; ``kind`` is one of ``ERROR_KINDS``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to ask: endpoint, model, key, sampling, time limits.

    ``retries`` is the number of extra attempts after the first for retryable failures
    (connection refused, timeout, HTTP 429/5xx), waiting ``backoff · 2^i`` seconds.
    ``seed`` (when not ``None``) is sent as ``seed + sample`` so the three queries differ
    but reruns against a seeded server repeat.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 0.5
    temperature: float = 0.7
    max_tokens: int = 256
    seed: int | None = 0

    def __post_init__(self) -> None:
        if not is_http_url(self.base_url):
            raise KeppError(f"LLM endpoint {self.base_url!r} is not an http(s) URL "
                            f"(expected e.g. http://127.0.0.1:8080/v1)")
        if not self.model:
            raise KeppError(f"no LLM model name given (set {ENV_MODEL} or the model option)")
        if self.timeout <= 0:
            raise KeppError(f"LLM timeout {self.timeout} must be positive (seconds)")
        if not 0 <= self.retries <= 10:
            raise KeppError(f"LLM retries {self.retries} must be between 0 and 10")
        if self.max_tokens < 1:
            raise KeppError(f"LLM max_tokens {self.max_tokens} must be at least 1")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Read ``KEPP_LLM_URL``, ``KEPP_LLM_MODEL``, ``KEPP_LLM_API_KEY``; ``overrides``
        (not ``None``) win over the environment."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {"base_url": env.get(ENV_URL), "model": env.get(ENV_MODEL),
                                  "api_key": env.get(ENV_KEY) or None}
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values["base_url"]:
            raise KeppError(f"no LLM endpoint configured: set {ENV_URL} (e.g. http://127.0.0.1:8080/v1) "
                            f"or give base_url")
        if not values["model"]:
            raise KeppError(f"no LLM model configured: set {ENV_MODEL} or give model")
        return cls(**values)

    def sampling(self) -> dict[str, Any]:
        """The parameters that shape a reply (part of every cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an ``http(s)://host...`` URL.

    >>> is_http_url("http://127.0.0.1:8080/v1"), is_http_url("file:///etc/passwd")
    (True, False)
    """
    parsed = urllib.parse.urlparse(str(url))
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


def endpoint_key(url: str) -> str:
    """A URL as endpoints are compared: scheme and host lower-cased, the path without its trailing
    ``/`` (``HTTP://Host:8080/v1/`` and ``http://host:8080/v1`` are one endpoint).

    >>> endpoint_key("HTTP://LocalHost:8080/v1/")
    'http://localhost:8080/v1'
    """
    parsed = urllib.parse.urlsplit(str(url).strip())
    return urllib.parse.urlunsplit((parsed.scheme.lower(), parsed.netloc.lower(), parsed.path.rstrip("/"),
                                    parsed.query, parsed.fragment))


NOT_ALLOWED = ("is not an LLM endpoint this server may call; the person running it names one with "
               "'kepp app --llm-url URL' or KEPP_LLM_URL")


def allowed_endpoint(url: str, allowed: Sequence[str]) -> str:
    """``url`` when it is one of the ``allowed`` endpoints (the operator's: a server never sends a
    request, or the operator's key, where a visitor says), compared by :func:`endpoint_key`; else a
    KeppError, before any connection. The message quotes the URL shortened and names no allowed one.

    >>> allowed_endpoint("http://127.0.0.1:8080/v1/", ["http://127.0.0.1:8080/v1"])
    'http://127.0.0.1:8080/v1'
    >>> allowed_endpoint("http://evil.example/v1", ["http://127.0.0.1:8080/v1"])
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: LLM endpoint 'http://evil.example/v1' is not an LLM endpoint this server may call; the person running it names one with 'kepp app --llm-url URL' or KEPP_LLM_URL
    """
    key = endpoint_key(url)
    if key and key in {endpoint_key(a) for a in allowed if a}:
        return key
    return_url = str(url).strip()
    shown = return_url if len(return_url) <= 80 else return_url[:77] + "..."
    raise KeppError(f"LLM endpoint {shown!r} {NOT_ALLOWED}")


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ChatClient:
    """Sends chat requests, caching replies on disk when ``cache`` is given.

    ``requests`` counts the HTTP requests actually sent, ``cache_hits`` the replies read
    back from the cache.
    """

    def __init__(self, config: LLMConfig, cache: ResponseCache | str | os.PathLike | None = None) -> None:
        self.config = config
        self.cache = ResponseCache(cache) if isinstance(cache, (str, os.PathLike, Path)) else cache
        self.requests = 0
        self.cache_hits = 0
        # A local server is reached directly, never through a proxy from the environment.
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(config.endpoint) else []
        self._opener = urllib.request.build_opener(*handlers)

    def with_config(self, **changes: Any) -> ChatClient:
        """A client with some settings changed, sharing this one's cache."""
        return ChatClient(replace(self.config, **changes), self.cache)

    def request_record(self, messages: Sequence[Mapping[str, str]], sample: int = 0) -> dict[str, Any]:
        """What identifies a reply: endpoint, model, messages, sampling, sample number."""
        return {"url": self.config.endpoint, "model": self.config.model,
                "messages": [dict(m) for m in messages], "params": self.config.sampling(), "sample": sample}

    def complete(self, messages: Sequence[Mapping[str, str]], sample: int = 0) -> str:
        """The assistant's reply text to ``messages`` (sample ``sample`` of that prompt)."""
        record = self.request_record(messages, sample)
        if self.cache is not None:
            hit = self.cache.get(record)
            if hit is not None:
                self.cache_hits += 1
                return hit
        reply = self._post(record)
        if self.cache is not None:
            self.cache.put(record, reply)
        return reply

    def ask(self, prompt: str, sample: int = 0) -> str:
        """One user message, one reply."""
        return self.complete([{"role": "user", "content": prompt}], sample)

    # --- HTTP -----------------------------------------------------------------------------
    def _body(self, record: dict[str, Any]) -> bytes:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": record["messages"], "stream": False,
                                "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        if cfg.seed is not None:
            body["seed"] = cfg.seed + record["sample"]
        return json.dumps(body).encode("utf-8")

    def _post(self, record: dict[str, Any]) -> str:
        cfg = self.config
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if cfg.api_key:
            headers["Authorization"] = f"Bearer {cfg.api_key}"
        data = self._body(record)
        last: LLMError | None = None
        for attempt in range(cfg.retries + 1):
            if attempt:
                time.sleep(cfg.backoff * 2 ** (attempt - 1))
            self.requests += 1
            try:
                req = urllib.request.Request(cfg.endpoint, data=data, headers=headers, method="POST")
                with self._opener.open(req, timeout=cfg.timeout) as resp:
                    raw = resp.read()
                return _reply_text(raw, cfg.endpoint)
            except urllib.error.HTTPError as e:
                detail = _excerpt(e.read() if e.fp is not None else b"")
                last = LLMError("http", f"LLM endpoint {cfg.endpoint} answered HTTP {e.code} {e.reason}"
                                        f"{': ' + detail if detail else ''}")
                if e.code != 429 and e.code < 500:
                    raise last from None
            except TimeoutError:
                last = LLMError("timeout", f"LLM endpoint {cfg.endpoint} did not answer within "
                                           f"{cfg.timeout:g} s")
            except urllib.error.URLError as e:
                if isinstance(e.reason, TimeoutError):
                    last = LLMError("timeout", f"LLM endpoint {cfg.endpoint} did not answer within "
                                               f"{cfg.timeout:g} s")
                else:
                    last = LLMError("unreachable", f"cannot reach the LLM endpoint {cfg.endpoint}: {e.reason} "
                                                   f"(is the server running? check {ENV_URL})")
            except http.client.HTTPException as e:
                last = LLMError("malformed", f"LLM endpoint {cfg.endpoint} sent a broken HTTP response "
                                             f"({type(e).__name__}: {e})")
            except (ConnectionError, OSError) as e:
                last = LLMError("unreachable", f"cannot reach the LLM endpoint {cfg.endpoint}: {e} "
                                               f"(is the server running? check {ENV_URL})")
        assert last is not None
        tries = cfg.retries + 1
        raise LLMError(last.kind, f"{last} (after {tries} attempt{'s' if tries > 1 else ''})")


def _excerpt(raw: bytes, n: int = 200) -> str:
    text = raw.decode("utf-8", errors="replace").strip().replace("\n", " ")
    return text if len(text) <= n else text[:n] + "..."


def _reply_text(raw: bytes, endpoint: str) -> str:
    """``choices[0].message.content`` of a chat-completion body, or a ``malformed`` LLMError."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise LLMError("malformed", f"LLM endpoint {endpoint} answered something that is not JSON: "
                                    f"{_excerpt(raw)!r}") from None
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMError("malformed", f"LLM endpoint {endpoint} answered JSON without "
                                    f"choices[0].message.content: {_excerpt(raw)!r}") from None
    if not isinstance(content, str):
        raise LLMError("malformed", f"LLM endpoint {endpoint} answered a non-text message content: "
                                    f"{content!r}")
    return content
