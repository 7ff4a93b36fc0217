"""The database backend's health check: a kept connection is asked before a request reuses it,
without a round trip while it is alive, and found dead once the server has closed it."""

import time

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db


@pytest.fixture
def kept():
    """A connection of its own, idle in autocommit as one is between two requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def test_a_live_idle_connection_is_usable_without_a_round_trip(kept):
    with kept.cursor() as cursor:
        cursor.execute("SELECT 'the last statement'")
        pid = kept.connection.info.backend_pid

    assert kept.is_usable()
    assert last_statement(pid) == "SELECT 'the last statement'"


def test_a_connection_the_server_closed_is_not_usable(kept):
    pid = kept.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])

    deadline = time.monotonic() + 10
    while kept.is_usable():
        assert time.monotonic() < deadline, "a terminated connection still reads as usable"
        time.sleep(0.05)


def test_a_connection_inside_a_transaction_is_checked_by_a_round_trip(kept):
    kept.set_autocommit(False)
    with kept.cursor() as cursor:
        cursor.execute("SELECT 'in a transaction'")
    pid = kept.connection.info.backend_pid

    assert kept.is_usable()
    assert last_statement(pid) == "SELECT 1"
    kept.rollback()
    kept.set_autocommit(True)
