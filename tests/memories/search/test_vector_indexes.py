"""HNSW indexes for large spaces (memories.indexing.vector_indexes): built for spaces from the threshold on,
read by the vector signal only for their space and only when unfiltered, dropped when their space
goes or shrinks, never two builders at once, and a failed build leaves nothing behind. Each user
here writes to their personal space.

CREATE INDEX CONCURRENTLY cannot run inside a transaction, so these tests commit (transactional_db)."""

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection, connections

from accounts.spaces import personal_space_of
from memories import services
from memories.indexing import vector_indexes
from memories.indexing.embedding import get_embedder
from memories.indexing.vector_indexes import index_name, vector_indexes_maintain
from memories.indexing.vectors import serving_model_name
from memories.models import Memory, VectorIndex
from memories.search.pipeline import search_hybrid
from memories.search.signals import vector_ranking
from memories.selectors import MemoryFilters
from memories.tasks import vector_indexes_task
from tests.memories.search.plans import executed_plan, reads_index

FACTS = [
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
    "The pricing page shows one card per plan instead of a comparison table.",
    "New hires get a 14-inch laptop with 32 GB of memory.",
    "The mobile app's onboarding flow was cut from five steps to three.",
]


@pytest.fixture
def small_threshold(settings, transactional_db) -> Iterator[None]:
    """Owners get an index from 4 chunks on; every index is dropped afterwards."""
    settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS = 4
    yield
    settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS = 0
    vector_indexes_maintain()


def indexes_on_chunks() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_hnsw_%'")
        return {row[0] for row in cursor.fetchall()}


def write_facts(owner, facts=FACTS, **fields) -> list:
    memories = [
        services.memory_write(owner=owner, content=fact, written_by=f"client {n}", **fields)
        for n, fact in enumerate(facts)
    ]
    services.memories_index(memory_ids=[memory.pk for memory in memories])
    return memories


def uses_index(owner, query_vector, filters: MemoryFilters | None = None) -> bool:
    """Whether the vector signal's query for this owner's personal space reads its HNSW index (EXPLAIN ANALYZE of
    the very statement it runs: the index scan is executed, not only planned)."""
    plan = executed_plan(
        lambda: vector_ranking(
            space_ids=[personal_space_of(owner).pk],
            query_vector=query_vector,
            model=serving_model_name(),
            filters=filters or MemoryFilters(),
            limit=8,
        )
    )
    return reads_index(plan, index_name(personal_space_of(owner).pk, serving_model_name()))


def query_vector(text: str):
    return get_embedder(serving_model_name()).embed([text])[0]


def test_an_owner_from_the_threshold_on_gets_an_index_that_its_unfiltered_searches_read(small_threshold):
    owner = get_user_model().objects.create_user(username="large")
    small = get_user_model().objects.create_user(username="small")
    write_facts(owner)
    write_facts(small, FACTS[:2])

    report = vector_indexes_maintain()

    assert report.built == [index_name(personal_space_of(owner).pk, serving_model_name())]
    assert indexes_on_chunks() == set(report.built)
    assert VectorIndex.objects.get(space__personal_of=owner).ready
    vector = query_vector("who is away in Portugal?")
    assert uses_index(owner, vector)
    assert not uses_index(small, vector)
    assert not uses_index(owner, vector, MemoryFilters(written_by="client 0"))  # filtered: scanned


def test_the_index_finds_what_the_exact_scan_finds_and_only_the_owners(small_threshold):
    owner = get_user_model().objects.create_user(username="large")
    stranger = get_user_model().objects.create_user(username="stranger with the same facts")
    write_facts(owner)
    write_facts(stranger)  # indexed too, and just as near
    vector = query_vector("when do backups of the database run?")
    model = serving_model_name()
    mine = [personal_space_of(owner).pk]
    exact = vector_ranking(
        space_ids=mine, query_vector=vector, model=model, filters=MemoryFilters(), limit=5, exact=True
    )

    vector_indexes_maintain()
    indexed = vector_ranking(space_ids=mine, query_vector=vector, model=model, filters=MemoryFilters(), limit=5)

    assert [item.memory_id for item in indexed] == [item.memory_id for item in exact]
    found = Memory.objects.filter(pk__in=[item.memory_id for item in indexed])
    assert list(found.values_list("space", flat=True).distinct()) == mine
    assert search_hybrid(owner=owner, query="when do backups of the database run?")[0].memory.content == FACTS[2]


