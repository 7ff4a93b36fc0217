"""Django database backend for the embedded server: Gnosem's PostgreSQL backend (gnosem.postgresql),
with the server started on first connection and started again when a connection finds it stopped.

A kept connection whose server has lost its postmaster is not reused: a backend notices its
postmaster's death only when it next wakes, and until it exits its socket still looks idle and may
even answer a statement or two before the connection breaks mid-request. The server runs on this
machine, so the check asks the kernel instead: a backend whose postmaster died has a new parent.
"""

import os
import time
from typing import Any

from django.conf import settings

from gnosem.embedded_db import ensure_embedded_server, ensure_embedded_server_running
from gnosem.postgresql import base as postgresql

# How long a connection keeps trying while the server looks alive but refuses it: a postmaster
# killed a moment ago may not have exited yet, and so is not started again until it has.
RECONNECT_SECONDS = 5.0
RECONNECT_PAUSE_SECONDS = 0.2


def parent_pid(pid: int) -> int | None:
    """The parent of process `pid` (0 when it has exited and been reaped), or None where the
    system has no /proc to ask."""
    try:
        with open(f"/proc/{pid}/stat", "rb", buffering=0) as stat:
            line = stat.read()
    except FileNotFoundError:
        return 0 if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    # "pid (name) state ppid ...": the name may hold spaces and parentheses, so count from the last ")".
    return int(line[line.rindex(b")") + 1 :].split(maxsplit=2)[1])


class DatabaseWrapper(postgresql.DatabaseWrapper):
    """Starts or joins the embedded server lazily, so commands that never touch the database
    (help, check, collectstatic) never start it."""

    def get_connection_params(self) -> dict[str, Any]:
        server = ensure_embedded_server(settings.GNOSEM_DATA_DIR / "postgres", self.settings_dict["NAME"])
        self.settings_dict["HOST"] = str(server.socket_dir)
        self.settings_dict["USER"] = server.user
        return super().get_connection_params()

    # The kept connection's backend's parent when it connected: its postmaster.
    postmaster_pid: int | None = None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = self._connect(conn_params)
        self.postmaster_pid = parent_pid(connection.info.backend_pid)
        return connection

    def is_usable(self) -> bool:
        """Not when the backend's postmaster has died, else as gnosem.postgresql checks."""
        connection = self.connection
        orphaned = (
            connection is not None
            and not connection.closed
            and self.postmaster_pid is not None
            and parent_pid(connection.info.backend_pid) != self.postmaster_pid
        )
        return not orphaned and super().is_usable()

    def _connect(self, conn_params: dict[str, Any]) -> Any:
        """A refused connection may mean the server stopped (crash, OOM killer, `pg_ctl stop`):
        start it again and try again, so no person has to. While the server still looks alive,
        the next try comes a moment later, for RECONNECT_SECONDS at most."""
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            try:
                return super().get_new_connection(conn_params)
            except self.Database.OperationalError:
                restarted = ensure_embedded_server_running(settings.GNOSEM_DATA_DIR / "postgres")
                if not restarted:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(RECONNECT_PAUSE_SECONDS)
