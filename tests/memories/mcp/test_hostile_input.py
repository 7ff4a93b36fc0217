"""Hostile input over MCP: every malformed body is a parse error, every bad argument an `isError`
result the model can correct, and nothing a client sends is ever an "Internal error"."""

import base64
import json
from typing import Any

import pytest

from memories import services
from memories.mcp.protocol import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from memories.models import Memory
from tests.memories.mcp.conftest import LEGACY, MODERN


def envelope(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def crafted_cursor(payload: str) -> str:
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


@pytest.fixture
def memory(owner) -> Memory:
    return services.memory_write(owner=owner, content="The staging database is pg-staging-2.", tags=["db"])


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("memory_search", {"query": "staging\x00database"}, "Invalid argument `query`: must not contain NUL"),
        ("memory_search", {"query": "x", "written_by": "cli\x00"}, "Invalid argument `written_by`: must not contain"),
        ("memory_list", {"written_by": "\x00"}, "Invalid argument `written_by`: must not contain"),
        ("memory_write", {"content": "fine", "written_by": "a\x00b"}, "Invalid argument `written_by`: must not"),
        ("memory_write", {"content": "fine", "written_by": "red\x1b[31m"}, "Invalid argument `written_by`: must not"),
        ("memory_write", {"content": "fine", "written_by": "two\nlines"}, "Invalid argument `written_by`: must not"),
    ],
)
def test_nul_and_control_characters_are_refused_as_bad_arguments(mcp, memory, tool, arguments, expected):
    assert expected in mcp.fails(tool, arguments)
    assert Memory.objects.count() == 1


def test_updating_written_by_with_a_nul_is_refused(mcp, memory):
    message = mcp.fails("memory_update", {"id": str(memory.public_id), "written_by": "x\x00y"})

    assert "Invalid argument `written_by`: must not contain" in message
    assert Memory.objects.get(pk=memory.pk).written_by == memory.written_by


@pytest.mark.parametrize(
    ("client_name", "written_by"),
    [("claude\x00code", "claude code"), ("line\r\nbreak\x1b[0m", "line break [0m"), ("\x00\x07", "owner laptop")],
)
def test_control_characters_in_the_client_name_are_stripped_from_the_default_written_by(
    mcp_as, owner_token, client_name, written_by
):
    body = envelope("memory_write", {"content": "Deploys go out on Tuesdays."})
    body["params"]["_meta"] = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_INFO_META_KEY: {"name": client_name, "version": "1"},
        CLIENT_CAPABILITIES_META_KEY: {},
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "memory_write"}

    response = mcp_as(owner_token, MODERN).post(body, headers)

    assert response.status_code == 200
    assert response.json()["result"]["isError"] is False, response.json()
    assert Memory.objects.get().written_by == written_by


@pytest.mark.parametrize(
    "cursor",
    [
        crafted_cursor("[" * 5_000 + "]" * 5_000),
        crafted_cursor('["2025-01-01T00:00:00+00:00", ' + "[" * 5_000 + "]" * 5_000 + "]"),
        crafted_cursor('["2025-01-01T00:00:00+00:00", true]'),
        crafted_cursor('["2025-01-01T00:00:00+00:00", 1.5]'),
        crafted_cursor('["2025-01-01T00:00:00+00:00", "12"]'),
        crafted_cursor('{"2025-01-01T00:00:00+00:00": 1, "b": 2}'),
        crafted_cursor('["2025-01-01T00:00:00\\u0000", 1]'),
        "\x00",
    ],
)
def test_a_crafted_cursor_is_a_bad_argument(mcp, memory, cursor):
    assert "Invalid argument `cursor`: is not a cursor from a previous memory_list call" in mcp.fails(
        "memory_list", {"cursor": cursor}
    )


