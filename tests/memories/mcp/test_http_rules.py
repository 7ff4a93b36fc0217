"""HTTP rules of /mcp: methods, one message per POST, Origin, bearer tokens, and failures."""

import logging

import pytest
from django.test import Client

from accounts.tokens import token_revoke
from memories.mcp import tools
from memories.models import Memory
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller

WRITE = {"name": "memory_write", "arguments": {"content": "The VPN gateway is vpn2.example.net."}}


@pytest.mark.parametrize("method", ["get", "delete", "put"])
def test_only_post_is_allowed(client, owner_token, method):
    response = getattr(client, method)("/mcp", headers={"Authorization": f"Bearer {owner_token}"})

    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_a_batch_is_refused_and_none_of_it_runs(mcp_as, owner_token):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": WRITE}]

    response = mcp_as(owner_token).post(batch, headers={"MCP-Protocol-Version": LEGACY})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert not Memory.objects.exists()


@pytest.mark.parametrize("body", ["{not json", '{"jsonrpc": "2.0", "id": 1,', ""])
def test_malformed_json_is_a_parse_error(mcp_as, owner_token, body):
    response = mcp_as(owner_token).post(body)

    assert response.status_code == 400
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": response.json()["error"]}
    assert response.json()["error"]["code"] == -32700


def test_a_lone_surrogate_escape_is_a_parse_error_and_nothing_is_stored(mcp_as, owner_token):
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + (
        '{"name": "memory_write", "arguments": {"content": "half a pair \\ud800 here"}}}'
    )

    response = mcp_as(owner_token).post(body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert not Memory.objects.exists()


def test_an_escaped_surrogate_pair_is_ordinary_text(mcp_as, owner_token):
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + (
        '{"name": "memory_write", "arguments": {"content": "ship it \\ud83d\\ude80"}}}'
    )

    response = mcp_as(owner_token).post(body)

    assert response.json()["result"]["isError"] is False
    assert Memory.objects.get().content == "ship it \N{ROCKET}"


@pytest.mark.parametrize(
    "body",
    [
        "42",
        '"tools/list"',
        {"id": 1, "method": "tools/list"},
        {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_a_malformed_envelope_is_an_invalid_request(mcp_as, owner_token, body):
    response = mcp_as(owner_token).post(body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": WRITE},  # no id: a notification, not run
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -1, "message": "no"}},
    ],
)
def test_notifications_and_client_responses_get_202_and_an_empty_body(mcp_as, owner_token, body):
    response = mcp_as(owner_token).post(body)

    assert response.status_code == 202
    assert response.content == b""
    assert not Memory.objects.exists()


def test_it_answers_json_and_never_opens_a_session(mcp):
    response = mcp.request("tools/list")

    assert response["Content-Type"].startswith("application/json")
    assert "Mcp-Session-Id" not in response.headers


def test_it_needs_no_csrf_token(owner_token):
    strict = Client(enforce_csrf_checks=True)

    response = McpCaller(strict, owner_token).request("tools/list")

    assert response.status_code == 200


def test_a_client_that_refuses_json_gets_406(mcp_as, owner_token):
    response = mcp_as(owner_token).request("tools/list", headers={"Accept": "text/event-stream"})

    assert response.status_code == 406


# Origin ------------------------------------------------------------------------------------


def test_a_foreign_origin_is_forbidden_and_nothing_runs(mcp_as, owner_token):
    response = mcp_as(owner_token).request("tools/call", WRITE, headers={"Origin": "https://evil.example"})

    assert response.status_code == 403
    assert not Memory.objects.exists()


@pytest.mark.parametrize("origin", ["http://testserver", "HTTP://TESTSERVER/"])
def test_the_servers_own_origin_is_allowed(mcp_as, owner_token, origin):
    assert mcp_as(owner_token).request("tools/list", headers={"Origin": origin}).status_code == 200


def test_an_origin_the_operator_listed_is_allowed(mcp_as, owner_token, settings):
    settings.GNOSEM_MCP_ALLOWED_ORIGINS = ["https://inspector.example"]

    response = mcp_as(owner_token).request("tools/list", headers={"Origin": "https://inspector.example"})

    assert response.status_code == 200


def test_the_null_origin_is_forbidden(mcp_as, owner_token):
    assert mcp_as(owner_token).request("tools/list", headers={"Origin": "null"}).status_code == 403


# Tokens ------------------------------------------------------------------------------------


CHALLENGE = (
    'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp", '
    'scope="memories:read memories:write"'
)


def assert_unauthorized(response, *, token_sent: bool = True):
    """A 401 that tells an OAuth client where to sign in (RFC 9728), and says `invalid_token` only
    when a token was sent (RFC 6750 section 3.1)."""
    assert response.status_code == 401
    expected = CHALLENGE + ', error="invalid_token"' if token_sent else CHALLENGE
    assert response["WWW-Authenticate"] == expected
    assert "API token" in response.json()["error"]["message"]


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_missing_token_is_401(db, mcp_as, version):
    assert_unauthorized(mcp_as(None, version).request("tools/call", WRITE), token_sent=False)
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer gno_wrongwrongwrongwrongwrongwrongwrongwrongwro",
        "Bearer not-even-a-gnosem-token",
        "Basic dXNlcjpwYXNz",
        "Bearer",
    ],
)
def test_a_wrong_token_is_401(client, owner_token, authorization):
    response = client.post("/mcp", data="{}", content_type="application/json", headers={"Authorization": authorization})

    assert_unauthorized(response)


