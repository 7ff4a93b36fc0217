"""The keyword signal's postings always equal what their memories say: each lexeme of each memory
with its frequency, the memory's length and whether it is current, whatever wrote or changed it."""

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.spaces import personal_space_of
from memories import services
from memories.models import Memory, TermPosting
from memories.search.signals import keyword_ranking
from memories.selectors import MemoryFilters


def derived(owner_id: int) -> set[tuple]:
    """The postings the owner's memories call for, from the memories themselves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length,"
            " m.superseded_by_id IS NULL FROM memories_memory m, unnest(m.search_vector) u WHERE m.owner_id = %s",
            [owner_id],
        )
        return set(cursor.fetchall())


def stored(owner_id: int) -> set[tuple]:
    return set(
        TermPosting.objects.filter(owner_id=owner_id).values_list("lexeme", "memory_id", "tf", "length", "current")
    )


def test_postings_follow_writes_updates_supersession_and_deletes(owner, stranger):
    first = services.memory_write(owner=owner, content="Redis runs the queue; Redis keeps nothing on disk.")
    second = services.memory_write(owner=owner, content="PostgreSQL holds every memory and its vectors.")
    services.memory_write(owner=stranger, content="Redis Redis Redis everywhere.")
    assert stored(owner.pk) == derived(owner.pk) != set()
    assert ("redi", first.pk, 2, first.search_length, True) in stored(owner.pk)

    services.memory_update(owner=owner, public_id=first.public_id, content="The queue moved from Redis to SQLite.")
    assert stored(owner.pk) == derived(owner.pk)
    services.memory_update(owner=owner, public_id=second.public_id, tags=["db"])  # the text stays
    assert stored(owner.pk) == derived(owner.pk)
    third = services.memory_write(
        owner=owner, content="PostgreSQL 18 holds the memories now.", supersedes=[str(second.public_id)]
    )
    assert ("postgresql", second.pk, 1, second.search_length, False) in stored(owner.pk)
    assert stored(owner.pk) == derived(owner.pk)
    services.memory_delete(owner=owner, public_id=third.public_id)  # the superseded one is current again
    assert ("postgresql", second.pk, 1, second.search_length, True) in stored(owner.pk)
    assert stored(owner.pk) == derived(owner.pk)
    services.memory_delete(owner=owner, public_id=second.public_id)
    assert stored(owner.pk) == derived(owner.pk)
    assert stored(stranger.pk) == derived(stranger.pk) != set()


def test_bulk_inserts_and_a_deleted_user_leave_postings_in_step(owner):
    now = timezone.now()
    Memory.objects.bulk_create(
        [
            Memory(
                owner=owner,
                space=personal_space_of(owner),
                content=f"release {n} shipped the search rewrite",
                created_at=now,
                updated_at=now,
            )
            for n in range(50)
        ]
    )
    assert len(stored(owner.pk)) == len(derived(owner.pk)) > 50
    owner_id = owner.pk

    get_user_model().objects.get(pk=owner_id).delete()

    assert stored(owner_id) == set()


def test_one_update_that_changes_some_texts_and_not_others(owner):
    memories = [services.memory_write(owner=owner, content=f"Deploy {n} went out on Tuesday.") for n in range(4)]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET content = CASE WHEN id = %s THEN 'Rollback on Friday.' ELSE content END,"
            " tags = '{x}' WHERE owner_id = %s",
            [memories[0].pk, owner.pk],
        )
    assert stored(owner.pk) == derived(owner.pk)


def test_superseded_memories_are_found_by_keyword_only_when_asked_for(owner):
    old = services.memory_write(owner=owner, content="The staging database is db-staging-01.")
    new = services.memory_write(
        owner=owner, content="The staging database moved to db-staging-02.", supersedes=[str(old.public_id)]
    )
    arguments = {"owner_id": owner.pk, "query": "staging database", "limit": 10}

    assert [item.memory_id for item in keyword_ranking(**arguments, filters=MemoryFilters())] == [new.pk]
    everything = keyword_ranking(**arguments, filters=MemoryFilters(include_superseded=True))
    assert {item.memory_id for item in everything} == {old.pk, new.pk}
