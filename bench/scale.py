"""Search at any size: MCP and REST search latency, and the vector signal's recall
against its exact scan, for one owner with 10k memories written as a conversation, for that owner
in three spaces of 10k, for one with 100k, and for one among 1M.

    .venv/bin/python bench/scale.py                    # every phase at full size (the 1M store takes long)
    .venv/bin/python bench/scale.py --phases 10k       # the conversation alone
    .venv/bin/python bench/scale.py --phases 10k --searches-only  # its searches again, on the stored conversation
    .venv/bin/python bench/scale.py --phases 10k,spaces  # the conversation, then three spaces of 10k
    .venv/bin/python bench/scale.py --memories 300 --other 50 --queries 20 --space-memories 300 \\
        --large-owner-memories 2000 --owners 3 --owner-memories 1000    # checks the script in minutes

Runs against its own embedded PostgreSQL under var/scale (GNOSEM_DATA_DIR overrides), with gunicorn
and a huey consumer started as `make run` starts them. Phases (`--phases 10k,spaces,100k,1M`):
- 10k: owner A's `--memories` (10,000) are written through the product, over MCP `memory_write` with
  the official SDK client, back to back by one client, as an assistant writes a conversation
  (bench/corpus.py's memories), while the consumer embeds them; owner B's `--other` (1,000) by a
  client of its own in between. A memory written within 30 minutes of its client's previous one is
  also embedded in that one's context (memories.indexing.sequences), so A's memories have about twice as
  many chunks. Measures write latency and the time from the first write until every memory of both
  owners is indexed.
- spaces: owner A in three spaces: the personal one of phase 10k and two team spaces of
  `--space-memories` (10,000) each, owned by another user (scale-team) who invites A as an
  editor. A searches with a token bound to the personal space ("10k (one space)") and with one
  reaching all three ("3x10k (three spaces)"), in the same run; the report gives the ratio of
  their p50s.
- 100k: one owner with `--large-owner-memories` (100,000); 1M: `--owners` (100) owners with
  `--owner-memories` (10,000) each.
The team spaces and the large owners' stores are stored directly (binary COPY) and derived from
owner A's: each memory copies one of A's in A's order, its text and its chunks, each chunk's
vector moved by Gaussian noise to a cosine of about 0.875 from the original (uniform random
vectors would make recall meaningless), and its entities are linked as the worker links them.
They need phase 10k's owner A in the same data folder. Built once and kept: a later run with the
same sizes reuses them (`--rebuild` builds them again).
Each phase then searches with `--queries` (200) questions from bench/corpus.py, top_k 10, going
through every path for one query before the next, so that the machine's drift weighs on all alike:
`memory_search` over MCP (SDK client; `session_start`, `memory_count` and `explore_graph` with the
same query too, and `explore_graph` from the entity that exploration starts at),
`GET /api/v1/memories/search` over REST (keep-alive) and `search_hybrid` in this process. Then the
pipeline's parts one by one, and the vector signal's recall: its top 40 memories (top_k x
CANDIDATES_PER_RESULT, the limit search gives it) against those of its exact scan, with the real
query embeddings. Before searching, the graph's links are merged and the tables searched vacuumed
and analysed (the state the minute sweep and autovacuum leave them in), and the large spaces'
HNSW indexes are built (as a worker does within ten minutes). The total of memories printed counts
every memory in the database, derived stores kept from earlier runs included.

Targets (on a quiet 2-core machine): at 10k, MCP search p50 <= 25 ms and p95 <= 50 ms and
vector recall >= 0.99; MCP p50 at most the in-process p50 + 6 ms (the client's CPU included), REST
at most + 3 ms, session_start at most 1.3 times the MCP search p50 and explore_graph 1.5 times;
across three spaces of 10k, p50 at most 1.5 times that of the one space in the same run; for one
owner with 100k memories and among 1M, at most twice those latencies; `memory_write` over MCP while
the worker embeds p95 <= 30 ms; the 11,000 memories written and indexed within 300 s.
"""

import argparse
import asyncio
import functools
import http.client
import os
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import BASE_DIR, setup_django

setup_django("scale")

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.backends.utils import CursorWrapper  # noqa: E402
from huey.contrib.djhuey import HUEY  # noqa: E402
from mcp import Client  # noqa: E402
from pgvector import HalfVector  # noqa: E402
from pgvector.psycopg.halfvec import register_halfvec_info  # noqa: E402
from psycopg.types import TypeInfo  # noqa: E402
from tqdm import tqdm  # noqa: E402

