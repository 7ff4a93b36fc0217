"""Writes to memories: the one implementation behind MCP, REST, pages, tasks and commands."""

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from psycopg import sql

from accounts.reach import Actor, reach_of, user_of
from gnosem.errors import ValidationError
from gnosem.types import Owner
from memories.compression.services import awaiting_compression, reset_compression
from memories.encryption.derived import digests_under_every_key, text_digest
from memories.encryption.keys import current_key
from memories.graph.linking import entities_link
from memories.hygiene.links import links_lock, loop_closers
from memories.hygiene.near_duplicates import near_duplicates_link
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing import vectors
from memories.indexing.chunking import Span
from memories.indexing.lifecycle import MEMORIES, restamp_overdue
from memories.indexing.queue import (
    enqueue_compression,
    enqueue_indexing,
    enqueue_next_claim,
    enqueue_waiting_indexing,
    indexing_batch_size,
)
from memories.indexing.sequences import (
    context_readers,
    context_readers_of_inserted,
    embedding_pieces,
    memory_texts,
    sequence_neighbours,
)
from memories.limits.quotas import quota_check, space_check, text_growth, token_estimate
from memories.models import (
    MAX_ALSO_WRITTEN_BY,
    MAX_REVISIONS_PER_MEMORY,
    MAX_TAGS,
    Chunk,
    KeptApart,
    Memory,
    MemoryRevision,
    SpaceTermStatistic,
)
from memories.selectors import memory_get_to_change
from memories.validation import (
    MAX_SUPERSEDES,
    clean_content,
    clean_flag,
    clean_memory_ids,
    clean_tags,
    clean_written_by,
)

logger = logging.getLogger(__name__)


@transaction.atomic
def memory_write(
    *,
    owner: Actor,
    content: object,
    tags: object = None,
    written_by: object = None,
    created_at: datetime | None = None,
    supersedes: object = None,
    space: object = None,
) -> Memory:
    """Validate and store a memory in `space` (a reached space's name or id; default: the caller's
    default write space); it is embedded in the background once the transaction commits.

    The same text (case and spacing aside) written again to that space returns the current memory
    that holds it, marked `written_again`, instead of a second copy: its tags gain the new ones (as
    far as the tag limit allows) and its `also_written_by` the new client. `supersedes` (ids of
    memories in that space) marks those as corrected by this one; an unknown id or a cycle writes
    nothing."""
    reach = reach_of(owner)
    space_id = reach.write_space(space).id
    content = clean_content(content)
    tags = clean_tags(tags)
    written_by = clean_written_by(written_by)
    # The text's turn comes first, before any row lock: a write of the same text holds it while it
    # waits for the row that holds the text, which this write may be about to supersede.
    _take_text_turn(space_id, content)
    superseded = _memories_to_supersede(space_id, supersedes)
    existing = _current_with_same_text(space_id, content)
    if existing is not None:
        _record_written_again(existing, tags, written_by)
        _supersede(existing, superseded)
        existing.written_again = True
        return existing
    quota_check(owner=reach.user, space_id=space_id, items=1, characters=len(content), tokens=token_estimate(content))
    now = timezone.now()
    memory = Memory(
        space_id=space_id,
        author=reach.user,
        content=content,
        tags=tags,
        written_by=written_by,
        created_at=created_at or now,
        updated_at=now,
        indexing_queued_at=now,
    )
    reset_compression(memory, now)
    memory.save(force_insert=True)
    _supersede(memory, superseded)
    enqueue_indexing([memory.pk])
    enqueue_compression(awaiting_compression([memory]))
    # Dated before a memory already written (an earlier `created_at`), it is that one's context now.
    _reread_in_context(context_readers([memory.pk]), forget=False)
    return memory


# Writes of the same text to one space take turns (a transaction-scoped advisory lock on the
# space and the text's digest), so two at once cannot both store it.
_LOCK_TEXT_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('gnosem-text:' || %s || ':' || %s, 0))"


