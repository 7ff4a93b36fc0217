"""The spine's benchmark: write and search latency over HTTP, worker embedding throughput.

    .venv/bin/python bench/spine.py [--writes 500] [--queries 200] [--sizes 1000,10000]

Runs against its own embedded PostgreSQL under var/bench (GNOSEM_DATA_DIR overrides), starting
gunicorn and a huey consumer exactly as `make run` does. Prints one table. Targets on a 2-core
machine: write p95 <= 30 ms; search p50 <= 30 ms and p95 <= 60 ms at 10k memories for one owner
among 10 owners; worker throughput >= 0.9 x raw model throughput (timed before and after it).
"""

import argparse
import hashlib
import http.client
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("bench")

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402
from huey.contrib.djhuey import HUEY  # noqa: E402

from accounts.spaces import personal_space_of  # noqa: E402
from accounts.tokens import token_create  # noqa: E402
from bench import corpus  # noqa: E402
from bench.server import consumer_command, free_port, gunicorn_command, process, wait_for_http, wait_for_worker  # noqa: E402
from memories.encryption.derived import derive_stored_forms  # noqa: E402
from memories.indexing.embedding import get_embedder  # noqa: E402
from memories.indexing.sequences import embedding_pieces  # noqa: E402
from memories.models import Chunk, IndexingStatus, Memory  # noqa: E402

OWNERS = 10
# How often the worker's progress is counted while it indexes: coarsely until the last
# FINE_POLL_SHARE of the memories is left, then finely, so that the end is timed to 20 ms.
POLL_SECONDS = 0.5
FINE_POLL_SECONDS = 0.02
FINE_POLL_SHARE = 0.05


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q))