from accounts.models import Role, Space, SpaceKind  # noqa: E402
from accounts.reach import Reach, reach_of, token_reach  # noqa: E402
from accounts.spaces import (  # noqa: E402
    personal_space_of,
    space_invitation_accept,
    space_invitation_create,
    team_space_create,
)
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
from bench.spine import percentile  # noqa: E402
from gnosem.types import Owner  # noqa: E402
from memories.encryption.derived import derive_stored_forms  # noqa: E402
from memories.graph.explore import graph_explore  # noqa: E402
from memories.graph.linking import entities_link, links_merge  # noqa: E402
from memories.indexing.embedding import get_embedder  # noqa: E402
from memories.indexing.vector_indexes import vector_indexes_maintain  # noqa: E402
from memories.indexing.vectors import serving_model_name  # noqa: E402
from memories.models import EntityMention, IndexingStatus, Memory  # noqa: E402
from memories.search.pipeline import CANDIDATES_PER_RESULT, search_hybrid  # noqa: E402
from memories.search.signals import halfvec_from_binary, keyword_ranking, vector_ranking  # noqa: E402
from memories.selectors import MemoryFilters  # noqa: E402

T = TypeVar("T")

PHASES = ("10k", "spaces", "100k", "1M")
USER_PREFIX = "scale-"
# Phase spaces: the user who owns the team spaces (and wrote their memories), and the spaces' names.
TEAM_OWNER = f"{USER_PREFIX}team"
TEAM_SPACES = ("scale team 1", "scale team 2")
# Phase spaces' two searches of owner A, as the report names them.
ONE_SPACE = "10k (one space)"
THREE_SPACES = "3x10k (three spaces)"
CLIENT = "assistant"  # A's and B's writes come from one client each (their written_by)
TOP_K = 10
WARM_UP_QUERIES = 10
# A derived vector's expected cosine to the one it comes from (noise of equal size in every direction).
DERIVED_COSINE = 0.875
# Seconds between two derived memories of one owner: a conversation's turns, each one read in the
# context of the one before (memories.indexing.sequences).
TURN_GAP_SECONDS = (3, 30)
COPY_BATCH = 5_000  # memories per transaction while storing derived ones


@dataclass
class ToolCalls:
    """One tool's calls from this process: milliseconds each, and the CPU this process spent on
    them (the SDK client's share of the latency, on the same cores as the server)."""

    latencies: list[float] = field(default_factory=list)
    client_cpu_seconds: float = 0.0

    async def call(self, client: Client, tool: str, arguments: dict) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        result = await client.call_tool(tool, arguments)
        self.latencies.append((time.perf_counter() - start) * 1000)
        self.client_cpu_seconds += time.process_time() - cpu
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content[0].text}")

    @property
    def client_cpu_ms(self) -> float:
        return self.client_cpu_seconds * 1000 / max(len(self.latencies), 1)


@dataclass
class PhaseResult:
    phase: str
    searched_memories: int
    total_memories: int
    searched_chunks: int
    mcp: ToolCalls
    rest: list[float]
    in_process: list[float]
    embedding: list[float]
    keyword: list[float]
    vector: list[float]
    vector_exact: list[float]
    recall: float
    session_start: ToolCalls
    count: ToolCalls
    explore: ToolCalls
    explore_entity: ToolCalls
    writes: ToolCalls | None = None
    index_seconds: float | None = None
    store_seconds: float | None = None


# Owners, spaces and their memories.


def owner_named(username: str) -> Owner | None:
    return get_user_model().objects.filter(username=username).first()


def empty_spaces(space_ids: list[int]) -> None:
    """Delete what these spaces hold by SQL: Django's cascade would load every row of a
    million-memory store into this process."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_chunk WHERE space_id = ANY(%s)", [space_ids])
        cursor.execute(
            "DELETE FROM memories_entity_mention"
            " WHERE entity_id IN (SELECT id FROM memories_entity WHERE space_id = ANY(%s))",
            [space_ids],
        )
        cursor.execute("DELETE FROM memories_memory WHERE space_id = ANY(%s)", [space_ids])


def delete_owners(usernames: list[str]) -> None:
    """Delete these users with their personal spaces (their memberships of team spaces go too)."""
    users = get_user_model().objects.filter(username__in=usernames)
    ids = list(Space.objects.filter(personal_of__in=users).values_list("pk", flat=True))
    if not ids:
        return
    empty_spaces(ids)
    users.delete()


def fresh_owner(username: str) -> Owner:
    delete_owners([username])
    return get_user_model().objects.create_user(username=username)


def memory_count(space_ids: list[int]) -> int:
    return Memory.objects.filter(space_id__in=space_ids).count()


def complete(space_ids: list[int]) -> bool:
    """Whether these spaces' memories have chunks and entities (stores derived before their
    entities were linked have none, and are built again)."""
    return bool(chunk_count(space_ids)) and EntityMention.objects.filter(memory__space_id__in=space_ids).exists()


def chunk_count(space_ids: list[int]) -> int:
    """The chunks of these spaces' memories embedded by the serving model."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memories_chunk WHERE space_id = ANY(%s) AND model = %s",
            [space_ids, serving_model_name()],
        )
        return cursor.fetchone()[0]


