"""The indexing lifecycle memories and notes both go through, written once for both tables.

A row is `pending` from the moment it is written or its text changes (`indexing_queued_at` dates
its queue entry); a worker claims it (memories under a lease, `indexing_lease_until`: a worker that
dies leaves a lease that simply expires; a note is one task's alone), embeds and stores it, and it
is `indexed`. A failed embedding spends an attempt and keeps the reason; after
GNOSEM_INDEXING_MAX_ATTEMPTS the row is `failed` (still findable by keyword) until it is retried.
An embedding endpoint that is unavailable spends none: the row waits, pending, with the reason
(WAITING_FOR_ENDPOINT), for the task's retries and the minute sweep, which queues again whatever
has waited past the re-queue delay.
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, F, Min, Q, Value, When
from django.utils import timezone
from psycopg import sql

from accounts.reach import Actor, reach_of
from memories.indexing.queue import enqueue_indexing, enqueue_note_indexing, indexing_batch_size
from memories.indexing.remote_embedding import WAITING_FOR_ENDPOINT, EmbeddingUnavailable
from memories.models import IndexingStatus, Memory, Note

logger = logging.getLogger(__name__)

Row = TypeVar("Row", Memory, Note)


@dataclass(frozen=True)
class Indexed:
    """A table whose rows go through the lifecycle."""

    model: type[Memory] | type[Note]
    noun: str  # what its rows are called in logs and counts: "memories", "notes"
    leased: bool  # whether a claim holds a lease (`indexing_lease_until`)
    enqueue: Callable[[Sequence[int]], None]
    sweep_limit: int  # rows queued again per minute sweep at most

    @property
    def table(self) -> str:
        return self.model._meta.db_table


MEMORIES = Indexed(Memory, "memories", leased=True, enqueue=enqueue_indexing, sweep_limit=10000)
NOTES = Indexed(Note, "notes", leased=False, enqueue=enqueue_note_indexing, sweep_limit=1000)


def back_to_pending(kind: Indexed, row: Memory | Note, now: datetime) -> None:
    """Set a row (saved by the caller) pending again with a fresh start: no attempt spent, no
    reason kept, queued `now`, and no lease (a worker still embedding the old text stores nothing:
    it finds the text changed), so that the task queued for the new text need not wait for it."""
    row.indexing_status, row.indexing_error, row.indexing_attempts = IndexingStatus.PENDING, "", 0
    row.indexing_queued_at = now
    if kind.leased and isinstance(row, Memory):  # only memories are leased
        row.indexing_lease_until = None


def back_to_pending_sql(kind: Indexed) -> sql.Composable:
    """`back_to_pending` as the SET list of an UPDATE on the kind's table."""
    assignments = (
        "indexing_status = 'pending', indexing_error = '', indexing_attempts = 0, "
        "indexing_queued_at = clock_timestamp()"
    )
    return sql.SQL(assignments + (", indexing_lease_until = NULL" if kind.leased else ""))


def queue_again(kind: Indexed, ids: Sequence[int]) -> None:
    """Set these rows back to pending (`back_to_pending`) and queue them, once the transaction commits."""
    if not ids:
        return
    statement = sql.SQL("UPDATE {table} SET {back_to_pending} WHERE id = ANY(%(ids)s)").format(
        table=sql.Identifier(kind.table), back_to_pending=back_to_pending_sql(kind)
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, {"ids": list(ids)})
    kind.enqueue(ids)


def waiting_sql(kind: Indexed) -> sql.Composable:
    """The condition a row waiting for a worker meets: pending, and no live lease."""
    pending = "indexing_status = 'pending'"
    return sql.SQL(
        pending + (" AND (indexing_lease_until IS NULL OR indexing_lease_until < now())" if kind.leased else "")
    )


def first_waiting(kind: Indexed, ids: list[int]) -> int | None:
    """The first of these rows still waiting for a worker (pending, no live lease), or None."""
    rows = kind.model.objects.filter(pk__in=ids, indexing_status=IndexingStatus.PENDING)
    if kind.leased:
        rows = rows.filter(Q(indexing_lease_until__isnull=True) | Q(indexing_lease_until__lt=timezone.now()))
    waiting = set(rows.values_list("pk", flat=True))
    return next((row_id for row_id in ids if row_id in waiting), None)


