from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memories import services
from memories.embedding import get_embedder
from memories.models import Chunk
from memories.search.context import sequence_neighbours
from memories.search.fusion import CONTEXT_CEILING, Fused, add_context

START = datetime(2025, 3, 3, 9, tzinfo=UTC)


def write(owner, content: str, minutes: float, written_by: str = "claude"):
    return services.memory_write(
        owner=owner, content=content, written_by=written_by, created_at=START + timedelta(minutes=minutes)
    )


def test_memories_one_client_wrote_minutes_apart_are_neighbours(owner, stranger):
    first = write(owner, "Did you try the new ramen place?", 0)
    second = write(owner, "Yes, the miso one was great.", 1)
    third = write(owner, "We should go again on Friday.", 3)
    other_client = write(owner, "Unrelated note from another client.", 2, written_by="cursor")
    next_day = write(owner, "A new session the next day.", 24 * 60)
    write(stranger, "A stranger's note in between.", 2)

    neighbours = sequence_neighbours(owner.pk, [first.pk, second.pk, third.pk, other_client.pk, next_day.pk])

    assert neighbours[first.pk] == (None, second.pk)
    assert neighbours[second.pk] == (first.pk, third.pk)
    assert neighbours[third.pk] == (second.pk, None)
    assert neighbours[other_client.pk] == (None, None)
    assert neighbours[next_day.pk] == (None, None)
    assert sequence_neighbours(stranger.pk, [first.pk]) == {}


def test_context_lifts_a_neighbour_of_a_strong_match_but_not_above_it():
    fused = {1: Fused(1, 0.9), 2: Fused(2, 0.5), 3: Fused(3, 0.1), 4: Fused(4, 0.6)}
    add_context(fused, {1: (None, 2), 2: (1, 3), 3: (2, None), 4: (None, None)}, weight=0.5)

    assert fused[2].score == pytest.approx(CONTEXT_CEILING * 0.9)  # 0.5 + 0.45 + 0.05, capped below memory 1
    assert fused[3].score == pytest.approx(0.1 + 0.5 * 0.5)
    assert fused[1].score == 0.9  # a weaker neighbour never lifts a stronger memory
    assert fused[4].score == 0.6 and fused[4].context == 0
    assert sorted(fused, key=lambda key: -fused[key].score)[:2] == [1, 2]


def test_context_never_lowers_a_score():
    fused = {1: Fused(1, 0.2), 2: Fused(2, 0.95)}
    add_context(fused, {1: (None, 2), 2: (1, None)}, weight=0.3)
    assert fused[2].score == 0.95 and fused[2].context == 0
    assert fused[1].score > 0.2


def test_a_memory_written_right_after_another_is_also_embedded_in_its_context(owner, settings):
    question = write(owner, "Did Ana like the pottery class?", 0)
    answer = write(owner, "Yes, she loved it and signed up for more!", 1)
    alone = write(owner, "The office plants are watered on Mondays.", 90)
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


def test_context_embedding_can_be_turned_off(owner, settings):
    settings.GNOSEM_CONTEXT_EMBEDDING = False
    write(owner, "Did Ana like the pottery class?", 0)
    answer = write(owner, "Yes, she loved it and signed up for more!", 1)
    services.memories_index(memory_ids=[answer.pk])
    assert Chunk.objects.filter(memory=answer).count() == 1