@pytest.mark.parametrize(
    "created_at",
    [
        "9999-12-31T23:59:59.999999-14:00",
        "0001-01-01T00:00:00+14:00",
        "2359-08-25T17:07:39-17:49",  # an offset Python accepts and PostgreSQL refuses (over 15:59)
        "2025-01-01T00:00:00+23:59:59.999999",
    ],
)
def test_a_cursor_at_the_ends_of_time_is_harmless(mcp, memory, created_at):
    cursor = crafted_cursor(json.dumps([created_at, memory.pk]))

    response = mcp.request("tools/call", {"name": "memory_list", "arguments": {"cursor": cursor}})

    assert response.status_code == 200 and "result" in response.json(), response.content  # not "Internal error"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("memory_search", {"query": "x", "top_k": 1e308}),
        ("memory_search", {"query": "x", "top_k": 10**400}),
        ("memory_search", {"query": "x", "top_k": -(10**400)}),
        ("memory_search", {"query": "x", "min_score": 1e308}),
        ("memory_search", {"query": "x", "half_life_days": 10**400}),
        ("memory_search", {"query": "x", "diversity": -1e-308}),
        ("memory_search", {"query": {"nested": ["object"]}}),
        ("memory_search", {"query": ["x"]}),
        ("memory_search", {"query": "x", "raw": {"true": True}}),
        ("memory_search", {"query": "x", "tags": [["nested"]]}),
        ("memory_search", {"query": "x", "tags": ["a\x00b"]}),
        ("memory_search", {"query": "x", "created_after": {"year": 2025}}),
        ("memory_list", {"limit": 10**400}),
        ("memory_list", {"limit": 1e308}),
        ("memory_list", {"cursor": {"at": 1}}),
        ("memory_get", {"id": {"uuid": "x"}}),
        ("memory_get", {"id": "\x00" * 40}),
        ("memory_update", {"id": ["not", "an", "id"], "content": "x"}),
        ("memory_delete", {"id": 1e308}),
        ("memory_write", {"content": {"text": "x"}}),
        ("memory_write", {"content": "x", "tags": {"a": 1}}),
    ],
)
def test_odd_numbers_and_nested_values_are_bad_arguments(mcp, memory, tool, arguments):
    message = mcp.fails(tool, arguments)

    assert message.startswith("Invalid argument `")
    assert Memory.objects.count() == 1


def assert_parse_error(response) -> None:
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == -32700, response.json()


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_lone_surrogate_sent_as_raw_utf8_bytes_is_a_parse_error(mcp_as, owner_token, version):
    body = json.dumps(envelope("memory_write", {"content": "half \ud800 a pair"}), ensure_ascii=False)

    response = mcp_as(owner_token, version).post(body.encode("utf-8", "surrogatepass"))

    assert_parse_error(response)
    assert "UTF-8" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


@pytest.mark.parametrize("raw", [b"\xff", b"\xc3(", b"\xf4\x90\x80\x80", b"\xc0\xaf"])
def test_invalid_utf8_is_a_parse_error(mcp_as, owner_token, raw):
    body = json.dumps(envelope("memory_write", {"content": "tail:"})).encode().replace(b"tail:", b"tail:" + raw)

    assert_parse_error(mcp_as(owner_token).post(body))
    assert not Memory.objects.exists()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_or_utf32_body_is_a_parse_error_even_with_a_lone_surrogate(mcp_as, owner_token, encoding):
    body = json.dumps(envelope("memory_write", {"content": "half \ud800 a pair"}), ensure_ascii=False)

    response = mcp_as(owner_token).post(body.encode(encoding, "surrogatepass"))

    assert_parse_error(response)
    assert "UTF-8" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


def test_a_utf8_byte_order_mark_is_ignored(mcp_as, owner_token):
    body = json.dumps(envelope("memory_write", {"content": "BOMs happen."})).encode("utf-8-sig")

    assert mcp_as(owner_token).post(body).json()["result"]["isError"] is False
    assert Memory.objects.get().content == "BOMs happen."


@pytest.mark.parametrize("depth", [100, 900, 5_000, 100_000])
def test_json_nested_deeper_than_the_limit_is_a_parse_error(mcp_as, owner_token, depth):
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"deep": ' + "[" * depth + "]" * depth + "}}"

    response = mcp_as(owner_token).post(body)

    assert_parse_error(response)
    assert "nested" in response.json()["error"]["message"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(mcp_as, owner_token, constant):
    body = json.dumps(envelope("memory_search", {"query": "x", "min_score": 0})).replace(
        '"min_score": 0', f'"min_score": {constant}'
    )

    assert_parse_error(mcp_as(owner_token).post(body))
