from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memories import services
from memories.embedding import get_embedder
from memories.models import Chunk
from memories.search.context import sequence_neighbours
from memories.search.fusion import CONTEXT_CEILING, Fused, add_context
from memories.search.signals import vector_ranking
from memories.selectors import MemoryFilters

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


PRICING = (
    "Pricing page redesign: we replaced the plan comparison table with a grid of cards, one card per plan, "
    "because people in usability tests were confused by the many plan columns."
)
ONBOARDING = "The mobile app's onboarding flow was cut from five steps to three after drop-off at step four."
CHECKOUT_QUESTION = "how is the checkout page laid out?"


def vector_order(owner, query: str, filters: MemoryFilters | None = None) -> list[int]:
    query_vector = get_embedder().embed([query])[0]
    ranked = vector_ranking(
        owner_id=owner.pk,
        query_vector=query_vector,
        model=get_embedder().name,
        filters=filters or MemoryFilters(),
        limit=10,
    )
    return [item.memory_id for item in ranked]


def test_a_memory_written_right_after_another_does_not_outrank_it_on_the_other_ones_topic(owner):
    pricing = write(owner, PRICING, 0)
    onboarding = write(owner, ONBOARDING, 2)  # its in-context reading holds the pricing text
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    own_only = get_embedder().embed([CHECKOUT_QUESTION, ONBOARDING, f"{PRICING}\n{ONBOARDING}"])
    # The combined reading is the best match, better than the pricing memory's own...
    assert own_only[0] @ own_only[2] > own_only[0] @ get_embedder().embed([PRICING])[0]

    # ...and it counts for the memory it borrowed from, which goes first.
    assert vector_order(owner, CHECKOUT_QUESTION) == [pricing.pk, onboarding.pk]


def test_the_borrowed_reading_counts_only_for_a_predecessor_the_filters_let_through(owner):
    pricing = services.memory_write(
        owner=owner, content=PRICING, written_by="claude", tags=["design"], created_at=START
    )
    onboarding = services.memory_write(
        owner=owner, content=ONBOARDING, written_by="claude", tags=["mobile"], created_at=START + timedelta(minutes=2)
    )
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    assert vector_order(owner, CHECKOUT_QUESTION, MemoryFilters(tags=("mobile",))) == [onboarding.pk]


def test_a_memory_in_another_session_lends_nothing(owner):
    pricing = write(owner, PRICING, 0)
    onboarding = write(owner, ONBOARDING, 90)  # no predecessor within 30 minutes: no in-context reading
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    assert Chunk.objects.filter(memory=onboarding).count() == 1
    assert vector_order(owner, CHECKOUT_QUESTION)[0] == pricing.pk
