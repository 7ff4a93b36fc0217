"""memories.indexing.queue: work reaches the queue once the transaction commits; writes queue one
indexing task while it waits to start (it names at most one claim of memories), and a task that
finds a full claim, or leaves memories waiting, queues the next; a write whose task cannot be queued
(Redis stopped) is stored and answered all the same: the memory waits, pending, for the re-queue
sweep. Answering an error would make the client retry and store it twice.
(tests/faults/test_production_on_redis.py stops a real Redis under a real server.)"""

import logging
import socket
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from huey import MemoryHuey, PriorityRedisHuey

from memories import services
from memories.indexing import queue
from memories.models import CompressionStatus, IndexingStatus, Memory
from memories.tasks import compress_memory_task, embed_memories_task, requeue_stale_memories_task
from memories.transfer.importing import import_memories
from tests.memories.stored import with_text

LONG_CONTENT = "The quarterly review covered hiring, the office move, the vendor contracts and the roadmap. " * 5


@pytest.fixture
def sent(monkeypatch) -> MemoryHuey:
    """A queue that keeps what is sent to it; nothing runs."""
    huey = MemoryHuey("gnosem-test-sent")
    monkeypatch.setitem(queue.TASKS, "embed", huey.task()(embed_memories_task))
    monkeypatch.setitem(queue.TASKS, "compress", huey.task()(compress_memory_task))
    return huey


def sent_ids(huey: MemoryHuey, task: str) -> list[list[int] | int]:
    """The argument of each `task` sent (memory ids, or one memory id), in order."""
    return [entry.args[0] for entry in huey.pending() if entry.name.endswith(task)]


@pytest.fixture
def tiny_batches(monkeypatch) -> int:
    """An indexing task takes four memories."""
    monkeypatch.setattr(queue, "CLAIM_MEMORIES", 4)
    assert queue.indexing_batch_size() == 4
    return 4