def settle() -> None:
    """Merge the graph's links, as the minute sweep does, then vacuum and analyse what the searches
    read: the state the sweep and autovacuum leave a store in (a fresh bulk load also leaves the
    full-text index's pending list for the first searches to scan). Then build the large spaces'
    HNSW indexes, as a worker does within ten minutes."""
    start = time.perf_counter()
    links_merge()
    with connection.cursor() as cursor:
        cursor.execute(
            "VACUUM (ANALYZE) memories_memory, memories_chunk, memories_space_terms, memories_term_posting, "
            "memories_entity_mention, memories_entity_link"
        )
    print(f"links merged, vacuumed and analysed in {time.perf_counter() - start:.0f} s", flush=True)
    start = time.perf_counter()
    built = vector_indexes_maintain().built
    print(f"{len(built)} vector index(es) built in {time.perf_counter() - start:.1f} s", flush=True)


# Phase 10k: a conversation written over MCP while the worker embeds it.


async def write_conversation(url: str, tokens: list[str], schedule: list[tuple[int, str]]) -> tuple[ToolCalls, float]:
    """Write each (client index, text) in order, one call at a time; (the writes, the seconds from
    the first write's start, by perf_counter)."""
    async with sdk_client(url, tokens[0]) as first, sdk_client(url, tokens[1]) as second:
        clients = [first, second]
        for client in clients:  # each client's connection, and the server process it reaches, warm
            for _ in range(WARM_UP_QUERIES):
                await client.call_tool("memory_search", {"query": "warm up", "top_k": TOP_K})
        writes = ToolCalls()
        started = time.perf_counter()
        for index, text in tqdm(schedule, desc="memory_write over MCP", unit="memory", mininterval=2):
            await writes.call(clients[index], "memory_write", {"content": text, "written_by": CLIENT})
    return writes, started


def interleaved(first: list[str], second: list[str]) -> list[tuple[int, str]]:
    """Both lists in one order, the second's items spread evenly among the first's."""
    keyed = [(i / len(first), 0, text) for i, text in enumerate(first)]
    keyed += [((i + 0.5) / len(second), 1, text) for i, text in enumerate(second)]
    return [(index, text) for _, index, text in sorted(keyed, key=lambda item: (item[0], item[1]))]


