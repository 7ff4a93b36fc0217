"""The links between one space's memories, `superseded_by` (a correction's successor, or the
original a merged near-duplicate hides behind) and `duplicate_of` (the older memory a near-duplicate
restates), and the rule every writer of them keeps: following a link never comes back to where it
started. A loop would hide its memories from search, lists, counts and session_start for good.
"""

from typing import Literal

from django.db import connection
from psycopg import sql

Link = Literal["superseded_by", "duplicate_of"]

# UNION (not UNION ALL) stops at a memory met before, so even a stored loop ends the walk.
_REACHED_SQL = sql.SQL("""
    WITH RECURSIVE chain AS (
        SELECT {link} AS id FROM memories_memory WHERE id = %s AND {link} IS NOT NULL
        UNION
        SELECT m.{link} FROM memories_memory m JOIN chain ON m.id = chain.id WHERE m.{link} IS NOT NULL
    )
    SELECT id FROM chain
""")


# Link changes in one space take turns (a transaction-scoped advisory lock on the space): two at
# once, each checked against the links before the other's, could close a loop between them.
_LOCK_LINKS_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('gnosem-links:' || %s, 0))"


def links_lock(space_id: int) -> None:
    """Wait for the space's other link changes to commit; held until the transaction ends. Taken
    before the rows of the memories to link are locked, so that two link changes never wait for
    each other's rows in a cycle."""
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_LINKS_SQL, [str(space_id)])


def reached_from(memory_id: int, link: Link) -> set[int]:
    """The ids of the memories met following `link` from this one (itself only when it is on a loop)."""
    with connection.cursor() as cursor:
        cursor.execute(_REACHED_SQL.format(link=sql.Identifier(f"{link}_id")), [memory_id])
        return {row[0] for row in cursor.fetchall()}


def loop_closers(link: Link, target_id: int, memory_ids: list[int]) -> list[int]:
    """Those of `memory_ids` that pointing `link` at `target_id` would put on a loop: the target
    itself, and any met following `link` from the target."""
    reached = reached_from(target_id, link) | {target_id}
    return [memory_id for memory_id in memory_ids if memory_id in reached]
