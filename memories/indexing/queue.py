"""Sending work to the background queue: the one place that sends memories (and notes) to be
embedded or compressed, once the current transaction commits; memories to be embedded go to one
indexing task at a time while it waits to start.

Services call it; the huey tasks (memories.tasks) call the services, so this module cannot import
them without a cycle: memories.apps hands them over with `connect()` in `ready()`, before any
request, command or consumer runs.
"""

import logging
import time
from collections.abc import Callable, Sequence

from django.db import transaction
from huey import Huey
from huey.api import TaskWrapper

logger = logging.getLogger(__name__)

# A worker claims this many memories at once when that many wait: the model then sorts the whole
# claim by length (less padding) and the database writes are shared by more memories.
CLAIM_MEMORIES = 256

# While an indexing task is queued and has not started, writes queue no other: when it starts, its
# claim takes their memories with whatever else waits, and a full claim queues the next task
# (services.memories_index). A burst of writes then costs the worker a task per claim, not one per
# write. The mark saying so is kept in the queue's own store (its SQLite file, or Redis), which every
# web and worker process shares, and holds when it was set: a mark older than
# QUEUED_TASK_LOST_SECONDS is taken for a task lost before it started (a consumer killed at that
# instant, a queue that failed between the mark and the task), and a write queues a task again.
INDEXING_TASK_QUEUED = "indexing-task-queued"
QUEUED_TASK_LOST_SECONDS = 60

# The tasks work is sent to, by kind; filled by `connect()`.
TASKS: dict[str, TaskWrapper] = {}


def connect(
    *, embed: TaskWrapper, compress: TaskWrapper, index_note: TaskWrapper, rekey: TaskWrapper, imports: TaskWrapper
) -> None:
    """Send indexing to `embed(memory_ids)`, compression to `compress(memory_id)`, a note's
    indexing to `index_note(note_id)`, a space's re-sealing under its new key to `rekey(space_id)`
    and an import started to `imports(job_id)`."""
    TASKS.update(embed=embed, compress=compress, index_note=index_note, rekey=rekey, imports=imports)


def indexing_batch_size() -> int:
    """How many memories one indexing task takes (CLAIM_MEMORIES, read when called)."""
    return CLAIM_MEMORIES


def enqueue_indexing(memory_ids: Sequence[int]) -> None:
    """Queue these memories for embedding once the current transaction commits: a task that claims
    the first `indexing_batch_size()` of them first, unless an indexing task is queued and has not
    started (its claim takes them)."""
    if memory_ids:
        _send_on_commit("embed", list(memory_ids[: indexing_batch_size()]), unless=_indexing_task_queued)


def enqueue_waiting_indexing() -> None:
    """Queue a task for the memories waiting to be embedded, unless one is queued and has not started."""
    _send_on_commit("embed", [], unless=_indexing_task_queued)


def enqueue_next_claim() -> None:
    """While a full claim embeds, queue a task for the next one, so that another worker claims it
    meanwhile. Not where tasks run as they are queued (GNOSEM_TASKS_IMMEDIATE): the next claim would
    run first, inside this one, and newer memories would be compared for near-duplicates before the
    older ones they restate were stored."""
    if not TASKS["embed"].huey.immediate:
        enqueue_waiting_indexing()


def indexing_task_started() -> None:
    """An indexing task starts, before it claims: writes from now on queue a task of their own."""
    TASKS["embed"].huey.delete(INDEXING_TASK_QUEUED)


def _indexing_task_queued(huey: Huey) -> bool:
    """Whether an indexing task is queued and has not started; when none is, marks the one the
    caller is about to queue."""
    now = time.time()
    if huey.put_if_empty(INDEXING_TASK_QUEUED, now):
        return False
    marked_at = huey.get(INDEXING_TASK_QUEUED, peek=True)
    if marked_at is not None and now - marked_at < QUEUED_TASK_LOST_SECONDS:
        return True
    huey.put(INDEXING_TASK_QUEUED, now)
    return False


def enqueue_compression(memory_ids: Sequence[int]) -> None:
    """Queue these memories for compression once the current transaction commits, one task each
    (a model answers one text at a time)."""
    for memory_id in memory_ids:
        _send_on_commit("compress", memory_id)


def enqueue_note_indexing(note_ids: Sequence[int]) -> None:
    """Queue these notes for embedding once the current transaction commits, one task each (a
    note has up to a thousand or two passages)."""
    for note_id in note_ids:
        _send_on_commit("index_note", note_id)


def enqueue_key_rotation(space_id: int) -> None:
    """Queue the re-sealing of a space under its new key once the current transaction commits."""
    _send_on_commit("rekey", space_id)


def enqueue_import(job_id: int) -> None:
    """Queue an import started (memories.transfer.jobs) once the current transaction commits."""
    _send_on_commit("imports", job_id)


def _send_on_commit(kind: str, *args: object, unless: Callable[[Huey], bool] | None = None) -> None:
    """Send the `kind` task with `args` once the current transaction commits, unless `unless` says
    (asked of the task's queue then) that it need not be.

    The write is stored by then: a queue that cannot be reached (Redis stopped, restarting) must not
    turn it into an error, or the client retries and stores it twice. The memory stays pending, and
    the re-queue sweep (memories.tasks.requeue_stale_memories_task) sends it again once the queue
    answers.
    """
    task = TASKS[kind]

    def send() -> None:
        try:
            if unless is None or not unless(task.huey):
                task(*args)
        except Exception as exc:
            logger.warning(
                "could not queue %s (%s: %s); the memory is stored and waits for the re-queue sweep",
                task.func.__name__,
                type(exc).__name__,
                exc,
            )

    transaction.on_commit(send)
