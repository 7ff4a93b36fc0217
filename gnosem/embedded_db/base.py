"""Django database backend for the embedded server: PostgreSQL's, started on first connection."""

from django.conf import settings
from django.db.backends.postgresql import base as postgresql

from gnosem.embedded_db import ensure_embedded_server


class DatabaseWrapper(postgresql.DatabaseWrapper):
    """Starts or joins the embedded server lazily, so commands that never touch the database
    (help, check, collectstatic) never start it."""

    def get_connection_params(self):
        server = ensure_embedded_server(settings.GNOSEM_DATA_DIR / "postgres", self.settings_dict["NAME"])
        self.settings_dict["HOST"] = str(server.socket_dir)
        self.settings_dict["USER"] = server.user
        return super().get_connection_params()
