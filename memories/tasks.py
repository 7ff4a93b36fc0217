"""Background work: thin huey wrappers around services (tasks take ids, never objects).

Services send work here through memories.indexing.queue; no task enqueues another (a compression retries
itself later), so that only services decide what is queued.
"""

import logging
import threading

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memories import health, services, space_keys
from memories.compression import services as compression
from memories.encryption.audit import sealed_audit
from memories.encryption.rotation import rotation_continue
from memories.graph import linking as graph
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing import queue, vector_indexes, vectors
from memories.notes import services as notes
from memories.transfer import jobs

logger = logging.getLogger(__name__)

# A compression that finds every slot taken tries again this much later.
BUSY_RETRY_SECONDS = 5
# The compression slots of this process, by the consumer's thread count (see compression_slots).
_slots: dict[int, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def compression_slots() -> threading.BoundedSemaphore:
    """The slots compressions of this process take. A model may take many seconds to answer: at most
    all but one of a consumer's threads wait on it at once, so one is always free to embed (a
    one-thread consumer takes both kinds in turn)."""
    workers = settings.HUEY["consumer"]["workers"]
    with _slots_lock:  # the consumer's threads start together: they must share one semaphore
        if workers not in _slots:
            _slots[workers] = threading.BoundedSemaphore(max(1, workers - 1))
        return _slots[workers]


@on_startup()
def load_embedding_model() -> None:
    """Load and warm the models when a consumer starts, not inside the first task it runs (every
    worker thread runs this; each model is loaded and warmed once per process)."""
    embedders = vectors.indexing_embedders()
    warmed = [embedder for embedder in embedders if embedder.warm_up()]
    for embedder in warmed:
        logger.info("embedding model %s loaded (%d dimensions)", embedder.name, embedder.dimension)
    if warmed and len(embedders) > 1:
        logger.warning(
            "GNOSEM_EMBEDDING_MODEL is %s but search still uses %s: new memories are embedded with both "
            "until `manage.py reembedmemories` has re-embedded the others and switched search over",
            *[embedder.name for embedder in embedders],
        )


@db_task(retries=2, retry_delay=30)
def embed_memories_task(memory_ids: list[int]) -> int:
    """Embed these memories (and other waiting ones, up to a batch; without ids, one batch of
    whatever waits). Writes from now on queue a task of their own: this one may have claimed
    before they commit."""
    queue.indexing_task_started()
    return services.memories_index(memory_ids=memory_ids)


@db_task(retries=2, retry_delay=30)
def index_note_task(note_id: int) -> bool:
    """Embed a note's passages."""
    return notes.note_index(note_id)


# Below the embedding tasks' default priority: a memory found by meaning matters more than a
# cheaper read, and a slow model must not hold back embedding when both wait.
@db_task(priority=-1)
def compress_memory_task(memory_id: int, attempt: int = 1) -> None:
    """Compress one memory; after a transient failure, try again later with back-off."""
    slots = compression_slots()
    if not slots.acquire(blocking=False):
        compression.postpone(memory_id, BUSY_RETRY_SECONDS)
        compress_memory_task.schedule((memory_id, attempt), delay=BUSY_RETRY_SECONDS)
        return
    try:
        run = compression.memory_compress(memory_id=memory_id, attempt=attempt)
    finally:
        slots.release()
    if run is not None and run.retry_in is not None:
        compress_memory_task.schedule((memory_id, attempt + 1), delay=run.retry_in)


@db_periodic_task(crontab(minute="*"))
def requeue_stale_memories_task() -> int:
    """Nothing is lost when a worker dies or a queue entry vanishes: re-queue what waits too long."""
    ids = indexing_lifecycle.requeue_stale(indexing_lifecycle.MEMORIES)
    compression_ids = services.memories_requeue_stale_compressions()
    note_ids = indexing_lifecycle.requeue_stale(indexing_lifecycle.NOTES)
    if ids or compression_ids or note_ids:
        logger.info(
            "re-queued %d memories for embedding, %d for compression, %d notes",
            len(ids),
            len(compression_ids),
            len(note_ids),
        )
    return len(ids) + len(compression_ids) + len(note_ids)


@db_periodic_task(crontab(minute="*"))
def merge_entity_links_task() -> int:
    """Every minute: merge the rows of the graph's links that changed (memories.graph.linking.links_merge)."""
    return graph.links_merge()


@db_periodic_task(crontab(minute="17"))
def prune_term_statistics_task() -> int:
    """Hourly: drop the statistics of terms that left every memory."""
    return services.term_statistics_prune()


@db_periodic_task(crontab(minute="23"))
def prune_entities_task() -> int:
    """Hourly: drop the entities no memory or note mentions any more."""
    return graph.entities_prune()


@on_startup()
def record_consumer_start() -> None:
    """A consumer that just started (its models loaded) counts as a heartbeat for /healthz."""
    health.worker_heartbeat_record()


@db_task(retries=2, retry_delay=60)
def rotate_space_key_task(space_id: int) -> bool:
    """Re-seal a space's memories and notes under its new key; whether the rotation is still under
    way (its older keys wait for their time to be dropped: the periodic task ends it)."""
    return rotation_continue(space_id) is not None


@db_task(retries=2, retry_delay=60)
def import_file_task(job_id: int) -> bool:
    """Import a started file (memories.transfer.jobs); whether it ran here (not held elsewhere)."""
    return jobs.import_job_run(job_id) is not None


@db_periodic_task(crontab(minute="*"))
def import_jobs_continue_task() -> int:
    """Every minute: carry on imports no process holds (a worker killed part-way)."""
    return jobs.import_jobs_continue()


@db_periodic_task(crontab(minute="*/10"))
def rotations_continue_task() -> int:
    """Every ten minutes: carry on key rotations (one a dead worker left part-way, older keys due to go)."""
    return space_keys.rotations_continue()


@db_periodic_task(crontab(minute="41", hour="3"))
def sealed_audit_task() -> int:
    """Every night: open every sealed value, for /healthz; how many do not open."""
    audit = sealed_audit()
    health.sealed_audit_record(audit)
    return len(audit.unreadable)


@db_periodic_task(crontab(minute="*"))
def worker_heartbeat_task() -> None:
    """Every minute, through the queue: tell /healthz a consumer of this queue takes tasks."""
    health.worker_heartbeat_record()


@db_periodic_task(crontab(minute="*/10"))
def vector_indexes_task() -> int:
    """Every ten minutes: build the HNSW indexes of spaces grown large, drop those no longer wanted."""
    report = vector_indexes.vector_indexes_maintain(progress=logger.info)
    return len(report.built)
