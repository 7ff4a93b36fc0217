"""Load benchmark: concurrent MCP clients mixing writes and searches against a real server.

    .venv/bin/python bench/load.py [--seconds 60] [--clients 20] [--write-share 0.3] [--preload 1000]

Starts gunicorn and a huey consumer as `make run` does (bench/server.py), on its own
embedded PostgreSQL under var/load (GNOSEM_DATA_DIR overrides). Each client is the official `mcp`
SDK client (legacy mode, the handshake most clients speak) for a user of its own, holding
`--preload` indexed memories; for `--seconds` every client loops: a write (`--write-share` of
calls) or a search. Afterwards it waits for the worker and checks that every acknowledged write is
stored and indexed. Prints p50/p95/p99 per operation, throughput, errors and lost writes; exits
non-zero on any error or lost write. The token rate limit stays on (its cost is measured) but set
high enough not to refuse (`--token-rate-limit`).

All clients share one event loop in this process: the SDK's own CPU per call is printed, since on
a small machine it competes with the server for the same cores.
"""

import argparse
import asyncio
import os
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("load")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from huey.contrib.djhuey import HUEY  # noqa: E402

from accounts.tokens import token_create  # noqa: E402
from bench import corpus  # noqa: E402
from bench.server import (  # noqa: E402
    consumer_command,
    free_port,
    gunicorn_command,
    process,
    sdk_client,
    wait_for_http,
    wait_for_worker,
)
from bench.spine import cached_vectors, load_corpus, percentile  # noqa: E402
from memories.models import Chunk, IndexingStatus, Memory  # noqa: E402

USER_PREFIX = "load-"


