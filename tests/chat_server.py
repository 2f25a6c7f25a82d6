"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

``ChatServer(behaviour)`` serves ``POST /v1/chat/completions`` from a
``ThreadingHTTPServer`` in a background thread (port chosen by the OS).
``behaviour(n, body, prompt)`` decides each reply, ``n`` counting requests
from 0 and ``prompt`` holding the request's text parts; it returns a dict:

- ``{"text": "B"}``: answer (default: ``"The answer is (A)."``),
- ``{"status": 500}``: fail with that HTTP status (``"retry_after"`` adds the header),
- ``{"sleep": s}``: wait ``s`` seconds first (a stall when past the client's timeout).

The server records every body and header and the most requests ever in flight.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[[int, dict[str, Any], str], dict[str, Any]]


def prompt_text(body: dict[str, Any]) -> str:
    """The text parts of all messages of a chat-completions request, joined by newlines."""
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(p["text"] for p in content if p.get("type") == "text")
    return "\n".join(parts)


def image_urls(body: dict[str, Any]) -> list[str]:
    return [p["image_url"]["url"] for m in body.get("messages", []) if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"]


class ChatServer:
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour: Behaviour = behaviour or (lambda n, body, prompt: {})
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server._lock:
                    n = len(server.bodies)
                    server.bodies.append(body)
                    server.headers.append(dict(self.headers.items()))
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    action = server.behaviour(n, body, prompt_text(body))
                    if action.get("sleep"):
                        server._stop.wait(float(action["sleep"]))
                    status = int(action.get("status", 200))
                    if status != 200:
                        extra = {"Retry-After": str(action["retry_after"])} if "retry_after" in action else {}
                        self._send(status, {"error": {"message": f"injected {status}"}}, extra)
                        return
                    text = action.get("text", "The answer is (A).")
                    self._send(
                        200,
                        {
                            "id": f"chatcmpl-{n}",
                            "object": "chat.completion",
                            "model": body.get("model", ""),
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 100 + n, "completion_tokens": 3, "total_tokens": 103 + n},
                        },
                    )
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer
                finally:
                    with server._lock:
                        server.active -= 1

            def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def n_requests(self) -> int:
        with self._lock:
            return len(self.bodies)

    def prompts(self) -> list[str]:
        with self._lock:
            return [prompt_text(b) for b in self.bodies]

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # ends any stall at once
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
