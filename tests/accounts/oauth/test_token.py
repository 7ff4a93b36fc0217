"""/oauth/token and /oauth/revoke: the code exchange makes a connection, refresh tokens rotate and a
reused one ends its whole family, revocation (RFC 7009) ends the connection, and every bad request
gets its RFC error, never a 5xx."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from accounts.models import ActivityAction, ActivityEvent, ApiToken, OAuthClient
from tests.accounts.oauth.grants import (
    RESOURCE,
    Authorization,
    code_for,
    exchange,
    granted_tokens,
    refresh,
    registered_client,
    token_request,
)

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()
Grant = get_grant_model()


@pytest.fixture
def authorization(assistant) -> Authorization:
    return Authorization(assistant)


def mcp_status(access_token: str) -> int:
    return Client().post("/mcp", "{}", content_type="application/json", headers=bearer(access_token)).status_code


def bearer(access_token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {access_token}"}


def api_status(access_token: str) -> int:
    return Client().get("/api/v1/memories", headers=bearer(access_token)).status_code


def refused(response, error: str) -> dict:
    assert response.status_code in (400, 401), response.content
    body = response.json()
    assert body["error"] == error, body
    assert body.get("error_description"), body
    return body


def test_the_code_buys_an_access_token_a_refresh_token_and_a_connection(owner, owner_client, authorization, assistant):
    response = exchange(authorization, code_for(owner_client, authorization))

    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == "memories:read memories:write offline_access"
    assert body["access_token"] and body["refresh_token"]
    connection = ApiToken.objects.get(oauth_client=assistant)
    assert (connection.owner, connection.name, connection.scope, connection.prefix) == (owner, "Claude", "write", None)
    assert connection.oauth_token_family == RefreshToken.objects.get().token_family
    assert AccessToken.objects.get().resource == [RESOURCE]
    assert not AccessToken.objects.filter(token=body["access_token"]).exists()  # stored as a digest only
    assert OAuthClient.objects.get(pk=assistant.pk).last_used_at is not None
    assert ActivityEvent.objects.get(owner=owner, action=ActivityAction.APP_CONNECTED).detail == {
        "via": "api token",
        "name": "Claude",
        "scope": "write",
        "client": "assistant.example",
    }
    assert mcp_status(body["access_token"]) != 401
    assert api_status(body["access_token"]) == 200


def test_a_code_works_once(owner_client, authorization):
    code = code_for(owner_client, authorization)
    first = exchange(authorization, code)

    body = refused(exchange(authorization, code), "invalid_grant")

    assert first.status_code == 200
    assert body["error_description"]
    assert ApiToken.objects.count() == 1


def test_a_code_presented_again_revokes_the_tokens_it_bought(owner, owner_client, authorization, assistant):
    """RFC 6749 section 4.1.2: whoever presents a used code may have stolen it."""
    code = code_for(owner_client, authorization)
    tokens = exchange(authorization, code).json()
    refreshed = refresh(assistant, tokens["refresh_token"]).json()  # the family grows; it goes too
    other_grant = granted_tokens(owner, assistant)

    refused(exchange(authorization, code), "invalid_grant")

    assert api_status(refreshed["access_token"]) == 401
    assert mcp_status(refreshed["access_token"]) == 401
    refused(refresh(assistant, refreshed["refresh_token"]), "invalid_grant")
    assert ApiToken.objects.filter(oauth_client=assistant, revoked_at__isnull=False).count() == 1
    assert api_status(other_grant["access_token"]) == 200  # a grant of another code lives on
    assert ActivityEvent.objects.filter(owner=owner, action=ActivityAction.APP_DISCONNECTED).count() == 1


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"code": "not-a-code-we-issued"}, "invalid_grant"),
        ({"code_verifier": "a" * 64}, "invalid_grant"),
        ({"code_verifier": None}, "invalid_request"),
        ({"redirect_uri": "https://assistant.example/elsewhere"}, "invalid_request"),
        ({"client_id": "someone-else"}, "invalid_client"),
        ({"grant_type": "password"}, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
        ({"grant_type": "urn:ietf:params:oauth:grant-type:device_code"}, "unsupported_grant_type"),
        ({"grant_type": "implicit"}, "unsupported_grant_type"),
        ({"grant_type": "bogus"}, "unsupported_grant_type"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
    ],
)
def test_a_bad_exchange_is_refused_and_makes_nothing(owner_client, authorization, overrides, error):
    code = code_for(owner_client, authorization)

    refused(exchange(authorization, code, **overrides), error)

    assert not AccessToken.objects.exists() and not ApiToken.objects.exists()


def test_another_clients_code_is_refused(owner_client, authorization):
    code = code_for(owner_client, authorization)
    other = registered_client("Other")

    refused(exchange(authorization, code, client_id=other.client_id), "invalid_grant")
    assert not ApiToken.objects.exists()


def test_an_expired_code_is_refused(owner_client, authorization):
    code = code_for(owner_client, authorization)
    Grant.objects.update(expires=timezone.now() - timedelta(seconds=1))

    refused(exchange(authorization, code), "invalid_grant")


def test_a_refresh_rotates_both_tokens_and_keeps_the_connection(owner, assistant):
    first = granted_tokens(owner, assistant)

    response = refresh(assistant, first["refresh_token"])

    assert response.status_code == 200
    second = response.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert mcp_status(first["access_token"]) == 401
    assert api_status(second["access_token"]) == 200
    assert ApiToken.objects.filter(oauth_client=assistant).count() == 1
    assert AccessToken.objects.get().resource == [RESOURCE]


def test_a_refresh_token_used_twice_revokes_the_whole_family_and_the_connection(owner, assistant):
    first = granted_tokens(owner, assistant)
    second = refresh(assistant, first["refresh_token"]).json()

    refused(refresh(assistant, first["refresh_token"]), "invalid_grant")

    assert api_status(second["access_token"]) == 401
    refused(refresh(assistant, second["refresh_token"]), "invalid_grant")
    connection = ApiToken.objects.get(oauth_client=assistant)
    assert connection.revoked_at is not None
    assert ActivityEvent.objects.filter(owner=owner, action=ActivityAction.APP_DISCONNECTED).count() == 1


def test_a_refresh_may_narrow_the_scope_and_the_token_then_only_reads(owner, assistant):
    tokens = granted_tokens(owner, assistant)

    narrowed = refresh(assistant, tokens["refresh_token"], scope="memories:read").json()

    assert narrowed["scope"] == "memories:read"
    response = Client().post(
        "/api/v1/memories",
        '{"content": "x"}',
        content_type="application/json",
        headers=bearer(narrowed["access_token"]),
    )
    assert response.status_code == 403


def test_a_refresh_cannot_widen_a_read_only_grant(owner, assistant):
    tokens = granted_tokens(owner, assistant, read_only=True)

    refused(refresh(assistant, tokens["refresh_token"], scope="memories:read memories:write"), "invalid_scope")


@pytest.mark.parametrize(
    "overrides",
    [{"resource": "https://elsewhere.example/mcp"}, {"client_id": "someone-else"}, {"refresh_token": "unknown"}],
)
def test_a_bad_refresh_is_refused_and_the_family_lives_on(owner, assistant, overrides):
    tokens = granted_tokens(owner, assistant)

    response = refresh(assistant, tokens["refresh_token"], **overrides)

    assert response.status_code in (400, 401)
    assert response.json()["error"] in {"invalid_target", "invalid_client", "invalid_grant"}
    assert refresh(assistant, tokens["refresh_token"]).status_code == 200


def test_a_refresh_token_of_another_client_is_refused(owner, assistant):
    tokens = granted_tokens(owner, assistant)
    other = registered_client("Other")

    refused(refresh(other, tokens["refresh_token"]), "invalid_grant")


@pytest.mark.parametrize("which", ["access_token", "refresh_token"])
def test_revoking_either_token_ends_the_connection(owner, assistant, which):
    tokens = granted_tokens(owner, assistant)

    response = Client().post(
        "/oauth/revoke", {"token": tokens[which], "token_type_hint": which, "client_id": assistant.client_id}
    )

    assert response.status_code == 200
    assert api_status(tokens["access_token"]) == 401
    refused(refresh(assistant, tokens["refresh_token"]), "invalid_grant")
    assert ApiToken.objects.get(oauth_client=assistant).revoked_at is not None


def test_a_client_cannot_revoke_another_clients_tokens(owner, assistant):
    tokens = granted_tokens(owner, assistant)
    other = registered_client("Other")

    response = Client().post("/oauth/revoke", {"token": tokens["access_token"], "client_id": other.client_id})

    assert response.status_code == 200  # RFC 7009: an unknown token is no error
    assert api_status(tokens["access_token"]) == 200


def test_a_browser_based_client_may_call_the_token_endpoint(owner, assistant):
    preflight = Client().options("/oauth/token", headers={"Origin": "http://localhost:6274"})
    response = refresh(assistant, granted_tokens(owner, assistant)["refresh_token"])

    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == response["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"grant_type": "authorization_code"},
        {"grant_type": "authorization_code", "code": "x", "client_id": "nul\x00byte"},
        {"grant_type": "authorization_code", "code": "\x00", "client_id": "x" * 5000},
        {"grant_type": "refresh_token", "refresh_token": "\x00", "client_id": "x"},
        {"grant_type": "refresh_token"},
        {"grant_type": "\u2603", "resource": ["http://testserver/mcp", "http://testserver/mcp"]},
    ],
)
def test_nonsense_at_the_token_endpoint_is_a_4xx(db, data):
    response = token_request(data)

    assert 400 <= response.status_code < 500, response.content
    assert response.json()["error"]


@pytest.mark.parametrize("data", [{}, {"token": "\x00", "client_id": "\x00"}, {"token": "x", "client_id": "x" * 5000}])
def test_nonsense_at_the_revocation_endpoint_is_no_5xx(db, data):
    assert Client().post("/oauth/revoke", data).status_code < 500


def test_only_post_reaches_the_endpoints(db):
    assert Client().get("/oauth/token").status_code == 405
    assert Client().get("/oauth/revoke").status_code == 405
