"""The task queue's configuration: Redis when REDIS_URL is set, else an embedded SQLite file."""

from pathlib import Path


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
    return {**common, "huey_class": "huey.SqliteHuey", "filename": str(data_dir / f"{name}-queue.sqlite3")}
