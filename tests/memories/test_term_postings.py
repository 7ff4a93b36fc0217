"""The keyword signal's postings always equal what their memories say: each lexeme of each memory
with its frequency, the memory's length and whether it is current, whatever wrote or changed it."""

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.spaces import personal_space_of
from memories import services
from memories.encryption.derived import derive_stored_forms
from memories.models import Memory, TermPosting
from memories.search.signals import keyword_ranking
from memories.selectors import MemoryFilters
from tests.memories.stored import OTHER_VECTOR, blind


def derived(space_id: int) -> set[tuple]:
    """The postings the space's memories call for, from the memories themselves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length,"
            " m.superseded_by_id IS NULL FROM memories_memory m, unnest(m.search_vector) u WHERE m.space_id = %s",
            [space_id],
        )
        return set(cursor.fetchall())


def stored(space_id: int) -> set[tuple]:
    return set(
        TermPosting.objects.filter(space_id=space_id).values_list("lexeme", "memory_id", "tf", "length", "current")
    )


def test_postings_follow_writes_updates_supersession_and_deletes(owner, stranger):
    first = services.memory_write(owner=owner, content="Redis runs the queue; Redis keeps nothing on disk.")
    second = services.memory_write(owner=owner, content="PostgreSQL holds every memory and its vectors.")
    services.memory_write(owner=stranger, content="Redis Redis Redis everywhere.")
    mine, theirs = personal_space_of(owner).pk, personal_space_of(stranger).pk
    assert stored(mine) == derived(mine) != set()
    assert (blind(mine, "redi"), first.pk, 2, first.search_length, True) in stored(mine)

    services.memory_update(owner=owner, public_id=first.public_id, content="The queue moved from Redis to SQLite.")
    assert stored(mine) == derived(mine)
    services.memory_update(owner=owner, public_id=second.public_id, tags=["db"])  # the text stays
    assert stored(mine) == derived(mine)
    third = services.memory_write(
        owner=owner, content="PostgreSQL 18 holds the memories now.", supersedes=[str(second.public_id)]
    )
    assert (blind(mine, "postgresql"), second.pk, 1, second.search_length, False) in stored(mine)
    assert stored(mine) == derived(mine)
    services.memory_delete(owner=owner, public_id=third.public_id)  # the superseded one is current again
    assert (blind(mine, "postgresql"), second.pk, 1, second.search_length, True) in stored(mine)
    assert stored(mine) == derived(mine)
    services.memory_delete(owner=owner, public_id=second.public_id)
    assert stored(mine) == derived(mine)
    assert stored(theirs) == derived(theirs) != set()


def test_bulk_inserts_and_a_deleted_user_leave_postings_in_step(owner):
    now = timezone.now()
    memories = [
        Memory(
            space=personal_space_of(owner),
            author=owner,
            content=f"release {n} shipped the search rewrite",
            created_at=now,
            updated_at=now,
        )
        for n in range(50)
    ]
    derive_stored_forms(memories)
    Memory.objects.bulk_create(memories)
    space_id = personal_space_of(owner).pk
    assert len(stored(space_id)) == len(derived(space_id)) > 50

    get_user_model().objects.get(pk=owner.pk).delete()

    assert stored(space_id) == set()


def test_one_update_that_changes_some_texts_and_not_others(owner):
    memories = [services.memory_write(owner=owner, content=f"Deploy {n} went out on Tuesday.") for n in range(4)]
    space_id = personal_space_of(owner).pk
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET search_vector = CASE WHEN id = %s THEN %s::tsvector ELSE search_vector END,"
            " search_length = CASE WHEN id = %s THEN 2 ELSE search_length END, tags = '{x}' WHERE space_id = %s",
            [memories[0].pk, OTHER_VECTOR, memories[0].pk, space_id],
        )
    assert stored(space_id) == derived(space_id)


def test_superseded_memories_are_found_by_keyword_only_when_asked_for(owner):
    old = services.memory_write(owner=owner, content="The staging database is db-staging-01.")
    new = services.memory_write(
        owner=owner, content="The staging database moved to db-staging-02.", supersedes=[str(old.public_id)]
    )
    arguments = {"space_ids": [personal_space_of(owner).pk], "query": "staging database", "limit": 10}

    assert [item.memory_id for item in keyword_ranking(**arguments, filters=MemoryFilters())] == [new.pk]
    everything = keyword_ranking(**arguments, filters=MemoryFilters(include_superseded=True))
    assert {item.memory_id for item in everything} == {old.pk, new.pk}
