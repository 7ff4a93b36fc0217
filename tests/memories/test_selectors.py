import base64
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from accounts.reach import reach_of
from gnosem.errors import NotFound, ValidationError
from memories import services
from memories.models import IndexingStatus, Memory
from memories.presenters import memory_to_dict
from memories.selectors import (
    MemoryFilters,
    MemoryUsage,
    memories_by_id,
    memories_of,
    memory_get,
    memory_list,
    memory_usage,
)
from memories.sharing import memory_share
from tests.memories.stored import store

START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def cursor_of(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def all_pages(owner, limit: int, filters: MemoryFilters | None = None) -> list[list]:
    pages, cursor = [], None
    while True:
        page = memory_list(owner=owner, filters=filters or MemoryFilters(), limit=limit, cursor=cursor)
        pages.append(page.memories)
        cursor = page.next_cursor
        if cursor is None:
            return pages


def test_memory_list_is_newest_first(owner):
    written = [
        services.memory_write(owner=owner, content=f"memory {i}", created_at=START + timedelta(hours=i))
        for i in range(4)
    ]
    page = memory_list(owner=owner, filters=MemoryFilters(), limit=10)
    assert page.memories == written[::-1]
    assert page.next_cursor is None


def test_the_cursor_walks_every_memory_once_and_breaks_equal_times_by_id(owner):
    # Five memories share one creation time; a cursor on time alone would skip or repeat them.
    same_time = [services.memory_write(owner=owner, content=f"same {i}", created_at=START) for i in range(5)]
    older = services.memory_write(owner=owner, content="older", created_at=START - timedelta(days=1))
    newer = services.memory_write(owner=owner, content="newer", created_at=START + timedelta(days=1))
    pages = all_pages(owner, limit=2)
    assert [len(page) for page in pages] == [2, 2, 2, 1]
    flat = [memory for page in pages for memory in page]
    assert flat == [newer, *sorted(same_time, key=lambda memory: -memory.pk), older]


def test_an_exactly_full_last_page_has_no_next_cursor(owner):
    for i in range(4):
        services.memory_write(owner=owner, content=f"memory {i}")
    pages = all_pages(owner, limit=2)
    assert [len(page) for page in pages] == [2, 2]


def test_memory_list_never_shows_another_owners_memories(owner, stranger):
    services.memory_write(owner=stranger, content="the stranger's")
    mine = services.memory_write(owner=owner, content="mine")
    assert memory_list(owner=owner, filters=MemoryFilters(), limit=10).memories == [mine]


def test_a_cursor_from_another_owner_reveals_nothing(owner, stranger):
    services.memory_write(owner=owner, content="first")
    services.memory_write(owner=owner, content="second")
    cursor = memory_list(owner=owner, filters=MemoryFilters(), limit=1).next_cursor
    assert memory_list(owner=stranger, filters=MemoryFilters(), limit=10, cursor=cursor).memories == []


def test_memory_list_filters_by_tags_client_and_dates(owner):
    def write(content: str, day: int, **kwargs):
        return services.memory_write(owner=owner, content=content, created_at=START + timedelta(days=day), **kwargs)

    a = write("a", 0, tags=["work", "decision"], written_by="cursor")
    b = write("b", 1, tags=["work"], written_by="claude-code")
    c = write("c", 2, tags=["home"], written_by="cursor")

    def listed(**filters) -> list:
        return memory_list(owner=owner, filters=MemoryFilters(**filters), limit=10).memories

    assert listed(tags=("work",)) == [b, a]
    assert listed(tags=("work", "decision")) == [a]
    assert listed(written_by="cursor") == [c, a]
    assert listed(created_after=START + timedelta(days=1)) == [c, b]  # inclusive
    assert listed(created_before=START + timedelta(days=1)) == [a]  # exclusive
    assert listed(tags=("work",), written_by="cursor", created_before=START + timedelta(days=2)) == [a]


def test_filters_apply_across_pages(owner):
    for i in range(6):
        services.memory_write(owner=owner, content=f"m{i}", tags=["even" if i % 2 == 0 else "odd"])
    pages = all_pages(owner, limit=2, filters=MemoryFilters(tags=("even",)))
    assert [memory.content for page in pages for memory in page] == ["m4", "m2", "m0"]


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "%%%",
        "aGVsbG8",  # base64 of "hello": not JSON
        cursor_of(["yesterday", 5]),
        cursor_of(["2025-03-01T09:00:00+00:00"]),
        cursor_of(["2025-03-01T09:00:00+00:00", "five"]),
        cursor_of([None, 5]),
        cursor_of({"created_at": "2025-03-01"}),
        cursor_of(7),
        cursor_of("ab"),
        base64.urlsafe_b64encode(b'["2025-03-01T09:00:00+00:00", 1e400]').decode(),  # pk is infinity
        cursor_of(["2025-03-01T09:00:00+00:00", 5]),  # well formed, but a client's: not sealed by the server
        base64.urlsafe_b64encode(b"\xff\xfe\x00garbage").decode(),
        12345,
    ],
)
def test_a_bad_cursor_is_a_validation_error(owner, cursor):
    services.memory_write(owner=owner, content="anything")
    with pytest.raises(ValidationError) as caught:
        memory_list(owner=owner, filters=MemoryFilters(), limit=10, cursor=cursor)
    assert caught.value.field == "cursor"


def test_memory_get_returns_the_owners_memory(owner):
    memory = services.memory_write(owner=owner, content="mine")
    assert memory_get(owner=owner, public_id=memory.public_id) == memory