def wait_until_indexed(owners: list[Owner], timeout: float, worker_log: Path) -> None:
    deadline = time.monotonic() + timeout
    memories = Memory.objects.filter(space__personal_of__in=owners)
    while memories.exclude(indexing_status=IndexingStatus.INDEXED).exists():
        if memories.filter(indexing_status=IndexingStatus.FAILED).exists():
            raise RuntimeError(f"the worker failed to index a memory; see {worker_log}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"memories still pending after {timeout:.0f} s")
        time.sleep(0.1)


def conversation_phase(args: argparse.Namespace, url: str, queries: list[str], worker_log: Path) -> PhaseResult:
    if args.searches_only:
        owner = owner_named(f"{USER_PREFIX}a")
        if owner is None:
            sys.exit("--searches-only needs a conversation an earlier run of phase 10k wrote in this data folder")
        settle()
        token = token_create(owner=owner, name=CLIENT, scope="write").secret
        return measure_searches("10k", reach_of(owner), token, url, queries)
    owner, other = fresh_owner(f"{USER_PREFIX}a"), fresh_owner(f"{USER_PREFIX}b")
    tokens = [token_create(owner=user, name=CLIENT, scope="write").secret for user in (owner, other)]
    schedule = interleaved(corpus.memories(args.memories, seed=7), corpus.memories(args.other, seed=8))
    writes, started = asyncio.run(write_conversation(url, tokens, schedule))
    written = time.perf_counter() - started
    wait_until_indexed([owner, other], args.index_timeout, worker_log)
    index_seconds = time.perf_counter() - started
    print(
        f"{len(schedule):,} memories written in {written:.1f} s;"
        f" all indexed {index_seconds:.1f} s after the first write",
        flush=True,
    )
    settle()
    result = measure_searches("10k", reach_of(owner), tokens[0], url, queries)
    result.writes, result.index_seconds = writes, index_seconds
    return result


# Phases spaces, 100k and 1M: stores derived from owner A's, written directly.


@dataclass
class SourceStore:
    """Owner A, its memories in writing order, and their chunks (rows `offsets[i]:offsets[i + 1]`
    of `spans` and `vectors` belong to memory i)."""

    owner: Owner
    memories: list[tuple[str, list[str], str, str, int]]  # content, tags, written_by, compression status, attempts
    offsets: np.ndarray
    spans: list[tuple[int, int, int]]  # position, start, end
    vectors: np.ndarray
    model: str


def source_store(username: str) -> SourceStore:
    owner = owner_named(username)
    model = serving_model_name()
    if owner is None or not chunk_count([personal_space_of(owner).pk]):
        raise SystemExit(
            "phases spaces, 100k and 1M derive their stores from phase 10k's owner: run --phases 10k first"
        )
    stored = Memory.objects.filter(space_id=personal_space_of(owner).pk).order_by("created_at", "id")
    rows = [
        (memory.pk, memory.content, memory.tags, memory.written_by, memory.compression_status, memory.indexing_attempts)
        for memory in stored.iterator(chunk_size=2000)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            'SELECT memory_id, position, start, "end", halfvec_send(embedding) FROM memories_chunk'
            " WHERE space_id = %s AND model = %s ORDER BY memory_id, position",
            [personal_space_of(owner).pk, model],
        )
        chunks: dict[int, list] = {}
        for memory_id, position, start, end, raw in cursor.fetchall():
            vector = halfvec_from_binary(raw)
            chunks.setdefault(memory_id, []).append(((position, start, end), vector))
    offsets, spans, vectors = [0], [], []
    for memory_id, *_ in rows:
        for span, vector in chunks.get(memory_id, []):
            spans.append(span)
            vectors.append(vector)
        offsets.append(len(spans))
    return SourceStore(
        owner=owner,
        memories=[tuple(row[1:]) for row in rows],
        offsets=np.array(offsets),
        spans=spans,
        vectors=np.stack(vectors),
        model=model,
    )


def derived_vectors(source: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each row moved by Gaussian noise to a cosine of about DERIVED_COSINE from it, unit length:
    |noise|^2 = dimension x sigma^2 = 1 / cosine^2 - 1 for a unit row."""
    sigma = np.sqrt((1 / DERIVED_COSINE**2 - 1) / source.shape[1])
    moved = source + rng.standard_normal(source.shape, dtype=np.float32) * sigma
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def column_types(cursor: CursorWrapper, table: str, columns: list[str]) -> list[int]:
    cursor.execute(
        "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attname = ANY(%s)",
        [table, columns],
    )
    types = dict(cursor.fetchall())
    return [types[column] for column in columns]


def copy_rows(cursor: CursorWrapper, table: str, rows: list[dict]) -> None:
    """COPY these rows (column -> value, the same columns in each) in PostgreSQL's binary format:
    no text to format or escape, vectors above all. Generated columns are PostgreSQL's to fill."""
    columns = list(rows[0])
    names = ", ".join(f'"{column}"' for column in columns)
    types = column_types(cursor, table, columns)
    with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(tuple(row.values()))


def store_derived(
    space_id: int, author: Owner, count: int, source: SourceStore, rng: np.random.Generator, progress: tqdm
) -> None:
    """Give the space `count` indexed memories by `author` copied from `source` in its order (from a
    random start, wrapping around), as one client's conversation with turns seconds apart. The
    memories are inserted through `bulk_create`, which seals their texts, after their search
    columns are derived; their chunks are copied, and their entities linked as the worker links
    them."""
    dimension = source.vectors.shape[1]
    origin = int(rng.integers(len(source.memories)))
    gaps = np.cumsum(rng.uniform(*TURN_GAP_SECONDS, count))
    first = datetime.now(UTC) - timedelta(seconds=float(gaps[-1]) + 60)
    for begin in range(0, count, COPY_BATCH):
        picks = [(origin + i) % len(source.memories) for i in range(begin, min(begin + COPY_BATCH, count))]
        with transaction.atomic(), connection.cursor() as cursor:
            register_halfvec_info(cursor.cursor, TypeInfo.fetch(cursor.connection, "halfvec"))
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence('memories_memory', 'id')) FROM generate_series(1, %s)",
                [len(picks)],
            )
            ids = [row[0] for row in cursor.fetchall()]
            memories, chunks = [], []
            for i, (memory_id, pick) in enumerate(zip(ids, picks, strict=True)):
                content, tags, written_by, compression_status, attempts = source.memories[pick]
                created = first + timedelta(seconds=float(gaps[begin + i]))
                memories.append(
                    Memory(
                        id=memory_id,
                        space_id=space_id,
                        author_id=author.pk,
                        content=content,
                        tags=tags,
                        written_by=written_by,
                        created_at=created,
                        updated_at=created,
                        indexing_status=IndexingStatus.INDEXED,
                        indexing_attempts=attempts,
                        indexing_queued_at=created,
                        compression_status=compression_status,
                    )
                )
                rows = range(source.offsets[pick], source.offsets[pick + 1])
                chunks += [(memory_id, row) for row in rows]
            derive_stored_forms(memories)
            Memory.objects.bulk_create(memories)
            vectors = derived_vectors(source.vectors[[row for _, row in chunks]], rng).astype(">f2")
            copy_rows(
                cursor,
                "memories_chunk",
                [
                    {
                        "memory_id": memory_id,
                        "space_id": space_id,
                        **dict(zip(("position", "start", "end"), source.spans[row], strict=True)),
                        "model": source.model,
                        "dimension": dimension,
                        "embedding": HalfVector(vector),
                    }
                    for (memory_id, row), vector in zip(chunks, vectors, strict=True)
                ],
            )
            entities_link(ids)
        progress.update(len(picks))


