"""The statement triggers reading a statement's transition tables plan each call for its own rows
(memories/migrations/0035): a session whose first update of memories touched one row must not join
a later update's many rows with the plan made for that one."""

from collections.abc import Iterator

import pytest
from django.db import connection
from django.utils import timezone

from memories import services
from memories.models import Memory

ROWS = 40


@pytest.fixture
def plans() -> Iterator[list[str]]:
    """The plans of every statement this test's transaction runs from here on, triggers' included,
    as auto_explain reports them to the client."""
    reported: list[str] = []
    with connection.cursor() as cursor:
        psycopg_connection = cursor.connection
        cursor.execute("LOAD 'auto_explain'")
        cursor.execute(
            "SET LOCAL auto_explain.log_min_duration = 0; SET LOCAL auto_explain.log_nested_statements = on; "
            "SET LOCAL client_min_messages = log"
        )

        def keep(diagnostic) -> None:
            reported.append(diagnostic.message_primary or "")

        psycopg_connection.add_notice_handler(keep)
        yield reported
        psycopg_connection.remove_notice_handler(keep)


def tuplestore_estimates(plans: list[str]) -> set[str]:
    """The row counts the planner expected of the transition tables it read, in every statement but
    the guards that only ask whether one has a row (their plan stops at the first either way)."""
    return {
        line.split(" rows=")[1].split()[0]
        for plan in plans
        if "Query Text: EXISTS" not in plan
        for line in plan.splitlines()
        if "Named Tuplestore Scan" in line
    }


def test_an_update_of_many_memories_after_one_of_a_single_memory_is_planned_for_its_rows(owner, plans):
    ids = [services.memory_write(owner=owner, content=f"Memory {n} about the plans.").pk for n in range(ROWS)]
    Memory.objects.filter(pk=ids[0]).update(indexing_lease_until=timezone.now())
    assert tuplestore_estimates(plans) == {"1"}

    plans.clear()
    Memory.objects.filter(pk__in=ids).update(indexing_lease_until=timezone.now())
    assert tuplestore_estimates(plans) == {str(ROWS)}
