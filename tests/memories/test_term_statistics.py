"""The BM25 statistics tables always equal a recount of the memories they describe."""

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.spaces import personal_space_of
from memories import services
from memories.encryption.derived import derive_stored_forms
from memories.models import Memory, SpaceCorpusStatistic, SpaceTermStatistic
from memories.tasks import prune_term_statistics_task
from tests.memories.stored import OTHER_VECTOR, blind


def recount(user) -> tuple[dict[str, int], tuple[int, int]]:
    """The statistics of the user's personal space, counted from its memories."""
    space = personal_space_of(user)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, count(*) FROM memories_memory, unnest(tsvector_to_array(search_vector)) AS lexeme "
            "WHERE space_id = %s GROUP BY lexeme",
            [space.pk],
        )
        terms = dict(cursor.fetchall())
    memories = Memory.objects.filter(space=space)
    return terms, (memories.count(), sum(memories.values_list("search_length", flat=True)))


def stored(user) -> tuple[dict[str, int], tuple[int, int]]:
    """The statistics the triggers keep for the user's personal space."""
    space = personal_space_of(user)
    terms = dict(SpaceTermStatistic.objects.filter(space=space, df__gt=0).values_list("lexeme", "df"))
    corpus = SpaceCorpusStatistic.objects.filter(space=space).first()
    return terms, (corpus.documents, corpus.total_length) if corpus else (0, 0)


def test_statistics_follow_writes_updates_and_deletes(owner, stranger):
    first = services.memory_write(owner=owner, content="Redis runs the queue; Redis keeps nothing on disk.")
    second = services.memory_write(owner=owner, content="PostgreSQL holds every memory and its vectors.")
    services.memory_write(owner=stranger, content="Redis Redis Redis everywhere.")
    assert stored(owner) == recount(owner)
    assert (
        stored(owner)[0][blind(personal_space_of(owner).pk, "redi")] == 1
    )  # one memory contains it, whatever the stranger wrote

    services.memory_update(owner=owner, public_id=first.public_id, content="The queue moved from Redis to SQLite.")
    assert stored(owner) == recount(owner)
    services.memory_update(owner=owner, public_id=second.public_id, tags=["db"])  # no content change
    assert stored(owner) == recount(owner)
    services.memory_delete(owner=owner, public_id=second.public_id)
    assert stored(owner) == recount(owner)
    assert stored(stranger) == recount(stranger)


def test_bulk_inserts_are_counted_in_one_statement(owner):
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
    assert stored(owner) == recount(owner)
    assert stored(owner)[1][0] == 50


def test_deleting_a_user_removes_their_statistics(owner):
    services.memory_write(owner=owner, content="A memory that goes away with its owner.")
    space_id = personal_space_of(owner).pk
    assert SpaceTermStatistic.objects.filter(space_id=space_id).exists()
    get_user_model().objects.filter(pk=owner.pk).delete()
    assert not SpaceTermStatistic.objects.filter(space_id=space_id).exists()
    assert not SpaceCorpusStatistic.objects.filter(space_id=space_id).exists()


def test_one_update_that_changes_some_texts_and_spaces_and_not_others(owner, stranger):
    for n in range(6):
        services.memory_write(owner=owner, content=f"memory {n} about the billing service and its queue")
    ids = list(Memory.objects.filter(space__personal_of=owner).order_by("id").values_list("id", flat=True))
    # One statement: two rows get new text, two move to another space, two only change status.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET "
            "search_vector = CASE WHEN id = ANY(%s) THEN %s::tsvector ELSE search_vector END, "
            "search_length = CASE WHEN id = ANY(%s) THEN 2 ELSE search_length END, "
            "space_id = CASE WHEN id = ANY(%s) THEN %s ELSE space_id END, "
            "indexing_status = 'indexed' WHERE id = ANY(%s)",
            [ids[:2], OTHER_VECTOR, ids[:2], ids[2:4], personal_space_of(stranger).pk, ids],
        )
    assert stored(owner) == recount(owner)
    assert stored(stranger) == recount(stranger)
    assert stored(owner)[1][0] == 4


def test_pruning_drops_terms_no_memory_contains_and_keeps_counting_right(owner):
    kept = services.memory_write(owner=owner, content="The gateway keeps retrying.")
    gone = services.memory_write(owner=owner, content="Zanzibar trip notes.")
    services.memory_delete(owner=owner, public_id=gone.public_id)
    assert SpaceTermStatistic.objects.filter(
        space__personal_of=owner, lexeme=blind(personal_space_of(owner).pk, "zanzibar"), df=0
    ).exists()

    assert prune_term_statistics_task.call_local() == 3  # zanzibar, trip, note

    assert not SpaceTermStatistic.objects.filter(space__personal_of=owner, df__lte=0).exists()
    assert stored(owner) == recount(owner)
    services.memory_write(owner=owner, content="Zanzibar again.")  # a pruned term comes back
    services.memory_update(owner=owner, public_id=kept.public_id, content="The gateway stopped retrying.")
    assert stored(owner) == recount(owner)
