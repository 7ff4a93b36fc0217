"""Protocol versions on /mcp: the 2025 handshake era and the 2026-07-28 per-request era."""

import base64

import mcp_types
import pytest
from mcp.shared import inbound
from mcp_types import methods as sdk_methods
from mcp_types import version as sdk_version

from memories.mcp import protocol
from tests.memories.mcp.conftest import CLIENT_NAME, LEGACY, MODERN

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


def test_its_protocol_constants_are_the_sdks():
    assert protocol.MODERN_VERSIONS == sdk_version.MODERN_PROTOCOL_VERSIONS
    assert set(protocol.LEGACY_VERSIONS) <= set(sdk_version.HANDSHAKE_PROTOCOL_VERSIONS)
    assert protocol.LATEST_LEGACY_VERSION == sdk_version.LATEST_HANDSHAKE_VERSION
    assert protocol.PROTOCOL_VERSION_META_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert protocol.CLIENT_INFO_META_KEY == mcp_types.CLIENT_INFO_META_KEY
    assert protocol.CLIENT_CAPABILITIES_META_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert protocol.SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY
    assert protocol.PROTOCOL_VERSION_HEADER.lower() == inbound.MCP_PROTOCOL_VERSION_HEADER
    assert protocol.METHOD_HEADER.lower() == inbound.MCP_METHOD_HEADER
    assert protocol.NAME_HEADER.lower() == inbound.MCP_NAME_HEADER
    assert protocol.NAME_BEARING_METHODS == dict(inbound.NAME_BEARING_METHODS)
    assert protocol.HEADER_MISMATCH == mcp_types.HEADER_MISMATCH
    assert protocol.UNSUPPORTED_PROTOCOL_VERSION == mcp_types.UNSUPPORTED_PROTOCOL_VERSION
    assert protocol.MODERN_ERROR_STATUS == dict(inbound.ERROR_CODE_HTTP_STATUS)


# The 2025 handshake era ---------------------------------------------------------------------


def initialize(mcp_as, token, version: str):
    return mcp_as(token).post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        }
    )


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_answers_the_clients_version_when_it_is_supported(mcp_as, owner_token, version):
    response = initialize(mcp_as, owner_token, version)

    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response.headers
    result = response.json()["result"]
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "gnosem" and result["serverInfo"]["version"]
    assert "memory_search" in result["instructions"]
    sdk_methods.validate_server_result("initialize", version, result)


@pytest.mark.parametrize("version", ["2024-11-05", "2099-01-01", "2026-07-28"])
def test_initialize_answers_the_newest_2025_version_otherwise(mcp_as, owner_token, version):
    response = initialize(mcp_as, owner_token, version)

    assert response.json()["result"]["protocolVersion"] == "2025-11-25"


def test_initialize_without_a_protocol_version_is_invalid_params(mcp_as, owner_token):
    status, error = mcp_as(owner_token).error("initialize", {"capabilities": {}})

    assert (status, error["code"]) == (200, -32602)


def test_the_initialized_notification_is_accepted_with_202_and_no_body(mcp_as, owner_token):
    response = mcp_as(owner_token).post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    assert response.status_code == 202
    assert response.content == b""


def test_ping_answers_an_empty_result_in_2025_revisions(mcp_as, owner_token):
    assert mcp_as(owner_token).result("ping") == {}


def test_a_2025_request_without_the_version_header_is_served_as_2025_03_26(mcp_as, owner_token):
    response = mcp_as(owner_token).post({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == 7 and "resultType" not in body["result"] and "ttlMs" not in body["result"]


@pytest.mark.parametrize("header", ["2024-11-05", "1.0", "2099-01-01"])
def test_an_unsupported_version_header_is_400_naming_the_supported_versions(mcp_as, owner_token, header):
    status, error = mcp_as(owner_token).error("tools/list", headers={"MCP-Protocol-Version": header})

    assert (status, error["code"]) == (400, -32022)
    assert error["data"] == {"supported": [*protocol.LEGACY_VERSIONS, MODERN], "requested": header}


def test_an_unknown_method_is_method_not_found_in_2025_revisions(mcp_as, owner_token):
    status, error = mcp_as(owner_token).error("resources/list")

    assert (status, error["code"]) == (200, -32601)


def test_server_discover_is_not_a_2025_method(mcp_as, owner_token):
    status, error = mcp_as(owner_token).error("server/discover")

    assert (status, error["code"]) == (200, -32601)


# The 2026-07-28 per-request era --------------------------------------------------------------


def test_server_discover_describes_the_server(mcp_as, owner_token):
    result = mcp_as(owner_token, MODERN).result("server/discover")

    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "public" and result["ttlMs"] >= 0
    assert result["_meta"][SERVER_INFO_KEY]["name"] == "gnosem"
    assert "memory_write" in result["instructions"]
    sdk_methods.validate_server_result("server/discover", MODERN, result)


def test_every_2026_result_says_it_is_complete_and_who_answered(mcp_as, owner_token):
    mcp = mcp_as(owner_token, MODERN)

    listing = mcp.result("tools/list")
    failed_call = mcp.call("memory_get", {"id": "not-an-id"})

    for result in (listing, failed_call):
        assert result["resultType"] == "complete"
        assert result["_meta"][SERVER_INFO_KEY]["name"] == "gnosem"
    assert listing["cacheScope"] == "private"  # the list depends on the token's scope
    assert listing["ttlMs"] >= 0
    sdk_methods.validate_server_result("tools/list", MODERN, listing)
    sdk_methods.validate_server_result("tools/call", MODERN, failed_call)


@pytest.mark.parametrize("method", ["ping", "initialize", "resources/list", "no/such/method"])
def test_a_method_the_2026_revision_does_not_serve_is_404(mcp_as, owner_token, method):
    status, error = mcp_as(owner_token, MODERN).error(method, {"protocolVersion": MODERN})

    assert (status, error["code"]) == (404, -32601)


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Method", "tools/list"),
        ("Mcp-Name", "memory_delete"),
    ],
)
def test_a_header_that_disagrees_with_the_body_is_400_header_mismatch(mcp_as, owner_token, header, value):
    status, error = mcp_as(owner_token, MODERN).error(
        "tools/call", {"name": "memory_list", "arguments": {}}, headers={header: value}
    )

    assert (status, error["code"]) == (400, -32020)
    assert header.lower() in error["message"].lower()


