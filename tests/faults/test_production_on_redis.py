"""Production's shape on one machine, broken two ways: Redis stops, and a consumer is SIGKILLed.

Two web servers (`manage.py serve`'s gunicorn and a second gunicorn) and two `manage.py run_huey`
consumers (serve's and a second one) share a private Redis (REDIS_URL, a redis-server on a free
port, never the machine's own) and one PostgreSQL (a database of this module's own on the test
run's embedded server, reached through DATABASE_URL). Writes go to both web servers in turn.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import psycopg
import pytest
import redis
import requests
from django.conf import settings
from mcp import Client
from mcp.types import CallToolResult
from redis.backoff import NoBackoff
from redis.retry import Retry

from gnosem.embedded_db import ensure_embedded_server
from tests.faults.conftest import START_TIMEOUT, Served, Tally, free_port, marker
from tests.memories.chat_server import ChatServer, Reply
from tests.memories.mcp.conftest import run_client

pytestmark = pytest.mark.redis


class RedisServer:
    """A redis-server of this module's own on a free port, without persistence: SHUTDOWN NOSAVE
    loses every queued task, as a crashed Redis without AOF does."""

    def __init__(self) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.dir = Path(tempfile.mkdtemp(prefix="gnosem-faults-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        # No retries: the answer to "is it down?" must come at once, not after redis-py's back-off.
        return redis.Redis(port=self.port, socket_connect_timeout=2, socket_timeout=5, retry=Retry(NoBackoff(), 0))

    def start(self) -> None:
        subprocess.run(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
                *("--daemonize", "yes", "--dir", str(self.dir), "--pidfile", str(self.dir / "redis.pid")),
                *("--logfile", str(self.dir / "redis.log")),
            ],
            check=True,
            timeout=30,
        )
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(redis.RedisError), self.client() as client:
                if client.ping():
                    return
            assert time.monotonic() < deadline, (self.dir / "redis.log").read_text()
            time.sleep(0.05)

    def stop(self) -> None:
        with contextlib.suppress(redis.ConnectionError), self.client() as client:
            client.shutdown(nosave=True)
        deadline = time.monotonic() + 30
        while self.running():
            assert time.monotonic() < deadline, "redis-server did not stop"
            time.sleep(0.05)

    def running(self) -> bool:
        with contextlib.suppress(redis.RedisError), self.client() as client:
            return bool(client.ping())
        return False

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster(Served):
    """`manage.py serve` on REDIS_URL and DATABASE_URL (one gunicorn, one consumer), plus a second
    gunicorn and a second consumer started here with the same environment, as production runs them."""

    def __init__(self, *, chat: ChatServer, redis_server: RedisServer) -> None:
        self.database_name = f"gnosem_faults_{uuid.uuid4().hex[:10]}"
        server = ensure_embedded_server(Path(settings.GNOSEM_DATA_DIR) / "postgres", self.database_name)
        self.socket_dir = server.socket_dir
        database_url = f"postgresql://postgres@/{self.database_name}?host={quote(str(self.socket_dir))}"
        super().__init__(
            name="production", chat=chat, extra_env={"REDIS_URL": redis_server.url, "DATABASE_URL": database_url}
        )
        self.second_port = free_port()
        self.urls = [self.url, f"http://127.0.0.1:{self.second_port}"]
        self.second_web = self._start(
            [
                *(sys.executable, "-m", "gunicorn", "gnosem.wsgi:application", "-c", "gnosem/gunicorn_conf.py"),
                *("--bind", f"127.0.0.1:{self.second_port}"),
            ]
        )
        self.second_worker = self._start([sys.executable, "manage.py", "run_huey"])

    def _start(self, argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen(argv, cwd=settings.BASE_DIR, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self) -> None:
        super().wait_ready()  # serve migrated, its web server answers, a consumer beat
        self.wait_for(
            lambda: requests.get(f"{self.urls[1]}/healthz", timeout=10).json()["status"] == "ok",
            START_TIMEOUT,
            "the second web server",
        )

    def database(self) -> psycopg.Connection:
        return psycopg.connect(host=str(self.socket_dir), user="postgres", dbname=self.database_name, autocommit=True)

    def close(self) -> None:
        for process in (self.second_web, self.second_worker):
            if process.poll() is None:
                process.terminate()
        for process in (self.second_web, self.second_worker):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        super().close()
        with psycopg.connect(host=str(self.socket_dir), user="postgres", dbname="postgres", autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{self.database_name}" WITH (FORCE)')

    def counts(self, ids: list[str]) -> dict[str, int]:
        """The memories with these ids, by indexing status."""
        with self.database() as db:
            rows = db.execute(
                "SELECT indexing_status, count(*) FROM memories_memory WHERE public_id = ANY(%s::uuid[]) GROUP BY 1",
                [ids],
            ).fetchall()
        return dict(rows)


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def cluster(chat, redis_server) -> Iterator[Cluster]:
    instance = Cluster(chat=chat, redis_server=redis_server)
    try:
        instance.wait_ready()
        yield instance
    finally:
        instance.close()


# Written while Redis is down, each with a question that shares (almost) no word with it: found by meaning.
FACTS = {
    "the office fiddle-leaf fig gets watered every Monday morning by Priya": "who looks after the houseplant",
    "Marco is allergic to peanuts, so team lunches never include satay": "which colleague has a food allergy",
    "the quarterly board meeting moved to the Lisbon office in October": "where will the directors gather",
    "invoices from the cloud provider are paid with the corporate Amex card": "how do we settle hosting bills",
    "the VPN certificates expire on March 1 and security renews them": "when do remote access certs run out",
}
MCP_FACT = ("dogs are welcome in the office on Fridays if they are house-trained", "can I bring my puppy to work")
LONG_PADDING = " The review also covered hiring, the office move, the vendor contracts and the roadmap." * 5


def mcp_write(cluster: Cluster, url: str, content: str) -> CallToolResult:
    """memory_write through the official MCP SDK client; the tool's result."""

    async def write(client: Client) -> CallToolResult:
        return await client.call_tool("memory_write", {"content": content})

    return run_client(SimpleNamespace(url=url), cluster.token, "auto", write)


