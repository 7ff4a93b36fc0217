"""The retrieval signals: each answers for its owner only, whatever ids or filter values it is given;
the keyword signal reads words in angle brackets; the vector signal lends a memory's in-context
reading to the memory it was read after, and its signature shortlist ranks as the exact scan does."""

import numpy as np
import pytest

from bench import corpus
from memories import services
from memories.embedding import get_embedder
from memories.models import Chunk
from memories.search import signals
from memories.search.signals import SHORTLIST_PER_MEMORY, keyword_ranking, memory_vectors, vector_ranking
from memories.selectors import MemoryFilters
from memories.vectors import serving_model_name

LAPTOP = "New hires get a 14-inch laptop with 32 GB of memory."
PRICING = (
    "Pricing page redesign: we replaced the plan comparison table with a grid of cards, one card per plan, "
    "because people in usability tests were confused by the many plan columns."
)
ONBOARDING = "The mobile app's onboarding flow was cut from five steps to three after drop-off at step four."
CHECKOUT_QUESTION = "how is the checkout page laid out?"


def test_memory_vectors_give_each_of_the_owners_memories_one_unit_vector(owner, write_indexed):
    memory = write_indexed(owner, LAPTOP)

    vectors = memory_vectors(owner_id=owner.pk, memory_ids=[memory.pk], model=serving_model_name())

    assert vectors.keys() == {memory.pk}
    assert np.linalg.norm(vectors[memory.pk]) == pytest.approx(1.0, abs=1e-3)


def test_memory_vectors_give_nothing_for_another_owners_memories(owner, stranger, write_indexed):
    theirs = write_indexed(stranger, LAPTOP)
    write_indexed(owner, LAPTOP)

    assert memory_vectors(owner_id=owner.pk, memory_ids=[theirs.pk], model=serving_model_name()) == {}


def test_filter_values_are_compared_as_data_not_read_as_sql(owner, write_indexed):
    memory = write_indexed(owner, LAPTOP)
    model = serving_model_name()
    vector = get_embedder(model).embed(["laptop"])[0]
    injected = MemoryFilters(tags=("x') OR true --",), written_by="x' OR '1'='1")

    for filters, found in ((injected, []), (MemoryFilters(), [memory.pk])):
        by_keyword = keyword_ranking(owner_id=owner.pk, query="laptop", filters=filters, limit=10)
        by_vector = vector_ranking(owner_id=owner.pk, query_vector=vector, model=model, filters=filters, limit=10)
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
    ranked = keyword_ranking(owner_id=owner.pk, query=query, filters=MemoryFilters(), limit=10)
    assert [item.memory_id for item in ranked] == [memory.pk]


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
                    owner_id=owner.pk,
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


def test_the_keyword_signal_scores_memories_holding_a_rarer_term_and_skips_those_with_only_common_ones(
    owner, monkeypatch
):
    rare = services.memory_write(owner=owner, content="The kubernetes deploy of the billing service failed.")
    common = [services.memory_write(owner=owner, content=f"Deploy number {n} went out on time.") for n in range(4)]
    arguments = {"owner_id": owner.pk, "query": "kubernetes deploy", "filters": MemoryFilters(), "limit": 10}
    # "kubernetes" is held by one memory, "deploy" by five: together more than two.
    monkeypatch.setattr(signals, "KEYWORD_MATCHES_SCORED", 2)

    scored = keyword_ranking(**arguments)
    exact = keyword_ranking(**arguments, exact=True)

    assert [item.memory_id for item in scored] == [rare.pk]
    assert exact[0].memory_id == rare.pk
    assert {item.memory_id for item in exact[1:]} == {memory.pk for memory in common}
    assert (scored[0].score, scored[0].coverage) == (exact[0].score, exact[0].coverage)  # scored on every term
    monkeypatch.setattr(signals, "KEYWORD_MATCHES_SCORED", 6)
    assert [item.memory_id for item in keyword_ranking(**arguments)] == [item.memory_id for item in exact]


def test_a_memory_holding_two_common_terms_is_scored_though_none_of_them_is_rare(owner, monkeypatch):
    rare = services.memory_write(owner=owner, content="Kubernetes runs in the Frankfurt region.")
    both = [services.memory_write(owner=owner, content=f"Deploy {n} of billing went out.") for n in range(3)]
    for n in range(3):
        services.memory_write(owner=owner, content=f"Deploy {n} of search went out.")
    # "kubernetes" is held by one memory, "billing" by three, "deploy" by six.
    monkeypatch.setattr(signals, "KEYWORD_MATCHES_SCORED", 2)

    scored = keyword_ranking(owner_id=owner.pk, query="kubernetes billing deploy", filters=MemoryFilters(), limit=10)

    assert {item.memory_id for item in scored} == {rare.pk, *(memory.pk for memory in both)}
