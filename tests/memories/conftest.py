"""A chat-completions server the test scripts, with Gnosem's compression pointed at it."""

import socket
from collections.abc import Iterator

import pytest

from tests.memories.chat_server import ChatServer

MODEL = "test-compressor"
API_KEY = "sk-test-key"


@pytest.fixture
def chat_server(settings) -> Iterator[ChatServer]:
    """Compression on, against a local server; quick timeouts and no waiting between retries."""
    with ChatServer() as server:
        settings.GNOSEM_LLM_BASE_URL = server.url
        settings.GNOSEM_LLM_MODEL = MODEL
        settings.GNOSEM_LLM_API_KEY = API_KEY
        settings.GNOSEM_LLM_TIMEOUT_SECONDS = 0.5
        settings.GNOSEM_LLM_MAX_ATTEMPTS = 3
        settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 0
        yield server


@pytest.fixture
def closed_port_url(settings) -> str:
    """Compression on, against a port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    settings.GNOSEM_LLM_BASE_URL = url
    settings.GNOSEM_LLM_MODEL = MODEL
    settings.GNOSEM_LLM_MAX_ATTEMPTS = 2
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 0
    return url