def derived_owners(owners: list[tuple[str, int]], source: SourceStore, rebuild: bool) -> list[Owner]:
    """These (username, memory count) owners, with their derived stores: built unless a previous
    run left them at these sizes."""
    users = [owner_named(username) for username, _ in owners]
    personal = {user.username: [personal_space_of(user).pk] for user in users if user is not None}
    stored = {username: memory_count(ids) for username, ids in personal.items() if complete(ids)}
    if not rebuild and all(stored.get(username) == count for username, count in owners):
        print(
            f"reusing the {sum(stored.values()):,} stored memories of {len(owners)} owner(s)"
            " (--rebuild builds them again)",
            flush=True,
        )
        return users
    if stored:
        print(f"deleting the {sum(stored.values()):,} stored memories of these owners first", flush=True)
    delete_owners([username for username, _ in owners])
    users = []
    with tqdm(
        total=sum(count for _, count in owners), desc="storing derived memories", unit="memory", mininterval=2
    ) as progress:
        for index, (username, count) in enumerate(owners):
            user = get_user_model().objects.create_user(username=username)
            store_derived(personal_space_of(user).pk, user, count, source, np.random.default_rng(index), progress)
            users.append(user)
    return users


def derived_phase(
    phase: str, owners: list[tuple[str, int]], source: SourceStore, url: str, queries: list[str], rebuild: bool
) -> PhaseResult:
    start = time.perf_counter()
    users = derived_owners(owners, source, rebuild)
    stored = time.perf_counter() - start
    token = token_create(owner=users[0], name=CLIENT, scope="write").secret
    settle()
    result = measure_searches(phase, reach_of(users[0]), token, url, queries)
    result.store_seconds = stored
    return result


def prepare_team_spaces(member: Owner, count: int, source: SourceStore, rebuild: bool) -> None:
    """TEAM_SPACES, owned by TEAM_OWNER, each with `count` memories of theirs derived from `source`
    (built unless a previous run left them at this size), with `member` among their editors."""
    owner = owner_named(TEAM_OWNER) or get_user_model().objects.create_user(username=TEAM_OWNER)
    spaces = list(
        Space.objects.filter(
            kind=SpaceKind.TEAM, name__in=TEAM_SPACES, memberships__user=owner, memberships__role=Role.OWNER
        ).order_by("name")
    )
    stored = {space.name: memory_count([space.pk]) for space in spaces if complete([space.pk])}
    if not rebuild and all(stored.get(name) == count for name in TEAM_SPACES):
        print(
            f"reusing the {sum(stored.values()):,} stored memories of the team spaces (--rebuild builds them again)",
            flush=True,
        )
    else:
        if spaces:
            print(f"deleting the team spaces' {sum(stored.values()):,} stored memories first", flush=True)
            empty_spaces([space.pk for space in spaces])
            Space.objects.filter(pk__in=[space.pk for space in spaces]).delete()
        spaces = []
        with tqdm(
            total=count * len(TEAM_SPACES), desc="storing derived memories", unit="memory", mininterval=2
        ) as progress:
            for index, name in enumerate(TEAM_SPACES):
                space = team_space_create(user=owner, name=name)
                # Seeds apart from the derived owners' (0, 1, ...).
                store_derived(space.pk, owner, count, source, np.random.default_rng(1_000 + index), progress)
                spaces.append(space)
    for space in spaces:
        if not space.memberships.filter(user=member).exists():
            invitation = space_invitation_create(user=owner, space_id=space.public_id, role=Role.EDITOR)
            space_invitation_accept(user=member, secret=invitation.secret)


def spaces_phase(args: argparse.Namespace, source: SourceStore, url: str, queries: list[str]) -> list[PhaseResult]:
    """Owner A's searches of its personal space alone, then of it and two team spaces, in one state."""
    member = source.owner
    start = time.perf_counter()
    prepare_team_spaces(member, args.space_memories, source, args.rebuild)
    stored = time.perf_counter() - start
    personal = token_create(owner=member, name=CLIENT, scope="write", spaces=[str(personal_space_of(member).public_id)])
    every = token_create(owner=member, name=CLIENT, scope="write")
    settle()
    one = measure_searches(ONE_SPACE, token_reach(personal.token), personal.secret, url, queries)
    three = measure_searches(THREE_SPACES, token_reach(every.token), every.secret, url, queries)
    three.store_seconds = stored
    return [one, three]


