"""/mcp and the REST API as an OAuth resource server: an access token works as its connection,
scopes map onto read / write, and a missing, expired, revoked or other-audience token is a 401
whose challenge says where to get a good one. `gno_` tokens work as before."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from accounts.models import ApiToken
from accounts.spaces import personal_space_of
from accounts.tokens import token_authenticate
from memories.models import Memory
from tests.accounts.oauth.grants import RESOURCE, granted_tokens, registered_client
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller
from tests.memories.mcp.test_tools import READ_TOOLS, WRITE_TOOLS

AccessToken = get_access_token_model()
CHALLENGE = (
    'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp", '
    'scope="memories:read memories:write"'
)
INVALID = CHALLENGE + ', error="invalid_token"'


@pytest.fixture
def tokens(owner) -> dict:
    return granted_tokens(owner, registered_client("Claude"))


def rest(access_token: str | None, host: str = "testserver") -> Client:
    headers = {"Authorization": f"Bearer {access_token}"} if access_token else {}
    return Client(headers=headers, HTTP_HOST=host)


def test_without_a_token_the_challenge_points_at_the_metadata_and_the_scopes(db, client):
    mcp = McpCaller(client, None).request("tools/list")
    api = client.get("/api/v1/memories")

    assert mcp.status_code == api.status_code == 401
    assert mcp["WWW-Authenticate"] == api["WWW-Authenticate"] == CHALLENGE


@pytest.mark.parametrize("secret", ["not-a-token", "gno_" + "x" * 43, "x" * 300, "ünïcödé"])
def test_a_bad_token_adds_invalid_token(db, client, secret):
    mcp = McpCaller(client, secret).request("tools/list")
    api = rest(secret).get("/api/v1/memories")

    assert mcp.status_code == api.status_code == 401
    assert mcp["WWW-Authenticate"] == api["WWW-Authenticate"] == INVALID
    assert "OAuth" in mcp.json()["error"]["message"]


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_an_access_token_calls_the_tools_as_its_connection(owner, client, tokens, version):
    mcp = McpCaller(client, tokens["access_token"], version)

    written = mcp.ok("memory_write", {"content": "Connected through OAuth."})

    memory = Memory.objects.get(public_id=written["id"])
    assert (memory.space, memory.author) == (personal_space_of(owner), owner)
    connection = ApiToken.objects.get(oauth_client__isnull=False)
    assert connection.last_used_at is not None
    assert set(mcp.tools()) == READ_TOOLS | WRITE_TOOLS


def test_an_access_token_works_on_the_rest_api_too(owner, tokens):
    response = rest(tokens["access_token"]).post(
        "/api/v1/memories", '{"content": "over REST"}', content_type="application/json"
    )

    assert response.status_code == 201
    memory = Memory.objects.get()
    assert (memory.space, memory.author) == (personal_space_of(owner), owner)


def test_a_read_only_grant_sees_only_the_read_tools_and_cannot_write(owner, client):
    tokens = granted_tokens(owner, registered_client(), read_only=True)
    mcp = McpCaller(client, tokens["access_token"])

    assert set(mcp.tools()) == READ_TOOLS
    assert "read-only" in mcp.fails("memory_write", {"content": "x"})
    response = rest(tokens["access_token"]).post(
        "/api/v1/memories", '{"content": "x"}', content_type="application/json"
    )
    assert response.status_code == 403
    assert not Memory.objects.exists()


def test_an_expired_access_token_is_refused(client, tokens):
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))

    response = McpCaller(client, tokens["access_token"]).request("tools/list")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == INVALID
    assert rest(tokens["access_token"]).get("/api/v1/memories").status_code == 401


def test_a_token_for_another_resource_is_refused(client, tokens):
    AccessToken.objects.update(resource=["https://other.example/mcp"])

    assert McpCaller(client, tokens["access_token"]).request("tools/list")["WWW-Authenticate"] == INVALID


def test_a_token_is_bound_to_the_address_it_was_issued_for(tokens, settings):
    settings.ALLOWED_HOSTS = ["testserver", "memory.example.com"]

    assert rest(tokens["access_token"]).get("/api/v1/memories").status_code == 200
    assert rest(tokens["access_token"], host="memory.example.com").get("/api/v1/memories").status_code == 401
    settings.GNOSEM_PUBLIC_URL = "https://memory.example.com"
    assert rest(tokens["access_token"]).get("/api/v1/memories").status_code == 401


def test_a_revoked_connection_is_refused_on_the_next_request(client, tokens):
    mcp = McpCaller(client, tokens["access_token"])
    assert mcp.request("tools/list").status_code == 200

    ApiToken.objects.update(revoked_at=timezone.now())

    assert mcp.request("tools/list")["WWW-Authenticate"] == INVALID


def test_an_inactive_owner_is_refused(owner, client, tokens):
    owner.is_active = False
    owner.save()

    assert McpCaller(client, tokens["access_token"]).request("tools/list").status_code == 401


def test_the_authentication_function_takes_an_access_token_only_for_our_resource(owner, tokens):
    assert token_authenticate(tokens["access_token"], resource=RESOURCE).owner == owner
    assert token_authenticate(tokens["access_token"], resource="https://other.example/mcp") is None
    assert token_authenticate(tokens["access_token"]) is None
    assert token_authenticate(tokens["refresh_token"], resource=RESOURCE) is None


def test_an_api_token_still_works_beside_the_connections(client, owner_token, tokens):
    assert McpCaller(client, owner_token).request("tools/list").status_code == 200
    assert rest(owner_token).get("/api/v1/memories").status_code == 200