def test_a_missing_routing_header_is_a_header_mismatch(mcp_as, owner_token):
    response = mcp_as(owner_token).post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {
                "_meta": {protocol.PROTOCOL_VERSION_META_KEY: MODERN, protocol.CLIENT_CAPABILITIES_META_KEY: {}}
            },
        },
        headers={"MCP-Protocol-Version": MODERN},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_a_base64_wrapped_tool_name_header_matches_its_plain_body(mcp_as, owner_token):
    wrapped = "=?base64?" + base64.b64encode(b"memory_list").decode() + "?="
    response = mcp_as(owner_token, MODERN).request(
        "tools/call", {"name": "memory_list", "arguments": {}}, headers={"Mcp-Name": wrapped}
    )

    assert response.status_code == 200
    assert response.json()["result"]["isError"] is False


def test_an_unsupported_2026_era_version_is_400_with_the_supported_list(mcp_as, owner_token):
    response = mcp_as(owner_token).post(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/list",
            "params": {
                "_meta": {protocol.PROTOCOL_VERSION_META_KEY: "2027-01-01", protocol.CLIENT_CAPABILITIES_META_KEY: {}}
            },
        },
        headers={"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"},
    )

    assert response.status_code == 400
    body = response.json()
    assert body["id"] == 3
    assert body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": [*protocol.LEGACY_VERSIONS, MODERN], "requested": "2027-01-01"}


def test_a_2026_request_without_client_capabilities_is_invalid_params(mcp_as, owner_token):
    response = mcp_as(owner_token).post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": {protocol.PROTOCOL_VERSION_META_KEY: MODERN}},
        },
        headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert protocol.CLIENT_CAPABILITIES_META_KEY in response.json()["error"]["message"]


def test_a_2026_header_without_the_envelope_is_invalid_params(mcp_as, owner_token):
    status, error = mcp_as(owner_token).error("tools/list", headers={"MCP-Protocol-Version": MODERN})

    assert (status, error["code"]) == (400, -32602)


def test_a_2026_notification_is_accepted_with_202(mcp_as, owner_token):
    response = mcp_as(owner_token).post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        headers={"MCP-Protocol-Version": MODERN},
    )

    assert response.status_code == 202 and response.content == b""


def test_a_notification_naming_an_unsupported_version_is_refused(mcp_as, owner_token):
    response = mcp_as(owner_token).post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={"MCP-Protocol-Version": "1999-01-01"}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022


def test_the_client_name_of_a_2026_request_labels_its_writes(mcp_as, owner_token):
    written = mcp_as(owner_token, MODERN).ok("memory_write", {"content": "Lunch is at noon on Fridays."})

    assert written["written_by"] == CLIENT_NAME


def test_without_a_client_name_writes_are_labelled_with_the_token_name(mcp_as, owner_token):
    written = mcp_as(owner_token, LEGACY).ok("memory_write", {"content": "Lunch is at noon on Fridays."})

    assert written["written_by"] == "owner laptop"


# tools/call framing, in both eras -------------------------------------------------------------


@pytest.mark.parametrize(("version", "status"), [(LEGACY, 200), (MODERN, 400)])
def test_an_unknown_tool_is_a_protocol_error(mcp_as, owner_token, version, status):
    response = mcp_as(owner_token, version).request("tools/call", {"name": "memory_frobnicate", "arguments": {}})

    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == -32602
    assert "memory_frobnicate" in error["message"] and "memory_search" in error["message"]


@pytest.mark.parametrize("params", [{"arguments": {}}, {"name": 42}, {"name": "memory_list", "arguments": [1]}])
def test_malformed_tools_call_params_are_invalid_params(mcp_as, owner_token, params):
    status, error = mcp_as(owner_token).error("tools/call", params)

    assert (status, error["code"]) == (200, -32602)


def test_legacy_results_validate_against_the_sdks_2025_schema(mcp_as, owner_token):
    mcp = mcp_as(owner_token, LEGACY)

    sdk_methods.validate_server_result("tools/list", LEGACY, mcp.result("tools/list"))
    sdk_methods.validate_server_result("tools/call", LEGACY, mcp.call("memory_list"))
    sdk_methods.validate_server_result("ping", LEGACY, mcp.result("ping"))
