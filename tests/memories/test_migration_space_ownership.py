"""The migration that hands ownership from users to spaces keeps every row and rebuilds everything
derived for search per space; going back restores the per-owner statistics."""

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from tests.migrating import migrate, migrated_to

BEFORE = [("accounts", "0006_spaces"), ("memories", "0021_space_and_author")]
AFTER = [("accounts", "0006_spaces"), ("memories", "0022_space_owns_memories")]


def rows(statement: str) -> set[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return set(cursor.fetchall())


# What the postings and statistics must hold, computed from the memories themselves.
EXPECTED_POSTINGS = """
    SELECT m.space_id, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length,
           m.superseded_by_id IS NULL
    FROM memories_memory m, unnest(m.search_vector) u"""
EXPECTED_TERMS = """
    SELECT m.space_id, l, count(*)::integer FROM memories_memory m, unnest(tsvector_to_array(m.search_vector)) l
    GROUP BY 1, 2"""


def kept(apps) -> set[tuple]:
    """What an export carries of every memory and note, links included, by public id."""
    memories, notes = apps.get_model("memories", "Memory"), apps.get_model("memories", "Note")
    return {
        (*row[:4], tuple(row[4]), *row[5:])
        for row in memories.objects.values_list(
            "public_id",
            "author__username",
            "content",
            "written_by",
            "tags",
            "pinned",
            "created_at",
            "updated_at",
            "superseded_by__public_id",
            "duplicate_of__public_id",
        )
    } | set(notes.objects.values_list("public_id", "author__username", "title", "content", "created_at"))


def populate(apps) -> dict[str, int]:
    """Two users with memories, chunks, notes, passages and entities in their personal spaces, at
    the state before; returns their space ids by name."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memberships = apps.get_model("accounts", "Membership")
    memories, chunks = apps.get_model("memories", "Memory"), apps.get_model("memories", "Chunk")
    notes, passages = apps.get_model("memories", "Note"), apps.get_model("memories", "NoteChunk")
    entities, indexes = apps.get_model("memories", "Entity"), apps.get_model("memories", "VectorIndex")
    now = timezone.now()
    space_ids = {}
    for name in ("alice", "bob"):
        user = users.objects.create(username=name, email=f"{name}@example.com")
        space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
        memberships.objects.create(space=space, user=user, role="owner")
        space_ids[name] = space.pk
        written = memories.objects.bulk_create(
            memories(
                owner=user,
                space=space,
                author=user,
                content=f"{name} deployed release {i} of the billing service",
                created_at=now,
                updated_at=now,
            )
            for i in range(12)
        )
        memories.objects.filter(pk=written[0].pk).update(superseded_by=written[1])
        memories.objects.filter(pk=written[2].pk).update(duplicate_of=written[3])
        chunks.objects.bulk_create(
            chunks(memory=memory, owner=user, position=0, start=0, end=10, model="m", dimension=3, embedding=[1, 0, 0])
            for memory in written
        )
        note = notes.objects.create(
            owner=user, space=space, author=user, title="Runbook", content="text", created_at=now, updated_at=now
        )
        passages.objects.create(
            note=note, owner=user, position=0, start=0, end=4, text="text", model="m", dimension=3, embedding=[0, 1, 0]
        )
        entities.objects.create(owner=user, space=space, key="billing", name="Billing", kind="project", linked_at=now)
        indexes.objects.create(owner=user, model="m", dimensions=3, name=f"chunk_hnsw_{user.pk}_x", ready=True)
    return space_ids


@pytest.mark.django_db(transaction=True)
def test_ownership_moves_to_spaces_with_every_row_and_the_search_statistics_rebuilt():
    with migrated_to(BEFORE) as apps:
        space_ids = populate(apps)
        before = kept(apps)

        apps = migrate(AFTER)

        assert kept(apps) == before

        memories, entities = apps.get_model("memories", "Memory"), apps.get_model("memories", "Entity")
        for space_id in space_ids.values():
            assert memories.objects.filter(space_id=space_id).count() == 12
            assert entities.objects.filter(space_id=space_id, key="billing").count() == 1
        assert not rows(
            "SELECT c.id FROM memories_chunk c JOIN memories_memory m ON m.id = c.memory_id "
            "WHERE c.space_id <> m.space_id"
        )
        assert not rows(
            "SELECT c.id FROM memories_note_chunk c JOIN memories_note n ON n.id = c.note_id "
            "WHERE c.space_id <> n.space_id"
        )
        assert rows("SELECT count(*) FROM memories_chunk") == {(24,)}
        assert rows("SELECT space_id, lexeme, memory_id, tf, length, current FROM memories_term_posting") == rows(
            EXPECTED_POSTINGS
        )
        assert rows("SELECT space_id, lexeme, df FROM memories_space_terms WHERE df > 0") == rows(EXPECTED_TERMS)
        assert rows("SELECT space_id, documents FROM memories_space_corpus") == {
            (space_id, 12) for space_id in space_ids.values()
        }
        assert not apps.get_model("memories", "VectorIndex").objects.exists()

        # The triggers follow the space from now on.
        memories.objects.filter(space_id=space_ids["alice"]).update(space_id=space_ids["bob"])
        assert rows("SELECT space_id, documents FROM memories_space_corpus") == {
            (space_ids["alice"], 0),
            (space_ids["bob"], 24),
        }
        assert rows("SELECT space_id, lexeme, memory_id, tf, length, current FROM memories_term_posting") == rows(
            EXPECTED_POSTINGS
        )


@pytest.mark.django_db(transaction=True)
def test_going_back_restores_the_per_owner_statistics():
    with migrated_to(AFTER):
        apps = migrate(BEFORE)

        users = apps.get_model(settings.AUTH_USER_MODEL)
        user = users.objects.create(username="carol")
        space = apps.get_model("accounts", "Space").objects.create(name="Personal", kind="personal", personal_of=user)
        now = timezone.now()
        apps.get_model("memories", "Memory").objects.create(
            owner=user, space=space, author=user, content="carol writes again", created_at=now, updated_at=now
        )

        assert rows("SELECT owner_id, documents FROM memories_owner_corpus") == {(user.pk, 1)}
        assert rows(f"SELECT count(*) FROM memories_term_posting WHERE owner_id = {user.pk}") == {(2,)}
