"""The migration that seals client names: every memory's and earlier version's client stored
before is sealed, memories still found, grouped and dated by their clients, and every name opened
again on the way back."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from memories.models import Memory, MemoryRevision
from memories.reading.counting import memory_count
from memories.reading.session import session_start
from memories.selectors import MemoryFilters, memory_list
from tests.migrating import latest, migrate, migrated_to

BEFORE = [("memories", "0029_sealed_tags")]
AFTER = [("memories", "0030_sealed_clients")]
CLIENT = "zanzibar-quokka-desktop"
OTHERS = ["brackenbury-cli"]
EARLIER_CLIENT = "ottoline-ide"
PLANTED = ("zanzibar", "quokka", "brackenbury", "ottoline")


def stored_rows() -> str:
    """Every row of the two tables as PostgreSQL writes them, bytea as the bytes it holds."""
    with connection.cursor() as cursor:
        found = []
        for table in ("memories_memory", "memories_memoryrevision"):
            cursor.execute(f"SELECT t::text FROM {table} t")
            found += [text for (text,) in cursor]
        return " ".join(found).lower()


def populate(apps) -> int:
    """A user's space with a memory written by two clients and its earlier version by a third,
    as stored before sealing client names; returns the user's id."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memories, revisions = apps.get_model("memories", "Memory"), apps.get_model("memories", "MemoryRevision")
    now = timezone.now()
    user = users.objects.create(username="sealed", email="sealed@example.com")
    space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
    apps.get_model("accounts", "Membership").objects.create(space=space, user=user, role="owner")
    derived = {"key_version": 1, "search_vector": "", "search_length": 0, "content_digest": "-", "is_question": False}
    memory = memories.objects.create(
        space=space,
        author=user,
        content="A memory two clients wrote.",
        written_by=CLIENT,
        also_written_by=OTHERS,
        created_at=now,
        updated_at=now,
        **derived,
    )
    revisions.objects.create(
        memory=memory, space=space, content="Its first version.", written_by=EARLIER_CLIENT, valid_from=now,
        replaced_at=now,
    )  # fmt: skip
    return user.pk


@pytest.mark.django_db(transaction=True)
def test_stored_clients_are_sealed_found_and_opened_again_going_back():
    with migrated_to(BEFORE) as apps:
        user_id = populate(apps)
        assert all(word in stored_rows() for word in PLANTED)

        migrate(AFTER)
        assert [word for word in PLANTED if word in stored_rows()] == []
        migrate(latest())
        owner = get_user_model().objects.get(pk=user_id)
        memory = Memory.objects.get()
        assert (memory.written_by, memory.also_written_by) == (CLIENT, OTHERS)
        assert MemoryRevision.objects.get().written_by == EARLIER_CLIENT
        found = memory_list(owner=owner, filters=MemoryFilters(written_by=CLIENT), limit=10).memories
        assert [memory.pk for memory in found] == [memory.pk]
        assert memory_list(owner=owner, filters=MemoryFilters(written_by=OTHERS[0]), limit=10).memories == []
        assert memory_count(owner=owner, filters=MemoryFilters(), group_by="written_by").groups == [(CLIENT, 1)]
        assert session_start(owner=owner, client=OTHERS[0]).since == memory.created_at

        apps = migrate(BEFORE)
        stored = apps.get_model("memories", "Memory").objects.values_list("written_by", "also_written_by")
        assert list(stored) == [(CLIENT, OTHERS)]
        earlier = apps.get_model("memories", "MemoryRevision").objects.values_list("written_by", flat=True)
        assert list(earlier) == [EARLIER_CLIENT]
