"""Fusion of the signals' rankings, on crafted rankings: one score per memory (`fuse`), weights that
adapt to the query (`query_weights`), and the score a memory gains from its sequence neighbours
(`add_context`)."""

from datetime import UTC, datetime, timedelta

import pytest

from memories.search.fusion import (
    CONTEXT_CEILING,
    VECTOR_FLOOR,
    VECTOR_GAP_CLEAR,
    VECTOR_GAP_FLAT,
    Fused,
    add_context,
    fuse,
    query_weights,
    vector_confidence,
)
from memories.search.pipeline import search_hybrid
from memories.search.signals import Ranked

NOW = datetime(2023, 5, 25, 15, 30, tzinfo=UTC)
WEIGHTS = {"vector": 0.7, "keyword": 1.0}


def ranking(*scores: float) -> list[Ranked]:
    return [Ranked(memory_id, score, NOW) for memory_id, score in enumerate(scores)]


def test_first_place_in_every_signal_scores_one_and_the_rest_less():
    fused = fuse({"vector": ranking(0.9, 0.5, 0.4), "keyword": ranking(6.0, 3.0)}, WEIGHTS, full_coverage=1.0)
    assert fused[0].score == pytest.approx(1.0)
    assert all(0 < entry.score < 1 for memory_id, entry in fused.items() if memory_id != 0)
    assert fused[0].signals == {"vector": {"rank": 1, "score": 0.9}, "keyword": {"rank": 1, "score": 6.0}}
    assert fused[2].signals.keys() == {"vector"}


def test_vector_scores_are_spread_from_the_floor_to_one_and_keyword_scores_by_the_best():
    vector_only = fuse({"vector": ranking(0.8, 0.6, 0.4)}, WEIGHTS, full_coverage=1.0)
    assert [vector_only[i].score for i in range(3)] == pytest.approx([1.0, (1 + VECTOR_FLOOR) / 2, VECTOR_FLOOR])
    keyword_only = fuse({"keyword": ranking(8.0, 2.0)}, WEIGHTS, full_coverage=1.0)
    assert [keyword_only[i].score for i in range(2)] == pytest.approx([1.0, 0.25])


def test_a_keyword_match_holding_few_of_the_querys_terms_counts_less():
    partial = [Ranked(0, 8.0, NOW, coverage=0.25), Ranked(1, 4.0, NOW, coverage=1.0)]
    fused = fuse({"keyword": partial}, WEIGHTS, full_coverage=0.5)
    assert fused[0].score == pytest.approx(0.5)  # the best BM25 score, but half the wanted coverage
    assert fused[1].score == pytest.approx(0.5)
    assert fuse({"keyword": partial}, WEIGHTS, full_coverage=0.0)[0].score == pytest.approx(1.0)


def test_a_signal_of_weight_zero_is_left_out():
    fused = fuse({"vector": ranking(0.9), "keyword": ranking(1.0, 5.0)}, {"vector": 0.7, "keyword": 0.0}, 1.0)
    assert fused.keys() == {0}
    assert fused[0].score == pytest.approx(1.0) and fused[0].signals.keys() == {"vector"}


@pytest.mark.parametrize(
    ("gap", "confidence"),
    [(0.05, 0.0), (VECTOR_GAP_FLAT, 0.0), ((VECTOR_GAP_FLAT + VECTOR_GAP_CLEAR) / 2, 0.5), (0.6, 1.0)],
)
def test_confidence_grows_with_how_far_the_best_stands_above_the_tenth(gap, confidence):
    scores = [0.2 + gap] + [0.25 - i * 0.005 for i in range(8)] + [0.2]
    assert vector_confidence(ranking(*scores)) == pytest.approx(confidence)


def test_lent_scores_count_once_in_the_gap():
    # Five memories hold copies of their successors' in-context readings (0.6): the tenth
    # distinct reading (0.3), not the tenth memory (0.6), sets the gap.
    items = [Ranked(0, 0.8, NOW)]
    for pair in range(5):
        items += [Ranked(10 + pair, 0.6, NOW, lent=True), Ranked(20 + pair, 0.6 - 0.001, NOW)]
    items += [Ranked(30 + i, 0.3, NOW) for i in range(5)]
    assert vector_confidence(items) == 1.0
    assert vector_confidence([Ranked(item.memory_id, item.score, NOW) for item in items]) < 0.5


def test_a_short_ranking_gives_no_confidence_and_the_weights_stay():
    short = {"vector": ranking(0.9, 0.1), "keyword": ranking(3.0)}
    assert query_weights(short, WEIGHTS, boost=3.0) == WEIGHTS


def test_a_clear_winner_raises_the_vector_weight_by_up_to_the_boost():
    clear = {"vector": ranking(0.8, *[0.3] * 9)}
    assert query_weights(clear, WEIGHTS, boost=3.0) == {"vector": pytest.approx(2.8), "keyword": 1.0}
    assert query_weights(clear, WEIGHTS, boost=0.0) == WEIGHTS


def test_an_exact_keyword_match_keeps_the_weights_however_clear_the_vector_winner():
    clear = ranking(0.8, *[0.3] * 9)
    exact = [Ranked(99, 7.5, NOW, coverage=1.0)]
    partial = [Ranked(99, 2.5, NOW, coverage=0.25)]
    assert query_weights({"vector": clear, "keyword": exact}, WEIGHTS, boost=3.0) == WEIGHTS
    assert query_weights({"vector": clear, "keyword": partial}, WEIGHTS, boost=3.0)["vector"] == pytest.approx(
        0.7 * (1 + 3.0 * 0.75)
    )


FACTS = [
    "The marketing site switched its body font from Inter to Source Sans: long articles were hard to read.",
    "The on-call rotation changes every Wednesday at noon; handover notes go in the #oncall channel.",
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "Ana's cat is called Miso and she is allergic to chicken-based food.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
    "Tom cannot eat peanuts; order from the Thai place only if they confirm no peanut oil.",
    "New hires get a 14-inch MacBook Pro with 32 GB RAM; designers get the 16-inch model.",
    "Customer support uses a Zendesk macro for refund requests over 100 EUR.",
    "The mobile app's onboarding flow was cut from five steps to three after drop-off at step four.",
    "The dashboard sidebar is collapsed by default on small screens so the charts get more room.",
    "The user prefers oat milk flat whites and dislikes sugary drinks.",
]


def test_a_clear_match_by_meaning_beats_a_one_word_keyword_match(owner, settings, write_dated):
    memories = write_dated(owner, *[(fact, NOW - timedelta(days=1)) for fact in FACTS])
    font, oncall = memories[0], memories[1]
    question = "why did the blog change its typeface?"  # shares only "change" with the on-call memory

    def first(query: str):
        return search_hybrid(owner=owner, query=query, now=NOW)[0].memory

    settings.GNOSEM_VECTOR_CONFIDENCE_BOOST = 0.0
    assert first(question) == oncall
    settings.GNOSEM_VECTOR_CONFIDENCE_BOOST = 3.0
    assert first(question) == font


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
