"""Fusion of the signals' rankings, on crafted rankings: the candidates' features
(`candidate_features`), how clearly the best vector candidate stands out (`vector_confidence`), and
the learned combination (`fuse`) in the two regimes it was fitted for: words that name the memory
exactly, and a question in other words whose best match by meaning stands out."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memories.indexing.embedding import DEFAULT_MODEL_NAME
from memories.indexing.model_packages import MPNET_NAME
from memories.search.fusion import (
    FEATURES,
    FUSED_FLOOR,
    FUSION_WEIGHTS,
    LENGTH_CAP,
    VECTOR_GAP_CLEAR,
    VECTOR_GAP_FLAT,
    candidate_features,
    fuse,
    vector_confidence,
)
from memories.search.pipeline import search_hybrid
from memories.search.signals import Ranked

NOW = datetime(2023, 5, 25, 15, 30, tzinfo=UTC)
WEIGHTS = {"vector": 1.0, "keyword": 1.0}


def ranking(*scores: float, first_id: int = 0, **details) -> list[Ranked]:
    return [Ranked(memory_id, score, NOW, **details) for memory_id, score in enumerate(scores, start=first_id)]


def fused_by_default_model(rankings: dict, weights: dict = WEIGHTS) -> dict:
    return fuse(rankings, weights, DEFAULT_MODEL_NAME)


def winner(fused: dict) -> int:
    return max(fused.values(), key=lambda entry: entry.score).memory_id


def feature(features: dict, memory_id: int, name: str) -> float:
    return float(features[memory_id][list(FEATURES).index(name)])


def test_every_feature_has_a_learned_weight_for_each_fitted_model():
    assert FUSION_WEIGHTS.keys() == {DEFAULT_MODEL_NAME, MPNET_NAME}
    assert all(weights.keys() == FEATURES.keys() for weights in FUSION_WEIGHTS.values())
    assert all(signal in (None, "vector", "keyword") for signal in FEATURES.values())


def test_features_of_candidates_found_by_one_signal_or_both():
    vector = [Ranked(0, 0.9, NOW), Ranked(1, 0.5, NOW, search_length=40), Ranked(2, 0.3, NOW)]
    keyword = [Ranked(1, 6.0, NOW, coverage=0.5, search_length=40), Ranked(7, 3.0, NOW, coverage=1.0, is_question=True)]
    features = candidate_features({"vector": vector, "keyword": keyword}, {})

    assert features.keys() == {0, 1, 2, 7}
    assert feature(features, 0, "vector") == 1.0 and feature(features, 2, "vector") == 0.0
    assert feature(features, 1, "vector") == pytest.approx(1 / 3)
    assert feature(features, 0, "keyword") == 0.0 and feature(features, 0, "both") == 0.0
    assert feature(features, 1, "keyword") == 1.0 and feature(features, 1, "both") == 1.0
    assert feature(features, 7, "keyword") == 0.5 and feature(features, 7, "coverage") == 1.0
    assert feature(features, 7, "vector") == 0.0  # only words found it: as the least similar
    assert feature(features, 1, "keyword_discounted") == 1.0  # half the terms, over the full-coverage mark
    assert feature(features, 1, "length") == 1.0 and feature(features, 0, "length") == 0.0
    assert feature(features, 7, "question") == 1.0 and feature(features, 1, "question") == 0.0
    assert feature(features, 1, "keyword_x_whole") == 1.0  # some memory holds all the query's words
    assert feature(features, 0, "vector_x_doubt") == 0.0


def test_a_candidate_takes_the_best_of_its_sequence_neighbours_among_the_candidates():
    vector = ranking(0.9, 0.5, 0.3)
    keyword = [Ranked(2, 4.0, NOW, coverage=1.0)]
    features = candidate_features({"vector": vector, "keyword": keyword}, {1: (0, 2), 0: (None, 1), 2: (1, 99)})

    assert feature(features, 1, "neighbour_vector") == 1.0  # memory 0
    assert feature(features, 1, "neighbour_keyword") == 1.0  # memory 2
    assert feature(features, 2, "neighbour_vector") == pytest.approx(1 / 3)  # memory 1; 99 is no candidate
    assert feature(features, 0, "neighbour_keyword") == 0.0


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
    assert vector_confidence(ranking(0.9, 0.45, 0.4)) == 1.0  # under ten: the gap to the last
    assert vector_confidence(ranking(0.9)) == 0.0


def test_scores_run_from_the_floor_to_one_and_keep_each_signals_rank_and_score():
    fused = fused_by_default_model({"vector": ranking(0.9, 0.5, 0.4), "keyword": ranking(6.0, 3.0)})
    scores = sorted(entry.score for entry in fused.values())
    assert scores[0] == pytest.approx(FUSED_FLOOR) and scores[-1] == pytest.approx(1.0)
    assert fused[0].score == pytest.approx(1.0)  # first in both signals
    assert fused[0].signals == {"vector": {"rank": 1, "score": 0.9}, "keyword": {"rank": 1, "score": 6.0}}
    assert fused[2].signals.keys() == {"vector"}


def test_one_signal_alone_scores_by_its_own_scale():
    vector_only = fused_by_default_model({"vector": ranking(0.8, 0.6, 0.4)})
    assert [vector_only[i].score for i in range(3)] == pytest.approx([1.0, (1 + FUSED_FLOOR) / 2, FUSED_FLOOR])
    keyword_only = fused_by_default_model({"keyword": ranking(8.0, 2.0)})
    assert [keyword_only[i].score for i in range(2)] == pytest.approx([1.0, FUSED_FLOOR])


def test_a_signal_of_weight_zero_is_left_out():
    fused = fused_by_default_model(
        {"vector": ranking(0.9), "keyword": ranking(1.0, 5.0)}, {"vector": 1.0, "keyword": 0.0}
    )
    assert fused.keys() == {0}
    assert fused[0].score == pytest.approx(1.0) and fused[0].signals.keys() == {"vector"}


def flat_vector_ranking() -> list[Ranked]:
    """Forty memories by meaning, none standing out (ids 0-39, best first)."""
    return ranking(*np.linspace(0.45, 0.30, 40), search_length=10)


def test_a_memory_holding_all_the_querys_words_beats_the_best_by_meaning_when_meaning_is_flat():
    exact = [Ranked(30, 9.0, NOW, coverage=1.0, search_length=10)]  # an error code, a SHA
    fused = fused_by_default_model({"vector": flat_vector_ranking(), "keyword": exact})
    assert winner(fused) == 30


def test_a_clear_match_by_meaning_beats_a_memory_sharing_one_common_word():
    clear = ranking(0.62, *np.linspace(0.30, 0.20, 39), search_length=10)
    one_word = [Ranked(5, 3.0, NOW, coverage=0.3, search_length=10)]  # "days", "user"
    fused = fused_by_default_model({"vector": clear, "keyword": one_word})
    assert winner(fused) == 0


def test_a_memory_that_asks_counts_less_than_one_that_tells():
    vector = ranking(0.5, 0.5, *np.linspace(0.4, 0.3, 20), search_length=10)
    vector[0] = Ranked(0, 0.5, NOW, search_length=10, is_question=True)
    fused = fused_by_default_model({"vector": vector, "keyword": []})
    assert fused[1].score > fused[0].score


def test_the_neighbour_of_a_strong_keyword_match_rises_above_its_equals():
    keyword = [Ranked(30, 9.0, NOW, coverage=1.0, search_length=10)]
    without = fused_by_default_model({"vector": flat_vector_ranking(), "keyword": keyword})
    vector = flat_vector_ranking()
    vector[31] = replace(vector[31], neighbours=(30, None))  # as the signals read it from the sequence
    with_neighbour = fused_by_default_model({"vector": vector, "keyword": [replace(keyword[0], neighbours=(None, 31))]})
    assert with_neighbour[31].score > without[31].score
    assert with_neighbour[31].score > with_neighbour[29].score  # ranked above it by meaning


def test_a_signals_weight_scales_its_part_of_the_learned_combination():
    one_word = [Ranked(5, 3.0, NOW, coverage=0.3, search_length=LENGTH_CAP)]
    rankings = {"vector": ranking(0.62, *np.linspace(0.30, 0.20, 39), search_length=10), "keyword": one_word}
    assert winner(fused_by_default_model(rankings)) == 0
    leaning = fused_by_default_model(rankings, {"vector": 1.0, "keyword": 5.0})
    assert winner(leaning) == 5


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

    settings.GNOSEM_WEIGHT_VECTOR = 0.0
    assert first(question) == oncall  # words alone fall for it
    settings.GNOSEM_WEIGHT_VECTOR = 1.0
    assert first(question) == font
