"""Writes to memories: the one implementation behind MCP, REST, pages, tasks and commands."""

import hashlib
import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from memories import vectors
from memories.compression import enqueue_compression, reset_compression
from memories.models import Chunk, IndexingStatus, Memory, OwnerTermStatistic
from memories.selectors import memory_get
from memories.validation import clean_content, clean_tags, clean_written_by

logger = logging.getLogger(__name__)

# A claimed memory is left alone by other workers this long; after it, the worker is presumed dead.
INDEXING_LEASE = timedelta(minutes=5)
# A worker claims this many model batches at once when that many wait: the model then sorts the
# whole claim by length (less padding) and the database writes are shared by more memories.
CLAIM_BATCHES = 4


def enqueue_indexing(memory_ids: list[int]) -> None:
    """Queue these memories for embedding once the current transaction commits."""
    from memories.tasks import embed_memories_task

    transaction.on_commit(lambda: embed_memories_task(memory_ids))


@transaction.atomic
def memory_write(
    *,
    owner,
    content: object,
    tags: object = None,
    written_by: object = None,
    created_at: datetime | None = None,
) -> Memory:
    """Validate and store a memory; it is embedded in the background once the transaction commits."""
    content = clean_content(content)
    now = timezone.now()
    memory = Memory(
        owner=owner,
        content=content,
        tags=clean_tags(tags),
        written_by=clean_written_by(written_by),
        created_at=created_at or now,
        updated_at=now,
        indexing_queued_at=now,
    )
    reset_compression(memory, now)
    memory.save(force_insert=True)
    enqueue_indexing([memory.pk])
    enqueue_compression(memory)
    return memory


@transaction.atomic
def memory_update(
    *, owner, public_id: uuid.UUID, content: object = None, tags: object = None, written_by: object = None
) -> Memory:
    """Change a memory's content, tags or client. New content is re-embedded; the old vectors
    keep serving searches until the new ones are stored."""
    memory = memory_get(owner=owner, public_id=public_id)
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    now = timezone.now()
    if content is not None:
        content = clean_content(content)
        if content != memory.content:
            memory.content = content
            reset_compression(memory, now)
            memory.indexing_status = IndexingStatus.PENDING
            memory.indexing_error = ""
            memory.indexing_attempts = 0
            memory.indexing_queued_at = now
            # A worker still embedding the old text will find it changed and store nothing; its
            # lease must not keep the task queued below from embedding the new text now.
            memory.indexing_lease_until = None
            enqueue_indexing([memory.pk])
            enqueue_compression(memory)
    if tags is not None:
        memory.tags = clean_tags(tags)
    if written_by is not None:
        memory.written_by = clean_written_by(written_by)
    memory.updated_at = now
    memory.save()
    memory.refresh_from_db()  # generated columns (token estimates) follow the new content
    return memory


@transaction.atomic
def memory_delete(*, owner, public_id: uuid.UUID) -> None:
    memory_get(owner=owner, public_id=public_id).delete()


def _claim_for_indexing(first_id: int | None, limit: int) -> list[Memory]:
    """Claim up to `limit` pending memories (`first_id` first), skipping rows another worker holds.

    A conditional UPDATE, not a lock held while embedding: a worker that dies leaves a lease that
    simply expires.
    """
    # The locking SELECT sits in a MATERIALIZED CTE: as an `IN (subquery)` the planner may rescan
    # it, and with SKIP LOCKED each rescan can pick other rows, claiming more than `limit`.
    sql = """
        WITH claimable AS MATERIALIZED (
            SELECT id FROM memories_memory
            WHERE indexing_status = 'pending'
              AND (indexing_lease_until IS NULL OR indexing_lease_until < now())
            ORDER BY (id = %s) DESC, indexing_queued_at
            LIMIT %s
            FOR UPDATE SKIP LOCKED
        )
        UPDATE memories_memory AS m SET indexing_lease_until = now() + %s
        FROM claimable WHERE m.id = claimable.id
        RETURNING m.id
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [first_id or 0, limit, INDEXING_LEASE])
        ids = [row[0] for row in cursor.fetchall()]
    return list(Memory.objects.filter(pk__in=ids).only("id", "owner_id", "content"))


def _any_claimable(memory_ids: list[int]) -> bool:
    return (
        Memory.objects.filter(pk__in=memory_ids, indexing_status=IndexingStatus.PENDING)
        .filter(Q(indexing_lease_until__isnull=True) | Q(indexing_lease_until__lt=timezone.now()))
        .exists()
    )


def memories_index(*, memory_ids: list[int], batch_size: int | None = None) -> int:
    """Embed the given pending memories, plus other waiting ones up to `batch_size` (default:
    CLAIM_BATCHES model batches). Returns how many were indexed. Memories already indexed or
    held by another worker are skipped."""
    batch_size = batch_size or settings.GNOSEM_EMBEDDING_BATCH_SIZE * CLAIM_BATCHES
    if memory_ids and not _any_claimable(memory_ids):
        return 0  # another worker's batch took them: leave the rest to their own tasks
    claimed = _claim_for_indexing(memory_ids[0] if memory_ids else None, max(batch_size, len(memory_ids)))
    if not claimed:
        return 0
    try:
        chunks = vectors.embed_memories(claimed, vectors.indexing_embedders())
        return _store_chunks(claimed, chunks)
    except Exception as exc:
        _record_indexing_failure(claimed, exc)
        raise


_MARK_INDEXED_SQL = """
    UPDATE memories_memory AS m
    SET indexing_status = 'indexed', indexing_error = '', indexing_lease_until = NULL
    FROM unnest(%s::bigint[], %s::text[]) AS embedded (id, digest)
    WHERE m.id = embedded.id AND md5(m.content) = embedded.digest AND m.indexing_status = 'pending'
    RETURNING m.id