def test_a_token_with_the_right_prefix_but_wrong_secret_is_401(mcp_as, owner_token):
    forged = owner_token[:16] + "x" * (len(owner_token) - 16)

    assert_unauthorized(mcp_as(forged).request("tools/list"))


def test_a_revoked_token_is_401_from_its_next_request(mcp_as, owner, owner_token):
    mcp = mcp_as(owner_token)
    assert mcp.request("tools/list").status_code == 200
    token_revoke(owner=owner, public_id=owner.api_tokens.get().public_id)

    assert_unauthorized(mcp.request("tools/call", WRITE))
    assert not Memory.objects.exists()


def test_the_token_is_checked_before_the_body_is_read(mcp_as):
    assert_unauthorized(mcp_as(None).post("{not json"), token_sent=False)


# Failures ----------------------------------------------------------------------------------


def test_an_unexpected_failure_is_an_internal_error_without_details(mcp, monkeypatch, caplog):
    def explode(caller, arguments):
        raise RuntimeError("secret database detail")

    failing = tools.TOOLS["memory_list"].__class__(**{**tools.TOOLS["memory_list"].__dict__, "run": explode})
    monkeypatch.setitem(tools.TOOLS, "memory_list", failing)

    with caplog.at_level(logging.ERROR, logger="memories.mcp.views"):
        response = mcp.request("tools/call", {"name": "memory_list", "arguments": {}})

    assert response.status_code == 200
    assert response.json()["error"] == {"code": -32603, "message": "Internal error"}
    assert b"secret" not in response.content and b"Traceback" not in response.content
    assert "secret database detail" in caplog.text  # the traceback is in the log


def test_a_failure_before_the_request_is_read_is_an_internal_error_too(mcp_as, owner_token, monkeypatch, caplog):
    def broken(secret, **kwargs):
        raise RuntimeError("database unreachable")

    monkeypatch.setattr("memories.mcp.views.token_authenticate", broken)

    with caplog.at_level(logging.ERROR, logger="memories.mcp.views"):
        response = mcp_as(owner_token).request("tools/list")

    assert response.status_code == 500
    assert response.json()["error"] == {"code": -32603, "message": "Internal error"}
    assert "database unreachable" in caplog.text


def test_a_body_over_the_upload_limit_is_413(mcp_as, owner_token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000

    response = mcp_as(owner_token).request(
        "tools/call", {"name": "memory_write", "arguments": {"content": "x" * 2_000}}
    )

    assert response.status_code == 413
    assert not Memory.objects.exists()