def _take_text_turn(space_id: int, content: str) -> None:
    """Wait for the other writes of this text (case and spacing aside) to the space to commit; the
    turn is held until the transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_TEXT_SQL, [str(space_id), text_digest(current_key(space_id), content)])


def _current_with_same_text(space_id: int, content: str) -> Memory | None:
    """The space's oldest current (not superseded) memory with this text, case and spacing aside,
    locked; called with the text's turn taken. Its digest is looked up under each of the space's
    keys (a space being re-keyed holds both)."""
    digests = digests_under_every_key(text_digest, content, [space_id])
    return (
        Memory.objects.select_for_update()
        .filter(space_id=space_id, superseded_by__isnull=True, content_digest__in=digests)
        .order_by("created_at", "id")
        .first()
    )


def _record_written_again(memory: Memory, tags: list[str], written_by: str) -> None:
    """Keep who wrote the memory's text again and the tags they gave it, as far as the limits
    (MAX_TAGS, MAX_ALSO_WRITTEN_BY) allow."""
    new_tags = [tag for tag in tags if tag not in memory.tags][: MAX_TAGS - len(memory.tags)]
    new_writer = (
        written_by
        and written_by not in {memory.written_by, *memory.also_written_by}
        and len(memory.also_written_by) < MAX_ALSO_WRITTEN_BY
    )
    if not new_tags and not new_writer:
        return
    memory.tags = [*memory.tags, *new_tags]
    if new_writer:
        memory.also_written_by = [*memory.also_written_by, written_by]
    memory.save(update_fields=["tags", "also_written_by"])


def _memories_to_supersede(space_id: int, supersedes: object) -> list[Memory]:
    """The space's memories `supersedes` names, locked (after the space's links lock); an id the
    space has no memory with is refused: a correction stays within its space."""
    public_ids = clean_memory_ids("supersedes", supersedes, maximum=MAX_SUPERSEDES)
    if not public_ids:
        return []
    links_lock(space_id)
    found = {
        memory.public_id: memory
        for memory in Memory.objects.select_for_update().filter(space_id=space_id, public_id__in=public_ids)
    }
    missing = [str(public_id) for public_id in public_ids if public_id not in found]
    if missing:
        raise ValidationError(
            "supersedes",
            f"no memory with id {missing[0]} in the space written to; nothing was written. "
            "memory_search or memory_list show the ids, and a memory corrects only memories of its own space.",
        )
    return [found[public_id] for public_id in public_ids]


def _supersede(successor: Memory, memories: list[Memory]) -> None:
    """Mark `memories` (from `_memories_to_supersede`, which took the space's links lock) as
    corrected by `successor`. Refused, before anything changes, when one of them is the successor
    itself or comes after it in its chain of corrections (a cycle)."""
    if not memories:
        return
    looping = set(loop_closers("superseded_by", successor.pk, [memory.pk for memory in memories]))
    for memory in memories:
        if memory.pk == successor.pk:
            raise ValidationError("supersedes", f"memory {memory.public_id} cannot supersede itself.")
        if memory.pk in looping:
            raise ValidationError(
                "supersedes",
                f"memory {memory.public_id} already supersedes {successor.public_id} (directly or through "
                "others); superseding it back would make a cycle. Nothing was changed.",
            )
    Memory.objects.filter(pk__in=[memory.pk for memory in memories]).update(superseded_by=successor)


@transaction.atomic
def memory_reinstate(*, owner: Actor, public_id: uuid.UUID) -> Memory:
    """Make a superseded memory current again (it returns to search, counts and session_start)."""
    memory = memory_get_to_change(owner=owner, public_id=public_id)
    Memory.objects.filter(pk=memory.pk).update(superseded_by=None)
    memory.superseded_by = None
    return memory


# What memory_update changes, as its keyword arguments.
UPDATABLE_FIELDS = ("content", "tags", "written_by", "pinned", "supersedes")


@transaction.atomic
def memory_update(
    *,
    owner: Actor,
    public_id: uuid.UUID,
    content: object = None,
    tags: object = None,
    written_by: object = None,
    pinned: object = None,
    supersedes: object = None,
) -> Memory:
    """Change a memory's content, tags, client or pin, or mark others as superseded by it. The
    version a change of text, tags or client replaces is kept (memory_history).

    New content is re-embedded; the old vectors keep serving searches until the new ones are
    stored. A new text or client also changes what the next memory of its sequence reads in
    context: that one's in-context reading is dropped at once and it is re-embedded too (so is this
    one, when a new client gives it another predecessor)."""
    if all(value is None for value in (content, tags, written_by, pinned, supersedes)):
        raise ValidationError(
            "content", "nothing to change: give at least one of content, tags, written_by, pinned or supersedes."
        )
    pinned = clean_flag("pinned", pinned)
    memory = memory_get_to_change(owner=owner, public_id=public_id)
    superseded = _memories_to_supersede(memory.space_id, supersedes)
    written_by = None if written_by is None else clean_written_by(written_by)
    moves = written_by is not None and written_by != memory.written_by
    readers: list[int] = []
    if content is not None or moves:
        # The memories that read this one in context (its successor, and under a new client the
        # successor there) are re-embedded with it; locked with it in id order, as a worker
        # storing vectors locks them, so that neither waits for the other in a cycle.
        readers = context_readers([memory.pk])
        if moves:
            readers += context_readers([memory.pk], written_by=written_by, space_id=memory.space_id)
        _lock_in_order([memory.pk, *readers])
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    _supersede(memory, superseded)
    before = (memory.content, list(memory.tags), memory.written_by)
    length_before = memory.content_chars  # a text that does not open keeps its stored length
    texts_before = (memory.content, memory.content_optimized)
    previous_before = sequence_neighbours(memory.space_id, [memory.pk])[memory.pk][0] if moves else None
    rereading = moves
    now = timezone.now()
    if content is not None:
        content = clean_content(content)
        if content != memory.content:
            rereading = True
            memory.content = content
            reset_compression(memory, now)
            indexing_lifecycle.back_to_pending(MEMORIES, memory, now)
            enqueue_indexing([memory.pk])
            enqueue_compression(awaiting_compression([memory]))
    if tags is not None:
        memory.tags = clean_tags(tags)
    if written_by is not None:
        memory.written_by = written_by
    if pinned is not None:
        memory.pinned = pinned
    if (memory.content, memory.tags, memory.written_by) != before:
        # The version replaced is kept, and its text counts toward the quota like the memory's own.
        growth = text_growth(added=[before[0], memory.content, memory.content_optimized], removed=texts_before)
        # Its texts count toward its author's quota, and its space's.
        quota_check(owner=memory.author or user_of(owner), space_id=memory.space_id, **growth)
        _keep_revision(memory, *before, length=length_before, replaced_at=now)
    memory.updated_at = now
    memory.save()
    if (memory.content, memory.tags) != before[:2]:
        entities_link([memory.pk])
    if moves and sequence_neighbours(memory.space_id, [memory.pk])[memory.pk][0] != previous_before:
        readers.append(memory.pk)  # under its new client it is read after another memory (or none)
    if rereading:
        _reread_in_context(readers, forget=True)
    memory.refresh_from_db()  # generated columns (token estimates) follow the new content
    return memory


def _keep_revision(
    memory: Memory, content: str, tags: list[str], written_by: str, *, length: int, replaced_at: datetime
) -> None:
    """Keep the memory's version being replaced (`length`: its text's, as stored); beyond
    MAX_REVISIONS_PER_MEMORY the oldest goes."""
    MemoryRevision.objects.create(
        memory=memory,
        space_id=memory.space_id,
        content=content,
        content_chars=length,
        tags=tags,
        written_by=written_by,
        valid_from=memory.updated_at,
        replaced_at=replaced_at,
    )
    kept = memory.revisions.order_by("-replaced_at", "-id").values("id")[:MAX_REVISIONS_PER_MEMORY]
    memory.revisions.exclude(id__in=kept).delete()


@transaction.atomic
def memory_delete(*, owner: Actor, public_id: uuid.UUID) -> None:
    """Delete a memory with its vectors and earlier versions. What was read in its context goes
    with it: the memory written after it loses its in-context reading at once and is embedded again
    without it. The memories it superseded pass to its own successor (current again without one)."""
    _remove(memory_get_to_change(owner=owner, public_id=public_id))


def _remove(memory: Memory) -> None:
    """Delete the memory (`memory_delete`, once the caller's right to is checked)."""
    readers = context_readers([memory.pk])
    _lock_in_order([memory.pk, *readers])
    # What it corrected is corrected by its own successor now, or current again: current again too
    # when that successor leads back to it (a stored loop), which would otherwise close without it.
    successor = memory.superseded_by_id
    if successor is not None and loop_closers("superseded_by", successor, [memory.pk]):
        successor = None
    Memory.objects.filter(superseded_by=memory).update(superseded_by=successor)
    Memory.objects.filter(pk=memory.pk).delete()
    _reread_in_context(readers, forget=True)


@transaction.atomic
def memory_move(memory: Memory, *, space_id: int, shared_from: str, shared_by: Owner) -> Memory:
    """Move a current memory into another space (memories.sharing checked that the caller may),
    keeping its id, text, history and compressed form, unpinned, with where it came from
    (`shared_from`, a space's name) and who moved it. The same text already current there (case
    and spacing aside) takes it in instead, as a write of that text would: that memory gains its
    tags and client and is returned, marked `written_again`, and this one is deleted. Refused when
    the space already has a memory with its id.

    Nothing derived points back across the wall: what it superseded in its old space is current
    again (as when it is deleted), near-duplicate links to and from it and pairs kept apart go, the
    memories of its old sequence that read it in context are embedded again without it, its
    entities are linked in the new space, and its own vectors follow it while its in-context
    reading, of its old predecessor, is dropped until the worker embeds it again there (queued like
    any write), with the memories of its new sequence that now read it in context. Refused
    (QuotaExceeded) where the space moved to has no room for it."""
    _take_text_turn(space_id, memory.content)
    links_lock(memory.space_id)
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id is not None:
        raise ValidationError("id", f"memory {memory.public_id} was superseded meanwhile; nothing was moved.")
    existing = _current_with_same_text(space_id, memory.content)
    if existing is not None:
        _record_written_again(existing, memory.tags, memory.written_by)
        _remove(memory)
        existing.written_again = True
        return existing
    if Memory.objects.filter(space_id=space_id, public_id=memory.public_id).exists():
        raise ValidationError(
            "id",
            f"the space moved to holds another memory with id {memory.public_id} already (an import brought it "
            "there); nothing was moved. Share a copy instead: a copy gets an id of its own.",
        )
    revisions = list(MemoryRevision.objects.filter(memory=memory))
    space_check(
        space_id=space_id,
        items=1,
        **text_growth(added=[memory.content, memory.content_optimized, *(revision.content for revision in revisions)]),
    )
    readers = context_readers([memory.pk])
    _lock_in_order([memory.pk, *readers])
    Memory.objects.filter(superseded_by=memory).update(superseded_by=None)
    Memory.objects.filter(duplicate_of=memory).update(duplicate_of=None)
    KeptApart.objects.filter(Q(first=memory) | Q(second=memory)).delete()
    now = timezone.now()
    memory.space_id, memory.duplicate_of, memory.pinned = space_id, None, False
    memory.shared_from, memory.shared_by = shared_from, shared_by
    memory.updated_at = now
    indexing_lifecycle.back_to_pending(MEMORIES, memory, now)
    memory.save()
    for revision in revisions:  # sealed again under the new space's key
        revision.space_id = space_id
        revision.save()
    Chunk.objects.filter(memory=memory, position__gt=0, start=0).delete()
    Chunk.objects.filter(memory=memory).update(space_id=space_id)
    enqueue_indexing([memory.pk])
    entities_link([memory.pk])
    _reread_in_context(readers, forget=True)
    _reread_in_context(context_readers([memory.pk]), forget=False)
    return memory


def _lock_in_order(memory_ids: list[int]) -> None:
    """Lock these memories' rows in id order (the order `_store_chunks` locks in)."""
    list(Memory.objects.select_for_update().filter(pk__in=memory_ids).order_by("pk").values_list("pk", flat=True))


_REREAD_SQL = sql.SQL("""
    UPDATE memories_memory SET {back_to_pending}
    WHERE id IN (SELECT id FROM memories_memory WHERE id = ANY(%s) ORDER BY id FOR UPDATE)
    RETURNING id
""").format(back_to_pending=indexing_lifecycle.back_to_pending_sql(MEMORIES))


def _reread_in_context(memory_ids: list[int], *, forget: bool) -> None:
    """Queue these memories to be embedded again, because what they read in context changed.
    With `forget`, their in-context readings (chunks at position > 0 from offset 0; their own
    chunks stay) stop matching at once: what they read was deleted or changed.

    Their lease is dropped, so the queued task need not wait for a worker embedding the old
    reading; that worker stores nothing for them (`_store_chunks` compares the readings)."""
    if not memory_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(_REREAD_SQL, [sorted(set(memory_ids))])
        requeued = [row[0] for row in cursor.fetchall()]
    if forget:
        Chunk.objects.filter(memory_id__in=requeued, position__gt=0, start=0).delete()
    enqueue_indexing(requeued)


def memories_reread_after_import(*, space_id: int, memories: list[Memory]) -> int:
    """After importing these (saved) memories into a space: queue the space's embedded memories that
    now read one of them in context (an imported memory is dated just before theirs) to be embedded
    again. Returns how many."""
    if not memories:
        return 0
    readers = context_readers_of_inserted(
        space_id,
        [memory.pk for memory in memories],
        min(memory.created_at for memory in memories),
        max(memory.created_at for memory in memories),
    )
    _reread_in_context(readers, forget=False)
    return len(readers)


# Spaces are served in turn: each waiting space's oldest pending memory comes before any space's
# second, so one large import does not hold back another space's new memory. The spaces with
# pending memories are found by a loose index scan (one probe per space) of the partial index
# memory_pending_by_space, ordered by all its columns so that no other index fits; at most `limit`
# of them (the longest waiting) and `limit` memories of each are ranked. The locking SELECT sits in
# a MATERIALIZED CTE: as an `IN (subquery)` the planner may rescan it, and with SKIP LOCKED each
# rescan can pick other rows, claiming more than `limit`.
_CLAIM_SQL = """
    WITH RECURSIVE waiting_spaces AS (
        (
            SELECT space_id FROM memories_memory WHERE indexing_status = 'pending'
            ORDER BY space_id, indexing_queued_at, id LIMIT 1
        )
        UNION ALL
        SELECT (
            SELECT m.space_id FROM memories_memory m
            WHERE m.indexing_status = 'pending' AND m.space_id > w.space_id
            ORDER BY m.space_id, m.indexing_queued_at, m.id LIMIT 1
        )
        FROM waiting_spaces w WHERE w.space_id IS NOT NULL
    ),
    first_in_line AS MATERIALIZED (
        SELECT w.space_id, oldest.indexing_queued_at
        FROM waiting_spaces w
        CROSS JOIN LATERAL (
            SELECT m.indexing_queued_at FROM memories_memory m
            WHERE m.space_id = w.space_id AND m.indexing_status = 'pending'
              AND (m.indexing_lease_until IS NULL OR m.indexing_lease_until < now())
            ORDER BY m.indexing_queued_at, m.id LIMIT 1
        ) oldest
        ORDER BY oldest.indexing_queued_at LIMIT %(limit)s
    ),
    candidates AS MATERIALIZED (
        SELECT id, min(turn) AS turn FROM (
            SELECT %(first)s::bigint AS id, 0::bigint AS turn
            UNION ALL
            SELECT queue.id, queue.turn
            FROM first_in_line f
            CROSS JOIN LATERAL (
                SELECT m.id, row_number() OVER (ORDER BY m.indexing_queued_at, m.id) AS turn
                FROM memories_memory m
                WHERE m.space_id = f.space_id AND m.indexing_status = 'pending'
                  AND (m.indexing_lease_until IS NULL OR m.indexing_lease_until < now())
                ORDER BY m.indexing_queued_at, m.id LIMIT %(limit)s
            ) queue
        ) ranked
        GROUP BY id
    ),
    claimable AS MATERIALIZED (
        SELECT m.id FROM memories_memory m JOIN candidates c ON c.id = m.id
        WHERE m.indexing_status = 'pending' AND (m.indexing_lease_until IS NULL OR m.indexing_lease_until < now())
        ORDER BY c.turn, m.indexing_queued_at, m.id
        LIMIT %(limit)s
        FOR UPDATE OF m SKIP LOCKED
    )
    UPDATE memories_memory AS m SET indexing_lease_until = now() + %(lease)s
    FROM claimable WHERE m.id = claimable.id
    RETURNING m.id
"""


def _claim_for_indexing(first_id: int | None, limit: int) -> list[Memory]:
    """Claim up to `limit` pending memories (`first_id` first, then the waiting spaces' in turn),
    skipping rows another worker holds.

    A conditional UPDATE, not a lock held while embedding: a worker that dies leaves a lease that
    simply expires.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        # A claimed memory is left alone by other workers this long; after it, the worker is presumed dead.
        lease = timedelta(seconds=settings.GNOSEM_INDEXING_LEASE_SECONDS)
        cursor.execute(_CLAIM_SQL, {"first": first_id or 0, "limit": limit, "lease": lease})  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
        ids = [row[0] for row in cursor.fetchall()]
    return list(Memory.objects.filter(pk__in=ids).only("id", "space_id", "public_id", "content"))


def memories_index(*, memory_ids: list[int], batch_size: int | None = None) -> int:
    """Embed the given pending memories, plus other waiting ones up to `batch_size` a claim
    (default: what one indexing task takes); without ids, one claim of whatever waits. Returns how
    many were indexed.

    Claims again while any of the given memories is still waiting: a claim also serves the other
    spaces in turn, and one made beside another worker's may get fewer memories than it asked for,
    so one claim need not take them all. Memories already indexed or held by another worker are
    skipped. Writes queue no task while one waits to start (memories.indexing.queue), so a full
    claim queues the next task before embedding (another worker claims the next batch meanwhile),
    and a task that leaves memories waiting queues one for them."""
    batch_size = batch_size or indexing_batch_size()
    indexed = 0
    while True:
        first = indexing_lifecycle.first_waiting(MEMORIES, memory_ids) if memory_ids else None
        if memory_ids and first is None:
            break  # indexed, or another worker's claim holds them
        claimed = _claim_for_indexing(first, max(batch_size, len(memory_ids)))
        if not claimed:
            break
        if len(claimed) >= batch_size:
            enqueue_next_claim()
        indexed += indexing_lifecycle.index_claimed(MEMORIES, claimed, _embed_and_store)
        if not memory_ids:
            break
    if indexing_lifecycle.any_waiting(MEMORIES):
        enqueue_waiting_indexing()
    return indexed


def _embed_and_store(memories: list[Memory]) -> int:
    pieces = embedding_pieces(memories)
    chunks = vectors.embed_memories(memories, vectors.indexing_embedders(), pieces)
    indexed = _store_chunks(memories, chunks, pieces)
    try:
        near_duplicates_link(sorted(indexed))
    except Exception:  # the vectors are stored: a failed comparison must not cost an attempt
        logger.exception("looking for near-duplicates of %d memories failed", len(indexed))
    return len(indexed)


_MARK_INDEXED_SQL = """
    UPDATE memories_memory AS m
    SET indexing_status = 'indexed', indexing_error = '', indexing_lease_until = NULL
    WHERE m.id = ANY(%s) AND m.indexing_status = 'pending'
    RETURNING m.id
"""


@transaction.atomic
def _store_chunks(memories: list[Memory], chunks: list[Chunk], pieces: dict[int, list[tuple[Span, str]]]) -> set[int]:
    """Replace the chunks of each memory whose content and in-context reading are still what was
    embedded (`pieces`); one transaction for the batch. Returns the ids of the memories indexed."""
    vectors.check_serving_model_among(chunks)
    # Locked first, in id order: a deletion or edit that changes what these memories read in
    # context (it locks them too, `_reread_in_context`) has committed, or waits for this one.
    _lock_in_order([memory.pk for memory in memories])
    texts = memory_texts([memory.pk for memory in memories])
    current = embedding_pieces(memories)
    unchanged = [
        memory
        for memory in memories
        if texts.get(memory.pk) == memory.content and current[memory.pk] == pieces[memory.pk]
    ]
    with connection.cursor() as cursor:
        cursor.execute(_MARK_INDEXED_SQL, [[memory.pk for memory in unchanged]])
        indexed = {row[0] for row in cursor.fetchall()}
    # The others were edited or deleted while we embedded, or what they read in context was:
    # the task their change queued will index them.
    Chunk.objects.filter(memory_id__in=indexed).delete()
    vectors.chunks_copy([chunk for chunk in chunks if chunk.memory_id in indexed])
    entities_link(indexed)
    return indexed


# What waits for compression (the column that dates its entry is the `stamp` of `restamp_overdue`).
_COMPRESSION_WAITING_SQL = sql.SQL("compression_status = 'pending'")


def memories_requeue_stale_compressions() -> list[int]:
    """Queue again the pending compressions overdue by more than the re-queue delay (their task
    was lost or its worker died), marked due now. Returns their ids."""
    memory_ids = restamp_overdue(
        table="memories_memory", waiting=_COMPRESSION_WAITING_SQL, stamp="compression_due_at", limit=1000
    )
    enqueue_compression(memory_ids)
    return memory_ids


def term_statistics_prune() -> int:
    """Delete the BM25 statistics rows of terms no memory contains any more (df = 0; the
    triggers only ever decrement them). Returns how many went. A concurrent write that needs a
    row again waits for this DELETE, then inserts it afresh."""
    return SpaceTermStatistic.objects.filter(df__lte=0).delete()[0]
