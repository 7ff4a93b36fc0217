"""Time expressions in a query ("yesterday", "last Thursday", "in May 2023", "two weeks ago")
read as a window of creation dates relative to a reference time.

Search boosts the memories created inside the window instead of filtering on it: an expression
may be about when something happened rather than when it was written down, and a wrong guess
must not hide the answer.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10}
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d\d"


@dataclass(frozen=True)
class TimeWindow:
    """Creation times from `start` (inclusive) to `end` (exclusive), read from `phrase`."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_window(year: int, month: int, reference: datetime) -> tuple[datetime, datetime]:
    start = reference.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return start, end


def _days(start: datetime, count: int) -> tuple[datetime, datetime]:
    return start, start + timedelta(days=count)


def _relative(match: re.Match, today: datetime) -> tuple[datetime, datetime] | None:
    word = match.group(0)
    if word == "today":
        return _days(today, 1)
    if word == "yesterday":
        return _days(today - timedelta(days=1), 1)
    return None


def _last_unit(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    which, unit = match.group(1), match.group(2)
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return _days(saturday, 2)
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return (monday - timedelta(days=7), monday) if which == "last" else (monday, monday + timedelta(days=7))
    if unit == "month":
        year, month = today.year, today.month
        if which == "last":
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return _month_window(year, month, today)
    year = today.year - (1 if which == "last" else 0)
    return today.replace(year=year, month=1, day=1), today.replace(year=year + 1, month=1, day=1)


def _weekday(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    # "last Thursday" on a Thursday is a week ago; on a Friday, yesterday.
    back = (today.weekday() - WEEKDAYS.index(match.group(1))) % 7 or 7
    return _days(today - timedelta(days=back), 1)


def _ago(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    count = NUMBER_WORDS.get(match.group(1)) or int(match.group(1))
    span = UNIT_DAYS[match.group(2)]
    center = today - timedelta(days=count * span)
    # "two weeks ago" is rarely exact: half a unit either side (at least a day).
    slack = timedelta(days=max(1, span // 2))
    return center - slack, center + timedelta(days=1) + slack


def _full_date(match: re.Match, today: datetime) -> tuple[datetime, datetime] | None:
    groups = match.groupdict()
    try:
        day = today.replace(year=int(groups["year"]), month=MONTHS[groups["month"]], day=int(groups["day"]))
    except ValueError:  # 31 February
        return None
    return _days(day, 1)


def _month_year(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    return _month_window(int(match.group(2)), MONTHS[match.group(1)], today)


def _month_alone(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    # "in May" means the latest May that has begun.
    month = MONTHS[match.group(1)]
    year = today.year if month <= today.month else today.year - 1
    return _month_window(year, month, today)


def _year(match: re.Match, today: datetime) -> tuple[datetime, datetime]:
    year = int(match.group(1))
    return today.replace(year=year, month=1, day=1), today.replace(year=year + 1, month=1, day=1)


_NUMBER = "|".join(NUMBER_WORDS) + r"|\d{1,3}"
# Most specific first: the first pattern that matches decides.
_PATTERNS = (
    (
        re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH}),?\s+(?P<year>{_YEAR})\b"),
        _full_date,
    ),
    (re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>{_YEAR})\b"), _full_date),
    (re.compile(rf"\b({_MONTH}),?\s+({_YEAR})\b"), _month_year),
    (re.compile(r"\b(today|yesterday)\b"), _relative),
    (re.compile(rf"\b({_NUMBER})\s+(day|week|month|year)s?\s+ago\b"), _ago),
    (re.compile(r"\b(last|this)\s+(week|weekend|month|year)\b"), _last_unit),
    (re.compile(rf"\b(?:last|on|this\s+past)\s+({'|'.join(WEEKDAYS)})\b"), _weekday),
    (re.compile(rf"\b(?:in|during|since)\s+({_MONTH})\b(?!\s*\d)"), _month_alone),
    (re.compile(rf"\b(?:in|during)\s+({_YEAR})\b"), _year),
)


def parse_time_window(query: str, now: datetime) -> TimeWindow | None:
    """The creation window a time expression in `query` points at, relative to `now`; None if
    the query names no time."""
    text = query.lower()
    today = _day_start(now)
    for pattern, window in _PATTERNS:
        match = pattern.search(text)
        if match:
            bounds = window(match, today)
            if bounds:
                return TimeWindow(start=bounds[0], end=bounds[1], phrase=match.group(0))
    return None
