"""A real `manage.py serve` (gunicorn + a huey consumer + the embedded PostgreSQL) to break.

Each served instance has a data folder of its own next to the test run's (GNOSEM_DATA_DIR-faults-*),
its own port, and a scripted chat server standing in for the remote LLM. Tests talk to it only over
HTTP with an API token, read its database directly to see what the worker is doing, and send
signals to its processes: nothing is mocked. Memories are sealed in that database, so a test finds
its own there by the ids the server answered, never by their text. The instances are shared by
the tests of a session (starting one costs a migrate and two model loads), so each test marks its
memories with a word of its own.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg
import pytest
import requests
from django.conf import settings

from tests.memories.chat_server import ChatServer, Reply

START_TIMEOUT = 240  # migrate on a fresh database, then two processes load the embedding model
INDEXED_TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Tally:
    """Writes acknowledged (201) and refused, per test; what became of the acknowledged ones."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # id -> content
    refused: list[int] = field(default_factory=list)  # status codes (0: no answer)

    def line(self, name: str, *, stored: int, indexed: int, found: int) -> str:
        return (
            f"[faults] {name}: acknowledged {len(self.acknowledged)}, refused {len(self.refused)} "
            f"{sorted(set(self.refused))}, stored {stored}, indexed {indexed}, found by search {found}, "
            f"lost {len(self.acknowledged) - stored}"
        )


