"""A write whose task cannot be queued (Redis stopped) is stored and answered all the same: the
memory waits, pending, for the re-queue sweep. Answering an error would make the client retry and
store it twice. (tests/faults/test_production_on_redis.py stops a real Redis under a real server.)"""

import logging
import socket
from collections.abc import Iterator

import pytest
from django.test import Client
from huey import PriorityRedisHuey

import memories.tasks
from memories.models import CompressionStatus, IndexingStatus, Memory
from memories.tasks import compress_memory_task, embed_memories_task

LONG_CONTENT = "The quarterly review covered hiring, the office move, the vendor contracts and the roadmap. " * 5


@pytest.fixture
def unreachable_queue(monkeypatch) -> Iterator[PriorityRedisHuey]:
    """The tasks are sent to a Redis queue on a port nobody listens on, as a web process with
    REDIS_URL set does while that Redis is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free, and nobody listens on it once the socket is closed
    queue = PriorityRedisHuey("gnosem-test-down", url=f"redis://127.0.0.1:{port}/0", results=False)
    monkeypatch.setattr(memories.tasks, "embed_memories_task", queue.task()(embed_memories_task))
    monkeypatch.setattr(memories.tasks, "compress_memory_task", queue.task()(compress_memory_task))
    yield queue
    queue.storage.conn.close()


@pytest.fixture
def compression_on(settings) -> None:
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # never called: its task is never sent
    settings.GNOSEM_LLM_MODEL = "test-compressor"


def test_a_write_is_stored_and_answered_when_the_queue_cannot_be_reached(
    transactional_db, owner_token, unreachable_queue, compression_on, caplog
):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {owner_token}")
    with caplog.at_level(logging.WARNING, logger="memories.tasks"):
        response = client.post("/api/v1/memories", {"content": LONG_CONTENT}, content_type="application/json")

    assert response.status_code == 201, response.content
    memory = Memory.objects.get()
    assert str(memory.public_id) == response.json()["id"]
    assert memory.indexing_status == IndexingStatus.PENDING  # the sweep sends it once Redis is back
    assert memory.compression_status == CompressionStatus.PENDING
    assert "could not queue embed_memories_task (ConnectionError" in caplog.text
    assert "could not queue compress_memory_task (ConnectionError" in caplog.text
