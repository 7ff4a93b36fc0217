"""Reads of memories, always scoped to the spaces a caller reaches (accounts.reach)."""

import base64
import binascii
import functools
import itertools
import json
import secrets
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.db import connection
from django.db.models import Case, Count, F, Field, ForeignKey, Min, Model, Prefetch, Q, QuerySet, Sum, When
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone
from django.utils.crypto import salted_hmac

from accounts.reach import Actor, ReachedSpace, reach_of
from gnosem.errors import NotFound, ValidationError
from memories.encryption.derived import client_variants, tag_variants
from memories.encryption.fields import UnreadableText
from memories.models import IndexingStatus, Memory, MemoryRevision, Note


@dataclass(frozen=True)
class MemoryFilters:
    """Restrictions applied before any ranking. Tags: a memory must carry all of them. Superseded
    memories are left out unless `include_superseded`."""

    tags: tuple[str, ...] = ()
    written_by: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_superseded: bool = False

    def as_q(self, space_ids: list[int], prefix: str = "") -> Q:
        """The filters on the memories of these spaces (tags and the client are matched by their
        digests under the spaces' keys)."""
        q = Q() if self.include_superseded else Q(**{f"{prefix}superseded_by__isnull": True})
        for tag in self.tags:
            q &= Q(**{f"{prefix}tag_digests__overlap": tag_variants(tag, space_ids)})
        if self.written_by:
            q &= Q(**{f"{prefix}written_by_digest__in": client_variants(self.written_by, space_ids)})
        if self.created_after:
            q &= Q(**{f"{prefix}created_at__gte": self.created_after})
        if self.created_before:
            q &= Q(**{f"{prefix}created_at__lt": self.created_before})
        return q


def memories_of(owner: Actor) -> QuerySet[Memory]:
    """The one entry point for memory queries: the memories of every space the caller reaches;
    everything else narrows this (`memories_by_id` loads known ids the same way). The full-text
    vector is left in the database: only search reads it, there. The ids of the memories linked to
    (a superseded memory's successor, a near-duplicate's original) come in one more query each,
    when there are any."""
    linked = Memory.objects.only(*_LINKED_FIELDS)
    return (
        Memory.objects.filter(space_id__in=reach_of(owner).space_ids)
        .select_related(*_READ_WITH)
        .defer("search_vector")
        .prefetch_related(*(Prefetch(name, queryset=linked) for name in _LINKED))
    )


# What a memory is read with: its space, its author and who shared it; and what it links to (a
# successor, a near-duplicate's original), read by public id only.
_READ_WITH = ("space", "author", "shared_by")
_LINKED = ("superseded_by", "duplicate_of")
_LINKED_FIELDS = ["id", "public_id"]


def _relation(name: str) -> ForeignKey:
    return cast(ForeignKey, Memory._meta.get_field(name))


@dataclass(frozen=True)
class _Columns:
    """One model's columns in a written-out statement, and how to make an instance of their values
    as the ORM would (each field's converters, then `from_db`, which opens sealed values)."""

    model: type[Model]
    names: list[str]
    converters: list[tuple[int, list]]

    @classmethod
    def of(cls, model: type[Model], fields: list[Field], alias: str) -> "_Columns":
        converters = [
            (position, found)
            for position, field in enumerate(fields)
            if (found := connection.ops.get_db_converters(field.get_col(alias)) + field.get_db_converters(connection))
        ]
        return cls(model, [field.attname for field in fields], converters)

    def instance(self, values: list) -> Model | None:
        """The instance of these values; None for a left join's missing row."""
        if values[0] is None:
            return None
        for position, converters in self.converters:
            for converter in converters:
                values[position] = converter(values[position], None, connection)
        return self.model.from_db(connection.alias, self.names, values)