def any_waiting(kind: Indexed) -> bool:
    """Whether some row waits for a worker (pending, no live lease)."""
    statement = sql.SQL("SELECT EXISTS (SELECT 1 FROM {table} WHERE {waiting})").format(
        table=sql.Identifier(kind.table), waiting=waiting_sql(kind)
    )
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return bool(cursor.fetchone()[0])


def index_claimed(kind: Indexed, claimed: list[Row], embed_and_store: Callable[[list[Row]], int]) -> int:
    """Embed and store claimed rows with `embed_and_store` (it returns how many it stored); after
    a failure, record it on the rows it belongs to. Returns how many were stored.

    An unavailable endpoint leaves them waiting and is raised (the task is retried). A batch that
    fails otherwise is embedded again one row at a time, so that only the rows that fail alone
    spend an attempt, not the others that shared the batch."""
    try:
        return embed_and_store(claimed)
    except EmbeddingUnavailable as exc:
        leave_pending(kind, claimed, exc)
        raise
    except Exception as exc:
        if len(claimed) == 1:
            record_failure(kind, claimed, exc)
            raise
        logger.warning(
            "embedding %d %s failed (%s: %s); embedding them one at a time",
            len(claimed),
            kind.noun,
            type(exc).__name__,
            exc,
        )
    return _index_one_at_a_time(kind, claimed, embed_and_store)


def _index_one_at_a_time(kind: Indexed, rows: list[Row], embed_and_store: Callable[[list[Row]], int]) -> int:
    """After a batch failed: embed its rows one by one. Raises the last failure (the task is
    retried) once the others are stored."""
    stored, failure = 0, None
    for position, row in enumerate(rows):
        try:
            stored += embed_and_store([row])
        except EmbeddingUnavailable as exc:
            leave_pending(kind, rows[position:], exc)
            raise
        except Exception as exc:
            record_failure(kind, [row], exc)
            failure = exc
    if failure is not None:
        raise failure
    return stored


def leave_pending(kind: Indexed, rows: Sequence[Memory | Note], exc: EmbeddingUnavailable) -> None:
    """The embedding endpoint is unavailable for now: release the rows, pending, without spending
    an attempt; the task's retries and the minute sweep try again."""
    logger.warning("the embedding endpoint is unavailable; %d %s wait: %s", len(rows), kind.noun, exc)
    changes: dict[str, object] = {"indexing_error": f"{WAITING_FOR_ENDPOINT}{exc}"[:1000]}
    if kind.leased:
        changes["indexing_lease_until"] = None
    kind.model.objects.filter(pk__in=[row.pk for row in rows], indexing_status=IndexingStatus.PENDING).update(**changes)


def record_failure(kind: Indexed, rows: Sequence[Memory | Note], exc: Exception) -> None:
    """Spend an attempt and keep the reason; after the last attempt the row is marked failed."""
    logger.exception("embedding failed for %d %s", len(rows), kind.noun)
    last_attempt = settings.GNOSEM_INDEXING_MAX_ATTEMPTS - 1
    changes: dict[str, object] = {
        "indexing_attempts": F("indexing_attempts") + 1,
        "indexing_error": f"{type(exc).__name__}: {exc}"[:1000],
        "indexing_status": Case(
            When(indexing_attempts__gte=last_attempt, then=Value(IndexingStatus.FAILED)),
            default=F("indexing_status"),
        ),
    }
    if kind.leased:
        changes["indexing_lease_until"] = None
    kind.model.objects.filter(pk__in=[row.pk for row in rows]).update(**changes)


@dataclass(frozen=True)
class IndexingCounts:
    """What waits and what failed in one table, install-wide."""

    pending: int
    failed: int
    waiting_for_endpoint: int
    oldest_pending: datetime | None


def indexing_counts(kind: Indexed) -> IndexingCounts:
    """The kind's pending, failed and endpoint-waiting rows, and when the oldest pending was queued."""
    pending = Q(indexing_status=IndexingStatus.PENDING)
    counts = kind.model.objects.aggregate(
        pending=Count("id", filter=pending),
        failed=Count("id", filter=Q(indexing_status=IndexingStatus.FAILED)),
        waiting_for_endpoint=Count("id", filter=pending & Q(indexing_error__startswith=WAITING_FOR_ENDPOINT)),
        oldest_pending=Min("indexing_queued_at", filter=pending),
    )
    return IndexingCounts(**counts)


