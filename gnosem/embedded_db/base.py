"""Django database backend for the embedded server: Gnosem's PostgreSQL backend (gnosem.postgresql),
with the server started on first connection and started again when a connection finds it stopped."""

import time
from typing import Any

from django.conf import settings

from gnosem.embedded_db import ensure_embedded_server, ensure_embedded_server_running
from gnosem.postgresql import base as postgresql

# How long a connection keeps trying while the server looks alive but refuses it: a postmaster
# killed a moment ago may not have exited yet, and so is not started again until it has.
RECONNECT_SECONDS = 5.0
RECONNECT_PAUSE_SECONDS = 0.2


class DatabaseWrapper(postgresql.DatabaseWrapper):
    """Starts or joins the embedded server lazily, so commands that never touch the database
    (help, check, collectstatic) never start it."""

    def get_connection_params(self) -> dict[str, Any]:
        server = ensure_embedded_server(settings.GNOSEM_DATA_DIR / "postgres", self.settings_dict["NAME"])
        self.settings_dict["HOST"] = str(server.socket_dir)
        self.settings_dict["USER"] = server.user
        return super().get_connection_params()

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
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