@functools.cache
def _by_id_statement() -> tuple[str, list[_Columns]]:
    """The statement `memories_by_id` runs, and the columns it reads: the memory's, then those of
    each of _READ_WITH; then the public ids of _LINKED."""

    def quote(field: Field) -> str:
        return connection.ops.quote_name(cast(str, field.column))

    fields = [field for field in Memory._meta.concrete_fields if field.attname != "search_vector"]
    columns = [_Columns.of(Memory, fields, "m")]
    select = [f"m.{quote(field)}" for field in fields]
    joins = []
    for number, name in enumerate(_READ_WITH):
        relation, alias = _relation(name), f"r{number}"
        model = relation.related_model
        fields = list(model._meta.concrete_fields)
        columns.append(_Columns.of(model, fields, alias))
        select += [f"{alias}.{quote(field)}" for field in fields]
        join = "LEFT JOIN" if relation.null else "JOIN"
        joins.append(f"{join} {model._meta.db_table} {alias} ON {alias}.id = m.{relation.column}")
    # Subqueries, not joins: with two more joins on the memory table, planning the statement took
    # longer than running it.
    select += [
        f"(SELECT public_id FROM {Memory._meta.db_table} WHERE id = m.{_relation(name).column})" for name in _LINKED
    ]
    statement = (
        f"SELECT {', '.join(select)} FROM {Memory._meta.db_table} m {' '.join(joins)} "
        "WHERE m.space_id = ANY(%(spaces)s) AND (m.id = ANY(%(ids)s) OR m.duplicate_of_id = ANY(%(groups)s)) "
        "ORDER BY m.created_at, m.id"
    )
    return statement, columns


def memories_by_id(owner: Actor, memory_ids: Iterable[int], *, groups: Iterable[int] = ()) -> dict[int, Memory]:
    """The memories with these row ids in the spaces the caller reaches, and the members of the
    near-duplicate groups whose originals are `groups`, by row id, oldest first: read as
    `memories_of` reads them, by one statement written out once, for the reads that know their
    ids (a search's results, an exploration's, a session's), where compiling the ORM's query cost
    more than running it."""
    statement, columns = _by_id_statement()
    parameters = {"spaces": reach_of(owner).space_ids, "ids": list(memory_ids), "groups": list(groups)}
    with connection.cursor() as cursor:
        cursor.execute(statement, parameters)
        rows = cursor.fetchall()
    ends = list(itertools.accumulate(len(model_columns.names) for model_columns in columns))
    memories: dict[int, Memory] = {}
    # The spaces and users the rows share, made once each (as a prefetch shares them).
    related: dict[tuple[type[Model], object], Model | None] = {}
    for row in rows:
        memory = cast(Memory, columns[0].instance(list(row[: ends[0]])))
        for name, model_columns, start, end in zip(_READ_WITH, columns[1:], ends[:-1], ends[1:], strict=True):
            key = (model_columns.model, row[start])
            if key not in related:
                related[key] = model_columns.instance(list(row[start:end]))
            _relation(name).set_cached_value(memory, related[key])
        for name, public_id in zip(_LINKED, row[ends[-1] :], strict=True):
            relation = _relation(name)
            linked_id = getattr(memory, relation.attname)
            linked = Memory.from_db(connection.alias, _LINKED_FIELDS, [linked_id, public_id]) if linked_id else None
            relation.set_cached_value(memory, linked)
        memories[memory.pk] = memory
    return memories


def memory_get(*, owner: Actor, public_id: uuid.UUID) -> Memory:
    """The memory with this id in a space the caller reaches; one in any other space is NotFound,
    exactly like an unknown one. Where two reached spaces hold the id (a memory imported into
    both), the one in the default write space comes first, then the older."""
    reach = reach_of(owner)
    memory = memories_of(reach).filter(public_id=public_id).order_by(*reach.default_space_first()).first()
    if memory is None:
        raise NotFound(f"No memory with id {public_id}.")
    return memory


def memory_get_to_change(*, owner: Actor, public_id: uuid.UUID) -> Memory:
    """The reached memory (as `memory_get`), in a space the caller may write: PermissionDenied
    where the credential or the caller's role there allows reading only."""
    reach = reach_of(owner)
    memory = memory_get(owner=reach, public_id=public_id)
    reach.check_write(memory.space_id)
    return memory


@dataclass(frozen=True)
class SpaceSummary:
    """A reached space as spaces_list shows it: the caller's role, what it holds (current memories,
    notes), and whether writes naming no space go there."""

    space: ReachedSpace
    memories: int
    notes: int
    default: bool


