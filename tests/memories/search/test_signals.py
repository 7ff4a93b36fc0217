"""The retrieval signals: each answers for the spaces it is given only, whatever ids or filter values it is given;
the keyword signal reads words in angle brackets; the vector signal lends a memory's in-context
reading to the memory it was read after, and its signature shortlist ranks as the exact scan does."""

import numpy as np
import pytest

from accounts.spaces import personal_space_of
from bench import corpus
from memories import services
from memories.indexing.embedding import get_embedder
from memories.indexing.vectors import serving_model_name
from memories.models import Chunk
from memories.search.signals import SHORTLIST_PER_MEMORY, keyword_ranking, memory_vectors, vector_ranking
from memories.selectors import MemoryFilters

LAPTOP = "New hires get a 14-inch laptop with 32 GB of memory."
PRICING = (
    "Pricing page redesign: we replaced the plan comparison table with a grid of cards, one card per plan, "
    "because people in usability tests were confused by the many plan columns."
)
ONBOARDING = "The mobile app's onboarding flow was cut from five steps to three after drop-off at step four."
CHECKOUT_QUESTION = "how is the checkout page laid out?"


def test_memory_vectors_give_each_of_the_owners_memories_one_unit_vector(owner, write_indexed):
    memory = write_indexed(owner, LAPTOP)

    mine = [personal_space_of(owner).pk]
    vectors = memory_vectors(space_ids=mine, memory_ids=[memory.pk], model=serving_model_name())

    assert vectors.keys() == {memory.pk}
    assert np.linalg.norm(vectors[memory.pk]) == pytest.approx(1.0, abs=1e-3)


def test_memory_vectors_give_nothing_for_another_owners_memories(owner, stranger, write_indexed):
    theirs = write_indexed(stranger, LAPTOP)
    write_indexed(owner, LAPTOP)

    mine = [personal_space_of(owner).pk]
    assert memory_vectors(space_ids=mine, memory_ids=[theirs.pk], model=serving_model_name()) == {}


def test_filter_values_are_compared_as_data_not_read_as_sql(owner, write_indexed):
    memory = write_indexed(owner, LAPTOP)
    model = serving_model_name()
    vector = get_embedder(model).embed(["laptop"])[0]
    injected = MemoryFilters(tags=("x') OR true --",), written_by="x' OR '1'='1")
    mine = [personal_space_of(owner).pk]

    for filters, found in ((injected, []), (MemoryFilters(), [memory.pk])):
        by_keyword = keyword_ranking(space_ids=mine, query="laptop", filters=filters, limit=10)
        by_vector = vector_ranking(space_ids=mine, query_vector=vector, model=model, filters=filters, limit=10)
        assert [item.memory_id for item in by_keyword] == found
        assert [item.memory_id for item in by_vector] == found


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("The <PricingTable> component re-renders on every keystroke.", "PricingTable"),
        ("Parse it into a Map<String, Invoice> first.", "invoice map"),
        ('The XSS report showed <script>alert("pwned")</script> in the bio field.', "alert pwned"),
    ],
)
def test_words_in_angle_brackets_are_found_by_keyword(owner, content, query):
    memory = services.memory_write(owner=owner, content=content)
    ranked = keyword_ranking(space_ids=[personal_space_of(owner).pk], query=query, filters=MemoryFilters(), limit=10)
    assert [item.memory_id for item in ranked] == [memory.pk]


def vector_order(owner, query: str, filters: MemoryFilters | None = None) -> list[int]:
    query_vector = get_embedder().embed([query])[0]
    ranked = vector_ranking(
        space_ids=[personal_space_of(owner).pk],
        query_vector=query_vector,
        model=get_embedder().name,
        filters=filters or MemoryFilters(),
        limit=10,
    )
    return [item.memory_id for item in ranked]


def test_a_memory_written_right_after_another_does_not_outrank_it_on_the_other_ones_topic(owner, write_in_sequence):
    pricing = write_in_sequence(owner, PRICING, 0)
    onboarding = write_in_sequence(owner, ONBOARDING, 2)  # its in-context reading holds the pricing text
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    own_only = get_embedder().embed([CHECKOUT_QUESTION, ONBOARDING, f"{PRICING}\n{ONBOARDING}"])
    # The combined reading is the best match, better than the pricing memory's own...
    assert own_only[0] @ own_only[2] > own_only[0] @ get_embedder().embed([PRICING])[0]

    # ...and it counts for the memory it borrowed from, which goes first.
    assert vector_order(owner, CHECKOUT_QUESTION) == [pricing.pk, onboarding.pk]


def test_the_borrowed_reading_counts_only_for_a_predecessor_the_filters_let_through(owner, write_in_sequence):
    pricing = write_in_sequence(owner, PRICING, 0, tags=["design"])
    onboarding = write_in_sequence(owner, ONBOARDING, 2, tags=["mobile"])
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    assert vector_order(owner, CHECKOUT_QUESTION, MemoryFilters(tags=("mobile",))) == [onboarding.pk]


def test_a_memory_in_another_session_lends_nothing(owner, write_in_sequence):
    pricing = write_in_sequence(owner, PRICING, 0)
    onboarding = write_in_sequence(owner, ONBOARDING, 90)  # no predecessor within 30 minutes: no in-context reading
    services.memories_index(memory_ids=[pricing.pk, onboarding.pk])
    assert Chunk.objects.filter(memory=onboarding).count() == 1
    assert vector_order(owner, CHECKOUT_QUESTION)[0] == pricing.pk


def test_a_chunks_signature_sets_three_bits_a_dimension_at_the_quartiles(owner, write_indexed):
    memory = write_indexed(owner, LAPTOP)
    chunk = Chunk.objects.get(memory=memory)
    vector = np.asarray(chunk.embedding, dtype=np.float32)
    quartile = 0.674 / np.sqrt(len(vector))

    expected = np.concatenate([vector > -quartile, vector > 0, vector > quartile])

    # A coordinate within half-precision rounding of a threshold may fall either side.
    near = np.concatenate([np.abs(vector - edge) < 1e-3 for edge in (-quartile, 0, quartile)])
    signature = np.array([bit == "1" for bit in chunk.signature])
    assert len(signature) == 3 * len(vector)
    assert (signature == expected)[~near].all()


def test_the_shortlist_ranks_as_the_exact_scan_does(owner, index):
    memories = index(*(services.memory_write(owner=owner, content=text) for text in corpus.memories(120)))
    assert Chunk.objects.filter(memory__in=memories).count() > 10 * SHORTLIST_PER_MEMORY
    embedder = get_embedder(serving_model_name())

    overlaps = []
    for question in corpus.questions(10):
        ranked = {
            exact: [
                item.memory_id
                for item in vector_ranking(
                    space_ids=[personal_space_of(owner).pk],
                    query_vector=embedder.embed_query(question).result(),
                    model=embedder.name,
                    filters=MemoryFilters(),
                    limit=5,
                    exact=exact,
                )
            ]
            for exact in (True, False)
        }
        assert ranked[False][0] == ranked[True][0]
        overlaps.append(len(set(ranked[False]) & set(ranked[True])) / 5)
    assert np.mean(overlaps) >= 0.9
