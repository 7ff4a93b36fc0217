"""The migration that seals tags: every memory's, earlier version's and note's tags stored before
are sealed, memories and notes still found by them, and every list opened again on the way back."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from memories.models import Memory, MemoryRevision, Note
from memories.notes.services import note_list
from memories.reading.counting import memory_count
from memories.selectors import MemoryFilters, memory_list
from tests.migrating import latest, migrate, migrated_to

BEFORE = [("memories", "0028_sealed_entities")]
AFTER = [("memories", "0029_sealed_tags")]
MEMORY_TAGS = ["project:zanzibar-quokka", "brackenbury"]
EARLIER_TAGS = ["ottoline"]
NOTE_TAGS = ["runbook-7q31"]
PLANTED = ("zanzibar", "quokka", "brackenbury", "ottoline", "7q31")


def stored_rows() -> str:
    """Every row of the three tables as PostgreSQL writes them, bytea as the bytes it holds."""
    with connection.cursor() as cursor:
        found = []
        for table in ("memories_memory", "memories_memoryrevision", "memories_note"):
            cursor.execute(f"SELECT t::text, tags FROM {table} t")
            found += [
                f"{text} {bytes(tags) if isinstance(tags, memoryview | bytes) else tags}" for text, tags in cursor
            ]
        return " ".join(found).lower()


def populate(apps) -> int:
    """A user's space with a tagged memory, its tagged earlier version and a tagged note, as stored
    before sealing tags; returns the user's id."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memories, revisions = apps.get_model("memories", "Memory"), apps.get_model("memories", "MemoryRevision")
    notes = apps.get_model("memories", "Note")
    now = timezone.now()
    user = users.objects.create(username="sealed", email="sealed@example.com")
    space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
    apps.get_model("accounts", "Membership").objects.create(space=space, user=user, role="owner")
    derived = {"key_version": 1, "search_vector": "", "search_length": 0, "content_digest": "-", "is_question": False}
    memory = memories.objects.create(
        space=space,
        author=user,
        content="A tagged memory.",
        tags=MEMORY_TAGS,
        created_at=now,
        updated_at=now,
        **derived,
    )
    revisions.objects.create(
        memory=memory, space=space, content="Its first version.", tags=EARLIER_TAGS, valid_from=now, replaced_at=now
    )
    notes.objects.create(
        space=space,
        author=user,
        title="A note",
        content="A tagged note.",
        tags=NOTE_TAGS,
        created_at=now,
        updated_at=now,
    )
    return user.pk


@pytest.mark.django_db(transaction=True)
def test_stored_tags_are_sealed_filtered_by_and_opened_again_going_back():
    with migrated_to(BEFORE) as apps:
        user_id = populate(apps)
        assert all(word in stored_rows() for word in PLANTED)

        migrate(AFTER)
        assert [word for word in PLANTED if word in stored_rows()] == []
        migrate(latest())
        owner = get_user_model().objects.get(pk=user_id)
        assert Memory.objects.get().tags == MEMORY_TAGS
        assert MemoryRevision.objects.get().tags == EARLIER_TAGS
        assert Note.objects.get().tags == NOTE_TAGS
        found = memory_list(owner=owner, filters=MemoryFilters(tags=("brackenbury",)), limit=10).memories
        assert [memory.tags for memory in found] == [MEMORY_TAGS]
        assert memory_list(owner=owner, filters=MemoryFilters(tags=("ottoline",)), limit=10).memories == []
        assert [note.tags for note in note_list(owner=owner, tags=NOTE_TAGS).notes] == [NOTE_TAGS]
        grouped = memory_count(owner=owner, filters=MemoryFilters(), group_by="tag").groups
        assert sorted(grouped) == sorted((tag, 1) for tag in MEMORY_TAGS)

        apps = migrate(BEFORE)
        assert list(apps.get_model("memories", "Memory").objects.values_list("tags", flat=True)) == [MEMORY_TAGS]
        assert list(apps.get_model("memories", "MemoryRevision").objects.values_list("tags", flat=True)) == [
            EARLIER_TAGS
        ]
        assert list(apps.get_model("memories", "Note").objects.values_list("tags", flat=True)) == [NOTE_TAGS]