def space_summaries(owner: Actor) -> list[SpaceSummary]:
    """Every space the caller reaches, in the reach's order, with its counts (two queries)."""
    reach = reach_of(owner)
    memories = dict(
        Memory.objects.filter(space_id__in=reach.space_ids, superseded_by__isnull=True)
        .values("space_id")
        .annotate(count=Count("id"))
        .values_list("space_id", "count")
    )
    notes = dict(
        Note.objects.filter(space_id__in=reach.space_ids)
        .values("space_id")
        .annotate(count=Count("id"))
        .values_list("space_id", "count")
    )
    return [
        SpaceSummary(space, memories.get(space.id, 0), notes.get(space.id, 0), space.id == reach.default_space_id)
        for space in reach.spaces
    ]


@dataclass(frozen=True)
class MemoryPage:
    memories: list[Memory]
    next_cursor: str | None


# Cursors are sealed (AES-GCM, under a key derived from SECRET_KEY): the row id a position holds
# counts every space's rows, and a sealed position can only be one the server wrote.
_CURSOR_NONCE_BYTES = 12
_MAX_CURSOR_CHARS = 200  # a real cursor is about 100


def _cursor_cipher() -> AESGCM:
    return AESGCM(salted_hmac("memories.selectors.cursor", b"", algorithm="sha256").digest())


def encode_cursor(when: datetime, pk: int) -> str:
    """A page's position after the row with this time and id (memory_list, note_list), sealed."""
    nonce = secrets.token_bytes(_CURSOR_NONCE_BYTES)
    sealed = _cursor_cipher().encrypt(nonce, json.dumps([when.isoformat(), pk]).encode(), None)
    return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")


def decode_cursor(cursor: object, *, what: str = "memory_list") -> tuple[datetime, int]:
    """The (time, id) a cursor holds. Cursors come back from clients: anything but a position
    `encode_cursor` sealed is refused (naming the call `what` that gives them)."""
    invalid = ValidationError("cursor", f"is not a cursor from a previous {what} call; omit it to start at the newest.")
    if not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR_CHARS:
        raise invalid
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        nonce, sealed = raw[:_CURSOR_NONCE_BYTES], raw[_CURSOR_NONCE_BYTES:]
        text, pk = json.loads(_cursor_cipher().decrypt(nonce, sealed, None))
    except (binascii.Error, ValueError, InvalidTag):
        raise invalid from None
    return datetime.fromisoformat(text), pk


def memory_list(*, owner: Actor, filters: MemoryFilters, limit: int, cursor: str | None = None) -> MemoryPage:
    """The memories of the spaces the caller reaches, newest first, `limit` at a time."""
    reach = reach_of(owner)
    queryset = memories_of(reach).filter(filters.as_q(reach.space_ids)).order_by("-created_at", "-id")
    if cursor:
        created_at, pk = decode_cursor(cursor)
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, id__lt=pk))
    memories = list(queryset[: limit + 1])
    has_more = len(memories) > limit
    memories = memories[:limit]
    last = memories[-1] if has_more else None
    return MemoryPage(memories=memories, next_cursor=encode_cursor(last.created_at, last.pk) if last else None)


@dataclass(frozen=True)
class MemoryUsage:
    """The totals of the spaces a caller reaches. Token figures are the ceil(len/4) estimates: `tokens_raw` is what
    reading every memory as written would cost, `tokens_read` what reading them as returned
    (compressed where kept) costs, `tokens_saved` the difference."""

    memories: int
    pending: int
    failed: int
    compressed: int
    tokens_raw: int
    tokens_read: int

    @property
    def tokens_saved(self) -> int:
        return self.tokens_raw - self.tokens_read


