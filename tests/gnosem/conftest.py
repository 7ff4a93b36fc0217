"""The embedded PostgreSQL's processes as the tests that stop it see them (shared with the fault
tests, which stop it under a running server)."""

import os
import signal
from pathlib import Path

import psutil


def server_pid(pgdata: Path) -> int | None:
    """The postmaster's pid when a server is running on `pgdata`, else None."""
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def kill_the_postmaster(pgdata: Path) -> None:
    os.kill(server_pid(pgdata), signal.SIGKILL)
