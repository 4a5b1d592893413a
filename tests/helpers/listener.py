"""A listener on 127.0.0.1 that records every connection made to it and the bytes it received (a
request line and its headers): what a test checks when nothing may reach it, or when only some
requests may (the operator's key in an ``Authorization`` header)."""

from __future__ import annotations

import socket
import threading


class RecordingListener:
    """Accepts connections on ``127.0.0.1:<ephemeral port>`` and keeps what each sent (``received``:
    one bytes object per connection), answering ``HTTP 404`` so a client never waits."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        """A chat-completions base URL pointing here."""
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2.0)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and len(data) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass
                self.received.append(data)

    def __enter__(self) -> RecordingListener:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()
