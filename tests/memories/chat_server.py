"""A real HTTP server speaking the OpenAI chat-completions protocol, answering what a test scripts.

It stands in for the one part that cannot exist here: a remote model. Everything between it and
Gnosem (the openai client, HTTP, timeouts, status codes) is real.
"""

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.db import connections


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a chat completion whose message is `content`, or an error `status`
    with an OpenAI-style error body, or `body` sent as is; after `delay` seconds."""

    content: str | None = None
    status: int = 200
    body: bytes | None = None
    delay: float = 0.0
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self, model: str) -> bytes:
        if self.body is not None:
            return self.body
        if self.status != 200:
            error = {"message": f"scripted failure {self.status}", "type": "server_error", "code": None}
            return json.dumps({"error": error}).encode()
        message = {"role": "assistant", "content": self.content}
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return json.dumps(completion).encode()


class ChatServer:
    """Serves scripted replies in order; the last one repeats. Records every request body.

    `on_request`, when set, runs once, in the server's thread, before the next request is answered.
    """

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque([Reply(content="TOPIC=unscripted")])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.on_request: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies = deque(replies)

    def answer(self, content: str) -> None:
        self.script(Reply(content=content))

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append({name.lower(): value for name, value in headers.items()})
            hook, self.on_request = self.on_request, None
            reply = self.replies.popleft() if len(self.replies) > 1 else self.replies[0]
        if hook is not None:
            try:
                hook()
            finally:
                connections.close_all()  # this thread's connections only
        return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reply = server._next(body, dict(self.headers))
                time.sleep(reply.delay)
                payload = reply.payload(body.get("model", ""))
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): exactly what a slow model sees

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
