"""The Tokens page's Connected applications: each grant with its client, redirect host, access,
creation and last use, and a Revoke button that stops the next request. Only the owner sees or
revokes them; `gno_` tokens are listed and revoked as before."""

import pytest
from django.test import Client

from accounts.models import ActivityAction, ActivityEvent, ApiToken
from tests.accounts.oauth.grants import granted_tokens, refresh, registered_client


@pytest.fixture
def claude(db):
    return registered_client("Claude", redirect_uris=("https://claude.ai/api/mcp/auth_callback",))


@pytest.fixture
def tokens(owner, claude) -> dict:
    return granted_tokens(owner, claude)


@pytest.fixture
def connection(tokens) -> ApiToken:
    return ApiToken.objects.get(oauth_client__isnull=False)


def api_status(access_token: str) -> int:
    return Client().get("/api/v1/memories", headers={"Authorization": f"Bearer {access_token}"}).status_code


def connected_section(page) -> str:
    html = page.content.decode()
    return html[html.index("<h2>Connected applications</h2>") : html.index("<h2>Create a token</h2>")]


def test_the_tokens_page_lists_each_connected_application(owner_client, connection, tokens):
    api_status(tokens["access_token"])  # a first use

    section = connected_section(owner_client.get("/tokens/"))

    assert "Claude" in section
    assert "<code>claude.ai</code>" in section
    assert "<td>write</td>" in section
    assert "0\xa0minutes ago" in section
    assert f'action="/tokens/applications/{connection.public_id}/revoke"' in section
    assert ">Revoke</button>" in section


def test_connections_are_not_listed_among_the_tokens(owner_client, owner_token, connection):
    html = owner_client.get("/tokens/").content.decode()
    tokens_section = html[html.index("<h2>Your tokens</h2>") : html.index("<h2>Connected applications</h2>")]

    assert "owner laptop" in tokens_section and "Claude" not in tokens_section


def test_revoking_stops_the_next_request_and_the_refresh(owner_client, connection, tokens, claude):
    assert api_status(tokens["access_token"]) == 200

    response = owner_client.post(f"/tokens/applications/{connection.public_id}/revoke", follow=True)

    assert response.redirect_chain == [("/tokens/", 302)]
    assert "“Claude” is disconnected" in response.content.decode()
    assert "No connected applications." in connected_section(response)
    assert api_status(tokens["access_token"]) == 401
    assert refresh(claude, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    event = ActivityEvent.objects.get(action=ActivityAction.APP_DISCONNECTED)
    assert (event.owner, event.detail["via"], event.detail["name"]) == (connection.owner, "web", "Claude")


def test_revoking_twice_is_harmless_and_logged_once(owner_client, connection):
    for _ in range(2):
        assert owner_client.post(f"/tokens/applications/{connection.public_id}/revoke").status_code == 302

    assert ActivityEvent.objects.filter(action=ActivityAction.APP_DISCONNECTED).count() == 1


def test_a_stranger_neither_sees_nor_revokes_the_owners_connection(stranger_client, connection, tokens):
    assert "No connected applications." in connected_section(stranger_client.get("/tokens/"))

    response = stranger_client.post(f"/tokens/applications/{connection.public_id}/revoke")

    assert response.status_code == 404
    assert api_status(tokens["access_token"]) == 200


def test_a_connection_is_not_revoked_through_the_token_url(owner_client, connection, tokens):
    assert owner_client.post(f"/tokens/{connection.public_id}/revoke").status_code == 404
    assert api_status(tokens["access_token"]) == 200


def test_a_connection_is_not_revoked_by_its_row_number(owner_client, connection, tokens):
    assert owner_client.post(f"/tokens/applications/{connection.pk}/revoke").status_code == 404
    assert api_status(tokens["access_token"]) == 200


def test_revoke_takes_a_post_from_a_signed_in_owner(client, owner_client, connection):
    assert owner_client.get(f"/tokens/applications/{connection.public_id}/revoke").status_code == 405
    assert client.post(f"/tokens/applications/{connection.public_id}/revoke").status_code == 302  # to sign in
    assert ApiToken.objects.get(pk=connection.pk).revoked_at is None


def test_the_activity_page_shows_the_connection_without_a_token_prefix(owner_client, connection):
    html = owner_client.get("/activity/").content.decode()

    assert "application connected" in html
    assert "“Claude” (write) via <code>claude.ai</code>" in html
    assert "None…" not in html


def test_revoketoken_list_shows_tokens_only(command, owner, owner_token, connection):
    stdout, _ = command("revoketoken", "--list", owner.username)

    assert "owner laptop" in stdout and "Claude" not in stdout
