"""The official MCP Python SDK client against a live Gnosem, in each of its connection modes."""

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memories.models import Memory
from tests.memories.mcp.conftest import run_client
from tests.memories.mcp.test_tools import READ_TOOLS, WRITE_TOOLS

MODES = ["legacy", "auto", "2026-07-28"]
EXPECTED_VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}
ALL_TOOLS = READ_TOOLS | WRITE_TOOLS


async def server_name(client: Client) -> str:
    """The server's name: from the handshake or discovery, or (a pinned 2026 client skips
    discovery) from the identity stamped on a server/discover answer."""
    if client.server_info is not None:
        return client.server_info.name
    discovered = await client.session.send_discover("2026-07-28")
    return discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]


async def every_tool(client: Client) -> dict[str, Any]:
    seen: dict[str, Any] = {"version": client.protocol_version, "server": await server_name(client)}
    seen["tools"] = {tool.name for tool in (await client.list_tools()).tools}
    written = await client.call_tool(
        "memory_write", {"content": "Deploys use blue-green on ECS; rollback is ERR_ROLLBACK_7731.", "tags": ["Ops"]}
    )
    memory_id = written.structured_content["id"]
    seen["written"] = written.structured_content
    seen["text_is_structured"] = json.loads(written.content[0].text) == written.structured_content
    seen["search"] = (await client.call_tool("memory_search", {"query": "ERR_ROLLBACK_7731"})).structured_content
    seen["list"] = (await client.call_tool("memory_list", {"limit": 5})).structured_content
    seen["get"] = (await client.call_tool("memory_get", {"id": memory_id})).structured_content
    update = {"id": memory_id, "tags": ["ops", "deploy"]}
    seen["update"] = (await client.call_tool("memory_update", update)).structured_content
    seen["delete"] = (await client.call_tool("memory_delete", {"id": memory_id})).structured_content
    missing = await client.call_tool("memory_get", {"id": memory_id})
    seen["get_after_delete"] = (missing.is_error, missing.content[0].text)
    return seen


@pytest.mark.parametrize("mode", MODES)
def test_it_serves_every_tool_to_the_sdk_client(live_server, owner, owner_token, mode):
    seen = run_client(live_server, owner_token, mode, every_tool)

    assert seen["version"] == EXPECTED_VERSION[mode]
    assert seen["server"] == "gnosem"
    assert seen["tools"] == ALL_TOOLS
    assert seen["written"]["indexing_status"] == "pending"
    assert seen["written"]["tags"] == ["ops"]
    assert seen["text_is_structured"]
    assert [hit["id"] for hit in seen["search"]["results"]][:1] == [seen["written"]["id"]]
    assert [memory["id"] for memory in seen["list"]["memories"]] == [seen["written"]["id"]]
    assert seen["get"]["content"] == "Deploys use blue-green on ECS; rollback is ERR_ROLLBACK_7731."
    assert seen["get"]["indexing_status"] == "indexed"  # embedded on commit, in-process
    assert seen["update"]["tags"] == ["ops", "deploy"]
    assert seen["delete"] == {"id": seen["written"]["id"], "deleted": True}
    assert seen["get_after_delete"][0] is True and "No memory with id" in seen["get_after_delete"][1]
    assert not Memory.objects.exists()


@pytest.mark.parametrize("mode", MODES)
def test_it_labels_writes_with_the_client_name_or_else_the_token_name(live_server, owner, owner_token, mode):
    async def write(client: Client) -> str:
        result = await client.call_tool("memory_write", {"content": "The team prefers squash merges."})
        return result.structured_content["written_by"]

    written_by = run_client(live_server, owner_token, mode, write)

    # 2026-07-28 requests carry clientInfo; a stateless 2025 server only knows the token.
    assert written_by == ("mcp" if EXPECTED_VERSION[mode] == "2026-07-28" else "owner laptop")


@pytest.mark.parametrize("mode", MODES)
def test_a_read_token_lists_only_the_read_tools_and_cannot_write(live_server, owner, owner_read_token, mode):
    async def script(client: Client) -> tuple[set[str], bool, str]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("memory_write", {"content": "should not be stored"})
        return tools, refused.is_error, refused.content[0].text

    tools, is_error, text = run_client(live_server, owner_read_token, mode, script)

    assert tools == ALL_TOOLS - WRITE_TOOLS
    assert is_error and "read-only" in text and "write token" in text
    assert not Memory.objects.exists()


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_protocol_error_for_the_sdk_client(live_server, owner, owner_token, mode):
    async def script(client: Client) -> int:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("memory_frobnicate", {})
        return raised.value.error.code

    assert run_client(live_server, owner_token, mode, script) == -32602


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_explores_the_graph_from_an_entity_id_it_was_given(live_server, owner, owner_token, mode):
    async def script(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        for content in ("Priya Raman leads the Atlas launch.", "Priya Raman moved Atlas to Kubernetes."):
            await client.call_tool("memory_write", {"content": content})
        named = (await client.call_tool("explore_graph", {"entity": "Priya Raman"})).structured_content
        atlas = next(entity["id"] for entity in named["entities"] if entity["name"].casefold() == "atlas")
        by_id = await client.call_tool("explore_graph", {"entity_id": atlas})
        return named, by_id.structured_content

    named, by_id = run_client(live_server, owner_token, mode, script)

    assert by_id["entry"][0].casefold() == "atlas"
    priya = {entity["name"]: entity["id"] for entity in named["entities"]}["Priya Raman"]
    assert {entity["name"]: entity["id"] for entity in by_id["entities"]}["Priya Raman"] == priya


def leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_errors(inner)]
    return [exc]


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_is_refused_with_a_clear_message_without_a_valid_token(live_server, owner, mode):
    async def script(client: Client) -> None:
        await client.list_tools()  # a pinned 2026 client sends nothing until its first call

    with pytest.raises(BaseException) as raised:  # an MCPError, wrapped in task groups
        run_client(live_server, "gno_not-a-real-token-at-all-xxxxxxxxxxxxxxxx", mode, script)

    errors = [error for error in leaf_errors(raised.value) if isinstance(error, MCPError)]
    assert errors and "API token" in errors[0].error.message