def test_a_filtered_search_of_an_indexed_owner_keeps_to_its_filters(small_threshold):
    owner = get_user_model().objects.create_user(username="large")
    tagged = write_facts(owner, FACTS[:1], tags=["travel"])[0]
    write_facts(owner, FACTS[1:])
    vector_indexes_maintain()

    hits = search_hybrid(owner=owner, query="deploy approvals", filters=MemoryFilters(tags=("travel",)))

    assert [hit.memory.pk for hit in hits] == [tagged.pk]


def test_indexes_of_deleted_or_shrunk_owners_are_dropped(small_threshold):
    leaving = get_user_model().objects.create_user(username="leaving")
    shrinking = get_user_model().objects.create_user(username="shrinking")
    write_facts(leaving)
    memories = write_facts(shrinking)
    built = set(vector_indexes_maintain().built)
    assert len(built) == 2

    leaving.delete()
    for memory in memories[1:]:
        services.memory_delete(owner=shrinking, public_id=memory.public_id)
    report = vector_indexes_maintain()

    assert set(report.dropped) == built
    assert indexes_on_chunks() == set()
    assert not VectorIndex.objects.exists()


def test_a_second_run_waits_for_none_and_does_nothing_while_one_is_at_work(small_threshold):
    write_facts(get_user_model().objects.create_user(username="large"))
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [vector_indexes._LOCK_KEY])
        report = vector_indexes_maintain()
    finally:
        other.close()

    assert report.skipped and not report.built
    assert indexes_on_chunks() == set()


def test_a_failed_build_leaves_no_index_and_no_row_and_is_tried_again(small_threshold, monkeypatch, command):
    owner = get_user_model().objects.create_user(username="large")
    write_facts(owner)
    monkeypatch.setattr(vector_indexes, "HNSW_M", 1000)  # pgvector refuses m > 100

    with pytest.raises(CommandError, match="could not be built"):
        command("vectorindexes")

    assert indexes_on_chunks() == set()
    assert not VectorIndex.objects.exists()
    monkeypatch.undo()
    out, _ = command("vectorindexes")
    assert out.startswith("1 vector index(es) built, 0 dropped")
    assert uses_index(owner, query_vector("laptop for new hires"))


def test_the_workers_periodic_task_builds_what_is_missing(small_threshold):
    owner = get_user_model().objects.create_user(username="large")
    write_facts(owner)

    assert vector_indexes_task.call_local() == 1
    assert vector_indexes_task.call_local() == 0  # nothing left to build
    assert indexes_on_chunks() == {index_name(personal_space_of(owner).pk, serving_model_name())}


def test_a_restatement_by_an_indexed_owner_is_linked_through_its_index(small_threshold):
    owner = get_user_model().objects.create_user(username="large")
    original = write_facts(owner)[2]  # the backups
    vector_indexes_maintain()
    statements = []

    def capture(execute, statement, params, many, context):
        statements.append(str(statement))
        return execute(statement, params, many, context)

    with connection.execute_wrapper(capture):
        restated = services.memory_write(
            owner=owner,
            content="Postgres backups run every night at 02:00 UTC and are kept 30 days in the S3 bucket "
            "db-backups-eu.",
            written_by="another client",
        )
        services.memories_index(memory_ids=[restated.pk])

    restated.refresh_from_db()
    assert restated.duplicate_of_id == original.pk
    assert any("<=> f.embedding::halfvec" in statement for statement in statements)
