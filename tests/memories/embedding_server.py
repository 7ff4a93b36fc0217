"""A local OpenAI-compatible `/v1/embeddings` server, as Ollama, TEI or vLLM would be, serving the
shipped all-MiniLM-L6-v2 model's real vectors: what the remote-embedding tests search with finds
by meaning. A test can script failures instead (status codes, delays, answers of the wrong shape)
and reads back every request it made."""

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memories.indexing import embedding
from tests.memories.openai_server import Answer, OpenAICompatibleServer


@dataclass
class Failure:
    """An answer other than the embeddings: a status and body, after `delay` seconds; or a
    `payload` built from the request instead of the model's vectors."""

    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    payload: Callable[[list[str], list[list[float]]], Any] | None = None


class EmbeddingServer(OpenAICompatibleServer):
    """Answers with the model's vectors, unless a scripted failure is queued: each queued failure
    answers one request, in order."""

    def __init__(self) -> None:
        self.failures: deque[Failure] = deque()
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        super().__init__()

    def fail(self, *failures: Failure) -> None:
        with self._lock:
            self.failures.extend(failures)

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(headers.get("authorization"))
            failure = self.failures.popleft() if self.failures else None
        if failure is not None and failure.payload is None:
            return Answer(failure.status, failure.body, failure.headers, failure.delay)
        texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]
        vectors = embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).embed(texts).tolist()
        if failure is not None:
            return Answer(200, json.dumps(failure.payload(texts, vectors)).encode())
        data = [{"object": "embedding", "index": index, "embedding": vector} for index, vector in enumerate(vectors)]
        answer = {"object": "list", "model": body.get("model"), "data": data, "usage": {"prompt_tokens": 0}}
        return Answer(200, json.dumps(answer).encode())
