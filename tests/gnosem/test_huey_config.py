import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from gnosem.huey_config import SqliteQueue, huey_settings


def test_a_redis_url_gives_a_priority_redis_queue(tmp_path):
    config = huey_settings(
        name="gnosem", redis_url="redis://10.0.0.5:6379/2", data_dir=tmp_path, immediate=False, workers=4
    )
    assert config["huey_class"] == "huey.PriorityRedisHuey"
    assert config["url"] == "redis://10.0.0.5:6379/2"
    assert config["name"] == "gnosem"
    assert config["consumer"]["workers"] == 4
    assert config["consumer"]["periodic"] is True  # the stale-memory sweep runs in consumers
    assert config["results"] is False
    assert "filename" not in config


def test_without_redis_the_queue_is_a_sqlite_file_in_the_data_folder(tmp_path):
    config = huey_settings(name="gnosem", redis_url=None, data_dir=tmp_path, immediate=False, workers=2)
    assert config["huey_class"] == "gnosem.huey_config.SqliteQueue"
    assert Path(config["filename"]).parent == tmp_path
    assert "url" not in config


def test_the_sqlite_queue_commits_without_waiting_for_the_disk_and_keeps_what_it_holds(tmp_path):
    filename = str(tmp_path / "queue.sqlite3")
    queue = SqliteQueue(name="probe", filename=filename)
    connection = queue.storage.conn
    assert connection.execute("pragma journal_mode").fetchone() == ("wal",)
    assert connection.execute("pragma synchronous").fetchone() == (1,)  # NORMAL

    queue.storage.enqueue(b"a task")
    queue.storage.close()

    assert SqliteQueue(name="probe", filename=filename).storage.dequeue() == b"a task"


def test_settings_with_redis_url_set_build_the_redis_queue(tmp_path):
    probe = (
        "import django; django.setup(); from huey.contrib.djhuey import HUEY; "
        "kwargs = HUEY.storage.conn.connection_pool.connection_kwargs; "
        "print(type(HUEY).__name__, HUEY.name, kwargs['host'], kwargs['port'], kwargs['db'])"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "gnosem.settings",
        "GNOSEM_DATA_DIR": str(tmp_path),
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        "GNOSEM_QUEUE_NAME": "gnosem-probe",
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["PriorityRedisHuey", "gnosem-probe", "127.0.0.1", "6379", "15"]
