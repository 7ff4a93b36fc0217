"""The memory tools over /mcp, in both protocol eras: definitions, results and shapes."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.spaces import personal_space_of
from memories import services
from memories.models import IndexingStatus, Memory
from tests.memories.stored import store

MEMORY_KEYS = {
    "id",
    "content",
    "optimized",
    "tags",
    "written_by",
    "space",
    "author",
    "shared_from",
    "shared_by",
    "created_at",
    "updated_at",
    "indexing_status",
    "tokens",
    "pinned",
    "superseded_by",
    "also_written_by",
    "duplicate_of",
}
READ_TOOLS = {
    "spaces_list",
    "space_members",
    "session_start",
    "memory_search",
    "memory_list",
    "memory_get",
    "memory_history",
    "memory_count",
    "explore_graph",
    "semantic_search",
    "note_get",
    "note_list",
}
WRITE_TOOLS = {
    "memory_write",
    "memory_update",
    "memory_delete",
    "memory_share",
    "note_write",
    "note_update",
    "note_delete",
}
# A move takes the memory out of its space: memory_share is marked destructive.
DESTRUCTIVE_TOOLS = {"memory_update", "memory_delete", "memory_share", "note_update", "note_delete"}


def write(owner, content: str, **kwargs) -> Memory:
    return services.memory_write(owner=owner, content=content, **kwargs)


def test_every_tool_is_fully_described(mcp):
    tools = mcp.tools()

    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for name, tool in tools.items():
        assert tool["title"] and len(tool["description"]) > 60, name
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["outputSchema"]["type"] == "object"
        hints = tool["annotations"]
        assert hints["readOnlyHint"] is (name in READ_TOOLS)
        assert hints["destructiveHint"] is (name in DESTRUCTIVE_TOOLS)
        assert hints["openWorldHint"] is False
        assert isinstance(hints["idempotentHint"], bool)


def test_a_read_token_sees_only_the_read_tools(mcp_as, owner_read_token):
    assert set(mcp_as(owner_read_token).tools()) == READ_TOOLS


def test_memory_write_stores_the_memory_and_returns_its_id_at_once(mcp, owner):
    written = mcp.ok(
        "memory_write",
        {"content": "Invoices are generated on the 1st by the billing cron.", "tags": ["Billing", "cron"]},
    )

    memory = Memory.objects.get(public_id=written["id"])
    assert (memory.space, memory.author) == (personal_space_of(owner), owner)
    assert memory.content == "Invoices are generated on the 1st by the billing cron."
    assert written == {
        "id": str(memory.public_id),
        "indexing_status": "pending",
        "tags": ["billing", "cron"],
        "written_by": memory.written_by,
        "created_at": memory.created_at.isoformat(),
        "tokens": 14,
        "duplicate": False,
    }


def test_an_explicit_written_by_wins_over_the_default(mcp):
    written = mcp.ok("memory_write", {"content": "Use pnpm, not npm.", "written_by": "cursor"})

    assert written["written_by"] == "cursor"


def test_optional_arguments_sent_as_null_count_as_omitted(mcp):
    written = mcp.ok("memory_write", {"content": "Use pnpm, not npm.", "tags": None, "written_by": None})

    assert written["tags"] == [] and written["written_by"]


def test_memory_get_returns_the_memory_shape(mcp, owner):
    memory = write(owner, "The on-call rotation changes on Mondays at 10:00.", tags=["oncall"], written_by="claude")

    got = mcp.ok("memory_get", {"id": str(memory.public_id)})

    assert got == {
        "id": str(memory.public_id),
        "content": "The on-call rotation changes on Mondays at 10:00.",
        "optimized": False,
        "tags": ["oncall"],
        "written_by": "claude",
        "space": "Personal",
        "author": "owner",
        "shared_from": None,
        "shared_by": None,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "indexing_status": "pending",
        "tokens": 13,
        "pinned": False,
        "superseded_by": None,
        "also_written_by": [],
        "duplicate_of": None,
    }


def test_a_compressed_memory_reads_compressed_unless_raw_is_asked(mcp, owner):
    memory = write(owner, "We decided to move the staging cluster to Frankfurt because of latency. " * 8)
    store(memory.pk, content_optimized="DECISION=staging to Frankfurt|PROBLEM=latency")

    compressed = mcp.ok("memory_get", {"id": str(memory.public_id)})
    raw = mcp.ok("memory_get", {"id": str(memory.public_id), "raw": True})

    assert compressed["content"] == "DECISION=staging to Frankfurt|PROBLEM=latency"
    assert compressed["content_raw"] == memory.content
    assert compressed["optimized"] is True
    assert compressed["tokens"] == 12  # ceil(46 / 4): what reading `content` costs
    assert raw["content"] == memory.content and raw["optimized"] is False and "content_raw" not in raw
    assert raw["tokens"] == (len(memory.content) + 3) // 4


def test_memory_list_pages_newest_first_with_an_opaque_cursor(mcp, owner):
    start = datetime(2025, 3, 1, tzinfo=UTC)
    memories = [write(owner, f"Release note {n}.", created_at=start + timedelta(days=n)) for n in range(5)]

    first = mcp.ok("memory_list", {"limit": 2})
    second = mcp.ok("memory_list", {"limit": 2, "cursor": first["next_cursor"]})
    third = mcp.ok("memory_list", {"limit": 2, "cursor": second["next_cursor"]})

    pages = [[m["id"] for m in page["memories"]] for page in (first, second, third)]
    assert pages == [
        [str(m.public_id) for m in memories[4:2:-1]],
        [str(m.public_id) for m in memories[2:0:-1]],
        [str(memories[0].public_id)],
    ]
    assert third["next_cursor"] is None
    assert set(first["memories"][0]) == MEMORY_KEYS


def test_memory_list_filters_by_tags_client_and_dates(mcp, owner):
    june = datetime(2025, 6, 10, tzinfo=UTC)
    match = write(owner, "Postgres 17 upgrade is planned.", tags=["db", "plan"], written_by="claude", created_at=june)
    write(owner, "Postgres 16 is current.", tags=["db"], written_by="claude", created_at=june)
    write(owner, "Redis 8 upgrade is planned.", tags=["db", "plan"], written_by="cursor", created_at=june)
    write(owner, "Old plan.", tags=["db", "plan"], written_by="claude", created_at=june - timedelta(days=60))

    listed = mcp.ok(
        "memory_list",
        {"tags": ["PLAN", "db"], "written_by": "claude", "created_after": "2025-06-01", "created_before": "2025-07-01"},
    )

    assert [m["id"] for m in listed["memories"]] == [str(match.public_id)]


def test_memory_search_finds_by_exact_words_before_embedding(mcp, owner):
    target = write(owner, "The nightly export fails with ENOSPC on /var/backups.")
    write(owner, "The nightly export runs at 02:00 UTC.")

    found = mcp.ok("memory_search", {"query": "ENOSPC"})

    assert [hit["id"] for hit in found["results"]] == [str(target.public_id)]
    hit = found["results"][0]
    assert set(hit) == MEMORY_KEYS | {"score", "duplicates"} and 0 < hit["score"] <= 1


def test_memory_search_applies_filters_and_top_k(mcp, owner):
    for n in range(4):
        write(owner, f"Grafana dashboard {n} shows queue latency.", tags=["grafana"] if n % 2 else [])

    assert len(mcp.ok("memory_search", {"query": "grafana dashboard", "top_k": 3})["results"]) == 3
    tagged = mcp.ok("memory_search", {"query": "grafana dashboard", "tags": ["grafana"]})["results"]
    assert len(tagged) == 2 and all(hit["tags"] == ["grafana"] for hit in tagged)
    assert mcp.ok("memory_search", {"query": "grafana", "created_before": "2000-01-01"})["results"] == []


def test_memory_search_explains_scores_on_request(mcp, owner):
    write(owner, "The nightly export fails with ENOSPC on /var/backups.")
    write(owner, "ENOSPC also hit the build cache last spring.")

    plain = mcp.ok("memory_search", {"query": "ENOSPC"})["results"]
    explained = mcp.ok("memory_search", {"query": "ENOSPC", "explain": True})["results"]

    assert all("explanation" not in hit for hit in plain)
    assert [hit["id"] for hit in explained] == [hit["id"] for hit in plain]
    for hit in explained:
        explanation = hit["explanation"]
        assert set(explanation["signals"]) == {"keyword"}  # not embedded yet
        assert explanation["score"] == pytest.approx(hit["score"], abs=1e-4)
        assert 0 < explanation["recency"] <= 1 and "fused" in explanation


def test_memory_search_takes_the_ranking_options(mcp, owner):
    write(owner, "Grafana dashboard for the queue latency.")
    write(owner, "Grafana alert on queue depth.")

    everything = mcp.ok(
        "memory_search", {"query": "grafana queue", "half_life_days": 0, "diversity": 0.0, "min_score": 0}
    )["results"]
    assert len(everything) == 2
    strict = mcp.ok("memory_search", {"query": "grafana queue", "min_score": 1})["results"]
    assert len(strict) <= 1 and all(hit["score"] == 1 for hit in strict)


def test_memory_update_changes_only_the_given_fields(mcp, owner):
    memory = write(owner, "The API rate limit is 100 requests per minute.", tags=["api"], written_by="claude")
    Memory.objects.filter(pk=memory.pk).update(indexing_status=IndexingStatus.INDEXED)

    updated = mcp.ok("memory_update", {"id": str(memory.public_id), "content": "The API rate limit is 300/min."})

    assert updated["content"] == "The API rate limit is 300/min."
    assert updated["tags"] == ["api"] and updated["written_by"] == "claude"
    assert updated["indexing_status"] == "pending"  # re-embedded on commit
    assert updated["tokens"] == 8
    retagged = mcp.ok("memory_update", {"id": str(memory.public_id), "tags": []})
    assert retagged["tags"] == [] and retagged["content"] == "The API rate limit is 300/min."


def test_memory_delete_removes_the_memory(mcp, owner):
    memory = write(owner, "Temporary note.")
    kept = write(owner, "Keep me.")

    deleted = mcp.ok("memory_delete", {"id": str(memory.public_id)})

    assert deleted == {"id": str(memory.public_id), "deleted": True}
    assert list(Memory.objects.values_list("pk", flat=True)) == [kept.pk]


@pytest.mark.parametrize("tool", ["memory_get", "memory_delete"])
def test_ids_are_accepted_with_surrounding_whitespace_and_any_case(mcp, owner, tool):
    memory = write(owner, "Whitespace-tolerant ids.")

    mcp.ok(tool, {"id": f"  {str(memory.public_id).upper()} "})