@dataclass
class Tally:
    """What the clients saw: latencies (ms) and errors per operation, acknowledged write ids."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    written: list[str] = field(default_factory=list)


def reset_users(count: int) -> list:
    User = get_user_model()
    User.objects.filter(username__startswith=USER_PREFIX).delete()
    return [User.objects.create_user(username=f"{USER_PREFIX}{i}") for i in range(count)]


@dataclass
class StartLine:
    """Clients connect and warm up, wait at `ready`, then run until `deadline` once `go` is set."""

    ready: asyncio.Barrier
    go: asyncio.Event = field(default_factory=asyncio.Event)
    deadline: float = 0.0


async def run_client(index: int, url: str, token: str, write_share: float, tally: Tally, line: StartLine) -> None:
    rng = random.Random(index)
    texts = corpus.memories(400, seed=100 + index)
    questions = corpus.questions(200, seed=200 + index)
    async with sdk_client(url, token) as client:
        await client.call_tool("memory_search", {"query": "warm up"})
        await line.ready.wait()
        await line.go.wait()
        sequence = 0
        while time.monotonic() < line.deadline:
            if rng.random() < write_share:
                operation = "memory_write"
                sequence += 1
                arguments = {"content": f"{rng.choice(texts)} (load {index}-{sequence})", "tags": ["load"]}
            else:
                operation = "memory_search"
                arguments = {"query": rng.choice(questions), "top_k": 10}
            start = time.perf_counter()
            try:
                result = await client.call_tool(operation, arguments)
            except Exception as exc:  # a protocol or transport error is a failed call, not a crash
                tally.errors[operation].append(f"{type(exc).__name__}: {exc}")
                continue
            elapsed = (time.perf_counter() - start) * 1000
            if result.is_error:
                tally.errors[operation].append(result.content[0].text)
                continue
            tally.latencies[operation].append(elapsed)
            if operation == "memory_write":
                tally.written.append(result.structured_content["id"])


async def run_clients(port: int, tokens: list[str], seconds: float, write_share: float) -> tuple[Tally, float, float]:
    """(tally, wall seconds of the measured loop, this process's CPU seconds during it)."""
    tally = Tally()
    line = StartLine(ready=asyncio.Barrier(len(tokens) + 1))
    url = f"http://127.0.0.1:{port}/mcp"
    tasks = [asyncio.create_task(run_client(i, url, token, write_share, tally, line)) for i, token in enumerate(tokens)]
    await asyncio.wait_for(line.ready.wait(), timeout=300)  # everyone connected and warm
    start, cpu_start = time.monotonic(), time.process_time()
    line.deadline = start + seconds
    line.go.set()
    await asyncio.gather(*tasks)
    return tally, time.monotonic() - start, time.process_time() - cpu_start


def wait_for_indexing(public_ids: list[str], timeout: float) -> float:
    """Seconds until every acknowledged write is indexed (or the timeout passed)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        waiting = Memory.objects.filter(public_id__in=public_ids).exclude(indexing_status=IndexingStatus.INDEXED)
        if not waiting.exists():
            break
        time.sleep(0.5)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--write-share", type=float, default=0.3, help="share of calls that write (default 0.3)")
    parser.add_argument("--preload", type=int, default=1000, help="indexed memories per user before the run")
    parser.add_argument(
        "--token-rate-limit", default="100000/m", help="GNOSEM_TOKEN_RATE_LIMIT for the server (default never refuses)"
    )
    args = parser.parse_args()
    os.environ["GNOSEM_TOKEN_RATE_LIMIT"] = args.token_rate_limit
    log_dir = Path(os.environ["GNOSEM_DATA_DIR"])
    call_command("migrate", interactive=False, verbosity=0)
    call_command("createcachetable", verbosity=0)
    HUEY.flush()
    owners = reset_users(args.clients)
    tokens = [
        token_create(owner=owner, name=f"load client {i}", scope="write").secret for i, owner in enumerate(owners)
    ]
    if args.preload:
        texts = corpus.memories(args.preload)
        load_corpus(owners, args.preload, texts, cached_vectors(texts, log_dir), log_dir)
    port = free_port()
    gunicorn = gunicorn_command(port)
    worker_log = log_dir / "worker.log"
    with process(gunicorn, log_dir / "web.log"), process(consumer_command(), worker_log):
        wait_for_http(port, log_dir / "web.log")
        wait_for_worker(worker_log)
        print(f"{args.clients} clients, {args.seconds:g} s, {args.write_share:.0%} writes ...", flush=True)
        tally, wall, client_cpu = asyncio.run(run_clients(port, tokens, args.seconds, args.write_share))
        index_wait = wait_for_indexing(tally.written, timeout=600)
    report(tally, wall, client_cpu, index_wait, args)


def report(tally: Tally, wall: float, client_cpu: float, index_wait: float, args: argparse.Namespace) -> None:
    stored = Memory.objects.filter(public_id__in=tally.written)
    indexed = stored.filter(indexing_status=IndexingStatus.INDEXED)
    with_vectors = Chunk.objects.filter(memory__in=indexed).values("memory").distinct().count()
    lost = len(tally.written) - stored.count()
    calls = sum(len(samples) for samples in tally.latencies.values())
    errors = sum(len(messages) for messages in tally.errors.values())
    print(f"\n{'operation':16} {'calls':>7} {'errors':>7} {'per s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for operation in ("memory_write", "memory_search"):
        samples = tally.latencies.get(operation) or [float("nan")]
        count = len(tally.latencies.get(operation, []))
        print(
            f"{operation:16} {count:7d} {len(tally.errors.get(operation, [])):7d} {count / wall:7.1f} "
            f"{percentile(samples, 50):8.1f} {percentile(samples, 95):8.1f} {percentile(samples, 99):8.1f}"
        )
    print(f"{'all':16} {calls:7d} {errors:7d} {calls / wall:7.1f}")
    print(
        f"\nwrites acknowledged {len(tally.written)}, stored {stored.count()}, lost {lost}; indexed "
        f"{indexed.count()} (with vectors {with_vectors}) {index_wait:.1f} s after the run"
    )
    print(f"client side (mcp SDK, one process): {client_cpu / max(calls, 1) * 1000:.1f} ms CPU per call")
    for operation, messages in tally.errors.items():
        for message in messages[:3]:
            print(f"  {operation} error: {message[:200]}")
    if errors or lost or indexed.count() != len(tally.written):
        sys.exit(1)


if __name__ == "__main__":
    main()