def failed_count(kind: Indexed, *, owner: Actor | None = None) -> int:
    """How many rows (of the spaces `owner` reaches, or everyone's) failed to be embedded."""
    rows = kind.model.objects.filter(indexing_status=IndexingStatus.FAILED)
    return (rows if owner is None else rows.filter(space_id__in=reach_of(owner).space_ids)).count()


_RETRY_FAILED_SQL = sql.SQL("""
    WITH failed AS MATERIALIZED (
        SELECT id FROM {table}
        WHERE indexing_status = 'failed' AND (%(spaces)s::bigint[] IS NULL OR space_id = ANY(%(spaces)s))
        ORDER BY id LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    )
    UPDATE {table} AS target SET {back_to_pending}
    FROM failed WHERE target.id = failed.id
    RETURNING target.id
""")


def retry_failed(kind: Indexed, *, owner: Actor | None = None, progress: Callable[[int], object] | None = None) -> int:
    """Give the rows that failed to be embedded (of the spaces `owner` reaches, or everyone's) a fresh start
    (`back_to_pending`) and queue them. A transaction per batch; `progress(n)` after each.
    Returns how many were queued."""
    statement = _RETRY_FAILED_SQL.format(table=sql.Identifier(kind.table), back_to_pending=back_to_pending_sql(kind))
    batch = indexing_batch_size()
    spaces = None if owner is None else reach_of(owner).space_ids
    queued = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, {"spaces": spaces, "limit": batch})
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return queued
            kind.enqueue(ids)
        queued += len(ids)
        if progress:
            progress(len(ids))


def requeue_stale(kind: Indexed) -> list[int]:
    """Queue again the rows waiting for a worker whose queue entry is older than the re-queue
    delay (a lost task, a dead worker), marked queued now. Returns their ids."""
    ids = restamp_overdue(
        table=kind.table, waiting=waiting_sql(kind), stamp="indexing_queued_at", limit=kind.sweep_limit
    )
    kind.enqueue(ids)
    return ids


_RESTAMP_SQL = sql.SQL("""
    WITH stale AS MATERIALIZED (
        SELECT id FROM {table}
        WHERE {waiting} AND {stamp} < %(cutoff)s
        ORDER BY {stamp} LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    )
    UPDATE {table} AS target SET {stamp} = now()
    FROM stale WHERE target.id = stale.id
    RETURNING target.id
""")


def restamp_overdue(*, table: str, waiting: sql.Composable, stamp: str, limit: int) -> list[int]:
    """Set the column `stamp` to now on up to `limit` rows of `table` matching `waiting` whose
    `stamp` is older than the re-queue delay, skipping rows another transaction holds; returns
    their ids. Serves the compression queue too (its `stamp` is `compression_due_at`)."""
    cutoff = timezone.now() - timedelta(seconds=settings.GNOSEM_REQUEUE_AFTER_SECONDS)
    statement = _RESTAMP_SQL.format(table=sql.Identifier(table), waiting=waiting, stamp=sql.Identifier(stamp))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement, {"cutoff": cutoff, "limit": limit})
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class Retried:
    """How many failed memories and notes were queued again."""

    memories: int
    notes: int

    def described(self, adjective: str = "") -> str:
        """'2 memories and 1 note' (with `adjective`: '2 failed memories and 1 failed note'); a
        kind with none is left out, unless both have none."""
        words = f"{adjective} " if adjective else ""
        memories = f"{self.memories} {words}memor{'y' if self.memories == 1 else 'ies'}"
        notes = f"{self.notes} {words}note{'' if self.notes == 1 else 's'}"
        if not self.notes:
            return memories
        return f"{memories} and {notes}" if self.memories else notes


def failed_retry(*, owner: Actor | None = None, progress: Callable[[int], object] | None = None) -> Retried:
    """Retry the failed memories and notes (of the spaces `owner` reaches, or everyone's): the dashboard's "Retry
    failed" button and `manage.py reindexmemories --failed`."""
    return Retried(
        memories=retry_failed(MEMORIES, owner=owner, progress=progress),
        notes=retry_failed(NOTES, owner=owner, progress=progress),
    )
