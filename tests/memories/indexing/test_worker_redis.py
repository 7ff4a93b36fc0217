"""A real huey consumer on Redis indexes what the web process wrote.

The consumer is `manage.py run_huey` in a subprocess, configured only through the environment
(REDIS_URL, a queue name of its own, DATABASE_URL pointing at the test database), as production
runs it, at the worker niceness. Needs the Redis server at REDIS_TEST_URL; skipped when it cannot be reached.
"""

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connection
from huey import PriorityRedisHuey

import memories.indexing.queue
from accounts.spaces import personal_space_of
from memories import services
from memories.models import Chunk, IndexingStatus, Memory
from memories.tasks import embed_memories_task

REDIS_TEST_URL = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/15")
INDEXING_TIMEOUT = 90  # the consumer loads the embedding model first (~10 s)

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def redis_url() -> str:
    client = redis.Redis.from_url(REDIS_TEST_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis at {REDIS_TEST_URL} is unreachable ({exc}); set REDIS_TEST_URL to run this test.")
    finally:
        client.close()
    return REDIS_TEST_URL


@pytest.fixture
def queue(redis_url) -> Iterator[PriorityRedisHuey]:
    """A queue of this test's own on the test Redis, emptied afterwards."""
    huey = PriorityRedisHuey(f"gnosem-test-{uuid.uuid4().hex[:12]}", url=redis_url, results=False)
    yield huey
    huey.flush()
    huey.storage.conn.close()


def consumer_database_url() -> str:
    """The test database of the embedded server, as a DATABASE_URL another process can use."""
    connection.ensure_connection()
    params = connection.settings_dict
    return f"postgresql://{params['USER']}@/{quote(params['NAME'])}?host={quote(params['HOST'])}"


@pytest.fixture
def web_enqueues_to(queue, monkeypatch) -> None:
    """This process enqueues embedding tasks into the Redis queue, as a web process with
    REDIS_URL set does (the test settings otherwise run tasks in-process)."""
    monkeypatch.setitem(memories.indexing.queue.TASKS, "embed", queue.task()(embed_memories_task))


@pytest.fixture
def start_consumer(transactional_db, redis_url, queue) -> Iterator:
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "GNOSEM_QUEUE_NAME": queue.name,
            "DATABASE_URL": consumer_database_url(),
            "GNOSEM_WORKERS": "1",
        }
        env.pop("GNOSEM_TASKS_IMMEDIATE", None)
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run_huey"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
        if "Traceback" in (stderr or ""):
            print(stderr[-5000:], file=sys.stderr)  # shown by pytest if the test failed


def wait_for_indexing(memory_ids: list[int], consumer: subprocess.Popen) -> None:
    deadline = time.monotonic() + INDEXING_TIMEOUT
    statuses: set[str] = set()
    while time.monotonic() < deadline:
        statuses = set(Memory.objects.filter(pk__in=memory_ids).values_list("indexing_status", flat=True))
        if statuses == {IndexingStatus.INDEXED}:
            return
        errors = list(Memory.objects.filter(pk__in=memory_ids).values_list("indexing_error", flat=True))
        assert IndexingStatus.FAILED not in statuses, errors
        assert consumer.poll() is None, f"the consumer exited with status {consumer.returncode}"
        time.sleep(0.5)
    pytest.fail(f"memories not indexed within {INDEXING_TIMEOUT} s: {statuses}")


def test_memories_written_here_are_indexed_by_a_consumer_on_redis(owner, queue, web_enqueues_to, start_consumer):
    memories = [
        services.memory_write(owner=owner, content=f"Worker test memory {i}: the build cache lives on NFS.")
        for i in range(3)
    ]
    ids = [memory.pk for memory in memories]
    # The first write queued a task by name in Redis, marked there as waiting to start; the others
    # found the mark and queued none. Nothing ran in this process.
    assert queue.pending_count() == 1
    assert not Chunk.objects.filter(memory_id__in=ids).exists()

    consumer = start_consumer()
    wait_for_indexing(ids, consumer)
    # One chunk each, plus an in-context reading for the two written right after another.
    assert Chunk.objects.filter(memory_id__in=ids, position=0).count() == 3
    assert Chunk.objects.filter(memory_id__in=ids).count() == 5
    assert set(Chunk.objects.filter(memory_id__in=ids).values_list("space_id", flat=True)) == {
        personal_space_of(owner).pk
    }
    assert queue.pending_count() == 0  # its claim took all three


def thread_niceness(process: subprocess.Popen) -> set[int]:
    """The niceness of each thread of a running process (field 19 of /proc/PID/task/TID/stat)."""
    task_dir = f"/proc/{process.pid}/task"
    values = set()
    for thread_id in os.listdir(task_dir):
        with open(f"{task_dir}/{thread_id}/stat") as stat:
            values.add(int(stat.read().rsplit(")", 1)[1].split()[16]))
    return values


def test_every_thread_of_the_consumer_embeds_at_the_worker_niceness(owner, web_enqueues_to, start_consumer):
    memory = services.memory_write(owner=owner, content="The consumer yields the cores to web requests.")

    consumer = start_consumer()
    wait_for_indexing([memory.pk], consumer)

    # The model's own threads included: they were started after the niceness was set.
    assert thread_niceness(consumer) == {settings.GNOSEM_WORKER_NICENESS}
