"""The task queue's configuration: Redis when REDIS_URL is set, else an embedded SQLite file."""

from pathlib import Path
from sqlite3 import Connection

from huey import SqliteHuey
from huey.storage import SqliteStorage


class SqliteQueueStorage(SqliteStorage):
    """huey's SQLite storage, committing without waiting for the disk: WAL with
    `synchronous=NORMAL`, which SQLite keeps free of corruption; a power cut may drop the last
    queue writes. The queue is not the record of what waits: PostgreSQL holds every pending row,
    and the worker's sweep queues again what waits longer than GNOSEM_REQUEUE_AFTER_SECONDS
    (docs/design.md §3). Every write enqueues and every task dequeues, so neither waits on a disk
    sync."""

    def _create_connection(self) -> Connection:
        connection = super()._create_connection()
        connection.execute("pragma synchronous=NORMAL")
        return connection


class SqliteQueue(SqliteHuey):
    storage_class = SqliteQueueStorage


def huey_settings(*, name: str, redis_url: str | None, data_dir: Path, immediate: bool, workers: int) -> dict:
    """settings.HUEY for huey.contrib.djhuey.

    The embedded backend is a SQLite file under the data folder, so a consumer process started
    beside the web server (as `make run` does) sees what the web process enqueued.
    """
    common = {
        "name": name,
        "immediate": immediate,
        "results": False,  # callers never wait on a task; state lives in PostgreSQL
        "consumer": {"workers": workers, "worker_type": "thread", "periodic": True, "check_worker_health": True},
    }
    if redis_url:
        return {**common, "huey_class": "huey.PriorityRedisHuey", "url": redis_url}
    return {
        **common,
        "huey_class": "gnosem.huey_config.SqliteQueue",
        "filename": str(data_dir / f"{name}-queue.sqlite3"),
    }
