"""Query-adaptive weights: a memory that clearly stands out by meaning is not outvoted by a
one-word keyword match, while flat similarities leave the configured weights alone."""

from datetime import timedelta

import pytest

from memories.search.fusion import VECTOR_GAP_CLEAR, VECTOR_GAP_FLAT, query_weights, vector_confidence
from memories.search.signals import Ranked
from tests.memories.search.test_ranking import NOW, order, write_indexed

WEIGHTS = {"vector": 0.7, "keyword": 1.0}


def ranking(*scores: float) -> list[Ranked]:
    return [Ranked(memory_id, score, NOW) for memory_id, score in enumerate(scores)]


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


def test_a_clear_match_by_meaning_beats_a_one_word_keyword_match(owner, settings):
    memories = write_indexed(owner, *[(fact, NOW - timedelta(days=1)) for fact in FACTS])
    font, oncall = memories[0], memories[1]
    question = "why did the blog change its typeface?"  # shares only "change" with the on-call memory

    settings.GNOSEM_VECTOR_CONFIDENCE_BOOST = 0.0
    assert order(owner, question)[0] == oncall
    settings.GNOSEM_VECTOR_CONFIDENCE_BOOST = 3.0
    assert order(owner, question)[0] == font


def test_an_exact_keyword_match_keeps_the_weights_however_clear_the_vector_winner():
    clear = ranking(0.8, *[0.3] * 9)
    exact = [Ranked(99, 7.5, NOW, coverage=1.0)]
    partial = [Ranked(99, 2.5, NOW, coverage=0.25)]
    assert query_weights({"vector": clear, "keyword": exact}, WEIGHTS, boost=3.0) == WEIGHTS
    assert query_weights({"vector": clear, "keyword": partial}, WEIGHTS, boost=3.0)["vector"] == pytest.approx(
        0.7 * (1 + 3.0 * 0.75)
    )