# Searches, in every phase.


# The read tools timed over MCP in every phase, by label: the tool and the arguments it gets for a query.
READ_TOOLS: dict[str, tuple[str, Callable[[str], dict]]] = {
    "memory_search": ("memory_search", lambda query: {"query": query, "top_k": TOP_K}),
    "session_start": ("session_start", lambda query: {"query": query}),
    "memory_count": ("memory_count", lambda query: {"query": query}),
}


def graph_tools(reach: Reach, queries: list[str]) -> dict[str, tuple[str, Callable[[str], dict]]]:
    """explore_graph from each query, and from the entity that exploration starts at (the query's
    first entry point, found in this process beforehand)."""
    entry = {query: graph_explore(owner=reach, query=query).entry for query in queries}
    names = [entities[0].name for entities in entry.values() if entities]
    return {
        "explore_graph": ("explore_graph", lambda query: {"query": query}),
        "explore_graph (entity)": (
            "explore_graph",
            lambda query: {"entity": entry[query][0].name if entry[query] else names[0]},
        ),
    }


class RestSearch:
    """GET /api/v1/memories/search on one keep-alive connection."""

    def __init__(self, port: int, token: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}"}

    def __call__(self, query: str) -> float:
        start = time.perf_counter()
        self.connection.request(
            "GET",
            f"/api/v1/memories/search?{urllib.parse.urlencode({'query': query, 'top_k': TOP_K})}",
            headers=self.headers,
        )
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"REST search failed: {response.status} {body[:300]!r}")
        return (time.perf_counter() - start) * 1000


def in_process_search(reach: Reach, query: str) -> tuple[list, float]:
    return timed(search_hybrid, owner=reach, query=query, top_k=TOP_K)


@dataclass
class PathTimes:
    tools: dict[str, ToolCalls]
    rest: list[float]
    in_process: list[float]


async def interleaved_paths(
    url: str, token: str, reach: Reach, queries: list[str], tools: dict[str, tuple[str, Callable[[str], dict]]]
) -> PathTimes:
    """For each query in turn: each of `tools` over MCP, the search over REST and `search_hybrid`
    in this process, so that the machine's drift during a run (2x between hours on these machines)
    weighs on every path alike, in an order that rotates from one query to the next. The first
    WARM_UP_QUERIES queries go through every path untimed."""
    rest = RestSearch(urllib.parse.urlsplit(url).port or 80, token)
    times = PathTimes(tools={label: ToolCalls() for label in tools}, rest=[], in_process=[])
    # The ORM is not called from the event loop: in-process searches run, one at a time, on a thread
    # of their own (which keeps its database connection), and time themselves there.
    searcher = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    async with sdk_client(url, token) as client:

        async def over_mcp(label: str, query: str) -> None:
            tool, arguments = tools[label]
            await times.tools[label].call(client, tool, arguments(query))

        async def over_rest(query: str) -> None:
            times.rest.append(rest(query))

        async def in_process(query: str) -> None:
            times.in_process.append((await loop.run_in_executor(searcher, in_process_search, reach, query))[1])

        paths: list[Callable[[str], Awaitable[None]]] = [
            *(functools.partial(over_mcp, label) for label in tools),
            over_rest,
            in_process,
        ]
        for number, query in enumerate(queries[:WARM_UP_QUERIES] + queries):
            if number == WARM_UP_QUERIES:  # what the warm-up calls took is not counted
                times = PathTimes(tools={label: ToolCalls() for label in tools}, rest=[], in_process=[])
            # Each path comes first as often as last: a search leaves what it read warm for the next.
            turn = number % len(paths)
            for path in paths[turn:] + paths[:turn]:
                await path(query)
    return times


def timed(function: Callable[..., T], /, *arguments, **keywords) -> tuple[T, float]:
    """The function's value and how long it took, in milliseconds."""
    start = time.perf_counter()
    value = function(*arguments, **keywords)
    return value, (time.perf_counter() - start) * 1000


