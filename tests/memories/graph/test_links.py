"""The graph's links (models.EntityLink) the database keeps from the mentions: after every kind of
change they sum to what the mentions say, the sweep merges them without changing a sum, and no link
crosses a space."""

import random
from collections import defaultdict

import pytest
from django.db import connection

from accounts.spaces import team_space_create
from memories import services
from memories.graph import linking as graph
from memories.models import Entity, EntityLink, EntityMention, Memory, NoteMention
from memories.notes import services as notes

PEOPLE = ["Priya Raman", "Tomas Berg", "Aiko Tanaka", "Kestrel Labs", "the Atlas project", "PostgreSQL 16"]
TAGS = ["project:atlas", "team:payments", "client:kestrel"]

Links = dict[tuple[int, int], tuple[float, int, int]]


def links_from_mentions() -> Links:
    """The links as the mentions make them: for every current memory and every note, each ordered
    pair of the entities it mentions (an entity with itself included)."""
    sums: dict[tuple[int, int], list] = defaultdict(lambda: [0.0, 0, 0])
    by_memory: dict[int, list[EntityMention]] = defaultdict(list)
    for mention in EntityMention.objects.filter(memory_current=True):
        by_memory[mention.memory_id].append(mention)
    by_note: dict[int, list[NoteMention]] = defaultdict(list)
    for mention in NoteMention.objects.all():
        by_note[mention.note_id].append(mention)
    for groups, column in ((by_memory, 1), (by_note, 2)):
        for mentions in groups.values():
            for a in mentions:
                for b in mentions:
                    link = sums[(a.entity_id, b.entity_id)]
                    link[0] += min(a.weight, b.weight)
                    link[column] += 1
    return {pair: (round(weight, 6), memories, notes) for pair, (weight, memories, notes) in sums.items()}


def stored_links() -> Links:
    """The links as the table holds them: each link's rows summed, those counting nothing left out."""
    sums: dict[tuple[int, int], list] = defaultdict(lambda: [0.0, 0, 0])
    for row in EntityLink.objects.all():
        link = sums[(row.source_id, row.target_id)]
        link[0] += row.weight
        link[1] += row.memories
        link[2] += row.notes
    return {
        pair: (round(weight, 6), memories, notes)
        for pair, (weight, memories, notes) in sums.items()
        if memories or notes
    }


def written(owner, index, text: str, **fields) -> Memory:
    return index(services.memory_write(owner=owner, content=text, **fields))[0]


def test_links_follow_every_change_of_the_mentions(owner, stranger, index, django_capture_on_commit_callbacks):
    rng = random.Random(7)
    team = team_space_create(user=owner, name="Atlas team")

    def sentence() -> str:
        return f"{rng.choice(PEOPLE)} and {rng.choice(PEOPLE)} reviewed the plan with {rng.choice(PEOPLE)}."

    memories = [
        written(owner, index, sentence(), tags=[rng.choice(TAGS)]),
        written(owner, index, sentence()),
        written(owner, index, sentence(), space=team.name),
        written(stranger, index, sentence(), tags=[rng.choice(TAGS)]),
    ]
    memories += index(*[services.memory_write(owner=owner, content=sentence()) for _ in range(6)])
    assert stored_links() == links_from_mentions() != {}

    # Part of a memory's mentions changes, as a key rotation changes them: one moves to another
    # entity of the space (merged into its twin), one goes with its entity.
    memory = max(memories, key=lambda memory: memory.entity_mentions.count())
    moved, gone, *kept = memory.entity_mentions.order_by("entity_id")
    assert kept
    twin = Entity.objects.filter(space_id=memory.space_id).exclude(mentions__memory=memory).first()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_entity_mention SET entity_id = %s WHERE entity_id = %s AND memory_id = %s",
            [twin.pk, moved.entity_id, memory.pk],
        )
    assert stored_links() == links_from_mentions()
    EntityMention.objects.filter(entity_id=gone.entity_id).delete()
    assert stored_links() == links_from_mentions()

    services.memory_update(owner=owner, public_id=memories[0].public_id, content=sentence())
    index(memories[0])
    services.memory_update(owner=owner, public_id=memories[1].public_id, tags=["client:kestrel"])
    assert stored_links() == links_from_mentions()

    newer = written(owner, index, sentence(), supersedes=[str(memories[4].public_id)])
    assert not EntityMention.objects.filter(memory=memories[4], memory_current=True).exists()
    assert stored_links() == links_from_mentions()

    services.memory_delete(owner=owner, public_id=newer.public_id)
    services.memory_delete(owner=stranger, public_id=memories[3].public_id)
    assert stored_links() == links_from_mentions()

    with django_capture_on_commit_callbacks(execute=True):
        note = notes.note_write(owner=owner, title="Atlas", content=" ".join(sentence() for _ in range(5)))
    assert NoteMention.objects.filter(note=note).exists()
    assert stored_links() == links_from_mentions()
    with django_capture_on_commit_callbacks(execute=True):
        notes.note_update(owner=owner, public_id=note.public_id, tags=["team:payments"])
    assert stored_links() == links_from_mentions()

    graph.graph_rebuild()
    assert stored_links() == links_from_mentions()
    assert graph.links_merge() > 0
    assert stored_links() == links_from_mentions()

    notes.note_delete(owner=owner, public_id=note.public_id)
    assert stored_links() == links_from_mentions()

    spaces = dict(Entity.objects.values_list("id", "space_id"))
    assert all(spaces[source] == spaces[target] for source, target in stored_links())


def test_the_sweep_merges_each_links_rows_into_one_and_drops_empty_links(owner, index):
    first = written(owner, index, "Priya Raman and Tomas Berg planned the Atlas launch.")
    written(owner, index, "Priya Raman and Tomas Berg moved the Atlas launch to June.")
    services.memory_delete(owner=owner, public_id=first.public_id)
    before = stored_links()
    assert EntityLink.objects.count() > len(before)

    merged = graph.links_merge()

    assert merged > 0
    assert stored_links() == before == links_from_mentions()
    assert EntityLink.objects.filter(merged=False).count() == 0
    assert EntityLink.objects.count() == len(before)  # one row a link, none for a link nothing makes
    assert graph.links_merge() == 0


def test_the_sweep_leaves_the_links_to_another_sweep_under_way(owner, index, transactional_db):
    written(owner, index, "Priya Raman and Tomas Berg planned the Atlas launch.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_entity_link WHERE NOT merged")
        waiting = cursor.fetchone()[0]
    assert waiting > 0
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [graph.MERGE_LOCK])
            assert graph.links_merge() == 0
            cursor.execute("ROLLBACK")
    finally:
        other.close()
    assert graph.links_merge() > 0


@pytest.mark.parametrize("deleted", ["memory", "space"])
def test_deleting_a_memory_or_a_space_unlinks_its_entities(owner, index, deleted):
    team = team_space_create(user=owner, name="Atlas team")
    memory = written(owner, index, "Priya Raman and Tomas Berg planned the Atlas launch.", space=team.name)
    assert stored_links()
    if deleted == "memory":
        services.memory_delete(owner=owner, public_id=memory.public_id)
    else:
        team.delete()
    assert stored_links() == links_from_mentions() == {}