def test_nothing_is_sent_before_the_transaction_commits(db, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        queue.enqueue_indexing([1, 2])
        queue.enqueue_compression([3])
    assert sent.pending() == []
    for callback in callbacks:
        callback()
    assert sent_ids(sent, "embed_memories_task") == [[1, 2]]
    assert sent_ids(sent, "compress_memory_task") == [3]


def test_writes_queue_one_indexing_task_until_it_starts(db, sent, tiny_batches, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue_indexing(list(range(1, 11)))  # one claim's worth named; its claim takes the others in turn
        queue.enqueue_indexing([11])
        queue.enqueue_indexing([12])
    assert sent_ids(sent, "embed_memories_task") == [[1, 2, 3, 4]]

    queue.indexing_task_started()  # its claim may be made before the next write commits
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue_indexing([13])
        queue.enqueue_indexing([14])
    assert sent_ids(sent, "embed_memories_task") == [[1, 2, 3, 4], [13]]


def test_a_task_lost_before_it_started_does_not_hold_back_later_writes(db, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue_indexing([1])
    assert sent.dequeue() is not None  # the consumer that took it was killed before it started: the mark stays
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue_indexing([2])
    assert sent_ids(sent, "embed_memories_task") == []

    marked_at = sent.get(queue.INDEXING_TASK_QUEUED, peek=True)
    sent.put(queue.INDEXING_TASK_QUEUED, marked_at - queue.QUEUED_TASK_LOST_SECONDS - 1)
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue_indexing([3])
        queue.enqueue_indexing([4])
    assert sent_ids(sent, "embed_memories_task") == [[3]]  # its claim takes 1 and 2 with it


def test_a_full_claim_queues_the_next_task_before_embedding(transactional_db, owner, sent, tiny_batches, monkeypatch):
    written = [services.memory_write(owner=owner, content=f"Burst memory {n}.").pk for n in range(10)]
    assert sent_ids(sent, "embed_memories_task") == [written[:1]]
    assert sent.dequeue() is not None  # a consumer takes it
    queue.indexing_task_started()

    queued_while_embedding = []
    embed_and_store = services._embed_and_store

    def embed_and_store_watched(memories: list[Memory]) -> int:
        queued_while_embedding.append(sent_ids(sent, "embed_memories_task"))
        return embed_and_store(memories)

    monkeypatch.setattr(services, "_embed_and_store", embed_and_store_watched)
    assert services.memories_index(memory_ids=written[:1]) == tiny_batches
    assert queued_while_embedding == [[[]]]  # another worker claims the next batch meanwhile
    assert sent_ids(sent, "embed_memories_task") == [[]]  # still one task for the six left waiting
    assert Memory.objects.filter(indexing_status=IndexingStatus.PENDING).count() == 10 - tiny_batches


def test_tasks_run_as_queued_embed_claims_one_after_another_in_writing_order(
    transactional_db, owner, tiny_batches, monkeypatch
):
    """Where tasks run as they are queued (tests, in-process benchmarks), a full claim queues no
    task ahead of its own embedding: that task would run inside it, and newer memories would be
    compared for near-duplicates before the older ones they restate were stored."""
    batches: list[tuple[str, list[int]]] = []
    embed_and_store = services._embed_and_store

    def embed_and_store_logged(memories: list[Memory]) -> int:
        ids = [memory.pk for memory in memories]
        batches.append(("start", ids))
        stored = embed_and_store(memories)
        batches.append(("end", ids))
        return stored

    monkeypatch.setattr(services, "_embed_and_store", embed_and_store_logged)
    with transaction.atomic():  # the first write's task runs when the burst commits
        written = [services.memory_write(owner=owner, content=f"Burst memory {n}.").pk for n in range(10)]
    claims = [written[start : start + tiny_batches] for start in range(0, 10, tiny_batches)]
    assert batches == [(step, claim) for claim in claims for step in ("start", "end")]
    assert not Memory.objects.filter(indexing_status=IndexingStatus.PENDING).exists()


def test_a_task_whose_memories_another_worker_holds_queues_one_for_those_left_waiting(
    owner, sent, django_capture_on_commit_callbacks
):
    held = services.memory_write(owner=owner, content="Held by another worker's claim.")
    services.memory_write(owner=owner, content="Written while that worker embeds; its write found a task queued.")
    assert [memory.pk for memory in services._claim_for_indexing(held.pk, 1)] == [held.pk]

    with django_capture_on_commit_callbacks(execute=True):
        assert services.memories_index(memory_ids=[held.pk]) == 0
    assert sent_ids(sent, "embed_memories_task") == [[]]


def test_a_task_that_leaves_nothing_waiting_queues_none(owner, sent, django_capture_on_commit_callbacks):
    memory = services.memory_write(owner=owner, content="The only memory waiting.")
    with django_capture_on_commit_callbacks(execute=True):
        assert services.memories_index(memory_ids=[memory.pk]) == 1
    assert sent_ids(sent, "embed_memories_task") == []


def test_the_sweep_queues_a_task_for_lost_memories(
    owner, sent, tiny_batches, settings, django_capture_on_commit_callbacks
):
    settings.GNOSEM_REQUEUE_AFTER_SECONDS = 300
    lost = [services.memory_write(owner=owner, content=f"Lost memory {n}.").pk for n in range(10)]
    Memory.objects.update(indexing_queued_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):  # a consumer runs it outside any transaction
        requeue_stale_memories_task.call_local()
    (named,) = sent_ids(sent, "embed_memories_task")
    assert len(named) == tiny_batches and set(named) <= set(lost)


def test_an_import_queues_one_task_for_its_memories(
    owner, sent, tiny_batches, chat_server, django_capture_on_commit_callbacks
):
    document = {
        "format": "gnosem-export",
        "version": 1,
        "memories": [
            {"content": f"Imported memory {n}.", "created_at": f"2025-01-{n + 1:02d}T09:00:00Z"} for n in range(9)
        ]
        + [{"content": LONG_CONTENT, "created_at": "2025-02-01T09:00:00Z"}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        import_memories(owner=owner, document=document)
    assert [len(batch) for batch in sent_ids(sent, "embed_memories_task")] == [tiny_batches]
    long_memory = with_text(LONG_CONTENT, space__personal_of=owner)
    assert sent_ids(sent, "compress_memory_task") == [long_memory.pk]  # the one long enough, with a model on


@pytest.fixture
def unreachable_queue(monkeypatch) -> Iterator[PriorityRedisHuey]:
    """The tasks are sent to a Redis queue on a port nobody listens on, as a web process with
    REDIS_URL set does while that Redis is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free, and nobody listens on it once the socket is closed
    down = PriorityRedisHuey("gnosem-test-down", url=f"redis://127.0.0.1:{port}/0", results=False)
    monkeypatch.setitem(queue.TASKS, "embed", down.task()(embed_memories_task))
    monkeypatch.setitem(queue.TASKS, "compress", down.task()(compress_memory_task))
    yield down
    down.storage.conn.close()


@pytest.fixture
def compression_on(settings) -> None:
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # never called: its task is never sent
    settings.GNOSEM_LLM_MODEL = "test-compressor"


def test_a_write_is_stored_and_answered_when_the_queue_cannot_be_reached(
    transactional_db, owner_token, unreachable_queue, compression_on, caplog
):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {owner_token}")
    with caplog.at_level(logging.WARNING, logger="memories.indexing.queue"):
        response = client.post("/api/v1/memories", {"content": LONG_CONTENT}, content_type="application/json")

    assert response.status_code == 201, response.content
    memory = Memory.objects.get()
    assert str(memory.public_id) == response.json()["id"]
    assert memory.indexing_status == IndexingStatus.PENDING  # the sweep sends it once Redis is back
    assert memory.compression_status == CompressionStatus.PENDING
    assert "could not queue embed_memories_task (ConnectionError" in caplog.text
    assert "could not queue compress_memory_task (ConnectionError" in caplog.text
