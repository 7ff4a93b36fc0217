"""Near-duplicates: linked by meaning once embedded, shown once in search, merged (and unmerged)
or kept apart by the owner, through the services, REST and the dashboard."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from gnosem.errors import ValidationError
from memories import services
from memories.hygiene import near_duplicates
from memories.models import KeptApart, Memory
from memories.search.pipeline import search_hybrid
from tests.memories.stored import with_text

START = datetime(2025, 3, 3, 9, tzinfo=UTC)
ORIGINAL = "The staging database listens on port 5433 because 5432 is taken by the legacy cluster."
RESTATED = "Staging's database runs on port 5433, since the legacy cluster already uses 5432."
UNRELATED = "Maria is on vacation in Lisbon from August 3 to August 17."


@pytest.fixture
def pair(owner, index) -> tuple[Memory, Memory]:
    original = services.memory_write(owner=owner, content=ORIGINAL, written_by="cursor", created_at=START)
    index(original)
    restated = services.memory_write(
        owner=owner, content=RESTATED, written_by="claude code", created_at=START + timedelta(days=9)
    )
    services.memory_write(owner=owner, content=UNRELATED, written_by="cursor", created_at=START + timedelta(days=10))
    index(*Memory.objects.filter(space__personal_of=owner, indexing_status="pending"))
    return Memory.objects.get(pk=original.pk), Memory.objects.get(pk=restated.pk)


def test_a_restatement_is_linked_to_the_older_memory_once_embedded(owner, pair):
    original, restated = pair

    assert restated.duplicate_of == original
    assert original.duplicate_of is None
    assert with_text(UNRELATED).duplicate_of is None


def test_search_shows_the_pair_once_with_the_other_as_its_duplicate(owner, pair, mcp):
    original, restated = pair

    hits = search_hybrid(owner=owner, query="which port does the staging database use?")

    assert [hit.memory for hit in hits].count(original) + [hit.memory for hit in hits].count(restated) == 1
    shown = next(hit for hit in hits if hit.memory in pair)
    assert {member.pk for member in shown.duplicates} == {original.pk, restated.pk} - {shown.memory.pk}
    result = mcp.ok("memory_search", {"query": "which port does the staging database use?"})["results"][0]
    assert len(result["duplicates"]) == 1 and set(result["also_written_by"]) == {"cursor", "claude code"} - {
        result["written_by"]
    }


def test_merge_hides_the_duplicate_and_reinstating_undoes_it(owner, pair):
    original, restated = pair

    near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)
    restated.refresh_from_db()
    assert restated.superseded_by == original
    assert [hit.memory for hit in search_hybrid(owner=owner, query="staging database port")].count(restated) == 0

    services.memory_reinstate(owner=owner, public_id=restated.public_id)
    restated.refresh_from_db()
    assert restated.superseded_by is None and restated.duplicate_of == original


def test_keep_apart_drops_the_link_for_good(owner, pair):
    original, restated = pair

    near_duplicates.memory_keep_apart(owner=owner, public_id=restated.public_id)
    near_duplicates.near_duplicates_link([restated.pk])  # as re-embedding it would

    restated.refresh_from_db()
    assert restated.duplicate_of is None
    assert KeptApart.objects.filter(first=original, second=restated).exists()
    with pytest.raises(ValidationError, match="not linked as a near-duplicate"):
        near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)


def test_rest_and_dashboard_merge_and_keep_apart_for_the_owner_only(
    owner, pair, owner_token, stranger_token, owner_client, stranger_client
):
    from tests.memories.api.test_api import Api

    original, restated = pair
    assert Api(stranger_token).send("post", f"memories/{restated.public_id}/merge").status_code == 404
    assert stranger_client.post(reverse("memory_keep_apart", args=[restated.public_id])).status_code == 404

    page = owner_client.get(reverse("near_duplicates")).content.decode()
    assert "runs on port 5433, since the legacy cluster" in page and "Keep apart" in page
    merged = Api(owner_token).send("post", f"memories/{restated.public_id}/merge")
    assert merged.status_code == 200 and merged.json()["superseded_by"] == str(original.public_id)
    assert Api(owner_token).send("post", f"memories/{restated.public_id}/reinstate").json()["superseded_by"] is None

    owner_client.post(reverse("memory_keep_apart", args=[restated.public_id]), {"back": "duplicates"})
    restated.refresh_from_db()
    assert restated.duplicate_of is None


def test_a_restatement_must_keep_enough_of_the_words_too(pair, monkeypatch):
    original, restated = pair  # 7 of the 9 search terms of the shorter one in common

    monkeypatch.setattr(near_duplicates, "NEAR_DUPLICATE_MIN_WORD_OVERLAP", 0.9)
    near_duplicates.near_duplicates_link([restated.pk])
    restated.refresh_from_db()
    assert restated.duplicate_of is None

    monkeypatch.setattr(near_duplicates, "NEAR_DUPLICATE_MIN_WORD_OVERLAP", 0.7)
    near_duplicates.near_duplicates_link([restated.pk])
    restated.refresh_from_db()
    assert restated.duplicate_of == original


def test_in_context_readings_take_no_place_among_the_candidates(owner, index, monkeypatch):
    # The reply is also embedded in the context of the decision before it, a reading the retelling
    # matches word for word; only a first chunk can be an original, so that reading is no candidate.
    decision = "We moved the billing service to Postgres 16 last week."
    original, reply = index(
        services.memory_write(owner=owner, content=decision, written_by="cursor", created_at=START),
        services.memory_write(
            owner=owner, content="It went smoothly.", written_by="cursor", created_at=START + timedelta(minutes=1)
        ),
    )
    assert reply.chunks.count() == 2  # itself, and read in context
    monkeypatch.setattr(near_duplicates, "SHORTLIST", 1)

    [retold] = index(
        services.memory_write(
            owner=owner,
            content=f"{decision}\nIt went smoothly.",
            written_by="claude code",
            created_at=START + timedelta(days=2),
        )
    )

    assert retold.duplicate_of == original
