"""Sequences: memories a client wrote minutes apart, and a memory read in the context of the one
before it.

Such memories (turns of one conversation, steps of one session) often make sense only together:
"Yes, she loved it!" answers the memory before it. Indexing and search both stand on this module:
- indexing: a short memory with a recent same-client predecessor is embedded twice, as itself
  and as "predecessor + itself" (`embedding_pieces`); the vector signal scores a memory by its
  best chunk, so either reading can find it;
- search: fusion passes part of each candidate's score to its sequence neighbours (`neighbours_sql`,
  read with each signal's ranking), and the vector signal lends a successor's in-context reading
  to its predecessor (`predecessor_sql`).
A memory's in-context reading depends on its predecessor, so deleting, editing or moving that one
re-embeds it (`context_readers`; memories.services).
"""

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from psycopg import sql

from memories.encryption.derived import client_variants
from memories.indexing.chunking import CHUNK_CHARS, Span, chunk_spans
from memories.models import Memory

# A predecessor written longer ago than this belongs to another session.
CONTEXT_WINDOW = timedelta(minutes=30)
# The tail of the predecessor that is kept: enough for a question or a topic, short of the
# model's 256 word pieces together with the memory itself.
CONTEXT_CHARS = 400


def predecessor_sql(of: str, column: str) -> sql.Composed:
    """A subquery for `column` of the memory the same client wrote last before the row aliased
    `of` in its space, within CONTEXT_WINDOW (named parameter `window`): the one a memory is read in context of,
    at indexing and at search alike."""
    return sql.SQL("""
    SELECT p.{column} FROM memories_memory p
    WHERE p.space_id = {of}.space_id AND p.written_by_digest = {of}.written_by_digest
      AND (p.created_at, p.id) < ({of}.created_at, {of}.id) AND p.created_at >= {of}.created_at - %(window)s
    ORDER BY p.created_at DESC, p.id DESC
    LIMIT 1""").format(of=sql.Identifier(of), column=sql.Identifier(column))


_PREDECESSORS_SQL = sql.SQL("""
SELECT m.id, predecessor.id
FROM memories_memory m
CROSS JOIN LATERAL ({predecessor}) predecessor
WHERE m.id = ANY(%(ids)s)
""").format(predecessor=predecessor_sql("m", "id"))


def successor_sql(of: str) -> sql.Composed:
    """A subquery for the id of the memory the same client wrote next after the row aliased `of` in
    its space, within CONTEXT_WINDOW (named parameter `window`)."""
    return sql.SQL("""
    SELECT n.id FROM memories_memory n
    WHERE n.space_id = {of}.space_id AND n.written_by_digest = {of}.written_by_digest
      AND (n.created_at, n.id) > ({of}.created_at, {of}.id) AND n.created_at <= {of}.created_at + %(window)s
    ORDER BY n.created_at, n.id
    LIMIT 1""").format(of=sql.Identifier(of))


def neighbours_sql(of: str) -> sql.Composed:
    """Two columns: the ids of the previous and the next memory in the sequence of the row aliased
    `of` (NULL where there is none); named parameter `window`. Search reads them with its signals
    (memories.search.signals), saving a query."""
    return sql.SQL("({predecessor}) AS previous_id, ({successor}) AS next_id").format(
        predecessor=predecessor_sql(of, "id"), successor=successor_sql(of)
    )


_NEIGHBOURS_SQL = sql.SQL("""
SELECT m.id, {neighbours}
FROM memories_memory m
WHERE m.id = ANY(%(ids)s) AND m.space_id = %(space)s
""").format(neighbours=neighbours_sql("m"))


_READERS_SQL = sql.SQL("""
SELECT DISTINCT reader.id
FROM memories_memory m
CROSS JOIN LATERAL (
    SELECT n.id, n.content_chars FROM memories_memory n
    WHERE n.space_id = m.space_id AND n.written_by_digest = ANY(coalesce(%(written_by)s, ARRAY[m.written_by_digest]))
      AND (n.created_at, n.id) > (m.created_at, m.id) AND n.created_at <= m.created_at + %(window)s
    ORDER BY n.created_at, n.id
    LIMIT 1
) reader
WHERE m.id = ANY(%(ids)s) AND reader.content_chars <= {chunk_chars}
""").format(chunk_chars=sql.Literal(CHUNK_CHARS))


