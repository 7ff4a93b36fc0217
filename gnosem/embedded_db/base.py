"""Django database backend for the embedded server: PostgreSQL's, started on first connection and
started again when a connection finds it stopped."""

from django.conf import settings
from django.db.backends.postgresql import base as postgresql

from gnosem.embedded_db import ensure_embedded_server, ensure_embedded_server_running


class DatabaseWrapper(postgresql.DatabaseWrapper):
    """Starts or joins the embedded server lazily, so commands that never touch the database
    (help, check, collectstatic) never start it."""

    def get_connection_params(self):
        server = ensure_embedded_server(settings.GNOSEM_DATA_DIR / "postgres", self.settings_dict["NAME"])
        self.settings_dict["HOST"] = str(server.socket_dir)
        self.settings_dict["USER"] = server.user
        return super().get_connection_params()

    def get_new_connection(self, conn_params):
        """A refused connection may mean the server stopped (crash, OOM killer, `pg_ctl stop`):
        start it again, then try once more, so no person has to."""
        try:
            return super().get_new_connection(conn_params)
        except postgresql.Database.OperationalError:
            ensure_embedded_server_running(settings.GNOSEM_DATA_DIR / "postgres")
            return super().get_new_connection(conn_params)