def memory_usage(owner: Actor) -> MemoryUsage:
    """The memory counts and token accounting, in one query."""
    compressed = Q(content_optimized__isnull=False)
    # Aggregate names may not shadow the fields they sum, hence the `total_` names.
    totals = memories_of(owner).aggregate(
        memories=Count("id"),
        pending=Count("id", filter=Q(indexing_status=IndexingStatus.PENDING)),
        failed=Count("id", filter=Q(indexing_status=IndexingStatus.FAILED)),
        compressed=Count("id", filter=compressed),
        total_raw=Coalesce(Sum("tokens_raw"), 0),
        total_read=Coalesce(Sum(Case(When(compressed, then=F("tokens_optimized")), default=F("tokens_raw"))), 0),
    )
    return MemoryUsage(
        memories=totals["memories"],
        pending=totals["pending"],
        failed=totals["failed"],
        compressed=totals["compressed"],
        tokens_raw=totals["total_raw"],
        tokens_read=totals["total_read"],
    )


@dataclass(frozen=True)
class DailyWrites:
    day: date
    written_by: str
    count: int


# The group of memories whose grouped value (their tags, their client) does not open.
UNREADABLE_GROUP = "[unreadable]"


def client_names(memory_ids: Iterable[int]) -> dict[int, str]:
    """The client of each of these memories, by id (UNREADABLE_GROUP where it does not open).
    The database groups memories by their clients' digests (a space's and key version's own);
    a group is named by opening the client of one memory in it."""
    samples = Memory.objects.only("id", "space_id", "public_id", "written_by").in_bulk(list(memory_ids))
    return {
        pk: UNREADABLE_GROUP if isinstance(memory.written_by, UnreadableText) else memory.written_by
        for pk, memory in samples.items()
    }


def memory_writes_per_day(owner: Actor, *, days: int) -> list[DailyWrites]:
    """How many memories each client wrote on each of the last `days` days (UTC, today
    included), by creation time; days without writes are absent."""
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    rows = list(
        memories_of(owner)
        .filter(created_at__gte=today - timedelta(days=days - 1))  # a range the space/date index serves
        .annotate(day=TruncDate("created_at"))
        .values("day", "written_by_digest")
        .annotate(count=Count("id"), sample=Min("id"))
        .order_by()
    )
    names = client_names(row["sample"] for row in rows)
    counts: Counter[tuple[date, str]] = Counter()
    for row in rows:
        counts[row["day"], names.get(row["sample"], UNREADABLE_GROUP)] += row["count"]
    return [DailyWrites(day=day, written_by=client, count=count) for (day, client), count in sorted(counts.items())]


def memory_clients(owner: Actor) -> list[str]:
    """The client names that wrote the reached memories, for filter menus."""
    rows = memories_of(owner).values("written_by_digest").annotate(sample=Min("id")).order_by()
    names = client_names(row["sample"] for row in rows)
    return sorted({name for name in names.values() if name and name != UNREADABLE_GROUP})


def memory_history(*, owner: Actor, public_id: uuid.UUID) -> tuple[Memory, list[MemoryRevision]]:
    """The memory and its earlier versions, newest first."""
    memory = memory_get(owner=owner, public_id=public_id)
    return memory, memory_revisions(memory)


def memory_revisions(memory: Memory) -> list[MemoryRevision]:
    """The memory's earlier versions, newest first."""
    return list(memory.revisions.order_by("-replaced_at", "-id"))


def memories_superseded_by(memory: Memory) -> list[Memory]:
    """The memories this one corrected, newest first."""
    return list(
        Memory.objects.filter(space_id=memory.space_id, superseded_by=memory)
        .defer("search_vector")
        .order_by("-created_at", "-id")
    )


def _unmerged_near_duplicates(owner: Actor) -> QuerySet[Memory]:
    return Memory.objects.filter(
        space_id__in=reach_of(owner).space_ids, duplicate_of__isnull=False, superseded_by__isnull=True
    )


def near_duplicates_to_review(owner: Actor, *, limit: int) -> list[Memory]:
    """The reached near-duplicates not merged yet, newest first, each with its original loaded."""
    return list(
        _unmerged_near_duplicates(owner)
        .select_related("duplicate_of")
        .defer("search_vector", "duplicate_of__search_vector")
        .order_by("-created_at", "-id")[:limit]
    )


def near_duplicates_count(owner: Actor) -> int:
    """How many of the reached near-duplicates wait for review (not merged yet)."""
    return _unmerged_near_duplicates(owner).count()
