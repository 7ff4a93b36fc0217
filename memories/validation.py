"""Checks and normalisation of user-supplied values, shared by every interface, and their bounds as
JSON Schema for the interfaces to publish."""

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from gnosem.errors import ValidationError
from gnosem.labels import label_from, label_problem
from memories.models import MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WRITTEN_BY_CHARS, TAG_PATTERN
from memories.selectors import MemoryFilters

MAX_QUERY_CHARS = 2_000
DEFAULT_TOP_K = 10
MAX_TOP_K = 50
DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 100
MAX_HALF_LIFE_DAYS = 36_500
# Token budgets of reads (estimated as ceil(characters / 4)).
MIN_MAX_TOKENS = 100
MAX_MAX_TOKENS = 100_000
DEFAULT_SESSION_MAX_TOKENS = 1_500
# Memories one write or update may mark as superseded.
MAX_SUPERSEDES = 20
# A search leaves out at most this many things, each at most this long.
MAX_EXCLUDED = 10
MAX_EXCLUDED_CHARS = 100
_TAG_RE = re.compile(TAG_PATTERN)


def clean_content(content: object) -> str:
    if not isinstance(content, str):
        raise ValidationError("content", "must be a string.")
    if not content.strip():
        raise ValidationError("content", "must not be empty.")
    if "\x00" in content:
        raise ValidationError("content", "must not contain NUL characters.")
    if len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            "content",
            f"is {len(content):,} characters; the limit is {MAX_CONTENT_CHARS:,}. Split it into several memories.",
        )
    return content


def clean_tags(tags: object) -> list[str]:
    """Lower-cased, de-duplicated tags in their given order."""
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValidationError("tags", 'must be a list of strings, like ["project-x", "decision"].')
    cleaned = list(dict.fromkeys(tag.strip().lower() for tag in tags))
    if len(cleaned) > MAX_TAGS:
        raise ValidationError("tags", f"at most {MAX_TAGS} tags per memory; got {len(cleaned)}.")
    for tag in cleaned:
        if not tag or len(tag) > MAX_TAG_CHARS or not _TAG_RE.match(tag):
            raise ValidationError(
                "tags",
                f"{tag!r} is not a valid tag: use 1-{MAX_TAG_CHARS} letters, digits and . _ : / -, "
                "starting with a letter or digit.",
            )
    return cleaned


def clean_written_by(written_by: object) -> str:
    if written_by is None:
        return ""
    if not isinstance(written_by, str):
        raise ValidationError("written_by", "must be a string naming the client.")
    written_by = written_by.strip()
    if len(written_by) > MAX_WRITTEN_BY_CHARS:
        raise ValidationError("written_by", f"at most {MAX_WRITTEN_BY_CHARS} characters.")
    if problem := label_problem(written_by):
        raise ValidationError("written_by", problem)
    return written_by


_Given = TypeVar("_Given")


def written_by_or_default(
    written_by: _Given | None, *, token_name: str, client_name: str | None = None
) -> _Given | str:
    """`written_by` as given, or for a memory written without one (omitted or null) its default:
    the name the client gave itself when the request carries one (each MCP 2026-07-28 request
    sends `clientInfo`), else the name of the API token in use. 2025 MCP clients name themselves
    only in `initialize`, which a stateless server cannot remember, and REST requests name no
    client, so for them the token's name ("laptop claude code") is the label. MCP and the REST
    API both take the default from here."""
    if written_by is not None:
        return written_by
    return _client_name(client_name) or _client_name(token_name)


def _client_name(name: object) -> str:
    """A name a client or token gave itself, made fit to be a memory's default `written_by` (the
    label rule's derived form: control characters become spaces, invisible ones are dropped), cut
    to the column's length; "" when nothing is left. Unlike an argument, nobody is there to correct it."""
    if not isinstance(name, str):
        return ""
    return label_from(name)[:MAX_WRITTEN_BY_CHARS].strip()


