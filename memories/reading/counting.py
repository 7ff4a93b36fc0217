"""memory_count: exact counts of the memories of the spaces a caller reaches, optionally about a topic and grouped."""

from collections import Counter
from dataclasses import dataclass
from datetime import UTC

from django.contrib.postgres.fields import ArrayField
from django.db.models import Case, CharField, Count, F, Func, Min, QuerySet, Value, When
from django.db.models.functions import Coalesce, TruncMonth

from accounts.reach import Actor, reach_of
from gnosem.errors import ValidationError
from memories.models import Memory
from memories.search.about import about
from memories.selectors import UNREADABLE_GROUP, MemoryFilters, client_names, memories_of
from memories.validation import clean_query

GROUPINGS = ("tag", "written_by", "month", "space", "author")
_TAGS = ArrayField(CharField())


def _tag_groups(memories: QuerySet[Memory]) -> list[tuple[str, int]]:
    """How many of `memories` carry each tag, most first, untagged ones as "". The database
    counts the tags' digests (a space's and key version's own); each digest is named by opening
    the tags of one memory carrying it, and the counts of one tag under several digests summed."""
    untagged = Value([""], output_field=_TAGS)
    digest = Func(
        Case(When(tag_digests=[], then=untagged), default=F("tag_digests"), output_field=_TAGS),
        function="unnest",
        output_field=CharField(),
    )
    rows = list(memories.annotate(digest=digest).values("digest").annotate(n=Count("id"), sample=Min("id")))
    samples = Memory.objects.only("id", "space_id", "public_id", "tags", "tag_digests").in_bulk(
        row["sample"] for row in rows
    )
    counts: Counter[str] = Counter()
    for row in rows:
        sample = samples.get(row["sample"])
        named = dict(zip(sample.tag_digests, sample.tags, strict=False)) if sample else {}  # in the same order
        counts[named.get(row["digest"], UNREADABLE_GROUP) if row["digest"] else ""] += row["n"]
    return _most_first(counts)


def _client_groups(memories: QuerySet[Memory]) -> list[tuple[str, int]]:
    """How many of `memories` each client wrote, most first, those of no named client as ""
    (grouped by the clients' digests, each group named by opening one memory's client)."""
    rows = list(memories.values("written_by_digest").annotate(n=Count("id"), sample=Min("id")))
    names = client_names(row["sample"] for row in rows)
    counts: Counter[str] = Counter()
    for row in rows:
        counts[names.get(row["sample"], UNREADABLE_GROUP)] += row["n"]
    return _most_first(counts)


def _most_first(counts: Counter[str]) -> list[tuple[str, int]]:
    """The groups by count, most first, then by name."""
    return sorted(counts.items(), key=lambda group: (-group[1], group[0]))


@dataclass(frozen=True)
class MemoryCount:
    """How many memories matched; with a grouping, how many in each group, most first (a memory
    with several tags counts once per tag; untagged ones form the group ""). `by_meaning` is false
    when a topic could be matched by its words only (the embedding model failed)."""

    count: int
    groups: list[tuple[str, int]] | None = None
    by_meaning: bool = True

    def as_dict(self) -> dict:
        data: dict = {"count": self.count}
        if self.groups is not None:
            data["groups"] = [{"key": key, "count": count} for key, count in self.groups]
        data["by_meaning"] = self.by_meaning
        return data


def memory_count(*, owner: Actor, filters: MemoryFilters, query: object = None, group_by: object = None) -> MemoryCount:
    """How many of the reached memories pass `filters` and, with `query`, are about it
    (memories.search.about: similarity at least ABOUT_MIN_SIMILARITY, or every word of it);
    grouped by `group_by` (tag, written_by, month, space or author) when given."""
    if group_by is not None and group_by not in GROUPINGS:
        raise ValidationError("group_by", f"must be one of {', '.join(GROUPINGS)}; got {group_by!r}.")
    reach = reach_of(owner)
    memories = memories_of(reach).filter(filters.as_q(reach.space_ids)).order_by()
    by_meaning = True
    if query is not None:
        topic = about(space_ids=reach.space_ids, topic=clean_query(query))
        memories, by_meaning = memories.filter(topic.condition), topic.by_meaning
    count = memories.count()
    if group_by is None:
        return MemoryCount(count, by_meaning=by_meaning)
    if group_by == "tag":
        return MemoryCount(count, _tag_groups(memories), by_meaning)
    if group_by == "written_by":
        return MemoryCount(count, _client_groups(memories), by_meaning)
    key: Func | F  # a space, an author or a month
    if group_by == "space":
        key = F("space__name")
    elif group_by == "author":
        key = Coalesce(F("author__username"), Value(""))  # "": written by an account since deleted
    else:
        key = TruncMonth("created_at", tzinfo=UTC)
    rows = memories.annotate(key=key).values("key").annotate(n=Count("id")).order_by("-n", "key")
    groups = [(row["key"].strftime("%Y-%m") if group_by == "month" else row["key"], row["n"]) for row in rows]
    return MemoryCount(count, groups, by_meaning)
