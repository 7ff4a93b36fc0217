"""memories.indexing.sequences: which memories one client wrote minutes apart, and the in-context reading a
memory written right after another is also embedded as."""

import numpy as np

from accounts.spaces import personal_space_of
from memories import services
from memories.indexing.embedding import get_embedder
from memories.indexing.sequences import sequence_neighbours
from memories.models import Chunk


def test_memories_one_client_wrote_minutes_apart_are_neighbours(owner, stranger, write_in_sequence):
    first = write_in_sequence(owner, "Did you try the new ramen place?", 0)
    second = write_in_sequence(owner, "Yes, the miso one was great.", 1)
    third = write_in_sequence(owner, "We should go again on Friday.", 3)
    other_client = write_in_sequence(owner, "Unrelated note from another client.", 2, written_by="cursor")
    next_day = write_in_sequence(owner, "A new session the next day.", 24 * 60)
    write_in_sequence(stranger, "A stranger's note in between.", 2)

    neighbours = sequence_neighbours(
        personal_space_of(owner).pk, [first.pk, second.pk, third.pk, other_client.pk, next_day.pk]
    )

    assert neighbours[first.pk] == (None, second.pk)
    assert neighbours[second.pk] == (first.pk, third.pk)
    assert neighbours[third.pk] == (second.pk, None)
    assert neighbours[other_client.pk] == (None, None)
    assert neighbours[next_day.pk] == (None, None)
    assert sequence_neighbours(personal_space_of(stranger).pk, [first.pk]) == {}


def test_a_memory_written_right_after_another_is_also_embedded_in_its_context(owner, write_in_sequence):
    question = write_in_sequence(owner, "Did Ana like the pottery class?", 0)
    answer = write_in_sequence(owner, "Yes, she loved it and signed up for more!", 1)
    alone = write_in_sequence(owner, "The office plants are watered on Mondays.", 90)
    services.memories_index(memory_ids=[question.pk, answer.pk, alone.pk])

    assert Chunk.objects.filter(memory=question).count() == 1
    assert Chunk.objects.filter(memory=alone).count() == 1
    plain, in_context = Chunk.objects.filter(memory=answer).order_by("position")
    assert (in_context.start, in_context.end) == (0, len(answer.content))
    embedder = get_embedder()
    expected = embedder.embed([f"{question.content}\n{answer.content}", answer.content])
    # Stored in half precision: equal to about 3 significant digits.
    assert np.allclose(np.array(in_context.embedding), expected[0], atol=1e-3)
    assert np.allclose(np.array(plain.embedding), expected[1], atol=1e-3)


def test_context_embedding_can_be_turned_off(owner, settings, write_in_sequence):
    settings.GNOSEM_CONTEXT_EMBEDDING = False
    write_in_sequence(owner, "Did Ana like the pottery class?", 0)
    answer = write_in_sequence(owner, "Yes, she loved it and signed up for more!", 1)
    services.memories_index(memory_ids=[answer.pk])
    assert Chunk.objects.filter(memory=answer).count() == 1
