"""A local OpenAI-compatible `/v1/embeddings` server, as Ollama, TEI or vLLM would be, serving the
shipped all-MiniLM-L6-v2 model's real vectors: what the remote-embedding tests search with finds
by meaning. A test can script failures instead (status codes, delays, answers of the wrong shape)
and reads back every request it made."""

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memories import embedding


@dataclass
class Failure:
    """An answer other than the embeddings: a status and body, after `delay` seconds; or a
    `payload` built from the request instead of the model's vectors."""

    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    payload: Callable[[list[str], list[list[float]]], Any] | None = None


class EmbeddingServer:
    """Answers with the model's vectors, unless a scripted failure is queued: each queued failure
    answers one request, in order."""

    def __init__(self) -> None:
        self.failures: deque[Failure] = deque()
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def fail(self, *failures: Failure) -> None:
        with self._lock:
            self.failures.extend(failures)

    def _next(self, body: dict[str, Any], authorization: str | None) -> Failure | None:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            return self.failures.popleft() if self.failures else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                failure = server._next(body, self.headers.get("Authorization"))
                texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]
                if failure is not None and failure.payload is None:
                    time.sleep(failure.delay)
                    self._send(failure.status, failure.body, failure.headers)
                    return
                vectors = embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).embed(texts).tolist()
                if failure is not None:
                    answer = failure.payload(texts, vectors)
                else:
                    answer = {
                        "object": "list",
                        "model": body.get("model"),
                        "data": [
                            {"object": "embedding", "index": index, "embedding": vector}
                            for index, vector in enumerate(vectors)
                        ],
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    }
                self._send(200, json.dumps(answer).encode(), {})

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> "EmbeddingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
