"""What the local OpenAI-compatible servers of the tests share (the chat-completions one and the
embeddings one): a real HTTP server on loopback whose `respond` answers each JSON POST, after the
answer's delay; a client that gives up first (its timeout) is what a slow model sees."""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    payload: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class OpenAICompatibleServer:
    """Serves http://127.0.0.1:<port>/v1 while entered as a context manager."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        """The answer to one request (`headers` with lower-case names)."""
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = server.respond(body, {name.lower(): value for name, value in self.headers.items()})
                time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer.payload)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(answer.payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
