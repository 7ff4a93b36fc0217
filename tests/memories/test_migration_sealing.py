"""The migration that seals memories: every text, compressed form and earlier version stored
before is sealed, found by its words through the blind index with the statistics rebuilt, and
opened again on the way back."""

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.models import Memory, MemoryRevision
from memories.search.signals import keyword_ranking
from memories.selectors import MemoryFilters
from tests.migrating import latest, migrate, migrated_to

BEFORE = [("memories", "0025_encryption_keys")]
AFTER = [("memories", "0026_sealed_memories")]
TEXTS = ["Ottoline Brackenbury settled invoice ERR_7Q31.", "The Zanzibar-Quokka deploy happens on Thursdays?"]
COMPRESSED = "PERSON=Ottoline Brackenbury|ERROR=ERR_7Q31"
EARLIER = "Ottoline Brackenbury owes invoice ERR_7Q31."


def rows(statement: str, params: list | None = None) -> set[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return set(cursor.fetchall())


# What the postings and statistics must hold, computed from the memories themselves.
EXPECTED_POSTINGS = """
    SELECT u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length
    FROM memories_memory m, unnest(m.search_vector) u"""
STORED_POSTINGS = "SELECT lexeme, memory_id, tf, length FROM memories_term_posting"
EXPECTED_TERMS = """
    SELECT l, count(*)::integer FROM memories_memory m, unnest(tsvector_to_array(m.search_vector)) l GROUP BY 1"""
STORED_TERMS = "SELECT lexeme, df FROM memories_space_terms WHERE df > 0"


def populate(apps) -> int:
    """A user's space with two memories (one compressed, one with an earlier version), as stored
    before sealing; returns the space's id."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memories, revisions = apps.get_model("memories", "Memory"), apps.get_model("memories", "MemoryRevision")
    now = timezone.now()
    user = users.objects.create(username="sealed", email="sealed@example.com")
    space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
    stored = [
        memories.objects.create(space=space, author=user, content=text, created_at=now, updated_at=now)
        for text in TEXTS
    ]
    memories.objects.filter(pk=stored[0].pk).update(content_optimized=COMPRESSED, compression_status="compressed")
    revisions.objects.create(memory=stored[0], content=EARLIER, tags=[], valid_from=now, replaced_at=now)
    return space.pk


@pytest.mark.django_db(transaction=True)
def test_stored_memories_are_sealed_and_found_by_their_words_and_opened_again_going_back():
    with migrated_to(BEFORE) as apps:
        space_id = populate(apps)
        plain_digests = rows("SELECT content_digest FROM memories_memory")

        migrate(AFTER)
        stored = " ".join(row[0] for row in rows("SELECT t::text FROM memories_memory t")).lower()
        stored += " ".join(row[0] for row in rows("SELECT t::text FROM memories_memoryrevision t")).lower()
        assert [word for word in ("ottoline", "brackenbury", "7q31", "zanzibar", "owes") if word in stored] == []
        assert rows("SELECT content_digest FROM memories_memory").isdisjoint(plain_digests)
        migrate(latest())  # the application's models read the rows as the later migrations leave them
        memories = sorted(Memory.objects.filter(space_id=space_id), key=lambda memory: memory.pk)
        assert [memory.content for memory in memories] == TEXTS
        assert (
            memories[0].content_optimized == COMPRESSED and memories[0].tokens_optimized == (len(COMPRESSED) + 3) // 4
        )
        assert [memory.is_question for memory in memories] == [False, True]
        assert [revision.content for revision in MemoryRevision.objects.filter(memory=memories[0])] == [EARLIER]
        assert rows(STORED_POSTINGS) == rows(EXPECTED_POSTINGS) != set()
        assert rows(STORED_TERMS) == rows(EXPECTED_TERMS)
        found = keyword_ranking(space_ids=[space_id], query="ERR_7Q31 Brackenbury", filters=MemoryFilters(), limit=5)
        assert [item.memory_id for item in found] == [memories[0].pk]

        apps = migrate(BEFORE)
        plain = apps.get_model("memories", "Memory").objects.order_by("pk")
        assert [(memory.content, memory.content_optimized) for memory in plain] == [
            (TEXTS[0], COMPRESSED),
            (TEXTS[1], None),
        ]
        assert list(apps.get_model("memories", "MemoryRevision").objects.values_list("content", flat=True)) == [EARLIER]
        assert rows("SELECT content_digest FROM memories_memory") == plain_digests
        assert ("brackenburi",) in rows("SELECT lexeme FROM memories_term_posting")
        assert rows(STORED_POSTINGS) == rows(EXPECTED_POSTINGS)
        assert rows(STORED_TERMS) == rows(EXPECTED_TERMS)