def test_writes_succeed_while_redis_is_down_and_are_indexed_once_it_is_back(cluster, redis_server, chat):
    chat.script(Reply(content="FACT=stand-in compression"))
    word, tally = marker(), Tally()
    questions: dict[str, str] = {}
    for number in range(6):
        content = f"{word}b{number} was written before Redis stopped, about the billing export."
        cluster.write(tally, content, url=cluster.urls[number % 2])
        questions[content] = f"{word}b{number}"

    redis_server.stop()
    for number, (fact, question) in enumerate(FACTS.items()):
        content = f"{word}d{number}: {fact}."
        cluster.write(tally, content, url=cluster.urls[number % 2])
        questions[content] = question
    long_content = f"{word}long: the quarterly review of the platform team happened while Redis was down.{LONG_PADDING}"
    cluster.write(tally, long_content, url=cluster.urls[1])  # waits for compression too
    questions[long_content] = f"{word}long"
    assert tally.refused == [], cluster.log()[-5000:]
    content = f"{word}m: {MCP_FACT[0]}."
    written = mcp_write(cluster, cluster.urls[1], content)
    assert not written.is_error, written.content[0].text
    tally.acknowledged[written.structured_content["id"]] = content
    questions[content] = MCP_FACT[1]
    # Writes are kept; /healthz (both web servers) says the queue is the problem.
    for url in cluster.urls:
        health = requests.get(f"{url}/healthz", timeout=30)
        assert health.status_code == 200
        assert health.json()["status"] == "degraded"
        assert any(problem.startswith("queue: error") for problem in health.json()["problems"])
    written_while_down = [memory_id for memory_id, text in tally.acknowledged.items() if text.startswith(f"{word}d")]
    assert cluster.counts(written_while_down) == {"pending": len(FACTS)}  # no consumer can reach them

    # Back, empty (NOSAVE): nothing queued survived, the consumers reconnect and the sweep sends
    # what waits. No further write is needed to pull them in.
    redis_server.start()
    cluster.check_everything_acknowledged_is_kept(tally, "Redis stopped (REST, MCP)", search_for=questions.get)

    (long_id,) = [memory_id for memory_id, text in tally.acknowledged.items() if text == long_content]

    def compressed() -> bool:
        with cluster.database() as db:
            (status,) = db.execute(
                "SELECT compression_status FROM memories_memory WHERE public_id = %s", [long_id]
            ).fetchone()
        return status == "compressed"

    cluster.wait_for(compressed, 90, "compression of the long memory written while Redis was down", interval=0.5)
    cluster.wait_for(lambda: cluster.health()["status"] == "ok", 90, "healthy status after Redis came back")


