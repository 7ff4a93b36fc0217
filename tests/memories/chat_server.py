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
from typing import Any

from django.db import connections

from tests.memories.openai_server import Answer, OpenAICompatibleServer


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


class ChatServer(OpenAICompatibleServer):
    """Serves scripted replies in order; the last one repeats. Records every request body.

    `on_request`, when set, runs once, in the server's thread, before the next request is answered.
    """

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque([Reply(content="TOPIC=unscripted")])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.on_request: Callable[[], None] | None = None
        self._lock = threading.Lock()
        super().__init__()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies = deque(replies)

    def answer(self, content: str) -> None:
        self.script(Reply(content=content))

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            hook, self.on_request = self.on_request, None
            reply = self.replies.popleft() if len(self.replies) > 1 else self.replies[0]
        if hook is not None:
            try:
                hook()
            finally:
                connections.close_all()  # this thread's connections only
        return Answer(reply.status, reply.payload(body.get("model", "")), reply.headers, reply.delay)
