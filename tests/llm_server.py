"""A scripted chat-completions server on 127.0.0.1 for tests and benchmarks.

It listens on an ephemeral port (port 0) in a background thread and answers
``POST /v1/chat/completions`` like an OpenAI-compatible endpoint. What it answers is
decided by a *responder*: ``responder(body) -> str | Scripted`` where ``body`` is the
request's JSON. Every request is recorded (``server.requests``) so tests can check the
prompt text and count the queries.

    with ScriptedChatServer(lambda body: "Step 1: a\\nStep 2: b") as server:
        client = ChatClient(LLMConfig(server.url, "m"))

Only loopback traffic: the server binds 127.0.0.1 and stops when the block ends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    """One scripted answer: a chat message ``content``, or a ``raw`` body, with an HTTP
    ``status`` and a ``delay`` in seconds before answering (for timeouts); ``drop`` closes
    the connection without any response."""

    content: str | None = None
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0
    drop: bool = False


Responder = Callable[[dict], "str | Scripted"]


def prompt_of(body: dict) -> str:
    """The last user message of a request body."""
    return [m["content"] for m in body.get("messages", []) if m.get("role") == "user"][-1]


def is_verification(body: dict) -> bool:
    return prompt_of(body).startswith("Is the following action sequence possible?")


def scripted_plans(plan_replies: Sequence[str | Scripted], verify_reply: str | Scripted = "Yes") -> Responder:
    """Planning queries get ``plan_replies[seed]`` (the client sends ``seed = sample``),
    verification queries get ``verify_reply``."""

    def respond(body: dict) -> str | Scripted:
        if is_verification(body):
            return verify_reply
        return plan_replies[int(body.get("seed", 0)) % len(plan_replies)]

    return respond


class ScriptedChatServer:
    """A chat endpoint on ``127.0.0.1:<ephemeral port>`` answering from ``responder``."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, b'{"error": "request body is not JSON"}')
                    return
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": "not found"}')
                    return
                answer = server.responder(body)
                if isinstance(answer, str):
                    answer = Scripted(content=answer)
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.drop:
                    self.close_connection = True
                    return
                if answer.raw is not None:
                    payload = answer.raw
                elif answer.status != 200:
                    payload = json.dumps({"error": {"message": answer.content or "scripted error"}}).encode()
                else:
                    payload = json.dumps({
                        "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": answer.content}}],
                    }).encode()
                try:
                    self._send(answer.status, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to configure a client with (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def prompts(self) -> list[str]:
        return [prompt_of(r["body"]) for r in self.requests]

    def start(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