def context_readers(memory_ids: list[int], *, written_by: str | None = None, space_id: int | None = None) -> list[int]:
    """The memories that read one of these in context: for each, the next memory its client wrote
    within CONTEXT_WINDOW (the one whose predecessor it is), when short enough to have an
    in-context reading. With `written_by` (and the memories' `space_id`): where the memory would
    sit were that its client."""
    if not memory_ids:
        return []
    variants = None if written_by is None or space_id is None else client_variants(written_by, [space_id])
    with connection.cursor() as cursor:
        cursor.execute(_READERS_SQL, {"window": CONTEXT_WINDOW, "ids": memory_ids, "written_by": variants})  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
        return [row[0] for row in cursor.fetchall()]


# Idle pending memories are left out: whoever embeds them reads their context as it is then.
_INSERTED_READERS_SQL = sql.SQL("""
SELECT s.id
FROM memories_memory s
CROSS JOIN LATERAL ({predecessor}) predecessor
WHERE s.space_id = %(space)s AND s.created_at >= %(first)s AND s.created_at <= %(last)s + %(window)s
  AND s.content_chars <= {chunk_chars}
  AND NOT (s.indexing_status = 'pending' AND (s.indexing_lease_until IS NULL OR s.indexing_lease_until < now()))
  AND predecessor.id IN (SELECT unnest(%(ids)s::bigint[]))
""").format(predecessor=predecessor_sql("s", "id"), chunk_chars=sql.Literal(CHUNK_CHARS))


def context_readers_of_inserted(space_id: int, memory_ids: list[int], first: datetime, last: datetime) -> list[int]:
    """The space's memories, embedded or being embedded, that now read one of these newly inserted
    memories (created between `first` and `last`) in context instead of what they read before.
    Scans the space's memories in that span, not each new memory's successor: an import of many
    memories into a fresh space finds no embedded memory there and costs one index range scan."""
    if not memory_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            _INSERTED_READERS_SQL,
            {"window": CONTEXT_WINDOW, "space": space_id, "ids": memory_ids, "first": first, "last": last},  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
        )
        return [row[0] for row in cursor.fetchall()]


def sequence_neighbours(space_id: int, memory_ids: list[int]) -> dict[int, tuple[int | None, int | None]]:
    """(previous, next) memory in each of the space's memories' sequence, None where there is none."""
    with connection.cursor() as cursor:
        cursor.execute(_NEIGHBOURS_SQL, {"window": CONTEXT_WINDOW, "ids": memory_ids, "space": space_id})  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
        return {memory_id: (previous, following) for memory_id, previous, following in cursor.fetchall()}


def memory_texts(memory_ids: Iterable[int]) -> dict[int, str]:
    """The text of each of these memories, read afresh (opened from its sealed column)."""
    found = Memory.objects.filter(pk__in=list(memory_ids)).only("id", "space_id", "public_id", "content")
    return {memory.pk: memory.content for memory in found}


def embedding_pieces(memories: list[Memory]) -> dict[int, list[tuple[Span, str]]]:
    """Per memory, the (span of its content, text to embed) pairs: its chunks, then (unless
    GNOSEM_CONTEXT_EMBEDDING is off) its in-context reading when it is short and has a recent
    predecessor. That second reading doubles the embedding work for memories written in
    sequence."""
    pieces = {
        memory.pk: [(span, memory.content[span.start : span.end]) for span in chunk_spans(memory.content)]
        for memory in memories
    }
    short = {memory.pk: memory for memory in memories if len(memory.content) <= CHUNK_CHARS}
    if short and settings.GNOSEM_CONTEXT_EMBEDDING:
        with connection.cursor() as cursor:
            cursor.execute(_PREDECESSORS_SQL, {"window": CONTEXT_WINDOW, "ids": list(short)})  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
            predecessor_of = dict(cursor.fetchall())
        predecessor_texts = memory_texts(set(predecessor_of.values()))
        for memory_id, predecessor_id in predecessor_of.items():
            content = short[memory_id].content
            context = predecessor_texts[predecessor_id][-CONTEXT_CHARS:]
            pieces[memory_id].append((Span(0, len(content)), f"{context}\n{content}"))
    return pieces
