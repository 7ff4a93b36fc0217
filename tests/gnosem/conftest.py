"""The embedded PostgreSQL's processes as the tests that stop it see them (shared with the fault
tests, which stop it under a running server)."""

import signal
import time
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
    """SIGKILL, waited for: once this returns the server is down (its backends may not know yet)."""
    postmaster = psutil.Process(server_pid(pgdata))
    postmaster.send_signal(signal.SIGKILL)
    wait_until_gone(postmaster)


def wait_until_gone(process: psutil.Process) -> None:
    """Until the process has exited (a zombie counts: nothing here reaps orphans)."""
    deadline = time.monotonic() + 30
    while process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"process {process.pid} did not stop"
        time.sleep(0.01)
