"""Fixtures of the memories tests: memories written and embedded as the worker would, failed ones,
a second embedding model, and a chat-completions server the test scripts for compression. Texts
more than one test module writes are here too."""

import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from django.db import transaction

from accounts.models import Membership, Role, Space, SpaceKind
from gnosem.types import Owner
from memories import services
from memories.hygiene import near_duplicates
from memories.indexing import embedding
from memories.models import Chunk, IndexingStatus, Memory, Note
from memories.notes import services as notes
from memories.transfer.importing import import_memories
from tests.memories.chat_server import ChatServer
from tests.memories.mcp.conftest import mcp, mcp_as  # noqa: F401  (MCP callers, for tests of a service through every door)
from tests.memories.spaces import member

MODEL = "test-compressor"
API_KEY = "sk-test-key"

# A long memory and a compression of it the guard keeps.
RAW = (
    "The staging database for the billing project moved to a dedicated PostgreSQL 16 server on port 5433 "
    "in March 2025. Priya decided to put PgBouncer in front of it in transaction pooling mode because the "
    "Django workers were opening more than 400 connections during the nightly invoice run. Connections from "
    "the reporting jobs still go directly to the server, since they rely on session-level advisory locks. "
    "The migration was tested with a copy of production data and took eleven minutes of downtime."
)
GOOD = (
    "PROJECT=billing|TOPIC=staging database|STACK=PostgreSQL 16, port 5433|DATE=2025-03|"
    "DECISION=PgBouncer transaction pooling (Priya)|PROBLEM=Django workers >400 connections in nightly invoice run|"
    "FACT=reporting jobs connect directly (session advisory locks)|EVENT=migration tested on prod copy, 11 min downtime"
)

# Memories the ranking tests of search and of the REST API order.
STANDUP = "Stand-up notes: we discussed the release checklist and the flaky login test."
DARK_MODE = "The user prefers dark mode in all editors."
DARK_MODE_AGAIN = "User likes dark mode in every editor."
FONT = "The user's editor font is JetBrains Mono at 14 pt with ligatures on."
CI_CACHE = "The CI pipeline caches pip downloads between runs."

# Times users may send that are no possible date, and times outside the accepted range.
IMPOSSIBLE_TIMES = {
    "2024-02-30": "day is out of range for month",
    "2024-02-30T10:00:00Z": "day is out of range for month",
    "2024-06-01T25:00:00Z": "hour must be in 0..23",
    "2024-06-01T10:00:00+99:00": "the UTC offset must be under 24 hours",
}
OUT_OF_RANGE_TIMES = [
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "1899-12-31T23:59:59Z",
    "3000-01-01T00:00:01Z",
    "2999-12-31T23:00:00-02:00",  # 3000-01-01T01:00Z
]

# An export nested far deeper than any JSON reader should follow, for every door an import takes.
DEEP_EXPORT = b'{"format": "gnosem-export", "version": 1, "memories": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"

SEQUENCE_START = datetime(2025, 3, 3, 9, tzinfo=UTC)

# What the tests of changing the embedding model write before they change it.
SHIPPED_MODEL_MEMORIES = [
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
]


def models_of(memory: Memory) -> set[str]:
    """The models the memory has vectors of."""
    return set(Chunk.objects.filter(memory=memory).values_list("model", flat=True))


@pytest.fixture(scope="session")
def index() -> Callable[..., list[Memory]]:
    """Embed written memories in one batch, as the worker would; returns them as stored now."""

    def index(*memories: Memory) -> list[Memory]:
        services.memories_index(memory_ids=[memory.pk for memory in memories])
        for memory in memories:
            memory.refresh_from_db()
        return list(memories)

    return index


@pytest.fixture(scope="session")
def write_indexed(index) -> Callable[..., Memory]:
    """Write one memory (`memory_write`'s fields) and embed it."""

    def write_indexed(owner, content: str, **fields) -> Memory:
        return index(services.memory_write(owner=owner, content=content, **fields))[0]

    return write_indexed


@pytest.fixture(scope="session")
def write_dated(index) -> Callable[..., list[Memory]]:
    """Write (content, created_at) pairs, each as another client (so no memory lends another
    context), and embed them in one batch."""

    def write_dated(owner, *memories: tuple[str, datetime]) -> list[Memory]:
        # Atomic: outside a test's transaction each write would queue its own indexing on commit.
        with transaction.atomic():
            return index(
                *(
                    services.memory_write(owner=owner, content=content, created_at=created_at, written_by=f"client {i}")
                    for i, (content, created_at) in enumerate(memories)
                )
            )

    return write_dated


