"""Watching PostgreSQL's locks from a test: when a thread of the test waits for a lock."""

from django.db import connection


def lock_waiters() -> int:
    """How many connections to this database wait for a lock another transaction holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]
