"""On-disk cache of chat replies: one JSON file per request, keyed by a hash of
(endpoint, model, messages, sampling parameters, sample number).

Reruns of an evaluation read the replies back instead of asking the server again, so they
cost nothing and give the same plans. Files are written atomically; the API key is never
stored.

>>> import tempfile
>>> cache = ResponseCache(tempfile.mkdtemp())
>>> request = {"url": "http://127.0.0.1:1/v1/chat/completions", "model": "m",
...            "messages": [{"role": "user", "content": "hi"}], "params": {}, "sample": 0}
>>> cache.get(request) is None
True
>>> cache.put(request, "hello")
>>> cache.get(request)
'hello'
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_json, read_json

__all__ = ["ResponseCache", "request_key"]

CACHE_FORMAT = "kepp-llm-reply/1"


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request's canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Replies stored as ``<root>/<key[:2]>/<key>.json``."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def path(self, request: dict[str, Any]) -> Path:
        key = request_key(request)
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> str | None:
        """The cached reply text, or ``None``; a damaged file is a KeppError naming it."""
        path = self.path(request)
        if not path.exists():
            return None
        try:
            entry = read_json(path)
        except KeppError as e:
            raise KeppError(f"damaged LLM cache entry ({e}); delete the file to ask again") from None
        valid = isinstance(entry, dict) and entry.get("format") == CACHE_FORMAT
        if not valid or not isinstance(entry.get("reply"), str):
            raise KeppError(f"{path}: not an LLM cache entry (expected format {CACHE_FORMAT!r} "
                            f"with a 'reply' string); delete the file to ask again")
        return entry["reply"]

    def put(self, request: dict[str, Any], reply: str) -> None:
        """Store the reply to ``request`` (atomically)."""
        atomic_write_json(self.path(request), {
            "format": CACHE_FORMAT,
            "key": request_key(request),
            "request": request,
            "reply": reply,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.exists() else 0