class Served:
    """One running `manage.py serve` and what a test needs to reach and break it."""

    def __init__(self, *, name: str, chat: ChatServer, extra_env: dict[str, str] | None = None) -> None:
        base = Path(settings.GNOSEM_DATA_DIR)
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"{base.name}-faults-{name}-", dir=base.parent))
        self.pgdata = self.data_dir / "postgres"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.data_dir / "serve.log"
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "GNOSEM_TASKS_IMMEDIATE")},
            "GNOSEM_DATA_DIR": str(self.data_dir),
            "GNOSEM_ONNX_QUERIES": "false",  # no model export on a fresh data folder
            "GNOSEM_WEB_WORKERS": "1",
            "GNOSEM_WORKERS": "2",
            "GNOSEM_HEALTHZ_DETAILS": "true",
            "GNOSEM_TOKEN_RATE_LIMIT": "0",
            # A dead worker's claim expires, and lost tasks are queued again, within seconds.
            "GNOSEM_INDEXING_LEASE_SECONDS": "10",
            "GNOSEM_REQUEUE_AFTER_SECONDS": "10",
            "GNOSEM_LLM_BASE_URL": chat.url,
            "GNOSEM_LLM_MODEL": "test-compressor",
            "GNOSEM_LLM_API_KEY": "sk-test",
            "GNOSEM_LLM_TIMEOUT_SECONDS": "1",
            "GNOSEM_LLM_MAX_ATTEMPTS": "2",
            "GNOSEM_LLM_RETRY_DELAY_SECONDS": "1",
            "HF_HUB_OFFLINE": "1",
            **(extra_env or {}),
        }
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)],
            cwd=settings.BASE_DIR,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.session = requests.Session()
        self.token = ""

    # --- life cycle ---

    def wait_ready(self) -> None:
        """Until /healthz says ok, which includes a heartbeat from the consumer (models loaded)."""
        self.wait_for(lambda: self.health().get("status") == "ok", START_TIMEOUT, "a healthy start")
        self.token = self.create_token()
        self.session.headers["Authorization"] = f"Bearer {self.token}"

    def create_token(self) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", "createtoken", f"faults-{uuid.uuid4().hex[:8]}", "--create-user"],
            cwd=settings.BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        match = re.search(r"gno_[A-Za-z0-9_-]+", result.stdout)
        assert match, result.stdout + result.stderr
        return match[0]

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for process in [*self.descendants(), psutil.Process(self.process.pid)]:
                with contextlib.suppress(psutil.Error):
                    process.kill()
        self._log.close()
        from tests.gnosem.test_embedded_db import stop_server

        stop_server(self.pgdata)
        if not os.environ.get("GNOSEM_FAULTS_KEEP"):  # set it to read the logs of a failed run
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, condition, timeout: float, what: str, interval: float = 0.25) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited ({self.process.returncode}):\n{self.log()[-5000:]}"
            with contextlib.suppress(requests.RequestException):
                if condition():
                    return
            time.sleep(interval)
        pytest.fail(f"no {what} within {timeout} s; serve's log ends with:\n{self.log()[-5000:]}")

    # --- its processes ---

    def descendants(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            return psutil.Process(self.process.pid).children(recursive=True)
        return []

    def child_pid(self, name: str) -> int | None:
        """The pid of serve's own `worker` (run_huey) or `web` (gunicorn master) child."""
        marker = "run_huey" if name == "worker" else "gunicorn"
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.process.pid).children():
                if marker in " ".join(child.cmdline()):
                    return child.pid
        return None

    def postmaster_pid(self) -> int | None:
        from tests.gnosem.test_embedded_db import server_pid

        return server_pid(self.pgdata)

    def database(self) -> psycopg.Connection:
        return psycopg.connect(host=str(self.pgdata), user="postgres", dbname="gnosem", autocommit=True)

    # --- HTTP ---

    def health(self) -> dict:
        return self.session.get(f"{self.url}/healthz", timeout=10).json()

    def write(self, tally: Tally, content: str, url: str | None = None) -> requests.Response | None:
        """POST a memory to this instance, or to another web process of it at `url`."""
        try:
            response = self.session.post(f"{url or self.url}/api/v1/memories", json={"content": content}, timeout=30)
        except requests.RequestException:
            tally.refused.append(0)
            return None
        if response.status_code == 201:
            tally.acknowledged[response.json()["id"]] = content
        else:
            tally.refused.append(response.status_code)
        return response

    def memory(self, memory_id: str) -> dict | None:
        response = self.session.get(f"{self.url}/api/v1/memories/{memory_id}", params={"raw": "true"}, timeout=30)
        return response.json() if response.status_code == 200 else None

    def search(self, query: str, top_k: int = 50) -> list[str]:
        response = self.session.get(
            f"{self.url}/api/v1/memories/search", params={"query": query, "top_k": top_k}, timeout=30
        )
        assert response.status_code == 200, response.text
        return [hit["id"] for hit in response.json()["results"]]

    def check_everything_acknowledged_is_kept(self, tally: Tally, name: str, *, search_for) -> str:
        """Every acknowledged write is stored as written, becomes indexed, and its own words find
        it. Returns the tally line (also printed) for the report."""
        ids = list(tally.acknowledged)
        stored = {}
        for memory_id in ids:
            memory = self.memory(memory_id)
            if memory is not None and memory["content"] == tally.acknowledged[memory_id]:
                stored[memory_id] = memory

        def all_indexed() -> bool:
            with self.database() as db:
                (indexed,) = db.execute(
                    "SELECT count(*) FROM memories_memory WHERE public_id = ANY(%s::uuid[]) "
                    "AND indexing_status = 'indexed'",
                    [list(stored)],
                ).fetchone()
            return indexed == len(stored)

        self.wait_for(all_indexed, INDEXED_TIMEOUT, f"indexing of {len(stored)} memories", interval=0.5)
        indexed = sum(self.memory(memory_id)["indexing_status"] == "indexed" for memory_id in stored)
        found = sum(memory_id in self.search(search_for(tally.acknowledged[memory_id])) for memory_id in stored)
        line = tally.line(name, stored=len(stored), indexed=indexed, found=found)
        print(line)
        assert len(stored) == indexed == len(ids), line
        assert found == len(ids), line
        return line


@pytest.fixture(scope="session")
def chat() -> Iterator[ChatServer]:
    """The stand-in for the remote model: answers at once with a short fact line, unless a test
    scripts something else."""
    with ChatServer() as server:
        server.script(Reply(content="FACT=stand-in compression"))
        yield server


@pytest.fixture(scope="session")
def served(chat) -> Iterator[Served]:
    """`manage.py serve` on the embedded database and the embedded (SQLite) queue."""
    instance = Served(name="embedded", chat=chat)
    try:
        instance.wait_ready()
        yield instance
    finally:
        instance.close()


def marker() -> str:
    """A word no other test's memories contain (keyword search finds exactly this test's)."""
    return f"zq{uuid.uuid4().hex[:10]}"
