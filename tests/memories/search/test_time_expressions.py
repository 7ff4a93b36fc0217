from datetime import UTC, datetime

import pytest

from memories.search.time_expressions import parse_time_window

# A Thursday afternoon.
NOW = datetime(2023, 5, 25, 15, 30, tzinfo=UTC)


def day(month: int, number: int, year: int = 2023) -> datetime:
    return datetime(year, month, number, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday?", day(5, 24), day(5, 25)),
        ("notes from today", day(5, 25), day(5, 26)),
        ("what did we decide last Thursday?", day(5, 18), day(5, 19)),  # today is Thursday: a week ago
        ("the call last Monday", day(5, 22), day(5, 23)),
        ("what happened on Friday", day(5, 19), day(5, 20)),
        ("last weekend's hike", day(5, 20), day(5, 22)),
        ("decisions made last week", day(5, 15), day(5, 22)),
        ("this week", day(5, 22), day(5, 29)),
        ("what changed last month", day(4, 1), day(5, 1)),
        ("goals for this year", day(1, 1), day(1, 1, 2024)),
        ("trips last year", day(1, 1, 2022), day(1, 1)),
        ("the release two weeks ago", day(5, 8), day(5, 15)),
        ("the outage 3 days ago", day(5, 21), day(5, 24)),
        ("what did Melanie paint in May 2023?", day(5, 1), day(6, 1)),
        ("invoices from December, 2022", day(12, 1, 2022), day(1, 1)),
        ("the party on 8 May, 2023", day(5, 8), day(5, 9)),
        ("the party on May 7th, 2023", day(5, 7), day(5, 8)),
        ("what did we ship in March", day(3, 1), day(4, 1)),
        ("what did we ship in August", day(8, 1, 2022), day(9, 1, 2022)),  # the latest August begun
        ("books read in 2022", day(1, 1, 2022), day(1, 1)),
    ],
)
def test_a_time_expression_becomes_a_window_relative_to_now(query, start, end):
    window = parse_time_window(query, NOW)
    assert (window.start, window.end) == (start, end)
    assert window.phrase in query.lower()


@pytest.mark.parametrize(
    "query",
    [
        "how is the checkout page laid out?",
        "what may I eat before the race?",  # "may" the verb
        "which port does staging use, 5433?",
        "version 2023.1 of the SDK",
        "error E_2022_TIMEOUT",
        "the last step of the onboarding",
    ],
)
def test_a_query_without_a_time_expression_has_no_window(query):
    assert parse_time_window(query, NOW) is None


def test_an_impossible_day_falls_back_to_its_month():
    window = parse_time_window("the meeting on 31 February 2023", NOW)
    assert (window.start, window.end) == (day(2, 1), day(3, 1))


def test_the_window_contains_its_start_but_not_its_end():
    window = parse_time_window("yesterday", NOW)
    assert window.contains(day(5, 24))
    assert window.contains(day(5, 24).replace(hour=23, minute=59))
    assert not window.contains(day(5, 25))
    assert not window.contains(day(5, 23).replace(hour=23, minute=59))