def clean_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query", "must be a non-empty string.")
    if "\x00" in query:
        raise ValidationError("query", "must not contain NUL characters.")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError("query", f"at most {MAX_QUERY_CHARS:,} characters; shorten the question.")
    return query.strip()


def clean_exclude(exclude: object) -> tuple[str, ...]:
    """The things a search leaves out (words, identifiers, tags or names), de-duplicated; none
    for an empty list."""
    if exclude is None:
        return ()
    if not isinstance(exclude, list) or not all(isinstance(thing, str) for thing in exclude):
        raise ValidationError("exclude", 'must be a list of words, identifiers, tags or names, like ["Postgres"].')
    cleaned = list(dict.fromkeys(" ".join(thing.split()) for thing in exclude))
    if len(cleaned) > MAX_EXCLUDED:
        raise ValidationError("exclude", f"at most {MAX_EXCLUDED} things; got {len(cleaned)}.")
    for thing in cleaned:
        if not thing:
            raise ValidationError("exclude", "holds an empty item; name what to leave out, or leave it out.")
        if len(thing) > MAX_EXCLUDED_CHARS:
            raise ValidationError("exclude", f"{thing[:40]!r}... is longer than {MAX_EXCLUDED_CHARS} characters.")
        if "\x00" in thing:
            raise ValidationError("exclude", "must not contain NUL characters.")
    return tuple(cleaned)


def clean_top_k(top_k: object) -> int:
    """How many search results."""
    return _count("top_k", top_k, default=DEFAULT_TOP_K, maximum=MAX_TOP_K)


def clean_limit(limit: object) -> int:
    """Memories or notes per page of a list."""
    return _count("limit", limit, default=DEFAULT_LIST_LIMIT, maximum=MAX_LIST_LIMIT)


def _count(field: str, value: object, *, default: int, maximum: int) -> int:
    """A whole number from 1 to `maximum`; `default` when not given."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValidationError(field, f"must be a whole number from 1 to {maximum}.")
    return value


def clean_half_life_days(value: object, default: float) -> float:
    """Days after which a memory's recency boost halves; 0 turns decay off."""
    return _number(
        "half_life_days",
        value,
        default=default,
        maximum=MAX_HALF_LIFE_DAYS,
        bounds=f"a number of days from 0 (no recency boost) to {MAX_HALF_LIFE_DAYS:,}",
    )


def clean_fraction(field: str, value: object, default: float) -> float:
    """A number from 0 to 1 (diversity, min_score)."""
    return _number(field, value, default=default, maximum=1, bounds="a number from 0 to 1")


def _number(field: str, value: object, *, default: float, maximum: float, bounds: str) -> float:
    """A number from 0 to `maximum`; `default` when not given. `bounds` says so in the error."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= maximum:
        raise ValidationError(field, f"must be {bounds}.")
    return float(value)


# Times read from users (filters, the dashboard's from/to, imported memories) must lie in this
# range, judged in UTC: far inside what PostgreSQL and Python can both hold, so that no stored time
# can break reading an account back (year 9999 with a -14:00 offset is year 10000 in UTC).
EARLIEST_TIME = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(3000, 1, 1, tzinfo=UTC)
TIME_RANGE_DESCRIPTION = "from 1900-01-01T00:00:00Z to 3000-01-01T00:00:00Z (both included)"


def clean_datetime(field: str, value: object) -> datetime | None:
    """An ISO 8601 date or date-time within EARLIEST_TIME..LATEST_TIME; a date alone means its
    midnight UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(
            field, "must be an ISO 8601 date or date-time string, like 2025-06-01 or 2025-06-01T09:30:00Z."
        )
    text = value.strip()
    try:
        parsed = parse_datetime(text if "T" in text or " " in text else f"{text}T00:00:00")
    except ValueError as exc:  # well formed but impossible: 2024-02-30, T25:00, an offset of +99:00
        reason = "the UTC offset must be under 24 hours" if str(exc).startswith("offset") else str(exc)
        raise ValidationError(
            field, f"{value!r} is not a possible date and time ({reason}); use one like 2025-06-01T09:30:00Z."
        ) from None
    if parsed is None:
        raise ValidationError(field, f"{value!r} is not an ISO 8601 date or date-time, like 2025-06-01T09:30:00Z.")
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    if not EARLIEST_TIME <= parsed <= LATEST_TIME:
        raise ValidationError(field, f"{value!r} is out of range: times must lie {TIME_RANGE_DESCRIPTION}.")
    # In UTC: PostgreSQL refuses offsets beyond 15:59, which Python accepts up to 23:59.
    return parsed.astimezone(UTC)