WRITES = 240
PAUSE_AT = 100  # both consumers paused: this many written before, BURST while paused
BURST = 40


def test_a_consumer_killed_mid_batch_loses_nothing_while_the_other_carries_on(cluster):
    word, tally = marker(), Tally()
    survivor, victim = cluster.child_pid("worker"), cluster.second_worker
    assert survivor is not None and victim.poll() is None

    def content(number: int) -> str:
        return f"Note {word}n{number}: the release train left platform {number % 7} on time."

    def number_of(text: str) -> int:
        return int(text.split()[1].rstrip(":").rsplit("n", 1)[1])

    def claimed_since_pause() -> int:
        """Memories of the burst that are claimed and not stored yet."""
        burst = [memory_id for memory_id, text in tally.acknowledged.items() if number_of(text) >= PAUSE_AT]
        with cluster.database() as db:
            (claimed,) = db.execute(
                "SELECT count(*) FROM memories_memory WHERE indexing_status = 'pending' "
                "AND indexing_lease_until > now() AND public_id = ANY(%s::uuid[])",
                [burst],
            ).fetchone()
        return claimed

    started = time.monotonic()
    for number in range(PAUSE_AT):
        cluster.write(tally, content(number), url=cluster.urls[number % 2])
    # Both consumers paused while a burst is written, then only the victim resumed: its first task
    # claims the whole burst in one batch, and it is killed while it embeds it.
    os.kill(survivor, signal.SIGSTOP)
    victim.send_signal(signal.SIGSTOP)
    try:
        for number in range(PAUSE_AT, PAUSE_AT + BURST):
            cluster.write(tally, content(number), url=cluster.urls[number % 2])
        victim.send_signal(signal.SIGCONT)
        cluster.wait_for(lambda: claimed_since_pause() > 0, 60, "a claim by the consumer to kill", interval=0.01)
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        orphaned = claimed_since_pause()
    finally:
        os.kill(survivor, signal.SIGCONT)
        if victim.poll() is None:
            victim.send_signal(signal.SIGCONT)
    # Clients keep writing once the dead consumer's lease has run out: the survivor's next batch
    # takes its orphans first (the oldest waiting), else the periodic sweep would, a minute later.
    cluster.wait_for(lambda: claimed_since_pause() == 0, 60, "the killed consumer's lease to run out", interval=0.2)
    for number in range(PAUSE_AT + BURST, WRITES):
        cluster.write(tally, content(number), url=cluster.urls[number % 2])
    writing_seconds = time.monotonic() - started

    assert cluster.child_pid("worker") == survivor  # it carried on; nothing restarted it
    assert orphaned > 0, "the consumer was killed after it had stored its batch: nothing was orphaned"
    assert tally.refused == [], cluster.log()[-5000:]
    print(
        f"[faults] production shape: {WRITES} writes in {writing_seconds:.1f} s through 2 web servers, "
        f"a consumer SIGKILLed holding {orphaned} claimed memories"
    )
    cluster.check_everything_acknowledged_is_kept(
        tally,
        f"production shape, 1 of 2 consumers SIGKILLed mid-batch ({orphaned} claimed, not stored)",
        search_for=lambda text: text.split()[1].rstrip(":"),
    )
