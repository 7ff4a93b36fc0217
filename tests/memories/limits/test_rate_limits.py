"""Rate limits: requests per API token over REST and MCP (one count), imports per user (page and
REST, not the command), counted exactly under concurrency."""

import io
import json
import threading
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from mcp import Client as SdkClient
from mcp.shared.exceptions import MCPError

from accounts.tokens import token_create
from gnosem.env import Rate
from memories.limits.rates import rate_limit_hit
from memories.models import Memory
from memories.transfer.document import FORMAT, VERSION
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller, run_client

EMPTY_EXPORT = {"format": FORMAT, "version": VERSION, "memories": []}


def rest_get(token: str, path: str = "memories"):
    return Client().get(f"/api/v1/{path}", headers={"Authorization": f"Bearer {token}"})


def rest_import(token: str, document: dict):
    return Client().post(
        "/api/v1/import",
        json.dumps(document),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.fixture
def three_a_minute(settings):
    settings.GNOSEM_TOKEN_RATE_LIMIT = Rate(count=3, seconds=60)


def test_rest_answers_429_with_retry_after_and_the_error_shape_over_the_limit(owner_token, three_a_minute):
    assert [rest_get(owner_token).status_code for _ in range(3)] == [200, 200, 200]

    response = rest_get(owner_token)

    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    assert (
        "this API token may make 3 requests per minute" in error["message"]
        and f"Try again in {response['Retry-After']} second" in error["message"]
    )


def test_each_token_has_its_own_count(owner, owner_token, stranger_token, three_a_minute):
    second_token = token_create(owner=owner, name="owner desktop", scope="read").secret
    for _ in range(4):
        rest_get(owner_token)

    assert rest_get(owner_token).status_code == 429
    assert rest_get(second_token).status_code == 200
    assert rest_get(stranger_token).status_code == 200


def test_mcp_and_rest_share_one_count_and_a_tool_call_over_it_is_a_tool_error(client, owner_token, three_a_minute):
    mcp = McpCaller(client, owner_token, LEGACY)
    rest_get(owner_token)
    rest_get(owner_token)
    assert mcp.call("memory_list", {})["isError"] is False

    response = mcp.request("tools/call", {"name": "memory_write", "arguments": {"content": "not stored"}})

    assert response.status_code == 200 and 1 <= int(response["Retry-After"]) <= 60
    result = response.json()["result"]
    assert result["isError"] is True
    assert "Rate limit reached" in result["content"][0]["text"] and "Try again in" in result["content"][0]["text"]
    assert not Memory.objects.exists()
    assert rest_get(owner_token).status_code == 429


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_other_mcp_requests_over_the_limit_are_429_with_a_json_rpc_error(client, owner_token, settings, version):
    settings.GNOSEM_TOKEN_RATE_LIMIT = Rate(count=1, seconds=60)
    mcp = McpCaller(client, owner_token, version)
    mcp.tools()

    response = mcp.request("tools/list")

    assert response.status_code == 429 and 1 <= int(response["Retry-After"]) <= 60
    error = response.json()["error"]
    assert error["code"] == -32000 and "Rate limit reached" in error["message"]
    assert error["data"] == {"retryAfter": int(response["Retry-After"])}
    tool_result = mcp.request("tools/call", {"name": "memory_list", "arguments": {}}).json()["result"]
    assert tool_result["isError"] is True
    assert ("resultType" in tool_result) is (version == MODERN)


def test_the_sdk_client_gets_a_readable_tool_error_then_an_mcp_error(live_server, owner_token, settings):
    settings.GNOSEM_TOKEN_RATE_LIMIT = Rate(count=4, seconds=60)

    async def script(client: SdkClient) -> tuple[list[bool], str, str]:
        outcomes = []
        for _ in range(6):
            result = await client.call_tool("memory_list", {})
            outcomes.append(result.is_error)
            if result.is_error:
                text = result.content[0].text
                break
        with pytest.raises(MCPError) as raised:
            await client.list_tools()
        return outcomes, text, raised.value.error.message

    outcomes, text, listing_error = run_client(live_server, owner_token, "auto", script)

    assert outcomes[-1] is True and not any(outcomes[:-1])
    assert "Rate limit reached: this API token may make 4 requests per minute" in text and "Try again in" in text
    assert "Rate limit reached" in listing_error


def test_a_refused_request_is_not_counted_so_the_allowance_comes_back(owner_token, settings):
    settings.GNOSEM_TOKEN_RATE_LIMIT = Rate(count=2, seconds=2)  # a burst of 2, then one a second
    assert [rest_get(owner_token).status_code for _ in range(2)] == [200, 200]
    refused = [rest_get(owner_token) for _ in range(5)]
    assert {response.status_code for response in refused} == {429}
    assert refused[-1]["Retry-After"] == "1"

    time.sleep(1.1)

    assert rest_get(owner_token).status_code == 200


def test_zero_turns_the_limit_off(owner_token, settings):
    settings.GNOSEM_TOKEN_RATE_LIMIT = None
    assert {rest_get(owner_token).status_code for _ in range(30)} == {200}


def test_imports_have_their_own_limit_per_user_on_the_page_and_rest(owner, owner_token, owner_client, settings):
    settings.GNOSEM_IMPORT_RATE_LIMIT = Rate(count=2, seconds=3600)
    assert rest_import(owner_token, EMPTY_EXPORT).status_code == 200
    assert rest_get(owner_token).status_code == 200  # other requests are not imports

    upload = SimpleUploadedFile("export.json", json.dumps(EMPTY_EXPORT).encode())
    assert owner_client.post(reverse("transfer"), {"file": upload}).status_code == 302
    refused = rest_import(owner_token, EMPTY_EXPORT)
    page = owner_client.post(reverse("transfer"), {"file": SimpleUploadedFile("again.json", b"{}")})

    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert "your account may make 2 imports per hour" in refused.json()["error"]["message"]
    assert int(refused["Retry-After"]) > 1000
    assert page.status_code == 429 and int(page["Retry-After"]) > 1000
    assert "Rate limit reached" in page.content.decode()


def test_the_import_command_is_not_limited(owner, settings, tmp_path):
    settings.GNOSEM_IMPORT_RATE_LIMIT = Rate(count=1, seconds=3600)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(EMPTY_EXPORT))
    for _ in range(3):
        out = io.StringIO()
        call_command("importmemories", "owner", str(path), stdout=out)
        assert "0 memories imported" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_counter_admits_exactly_the_limit_under_concurrent_requests():
    rate = Rate(count=50, seconds=3600)
    allowed, start = [], threading.Barrier(20)

    def client_thread() -> None:
        start.wait()
        try:
            for _ in range(10):
                allowed.append(rate_limit_hit("test:concurrent", rate).allowed)
        finally:
            connection.close()

    threads = [threading.Thread(target=client_thread) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(allowed) == 200 and allowed.count(True) == 50
