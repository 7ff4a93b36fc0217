"""What the MCP read tools return for compressed, failed and short memories, and `raw: true`,
through the real endpoint (results are checked against each tool's output schema)."""

import pytest
from mcp import Client

from tests.memories.chat_server import Reply
from tests.memories.conftest import GOOD, RAW
from tests.memories.mcp.conftest import run_client

SHORT = "The team prefers squash merges."


@pytest.fixture
def write_over_mcp(mcp, django_capture_on_commit_callbacks):
    """memory_write through /mcp, running what the commit queues (embedding, compression)."""

    def write(content: str) -> str:
        with django_capture_on_commit_callbacks(execute=True):
            return mcp.ok("memory_write", {"content": content})["id"]

    return write


def every_read(mcp, memory_id: str, query: str, raw: bool = False) -> list[dict]:
    """The memory as memory_get, memory_search and memory_list return it."""
    found = mcp.ok("memory_search", {"query": query, "raw": raw})["results"]
    listed = mcp.ok("memory_list", {"raw": raw})["memories"]
    hit = next(result for result in found if result["id"] == memory_id)
    del hit["score"]
    return [mcp.ok("memory_get", {"id": memory_id, "raw": raw}), hit, next(m for m in listed if m["id"] == memory_id)]


def test_reads_return_the_compressed_form_and_the_raw_text(mcp, write_over_mcp, chat_server):
    chat_server.answer(GOOD)
    memory_id = write_over_mcp(RAW)
    for shape in every_read(mcp, memory_id, "PgBouncer staging database"):
        assert shape["content"] == GOOD
        assert shape["content_raw"] == RAW
        assert shape["optimized"] is True
        assert shape["tokens"] == (len(GOOD) + 3) // 4


def test_raw_true_returns_the_text_as_written_without_content_raw(mcp, write_over_mcp, chat_server):
    chat_server.answer(GOOD)
    memory_id = write_over_mcp(RAW)
    for shape in every_read(mcp, memory_id, "PgBouncer staging database", raw=True):
        assert shape["content"] == RAW
        assert "content_raw" not in shape
        assert shape["optimized"] is False
        assert shape["tokens"] == (len(RAW) + 3) // 4


@pytest.mark.parametrize("reply", [Reply(status=500), Reply(content="FACT=" + RAW), Reply(content="no pairs here")])
def test_a_memory_the_guard_or_an_error_left_raw_reads_as_written(mcp, write_over_mcp, chat_server, reply):
    chat_server.script(reply)
    memory_id = write_over_mcp(RAW)
    for shape in every_read(mcp, memory_id, "PgBouncer staging database"):
        assert shape["content"] == RAW
        assert "content_raw" not in shape
        assert shape["optimized"] is False


def test_a_short_memory_carries_only_content(mcp, write_over_mcp, chat_server):
    memory_id = write_over_mcp(SHORT)
    for shape in every_read(mcp, memory_id, "squash merges"):
        assert shape["content"] == SHORT
        assert "content_raw" not in shape
        assert shape["optimized"] is False
    assert chat_server.requests == []


def test_the_sdk_client_reads_the_compressed_form_from_a_live_server(live_server, owner, owner_token, chat_server):
    chat_server.answer(GOOD)

    async def script(client: Client) -> tuple[dict, dict]:
        written = await client.call_tool("memory_write", {"content": RAW})
        memory_id = written.structured_content["id"]
        read = await client.call_tool("memory_get", {"id": memory_id})
        raw = await client.call_tool("memory_get", {"id": memory_id, "raw": True})
        return read.structured_content, raw.structured_content

    read, raw = run_client(live_server, owner_token, "auto", script)

    assert (read["content"], read["content_raw"], read["optimized"]) == (GOOD, RAW, True)
    assert (raw["content"], raw["optimized"], "content_raw" in raw) == (RAW, False, False)
