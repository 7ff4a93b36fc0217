"""A search across spaces reads each large space's HNSW index and shortlists the others, and ranks
as the exact scan over all of them does. CREATE INDEX CONCURRENTLY needs committed data
(transactional_db)."""

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model

from accounts.models import Membership, Role, Space, SpaceKind
from accounts.reach import reach_of
from accounts.spaces import personal_space_of
from memories import services
from memories.indexing.embedding import get_embedder
from memories.indexing.vector_indexes import index_name, vector_indexes_maintain
from memories.indexing.vectors import serving_model_name
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.search.signals import vector_ranking
from memories.selectors import MemoryFilters
from tests.memories.search.plans import executed_plan, reads_index

TEAM_FACTS = [
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
    "The pricing page shows one card per plan instead of a comparison table.",
    "The mobile app's onboarding flow was cut from five steps to three.",
    "The staging database listens on port 6543.",
]
PERSONAL_FACTS = [
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "My new laptop has 32 GB of memory.",
]


def index_scanned(run) -> bool:
    """Whether the last statement `run()` executes reads an HNSW index."""
    return reads_index(executed_plan(run), "chunk_hnsw_")


@pytest.fixture
def small_threshold(settings, transactional_db) -> Iterator[None]:
    """Spaces get an index from 4 chunks on; every index is dropped afterwards."""
    settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS = 4
    yield
    settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS = 0
    vector_indexes_maintain()


def test_a_search_across_an_indexed_and_a_scanned_space_ranks_as_the_exact_scan(small_threshold):
    user = get_user_model().objects.create_user(username="member")
    team = Space.objects.create(name="Platform", kind=SpaceKind.TEAM)
    Membership.objects.create(space=team, user=user, role=Role.EDITOR)
    written = [services.memory_write(owner=user, content=fact, space="Platform") for fact in TEAM_FACTS]
    written += [services.memory_write(owner=user, content=fact) for fact in PERSONAL_FACTS]
    services.memories_index(memory_ids=[memory.pk for memory in written])

    report = vector_indexes_maintain()

    assert report.built == [index_name(team.pk, serving_model_name())]  # the personal space is too small
    spaces = reach_of(user).space_ids
    model = serving_model_name()
    for question in ("who is away in Portugal?", "when do database backups run?", "how much memory has my laptop?"):
        vector = get_embedder(model).embed([question])[0]
        arguments = {
            "space_ids": spaces,
            "query_vector": vector,
            "model": model,
            "filters": MemoryFilters(),
            "limit": 5,
        }
        exact = vector_ranking(**arguments, exact=True)
        assert [item.memory_id for item in vector_ranking(**arguments)] == [item.memory_id for item in exact]
        assert index_scanned(lambda arguments=arguments: vector_ranking(**arguments))
    hits = search_hybrid(owner=user, query="who is away in Portugal?")
    assert hits[0].memory.content == PERSONAL_FACTS[0]
    assert {Memory.objects.get(pk=hit.memory.pk).space_id for hit in hits} == {team.pk, personal_space_of(user).pk}