@pytest.fixture(scope="session")
def import_dated(index) -> Callable[..., list[Memory]]:
    """Like `write_dated`, through an import: the same text at several times stays several
    memories there (memory_write would return the first), and they are kept apart once embedded
    (as their owner would keep two such notes of different days), so that ties can be ranked."""

    def import_dated(owner, *memories: tuple[str, datetime]) -> list[Memory]:
        entries = [
            {"content": content, "created_at": created_at.isoformat(), "written_by": f"client {i}"}
            for i, (content, created_at) in enumerate(memories)
        ]
        with transaction.atomic():
            import_memories(owner=owner, document={"format": "gnosem-export", "version": 2, "memories": entries})
        imported = Memory.objects.filter(space__personal_of=owner).order_by("-id")[: len(memories)]
        indexed = index(*sorted(imported, key=lambda memory: memory.pk))
        for memory in indexed:
            if memory.duplicate_of_id:
                near_duplicates.memory_keep_apart(owner=owner, public_id=memory.public_id)
        return indexed

    return import_dated


@pytest.fixture(scope="session")
def write_in_sequence() -> Callable[..., Memory]:
    """Write a memory `minutes` after SEQUENCE_START, by "claude" unless `written_by` says otherwise:
    what one client writes minutes apart is a sequence (memories.indexing.sequences)."""

    def write_in_sequence(owner, content: str, minutes: float, written_by: str = "claude", **fields) -> Memory:
        created_at = SEQUENCE_START + timedelta(minutes=minutes)
        return services.memory_write(
            owner=owner, content=content, written_by=written_by, created_at=created_at, **fields
        )

    return write_in_sequence


@pytest.fixture(scope="session")
def failed_memory() -> Callable[..., Memory]:
    """A memory whose every embedding attempt failed, as the worker leaves it."""

    def failed_memory(owner, content: str) -> Memory:
        memory = services.memory_write(owner=owner, content=content)
        Memory.objects.filter(pk=memory.pk).update(
            indexing_status=IndexingStatus.FAILED, indexing_attempts=5, indexing_error="OSError: model file missing"
        )
        return memory

    return failed_memory


@pytest.fixture(scope="session")
def failed_note() -> Callable[..., Note]:
    """A note whose every embedding attempt failed, as the worker leaves it."""

    def failed_note(owner, title: str, content: str) -> Note:
        note = notes.note_write(owner=owner, title=title, content=content)
        Note.objects.filter(pk=note.pk).update(
            indexing_status=IndexingStatus.FAILED, indexing_attempts=5, indexing_error="OSError: model file missing"
        )
        return note

    return failed_note


@pytest.fixture(scope="session")
def second_model(tmp_path_factory) -> str:
    """A second real sentence-transformers model on disk: the shipped MiniLM with a fixed random
    orthogonal projection to 128 dimensions on top (cosines roughly kept, vectors of another size)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    shipped = embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).model
    generator = torch.Generator().manual_seed(7)
    projection = torch.nn.init.orthogonal_(torch.empty(128, 384), generator=generator)
    dense = Dense(384, 128, bias=False, activation_function=torch.nn.Identity(), init_weight=projection)
    path = tmp_path_factory.mktemp("models") / "minilm-128"
    SentenceTransformer(modules=[shipped[0], shipped[1], dense, Normalize()]).save(str(path))
    return str(path)


@pytest.fixture
def shipped_model_memories(owner, index) -> list[Memory]:
    """SHIPPED_MODEL_MEMORIES, indexed with the shipped model (which thereby becomes the serving one)."""
    return index(*(services.memory_write(owner=owner, content=content) for content in SHIPPED_MODEL_MEMORIES))


@pytest.fixture
def chat_server(settings) -> Iterator[ChatServer]:
    """Compression on, against a local server; quick timeouts and no waiting between retries."""
    with ChatServer() as server:
        settings.GNOSEM_LLM_BASE_URL = server.url
        settings.GNOSEM_LLM_MODEL = MODEL
        settings.GNOSEM_LLM_API_KEY = API_KEY
        settings.GNOSEM_LLM_TIMEOUT_SECONDS = 0.5
        settings.GNOSEM_LLM_MAX_ATTEMPTS = 3
        settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 0
        yield server


@pytest.fixture
def closed_port_url(settings) -> str:
    """Compression on, against a port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    settings.GNOSEM_LLM_BASE_URL = url
    settings.GNOSEM_LLM_MODEL = MODEL
    settings.GNOSEM_LLM_MAX_ATTEMPTS = 2
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 0
    return url


@pytest.fixture
def team(owner) -> Space:
    """A team space, "Platform", that the owner owns."""
    space = Space.objects.create(name="Platform", kind=SpaceKind.TEAM)
    Membership.objects.create(space=space, user=owner, role=Role.OWNER)
    return space


@pytest.fixture
def team_member(team: Space) -> Callable[[str, str], Owner]:
    """Makes a user of that name and adds them to the team space with that role."""

    return partial(member, team)
