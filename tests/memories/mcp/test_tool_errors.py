"""Bad tool calls: each is an `isError` result that names what to fix, and nothing is half-written."""

import uuid

import pytest

from memories import services
from memories.models import MAX_CONTENT_CHARS, Memory


@pytest.fixture
def memory(owner) -> Memory:
    return services.memory_write(owner=owner, content="The build cache lives in S3 bucket ci-cache-eu.", tags=["ci"])


def assert_unchanged(memory: Memory) -> None:
    fresh = Memory.objects.get(pk=memory.pk)
    assert (fresh.content, fresh.tags, fresh.written_by, fresh.updated_at) == (
        memory.content,
        memory.tags,
        memory.written_by,
        memory.updated_at,
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"content": ""}, "Invalid argument `content`: must not be empty."),
        ({"content": "   \n\t"}, "Invalid argument `content`: must not be empty."),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "the limit is 50,000. Split it into several memories."),
        ({"content": 42}, "Invalid argument `content`: must be a string."),
        ({"content": "nul\x00byte"}, "must not contain NUL characters"),
        ({}, "Invalid argument `content`: is required."),
        ({"content": None}, "Invalid argument `content`: is required."),
        ({"content": "fine", "tags": "infra"}, "Invalid argument `tags`: must be a list of strings"),
        ({"content": "fine", "tags": [1, 2]}, "Invalid argument `tags`: must be a list of strings"),
        ({"content": "fine", "tags": ["has space"]}, "'has space' is not a valid tag"),
        ({"content": "fine", "tags": ["-leading"]}, "'-leading' is not a valid tag"),
        ({"content": "fine", "tags": [f"t{n}" for n in range(21)]}, "at most 20 tags per memory; got 21"),
        ({"content": "fine", "written_by": "w" * 101}, "Invalid argument `written_by`: at most 100 characters."),
        ({"content": "fine", "owner": "stranger"}, "Invalid argument `owner`: is not an argument of this tool"),
    ],
)
def test_memory_write_refuses_bad_arguments_and_stores_nothing(mcp, arguments, expected):
    message = mcp.fails("memory_write", arguments)

    assert expected in message
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": ""}, "Invalid argument `query`: must be a non-empty string."),
        ({"query": "   "}, "Invalid argument `query`: must be a non-empty string."),
        ({"query": "x" * 2_001}, "Invalid argument `query`: at most 2,000 characters"),
        ({}, "Invalid argument `query`: is required."),
        ({"query": "cache", "top_k": 0}, "Invalid argument `top_k`: must be a whole number from 1 to 50."),
        ({"query": "cache", "top_k": 51}, "Invalid argument `top_k`: must be a whole number from 1 to 50."),
        ({"query": "cache", "top_k": "5"}, "Invalid argument `top_k`: must be a whole number."),
        ({"query": "cache", "top_k": True}, "Invalid argument `top_k`: must be a whole number."),
        ({"query": "cache", "top_k": 2.5}, "Invalid argument `top_k`: must be a whole number."),
        ({"query": "cache", "created_after": "last week"}, "Invalid argument `created_after`: 'last week' is not"),
        (
            {"query": "cache", "created_before": 2025},
            "Invalid argument `created_before`: must be a string, like 2025-07-01.",
        ),
        ({"query": "cache", "raw": "yes"}, "Invalid argument `raw`: must be true or false."),
        ({"query": "cache", "diversity": 1.5}, "Invalid argument `diversity`: must be a number from 0 to 1."),
        ({"query": "cache", "diversity": "high"}, "Invalid argument `diversity`: must be a number."),
        ({"query": "cache", "min_score": -0.1}, "Invalid argument `min_score`: must be a number from 0 to 1."),
        (
            {"query": "cache", "half_life_days": -3},
            "Invalid argument `half_life_days`: must be a number of days from 0 (no recency boost) to 36,500.",
        ),
        ({"query": "cache", "explain": 1}, "Invalid argument `explain`: must be true or false."),
    ],
)
def test_memory_search_refuses_bad_arguments(mcp, memory, arguments, expected):
    assert expected in mcp.fails("memory_search", arguments)


