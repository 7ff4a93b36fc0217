"""memory_count: exact counts, by filters, about a topic (by meaning or by its words), grouped."""

from datetime import UTC, datetime

import pytest

from gnosem.errors import ValidationError
from memories import services
from memories.reading.counting import memory_count
from memories.selectors import MemoryFilters

AUTH = [
    "After 30 minutes of inactivity users must log in again.",
    "We sign users in with OAuth through Google and GitHub.",
    "User passwords are hashed with argon2id before they are stored.",
]
OTHER = [
    "The office plants are watered on Fridays.",
    "Maria is on vacation in Lisbon in August.",
]


@pytest.fixture
def memories(owner, index):
    written = [
        services.memory_write(
            owner=owner,
            content=text,
            tags=["auth", "security"] if text in AUTH else [],
            written_by="claude" if index_ % 2 else "cursor",
            created_at=datetime(2025, 5 + index_ // 3, 10, tzinfo=UTC),
        )
        for index_, text in enumerate(AUTH + OTHER)
    ]
    return index(*written)


def test_counts_all_or_filtered_memories_exactly(owner, memories):
    assert memory_count(owner=owner, filters=MemoryFilters()).count == 5
    assert memory_count(owner=owner, filters=MemoryFilters(tags=("auth",))).count == 3
    assert memory_count(owner=owner, filters=MemoryFilters(written_by="claude")).count == 2


def test_counts_memories_about_a_topic_by_meaning(owner, memories):
    counted = memory_count(owner=owner, filters=MemoryFilters(), query="how users log in")

    assert counted.by_meaning is True
    assert counted.count == len(AUTH)


def test_counts_memories_holding_every_word_of_a_topic(owner, memories):
    assert memory_count(owner=owner, filters=MemoryFilters(), query="argon2id").count == 1


def test_groups_by_tag_client_and_month(owner, memories):
    by_tag = memory_count(owner=owner, filters=MemoryFilters(), group_by="tag")
    by_client = memory_count(owner=owner, filters=MemoryFilters(), group_by="written_by")
    by_month = memory_count(owner=owner, filters=MemoryFilters(), group_by="month")

    assert by_tag.groups == [("auth", 3), ("security", 3), ("", 2)]
    assert by_client.groups == [("cursor", 3), ("claude", 2)]
    assert by_month.groups == [("2025-05", 3), ("2025-06", 2)]


def test_an_unknown_grouping_is_refused(owner):
    with pytest.raises(ValidationError, match="one of tag, written_by, month"):
        memory_count(owner=owner, filters=MemoryFilters(), group_by="colour")


def test_count_over_mcp_and_rest_sees_only_the_callers_memories(mcp, owner, memories, stranger_token):
    from tests.memories.api.test_api import Api

    counted = mcp.ok("memory_count", {"group_by": "tag", "tags": ["auth"]})
    assert counted == {
        "count": 3,
        "groups": [{"key": "auth", "count": 3}, {"key": "security", "count": 3}],
        "by_meaning": True,
    }
    assert Api(stranger_token).get("memories/count").json() == {"count": 0, "by_meaning": True}