def measure_searches(phase: str, reach: Reach, token: str, url: str, queries: list[str]) -> PhaseResult:
    """Search the spaces `reach` reaches, as `token` (which reaches the same) over MCP and REST and
    as `reach` in this process."""
    print(f"{phase}: searching ...", flush=True)
    tools = READ_TOOLS | graph_tools(reach, queries)
    model = serving_model_name()
    embedder = get_embedder(model)
    embedder.warm_up_queries()
    paths = asyncio.run(interleaved_paths(url, token, reach, queries, tools))
    # The pipeline's parts one by one, and the vector signal against its exact scan.
    signal_arguments = {
        "space_ids": reach.space_ids,
        "filters": MemoryFilters(),
        "limit": TOP_K * CANDIDATES_PER_RESULT,
    }
    split: dict[str, list[float]] = {"embedding": [], "keyword": [], "vector": [], "vector_exact": []}
    overlaps = []
    for query in queries:
        query_vector, elapsed = timed(lambda text: embedder.embed_query(text).result(), query)
        split["embedding"].append(elapsed)
        split["keyword"].append(timed(keyword_ranking, query=query, **signal_arguments)[1])
        approximate, elapsed = timed(vector_ranking, query_vector=query_vector, model=model, **signal_arguments)
        split["vector"].append(elapsed)
        exact, elapsed = timed(vector_ranking, query_vector=query_vector, model=model, exact=True, **signal_arguments)
        split["vector_exact"].append(elapsed)
        exact_ids = {ranked.memory_id for ranked in exact}
        overlaps.append(len(exact_ids & {ranked.memory_id for ranked in approximate}) / max(len(exact_ids), 1))
    return PhaseResult(
        phase=phase,
        searched_memories=memory_count(reach.space_ids),
        total_memories=Memory.objects.count(),
        searched_chunks=chunk_count(reach.space_ids),
        mcp=paths.tools["memory_search"],
        session_start=paths.tools["session_start"],
        count=paths.tools["memory_count"],
        explore=paths.tools["explore_graph"],
        explore_entity=paths.tools["explore_graph (entity)"],
        rest=paths.rest,
        in_process=paths.in_process,
        recall=float(np.mean(overlaps)),
        **split,
    )


# The report.


def code_version() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BASE_DIR, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=BASE_DIR, capture_output=True, text=True)
    return commit.stdout.strip() + (" plus uncommitted changes" if dirty.stdout.strip() else "")


def p50_p95(samples: list[float]) -> str:
    return f"{percentile(samples, 50):.1f} / {percentile(samples, 95):.1f}" if samples else "-"


def spaces_ratios(results: list[PhaseResult]) -> str | None:
    """Phase spaces' p50s across three spaces against those of the one space, when it ran."""
    by_phase = {r.phase: r for r in results}
    if ONE_SPACE not in by_phase or THREE_SPACES not in by_phase:
        return None
    one, three = by_phase[ONE_SPACE], by_phase[THREE_SPACES]
    ratios = ", ".join(
        f"{name} {percentile(many, 50) / percentile(single, 50):.2f}x"
        for name, single, many in (
            ("MCP", one.mcp.latencies, three.mcp.latencies),
            ("REST", one.rest, three.rest),
            ("in-process", one.in_process, three.in_process),
        )
    )
    return f"p50 across three spaces against one space: {ratios} (goal <= 1.5x)"