def clean_memory_id(value: object) -> uuid.UUID:
    if not isinstance(value, str):
        raise ValidationError("id", "must be a memory id string (a UUID as returned by memory_write).")
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise ValidationError("id", f"{value!r} is not a memory id; ids look like 0b5c1f9e-...-... (a UUID).") from None


def clean_memory_ids(field: str, value: object, *, maximum: int) -> list[uuid.UUID]:
    """A list of up to `maximum` memory ids, each given once."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(field, 'must be a list of memory ids, like ["0b5c1f9e-..."].')
    if len(value) > maximum:
        raise ValidationError(field, f"at most {maximum} memory ids; got {len(value)}.")
    ids = []
    for item in value:
        try:
            ids.append(clean_memory_id(item))
        except ValidationError as exc:
            raise ValidationError(field, exc.message) from None
    return list(dict.fromkeys(ids))


def clean_flag(field: str, value: object) -> bool | None:
    """True, false, or None when not given."""
    if value is not None and not isinstance(value, bool):
        raise ValidationError(field, "must be true or false.")
    return value


@overload
def clean_max_tokens(value: object, *, default: int) -> int: ...
@overload
def clean_max_tokens(value: object, *, default: None = None) -> int | None: ...
def clean_max_tokens(value: object, *, default: int | None = None) -> int | None:
    """A token budget from MIN_MAX_TOKENS to MAX_MAX_TOKENS; `default` when not given."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_MAX_TOKENS <= value <= MAX_MAX_TOKENS:
        raise ValidationError(
            "max_tokens", f"must be a whole number of tokens from {MIN_MAX_TOKENS} to {MAX_MAX_TOKENS:,}."
        )
    return value


def clean_filters(arguments: Mapping[str, object]) -> MemoryFilters:
    """Filters from `tags`, `written_by`, `created_after`, `created_before` and
    `include_superseded` arguments."""
    return MemoryFilters(
        tags=tuple(clean_tags(arguments.get("tags"))),
        written_by=clean_written_by(arguments.get("written_by")) or None,
        created_after=clean_datetime("created_after", arguments.get("created_after")),
        created_before=clean_datetime("created_before", arguments.get("created_before")),
        include_superseded=bool(clean_flag("include_superseded", arguments.get("include_superseded"))),
    )


# The bounds above as JSON Schema, for the interfaces that publish them: the MCP tools' input
# schemas and the OpenAPI document add descriptions to these and restate no bound or default.
QUERY_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS}
TOP_K_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": DEFAULT_TOP_K}
LIMIT_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIST_LIMIT,
    "default": DEFAULT_LIST_LIMIT,
}
HALF_LIFE_DAYS_SCHEMA: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": MAX_HALF_LIFE_DAYS}
FRACTION_SCHEMA: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
CONTENT_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS}
TAGS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS},
    "maxItems": MAX_TAGS,
}
EXCLUDE_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_EXCLUDED_CHARS},
    "maxItems": MAX_EXCLUDED,
}
WRITTEN_BY_SCHEMA: dict[str, Any] = {"type": "string", "maxLength": MAX_WRITTEN_BY_CHARS}
MEMORY_ID_SCHEMA: dict[str, Any] = {"type": "string", "format": "uuid"}
MAX_TOKENS_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": MIN_MAX_TOKENS, "maximum": MAX_MAX_TOKENS}
SUPERSEDES_SCHEMA: dict[str, Any] = {"type": "array", "items": MEMORY_ID_SCHEMA, "maxItems": MAX_SUPERSEDES}
