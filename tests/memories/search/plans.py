"""The plan PostgreSQL really executes for a search's vector statement: which index it reads."""

from collections.abc import Callable

from django.db import connection
from psycopg import sql


def executed_plan(run: Callable[[], object]) -> list[str]:
    """EXPLAIN ANALYZE of the last statement `run()` executes, the plan's lines: what was executed,
    not only planned. Sequential scans and sorts are made dear, as they are for a large space,
    where sorting every chunk is what an index saves; a few rows are otherwise read and sorted
    faster than any index finds them."""
    statements = []

    def capture(execute, statement, params, many, context):
        statements.append((statement, params))
        return execute(statement, params, many, context)

    with connection.execute_wrapper(capture):
        run()
    statement, params = statements[-1]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        try:
            cursor.execute(sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) ") + statement, params)
            return [row[0] for row in cursor.fetchall()]
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_sort")


def reads_index(plan: list[str], name: str) -> bool:
    """Whether the plan executed an index scan of an index whose name starts with `name`."""
    return any(f"Index Scan using {name}" in line and "never executed" not in line for line in plan)