class McpClient:
    """A minimal keep-alive JSON-RPC client for /mcp (what an MCP client sends per tool call)."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        self.next_id = 0

    def call(self, tool: str, arguments: dict) -> dict:
        self.next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        try:
            self.connection.request("POST", "/mcp", body=json.dumps(body), headers=self.headers)
            response = self.connection.getresponse()
        except (ConnectionError, http.client.RemoteDisconnected):  # the server closed an idle keep-alive
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.connection.request("POST", "/mcp", body=json.dumps(body), headers=self.headers)
            response = self.connection.getresponse()
        payload = json.loads(response.read())
        result = payload.get("result") or {}
        if response.status != 200 or result.get("isError"):
            raise RuntimeError(f"{tool} failed: {response.status} {payload}")
        return result["structuredContent"]

    def timed(self, tool: str, arguments: dict) -> float:
        start = time.perf_counter()
        self.call(tool, arguments)
        return (time.perf_counter() - start) * 1000


def reset_users() -> list:
    User = get_user_model()
    User.objects.filter(username__startswith="bench-").delete()
    return [User.objects.create_user(username=f"bench-{i}") for i in range(OWNERS)]


def measure_writes(client: McpClient, texts: list[str]) -> list[float]:
    return [client.timed("memory_write", {"content": text, "tags": ["bench"]}) for text in texts]


def measure_worker(owner, writes: int, log_dir: Path) -> tuple[float, float, float]:
    """(worker memories/s, raw model memories/s before it, and after it) on the same pending
    memories: those the writes stored (a text the corpus repeats returns the stored memory). The
    raw model is timed on either side of the worker, so that the machine's drift during the run
    weighs on both."""
    count = Memory.objects.filter(space__personal_of=owner, indexing_status=IndexingStatus.PENDING).count()
    assert 0 < count <= writes, f"expected up to {writes} pending memories, found {count}"
    raw_before = measure_raw_model(owner, count)
    log = log_dir / "worker.log"
    with process(consumer_command(), log):
        # The clock starts when the consumer has loaded the model: from then on it works through
        # the queued tasks.
        wait_for_worker(log)
        deadline = time.monotonic() + 600
        start = time.perf_counter()
        while (left := count - indexed_count(owner)) > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not index everything within 10 minutes; see {log}")
            # Each count takes this process and PostgreSQL about 2 ms of the cores the worker embeds
            # on: counted every half second while much is left, every 20 ms near the end.
            time.sleep(POLL_SECONDS if left > count * FINE_POLL_SHARE else FINE_POLL_SECONDS)
        elapsed = time.perf_counter() - start
    return count / elapsed, raw_before, measure_raw_model(owner, count)


def indexed_count(owner) -> int:
    return Memory.objects.filter(space__personal_of=owner, indexing_status=IndexingStatus.INDEXED).count()


def measure_raw_model(owner, count: int) -> float:
    """Memories/s of the raw model embedding, in one batched call, what the worker embeds for the
    owner's memories: every piece of every memory (chunks, and the in-context reading of memories
    written in sequence; see memories.indexing.sequences)."""
    pieces = embedding_pieces(list(Memory.objects.filter(space__personal_of=owner)))
    texts = [text for memory_pieces in pieces.values() for _, text in memory_pieces]
    embedder = get_embedder()
    embedder.embed(texts[:64])  # warm
    start = time.perf_counter()
    embedder.embed(texts)
    return count / (time.perf_counter() - start)


def cached_vectors(texts: list[str], log_dir: Path) -> np.ndarray:
    embedder = get_embedder()
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]
    path = log_dir / f"vectors-{embedder.name}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = embedder.embed(texts)
    np.save(path, vectors)
    return vectors


def load_corpus(owners: list, size: int, texts: list[str], vectors: np.ndarray, log_dir: Path) -> None:
    """Give every owner `size` indexed memories, inserted directly (the worker is measured above)
    but with the chunks the worker would store: `embedding_pieces` decides them (the corpus is
    one client's sequence, so short memories also get their in-context reading). Every owner gets
    the same sequence, so its pieces are embedded once (and cached in the data folder)."""
    embedder = get_embedder()
    known = dict(zip(texts, vectors, strict=True))
    now = timezone.now()
    order = np.random.default_rng(0).permutation(len(texts))
    for owner in owners:
        have = Memory.objects.filter(space__personal_of=owner, tags__contains=["corpus"]).count()
        space = personal_space_of(owner)
        with transaction.atomic():
            memories = [
                Memory(
                    space=space,
                    author=owner,
                    content=texts[i],
                    tags=["corpus"],
                    written_by="bench",
                    created_at=now - timedelta(minutes=int(i)),
                    updated_at=now,
                    indexing_status=IndexingStatus.INDEXED,
                    compression_status="skipped_short",
                )
                for i in order[have:size]
            ]
            derive_stored_forms(memories)
            Memory.objects.bulk_create(memories, batch_size=2000)
            pieces = embedding_pieces(memories)
            missing = sorted({text for p in pieces.values() for _, text in p if text not in known})
            if missing:
                known.update(zip(missing, cached_vectors(missing, log_dir), strict=True))
            Chunk.objects.bulk_create(
                [
                    Chunk(
                        memory=memory,
                        space=space,
                        position=position,
                        start=span.start,
                        end=span.end,
                        model=embedder.name,
                        dimension=embedder.dimension,
                        embedding=known[text],
                    )
                    for memory in memories
                    for position, (span, text) in enumerate(pieces[memory.pk])
                ],
                batch_size=2000,
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory; ANALYZE memories_chunk")
    chunks = Chunk.objects.filter(space__personal_of=owners[0]).count()
    print(f"{size:,} memories/owner: {chunks:,} chunks each", flush=True)


def measure_searches(client: McpClient, queries: list[str]) -> list[float]:
    for query in queries[:10]:
        client.call("memory_search", {"query": query})
    return [client.timed("memory_search", {"query": query, "top_k": 10}) for query in queries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    log_dir = Path(os.environ["GNOSEM_DATA_DIR"])
    call_command("migrate", interactive=False, verbosity=0)
    call_command("createcachetable", verbosity=0)
    HUEY.flush()
    owners = reset_users()
    token = token_create(owner=owners[0], name="bench", scope="write").secret
    port = free_port()
    rows = []
    gunicorn = gunicorn_command(port)
    with process(gunicorn, log_dir / "web.log"):
        wait_for_http(port, log_dir / "web.log")
        client = McpClient(port, token)
        client.call("memory_search", {"query": "warm up"})
        writes = measure_writes(client, corpus.memories(args.writes, seed=3))
        rows.append(
            (
                "memory_write over HTTP",
                f"{len(writes)} calls",
                percentile(writes, 50),
                percentile(writes, 95),
                "p95 <= 30 ms",
            )
        )
        worker_rate, raw_before, raw_after = measure_worker(owners[0], args.writes, log_dir)
        Memory.objects.filter(space__personal_of=owners[0]).delete()
        texts = corpus.memories(max(sizes))
        vectors = cached_vectors(texts, log_dir)
        queries = corpus.questions(args.queries)
        for size in sizes:
            load_corpus(owners, size, texts, vectors, log_dir)
            searches = measure_searches(client, queries)
            rows.append(
                (
                    f"memory_search over HTTP, {size:,} memories/owner x {OWNERS} owners",
                    f"{len(searches)} queries",
                    percentile(searches, 50),
                    percentile(searches, 95),
                    "p50 <= 30 ms, p95 <= 60 ms",
                )
            )
    print(f"\n{'measure':58} {'n':>12} {'p50 ms':>8} {'p95 ms':>8}  target")
    for name, n, p50, p95, target in rows:
        print(f"{name:58} {n:>12} {p50:8.1f} {p95:8.1f}  {target}")
    raw_rate = (raw_before + raw_after) / 2
    print(
        f"\nworker embedding throughput {worker_rate:6.1f} memories/s; raw model {raw_rate:6.1f} memories/s "
        f"({raw_before:.1f} before the worker, {raw_after:.1f} after); ratio {worker_rate / raw_rate:.2f} "
        "(target >= 0.90)"
    )


if __name__ == "__main__":
    main()