def report(results: list[PhaseResult], queries: int) -> None:
    width = max(len("phase"), *(len(r.phase) for r in results))
    header = (
        f"{'phase':{width}} {'memories searched / total':>25} {'chunks':>9} {'MCP p50/p95':>13}"
        f" {'REST p50/p95':>13} {'in-proc p50':>11} {'recall@40':>9} {'writes p50/p95':>15} {'indexed in':>10}"
    )
    print(
        f"\nscale, code of {code_version()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores;"
        f" {queries} queries, top_k {TOP_K}; times in ms"
    )
    print(header)
    for r in results:
        searched_total = f"{r.searched_memories:,} / {r.total_memories:,}"
        index = f"{r.index_seconds:.1f} s" if r.index_seconds is not None else "-"
        writes = p50_p95(r.writes.latencies) if r.writes else "-"
        print(
            f"{r.phase:{width}} {searched_total:>25} {r.searched_chunks:>9,} {p50_p95(r.mcp.latencies):>13}"
            f" {p50_p95(r.rest):>13} {percentile(r.in_process, 50):11.1f} {r.recall:9.3f} {writes:>15} {index:>10}"
        )
    if ratios := spaces_ratios(results):
        print(ratios)
    print(
        "targets: 10k MCP p50 <= 25, p95 <= 50; three spaces of 10k at most 1.5 times one space's p50;"
        " 100k and 1M at most twice 10k's; recall >= 0.99; writes p95 <= 30; 11,000 memories indexed <= 300 s"
    )
    print(
        f"\n{'in-process p50 / p95':26} {'search_hybrid':>15} {'query embedding':>16} {'keyword':>15}"
        f" {'vector':>15} {'vector exact':>15}"
    )
    for r in results:
        print(
            f"{r.phase:26} {p50_p95(r.in_process):>15} {p50_p95(r.embedding):>16} {p50_p95(r.keyword):>15}"
            f" {p50_p95(r.vector):>15} {p50_p95(r.vector_exact):>15}"
        )
    print(
        f"\n{'over MCP p50 / p95':26} {'session_start':>15} {'memory_count':>15} {'explore_graph':>15}"
        f" {'from an entity':>15}  (session_start, memory_count and explore_graph with the query)"
    )
    for r in results:
        explore = p50_p95(r.explore.latencies)
        entity = p50_p95(r.explore_entity.latencies)
        print(
            f"{r.phase:26} {p50_p95(r.session_start.latencies):>15} {p50_p95(r.count.latencies):>15}"
            f" {explore:>15} {entity:>15}"
        )
    print("\nrequest overhead, p50s of this run (targets: MCP <= in-process + 6 ms, REST <= + 3 ms,")
    print("session_start <= 1.3x MCP search, explore_graph from a query and from an entity <= 1.5x MCP search)")
    for r in results:
        search, in_process = percentile(r.mcp.latencies, 50), percentile(r.in_process, 50)
        ratios = ", ".join(
            f"{name} {percentile(calls.latencies, 50) / search:.2f}x"
            for name, calls in (
                ("session_start", r.session_start),
                ("explore_graph", r.explore),
                ("from an entity", r.explore_entity),
            )
        )
        mcp, rest = search - in_process, percentile(r.rest, 50) - in_process
        print(
            f"{r.phase:26} MCP +{mcp:.1f} ms ({mcp - r.mcp.client_cpu_ms:+.1f} less the SDK client's CPU per call),"
            f" REST +{rest:.1f} ms; against MCP search: {ratios}"
        )
    for r in results:
        cpu = (
            f"memory_search {r.mcp.client_cpu_ms:.1f} ms, explore_graph {r.explore.client_cpu_ms:.1f} ms"
            f" (from an entity {r.explore_entity.client_cpu_ms:.1f} ms)"
            + (f", memory_write {r.writes.client_cpu_ms:.1f} ms" if r.writes else "")
        )
        store = f"; derived store ready in {r.store_seconds:.0f} s" if r.store_seconds is not None else ""
        print(f"phase {r.phase}: MCP SDK client CPU per call (this process): {cpu}{store}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default=",".join(PHASES), help=f"any of {','.join(PHASES)} (default all)")
    parser.add_argument("--memories", type=int, default=10_000, help="owner A's memories, written over MCP")
    parser.add_argument("--other", type=int, default=1_000, help="owner B's memories, written over MCP")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--space-memories", type=int, default=10_000, help="memories of each team space in the spaces phase"
    )
    parser.add_argument("--large-owner-memories", type=int, default=100_000, help="the 100k phase's owner")
    parser.add_argument("--owners", type=int, default=100, help="owners in the 1M phase")
    parser.add_argument("--owner-memories", type=int, default=10_000, help="memories of each owner in the 1M phase")
    parser.add_argument("--rebuild", action="store_true", help="build the derived stores again even if kept")
    parser.add_argument(
        "--searches-only",
        action="store_true",
        help="phase 10k searches the conversation an earlier run wrote in this data folder, without writing it again",
    )
    parser.add_argument("--index-timeout", type=float, default=1800, help="seconds to wait for the worker")
    parser.add_argument(
        "--token-rate-limit", default="100000/m", help="GNOSEM_TOKEN_RATE_LIMIT for the server (default never refuses)"
    )
    args = parser.parse_args()
    phases = [phase.strip() for phase in args.phases.split(",")]
    if unknown := set(phases) - set(PHASES):
        parser.error(f"unknown phases {', '.join(sorted(unknown))}; choose among {', '.join(PHASES)}")
    # A stopped run (Ctrl-C, `timeout`, kill) stops the server and the consumer too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"stopped by signal {signum}"))
    # Writes come back to back, not seconds apart: the per-token limit stays on (its cost is
    # measured) but never refuses.
    os.environ["GNOSEM_TOKEN_RATE_LIMIT"] = args.token_rate_limit
    log_dir = Path(os.environ["GNOSEM_DATA_DIR"])
    call_command("migrate", interactive=False, verbosity=0)
    call_command("createcachetable", verbosity=0)
    HUEY.flush()
    queries = corpus.questions(args.queries)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    results = []
    worker_log = log_dir / "worker.log"
    with process(gunicorn_command(port), log_dir / "web.log"), process(consumer_command(), worker_log):
        wait_for_http(port, log_dir / "web.log")
        wait_for_worker(worker_log)
        if "10k" in phases:
            results.append(conversation_phase(args, url, queries, worker_log))
        if {"spaces", "100k", "1M"} & set(phases):
            source = source_store(f"{USER_PREFIX}a")
        if "spaces" in phases:
            results += spaces_phase(args, source, url, queries)
        if "100k" in phases:
            owners = [(f"{USER_PREFIX}large", args.large_owner_memories)]
            results.append(derived_phase("100k", owners, source, url, queries, args.rebuild))
        if "1M" in phases:
            owners = [(f"{USER_PREFIX}owner-{i:03d}", args.owner_memories) for i in range(args.owners)]
            results.append(derived_phase("1M", owners, source, url, queries, args.rebuild))
    report(results, len(queries))


if __name__ == "__main__":
    main()
