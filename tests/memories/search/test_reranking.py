"""The steps after fusion, on crafted memories: recency decay, time expressions, MMR diversity,
the minimum score and the per-step explanation."""

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from gnosem.errors import ValidationError
from memories.hygiene import near_duplicates
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters
from tests.memories.conftest import CI_CACHE, DARK_MODE, DARK_MODE_AGAIN, FONT, STANDUP

NOW = datetime(2023, 5, 25, 15, 30, tzinfo=UTC)  # a Thursday


def order(owner, query: str, **options) -> list[Memory]:
    return [hit.memory for hit in search_hybrid(owner=owner, query=query, now=NOW, **options)]


def test_recency_decay_ranks_the_newer_of_two_equal_memories_first(owner, import_dated):
    # Equal scores fall back to the higher id, so without decay the older memory (written second) wins.
    recent, old = import_dated(owner, (STANDUP, NOW - timedelta(days=1)), (STANDUP, NOW - timedelta(days=200)))
    assert order(owner, "release checklist stand-up", half_life_days=0, diversity=0) == [old, recent]
    assert order(owner, "release checklist stand-up", diversity=0) == [recent, old]
    assert order(owner, "release checklist stand-up", half_life_days=30, diversity=0) == [recent, old]


def test_a_shorter_half_life_separates_scores_more(owner, import_dated):
    import_dated(owner, (STANDUP, NOW - timedelta(days=1)), (STANDUP, NOW - timedelta(days=40)))

    def gap(half_life_days: float) -> float:
        hits = search_hybrid(
            owner=owner, query="release checklist", now=NOW, half_life_days=half_life_days, diversity=0
        )
        return hits[0].score - hits[1].score

    assert gap(7) > gap(30) > gap(365) > 0


def test_a_time_expression_favours_memories_written_in_its_window(owner, import_dated):
    last_thursday, earlier = import_dated(
        owner, (STANDUP, datetime(2023, 5, 18, 9, tzinfo=UTC)), (STANDUP, datetime(2023, 5, 10, 9, tzinfo=UTC))
    )
    options = {"half_life_days": 0, "diversity": 0}
    assert order(owner, "what was discussed at stand-up?", **options) == [earlier, last_thursday]
    assert order(owner, "what was discussed at stand-up last Thursday?", **options) == [last_thursday, earlier]
    assert order(owner, "what was discussed at stand-up on 10 May 2023?", **options) == [earlier, last_thursday]
    hits = search_hybrid(owner=owner, query="stand-up last Thursday", now=NOW, **options)
    assert hits[0].explanation["time_window"] == {"phrase": "last thursday", "factor": 1.0}
    assert hits[1].explanation["time_window"]["factor"] == settings.GNOSEM_OUTSIDE_TIME_WINDOW < 1


def test_a_time_expression_only_boosts_and_filters_still_filter(owner, import_dated):
    last_thursday, earlier = import_dated(
        owner, (STANDUP, datetime(2023, 5, 18, 9, tzinfo=UTC)), (STANDUP, datetime(2023, 5, 10, 9, tzinfo=UTC))
    )
    # Outside the window is ranked lower, not hidden: the expression may be about the event, not the note.
    assert order(owner, "stand-up last Thursday") == [last_thursday, earlier]
    filters = MemoryFilters(created_before=datetime(2023, 5, 15, tzinfo=UTC))
    assert order(owner, "stand-up last Thursday", filters=filters) == [earlier]


def test_diversity_pushes_a_near_duplicate_below_a_different_relevant_memory(owner, write_dated):
    dark, again, font, *_ = write_dated(
        owner, (DARK_MODE, NOW), (DARK_MODE_AGAIN, NOW), (FONT, NOW), (STANDUP, NOW), (CI_CACHE, NOW)
    )
    # Linked as near-duplicates they would show once; kept apart, both rank and MMR separates them.
    near_duplicates.memory_keep_apart(owner=owner, public_id=again.public_id)
    query = "what editor settings does the user prefer?"
    assert order(owner, query, diversity=0)[:3] == [dark, again, font]
    diverse = order(owner, query, diversity=1)
    assert diverse[:2] == [dark, font] and diverse.index(again) > 1
    hits = search_hybrid(owner=owner, query=query, now=NOW, diversity=1)
    explained = {hit.memory: hit.explanation for hit in hits}
    assert explained[dark]["diversity"] == 1.0  # the first pick is never discounted
    assert explained[font]["diversity"] == 1.0  # the font memory is no duplicate
    assert explained[again]["diversity"] < 0.5
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    # The default λ (0.7) is strong enough for a near-duplicate this close.
    assert order(owner, query)[:2] == [dark, font]


def test_min_score_drops_weaker_results(owner, write_dated):
    write_dated(owner, (DARK_MODE, NOW), (FONT, NOW), (STANDUP, NOW))
    everything = search_hybrid(owner=owner, query="dark mode", now=NOW)
    assert len(everything) == 3
    threshold = (everything[0].score + everything[-1].score) / 2
    kept = search_hybrid(owner=owner, query="dark mode", now=NOW, min_score=threshold)
    assert 0 < len(kept) < 3
    assert all(hit.score >= threshold for hit in kept)
    assert [hit.memory for hit in kept] == [hit.memory for hit in everything[: len(kept)]]
    # 1.0 is the best candidate's fused score, unchanged by any factor.
    perfect = search_hybrid(owner=owner, query="dark mode", now=NOW, min_score=1.0)
    assert [hit.memory for hit in perfect] == [everything[0].memory]


def test_the_explanation_shows_each_signal_and_each_factor(owner, write_dated):
    recent, old = write_dated(
        owner, (DARK_MODE, NOW - timedelta(days=30)), ("Dark mode is off in the terminal.", NOW - timedelta(days=300))
    )
    hits = {hit.memory: hit for hit in search_hybrid(owner=owner, query="dark mode", now=NOW, half_life_days=30)}
    assert hits.keys() == {recent, old}
    assert hits[old].explanation["recency"] == pytest.approx(0.9, abs=1e-3)  # ten half-lives: nearly all of 0.1
    explanation = hits[recent].explanation
    assert set(explanation["signals"]) == {"vector", "keyword"}
    assert {signal["rank"] for signal in explanation["signals"].values()} <= {1, 2}
    assert all(signal["score"] > 0 for signal in explanation["signals"].values())
    assert explanation["recency"] == pytest.approx(0.95, abs=1e-3)  # one half-life: weight 0.1 halved
    assert "time_window" not in explanation and "context" not in explanation
    factors = explanation["fused"] * explanation["recency"] * explanation["diversity"]
    assert explanation["score"] == pytest.approx(factors, abs=1e-5)
    assert hits[recent].score == pytest.approx(explanation["score"], abs=1e-5)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("half_life_days", -1),
        ("half_life_days", 40_000),
        ("half_life_days", "30"),
        ("half_life_days", True),
        ("diversity", 1.5),
        ("diversity", -0.1),
        ("diversity", "high"),
        ("min_score", 2),
        ("min_score", -0.5),
    ],
)
def test_an_option_out_of_range_is_a_validation_error(owner, option, value):
    with pytest.raises(ValidationError) as caught:
        search_hybrid(owner=owner, query="dark mode", **{option: value})
    assert caught.value.field == option
