"""Django database backend: PostgreSQL's, with a health check that costs no round trip.

Connections are kept between requests (CONN_MAX_AGE) and checked before a request reuses one
(CONN_HEALTH_CHECKS), so that the first query after a database restart does not fail. Django's
check sends `SELECT 1` and waits for it, on every request. An idle connection has nothing to read,
so this one asks the socket instead: when the server has closed it (a restart, an administrator
terminating the backend, a proxy timing out), the socket reads as ready (end of file, or the
server's last message); a live one does not. Only then, or when the connection is not idle, does it
fall back to the round trip, which also tells a stray notice from a closed connection.
"""

import select

from django.db.backends.postgresql import base as postgresql
from psycopg import pq


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed:
            return False
        if connection.pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return super().is_usable()
        try:
            readable, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable or super().is_usable()