def test_a_whole_number_written_as_a_float_is_a_whole_number(mcp, memory):
    assert len(mcp.ok("memory_search", {"query": "build cache", "top_k": 1.0})["results"]) == 1


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"cursor": "not-a-cursor"}, "Invalid argument `cursor`: is not a cursor from a previous memory_list call"),
        ({"cursor": "W10"}, "Invalid argument `cursor`: is not a cursor"),  # base64 of "[]"
        ({"cursor": 5}, "Invalid argument `cursor`: must be a string."),
        ({"limit": 0}, "Invalid argument `limit`: must be a whole number from 1 to 100."),
        ({"limit": 101}, "Invalid argument `limit`: must be a whole number from 1 to 100."),
        ({"tags": ["ok", "Not Ok"]}, "'not ok' is not a valid tag"),
    ],
)
def test_memory_list_refuses_bad_arguments(mcp, memory, arguments, expected):
    assert expected in mcp.fails("memory_list", arguments)


@pytest.mark.parametrize("tool", ["memory_get", "memory_update", "memory_delete"])
@pytest.mark.parametrize(
    ("memory_id", "expected"),
    [
        ("12345", "Invalid argument `id`: '12345' is not a memory id"),
        (12345, "Invalid argument `id`: must be a string."),
        (None, "Invalid argument `id`: is required."),
    ],
)
def test_a_malformed_id_is_refused(mcp, memory, tool, memory_id, expected):
    arguments = {"id": memory_id, "content": "changed"} if tool == "memory_update" else {"id": memory_id}

    assert expected in mcp.fails(tool, arguments)
    assert_unchanged(memory)


@pytest.mark.parametrize("tool", ["memory_get", "memory_update", "memory_delete"])
def test_an_unknown_id_is_not_found_with_a_hint(mcp, memory, tool):
    unknown = uuid.uuid4()
    arguments = {"id": str(unknown), "content": "changed"} if tool == "memory_update" else {"id": str(unknown)}

    message = mcp.fails(tool, arguments)

    assert (
        message
        == f"No memory with id {unknown}. Check the id; memory_search or memory_list show the ids of your memories."
    )
    assert_unchanged(memory)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, "nothing to change: give at least one of content, tags, written_by, pinned or supersedes."),
        ({"content": ""}, "Invalid argument `content`: must not be empty."),
        ({"content": "new text", "tags": ["bad tag"]}, "'bad tag' is not a valid tag"),
        ({"content": "new text", "written_by": "w" * 101}, "at most 100 characters"),
        ({"content": "new text", "colour": "red"}, "Invalid argument `colour`: is not an argument of this tool"),
    ],
)
def test_memory_update_refuses_bad_changes_and_changes_nothing(mcp, memory, changes, expected):
    assert expected in mcp.fails("memory_update", {"id": str(memory.public_id), **changes})
    assert_unchanged(memory)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("memory_write", {"content": "should not be stored"}),
        ("memory_update", {"content": "should not be changed"}),
        ("memory_delete", {}),
    ],
)
def test_a_read_token_calling_a_write_tool_is_told_to_use_a_write_token(
    mcp_as, owner_read_token, memory, tool, arguments
):
    if tool != "memory_write":
        arguments = {"id": str(memory.public_id), **arguments}

    message = mcp_as(owner_read_token).fails(tool, arguments)

    assert f"{tool} changes memories, but this token is read-only. Create a write token" in message
    assert list(Memory.objects.all()) == [memory]
    assert_unchanged(memory)


def test_a_read_token_can_still_read(mcp_as, owner_read_token, memory):
    reader = mcp_as(owner_read_token)

    assert reader.ok("memory_get", {"id": str(memory.public_id)})["content"] == memory.content
    assert [m["id"] for m in reader.ok("memory_list")["memories"]] == [str(memory.public_id)]