"""


@transaction.atomic
def _store_chunks(memories: list[Memory], chunks: list[Chunk]) -> int:
    """Replace the chunks of each memory whose content is still what was embedded; one
    transaction for the batch. Returns how many memories were indexed."""
    vectors.check_serving_model_among(chunks)
    digests = [hashlib.md5(memory.content.encode()).hexdigest() for memory in memories]
    with connection.cursor() as cursor:
        cursor.execute(_MARK_INDEXED_SQL, [[memory.pk for memory in memories], digests])
        indexed = {row[0] for row in cursor.fetchall()}
    # The others were edited or deleted while we embedded: the newer task will index them.
    Chunk.objects.filter(memory_id__in=indexed).delete()
    Chunk.objects.bulk_create(chunk for chunk in chunks if chunk.memory_id in indexed)
    return len(indexed)


def _record_indexing_failure(memories: list[Memory], exc: Exception) -> None:
    """Count the attempt and keep the reason; after the last attempt the memory is marked failed
    (it stays stored and findable by keyword)."""
    reason = f"{type(exc).__name__}: {exc}"[:1000]
    logger.exception("embedding failed for %d memories", len(memories))
    last_attempt = settings.GNOSEM_INDEXING_MAX_ATTEMPTS - 1
    Memory.objects.filter(pk__in=[memory.pk for memory in memories]).update(
        indexing_attempts=F("indexing_attempts") + 1,
        indexing_error=reason,
        indexing_lease_until=None,
        indexing_status=Case(
            When(indexing_attempts__gte=last_attempt, then=Value(IndexingStatus.FAILED)),
            default=F("indexing_status"),
        ),
    )


def memories_requeue_stale() -> list[int]:
    """Pending memories whose queue entry is older than the re-queue delay (a lost task, a dead
    worker): mark them queued now and return their ids for the caller to enqueue."""
    return _restamp_overdue(
        waiting="indexing_status = 'pending' AND (indexing_lease_until IS NULL OR indexing_lease_until < now())",
        stamp="indexing_queued_at",
        limit=10000,
    )


def memories_requeue_stale_compressions() -> list[int]:
    """Pending compressions overdue by more than the re-queue delay (their task was lost or its
    worker died): mark them due now and return their ids for the caller to enqueue."""
    return _restamp_overdue(waiting="compression_status = 'pending'", stamp="compression_due_at", limit=1000)


def _restamp_overdue(*, waiting: str, stamp: str, limit: int) -> list[int]:
    """Set `stamp` to now on up to `limit` memories matching `waiting` (SQL) whose `stamp` is older
    than the re-queue delay, skipping rows another transaction holds; returns their ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.GNOSEM_REQUEUE_AFTER_SECONDS)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH stale AS MATERIALIZED (
                SELECT id FROM memories_memory
                WHERE {waiting} AND {stamp} < %s
                ORDER BY {stamp} LIMIT {limit:d}
                FOR UPDATE SKIP LOCKED
            )
            UPDATE memories_memory AS m SET {stamp} = now()
            FROM stale WHERE m.id = stale.id
            RETURNING m.id
            """,
            [cutoff],
        )
        return [row[0] for row in cursor.fetchall()]


def term_statistics_prune() -> int:
    """Delete the BM25 statistics rows of terms no memory contains any more (df = 0; the
    triggers only ever decrement them). Returns how many went. A concurrent write that needs a
    row again waits for this DELETE, then inserts it afresh."""
    return OwnerTermStatistic.objects.filter(df__lte=0).delete()[0]