def test_memory_get_of_another_owners_memory_is_not_found(owner, stranger):
    memory = services.memory_write(owner=owner, content="mine")
    with pytest.raises(NotFound) as caught:
        memory_get(owner=stranger, public_id=memory.public_id)
    unknown_id = uuid.uuid4()
    with pytest.raises(NotFound) as unknown:
        memory_get(owner=stranger, public_id=unknown_id)
    # Same answer as for an id that does not exist at all: nothing confirms the memory exists.
    assert str(caught.value) == str(unknown.value).replace(str(unknown_id), str(memory.public_id))


def test_a_cursor_holds_no_row_id_that_would_count_other_owners_memories(owner, stranger):
    for i in range(3):
        services.memory_write(owner=owner, content=f"mine {i}")
        services.memory_write(owner=stranger, content=f"theirs {i}")

    cursor = memory_list(owner=owner, filters=MemoryFilters(), limit=1).next_cursor

    with pytest.raises(ValueError):  # sealed: no readable position inside
        json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert [m.content for m in memory_list(owner=owner, filters=MemoryFilters(), limit=5, cursor=cursor).memories] == [
        "mine 1",
        "mine 0",
    ]


def test_memory_usage_counts_the_owners_memories_and_tokens_saved(owner, stranger):
    short = services.memory_write(owner=owner, content="a" * 40)
    long = services.memory_write(owner=owner, content="b" * 800)
    store(long.pk, content_optimized="KEY=" + "c" * 96)
    Memory.objects.filter(pk=short.pk).update(indexing_status=IndexingStatus.FAILED)
    services.memory_write(owner=stranger, content="d" * 4000)

    usage = memory_usage(owner)

    assert (usage.memories, usage.failed, usage.compressed) == (2, 1, 1)
    # 40 + 800 characters raw; 40 + 100 as read (the long one compressed).
    assert (usage.tokens_raw, usage.tokens_read, usage.tokens_saved) == (10 + 200, 10 + 25, 175)


def test_memory_usage_of_an_owner_without_memories_is_all_zero(stranger):
    assert memory_usage(stranger) == MemoryUsage(0, 0, 0, 0, 0, 0)


def loaded_as_the_orm_loads(memory: Memory) -> tuple:
    """Everything a read shows of a memory (memory_to_dict), every column but the full-text vector,
    and what it was read with."""
    columns = {
        field.attname: getattr(memory, field.attname)
        for field in Memory._meta.concrete_fields
        if field.attname != "search_vector"
    }
    return (
        memory_to_dict(memory),
        columns,
        memory.space.__dict__ | {"_state": None},
        memory.author and memory.author.get_username(),
        memory.shared_by and memory.shared_by.get_username(),
    )


def test_memories_by_id_reads_what_the_orm_reads_in_one_statement(owner, team, stranger, django_assert_num_queries):
    written = services.memory_write(owner=owner, content="The VPN certificate expires in May.", tags=["vpn"])
    shared = memory_share(owner=owner, public_id=written.public_id, space="Platform")
    original = services.memory_write(owner=owner, content="Deploys go out on Tuesdays.")
    duplicate = services.memory_write(owner=owner, content="We deploy every Tuesday.")
    superseded = services.memory_write(owner=owner, content="The office is in Lyon.")
    authorless = services.memory_write(owner=owner, content="Written by an account since deleted.", space="Platform")
    Memory.objects.filter(pk=duplicate.pk).update(duplicate_of=original)
    Memory.objects.filter(pk=superseded.pk).update(superseded_by=original)
    Memory.objects.filter(pk=authorless.pk).update(author=None)
    original.content_optimized = "FACT=deploys on Tuesday"
    original.save(update_fields=["content_optimized"])
    theirs = services.memory_write(owner=stranger, content="The stranger's own memory.")
    ids = [memory.pk for memory in (written, shared, original, duplicate, superseded, authorless, theirs)]

    reach = reach_of(owner)
    with django_assert_num_queries(1):
        loaded = memories_by_id(reach, ids)
        shown = {memory_id: loaded_as_the_orm_loads(memory) for memory_id, memory in loaded.items()}

    expected = memories_of(owner).in_bulk(ids)
    assert list(loaded) == sorted(expected, key=lambda memory_id: (expected[memory_id].created_at, memory_id))
    assert theirs.pk not in loaded
    assert shown == {memory_id: loaded_as_the_orm_loads(memory) for memory_id, memory in expected.items()}
    assert shown[superseded.pk][0]["superseded_by"] == str(original.public_id)
    assert shown[duplicate.pk][0]["duplicate_of"] == str(original.public_id)
    assert shown[shared.pk][0]["shared_by"] == owner.get_username()
    assert shown[authorless.pk][0]["author"] is None
    assert shown[original.pk][0]["content"] == "FACT=deploys on Tuesday"


def test_memories_by_id_reads_the_members_of_near_duplicate_groups(owner):
    original = services.memory_write(owner=owner, content="Deploys go out on Tuesdays.")
    members = [services.memory_write(owner=owner, content=f"We deploy on Tuesday, note {i}.") for i in range(2)]
    other = services.memory_write(owner=owner, content="Unrelated.")
    Memory.objects.filter(pk__in=[member.pk for member in members]).update(duplicate_of=original)

    loaded = memories_by_id(owner, [other.pk], groups=[original.pk])

    assert set(loaded) == {other.pk, *(member.pk for member in members)}
