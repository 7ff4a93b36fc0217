"""The tokens and connect pages: create (shown once), list, revoke; client snippets."""

import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ApiToken
from accounts.tokens import token_authenticate, token_create


def test_creating_a_token_shows_it_once_with_snippets_for_every_client(owner_client, owner):
    response = owner_client.post(reverse("tokens"), {"name": "laptop cursor", "scope": "read"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    page = response.content.decode()
    secret = page.split('<code id="new-token">')[1].split("</code>")[0]
    token = token_authenticate(secret)
    assert token.owner == owner and token.name == "laptop cursor" and token.scope == "read"
    for client in ["Claude Code", "Cursor", "VS Code", "Windsurf", "Claude Desktop"]:
        assert f">{client}</h3>" in page
    assert (
        "claude mcp add --transport http gnosem http://testserver/mcp "
        f"--header &#x27;Authorization: Bearer {secret}&#x27;" in page
    )
    # Shown once: the list afterwards shows only its prefix.
    again = owner_client.get(reverse("tokens")).content.decode()
    assert secret not in again and token.prefix in again and "laptop cursor" in again


def test_a_nameless_token_is_refused_with_a_reason(owner_client):
    response = owner_client.post(reverse("tokens"), {"name": " ", "scope": "write"})
    assert response.status_code == 400
    assert "give the token a name" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_a_token_stops_it_at_once(owner_client, owner):
    issued = token_create(owner=owner, name="old", scope="write")
    response = owner_client.post(reverse("token_revoke", args=[issued.token.public_id]))
    assert response.status_code == 302
    assert token_authenticate(issued.secret) is None
    assert "revoked" in owner_client.get(reverse("tokens")).content.decode()


def test_a_stranger_can_neither_see_nor_revoke_the_owners_tokens(stranger_client, owner):
    issued = token_create(owner=owner, name="owner laptop", scope="write")
    page = stranger_client.get(reverse("tokens")).content.decode()
    assert "owner laptop" not in page and issued.token.prefix not in page
    assert stranger_client.post(reverse("token_revoke", args=[issued.token.public_id])).status_code == 404
    assert token_authenticate(issued.secret) is not None


def test_tokens_are_revoked_by_random_ids_that_count_nobody_elses_tokens(owner_client, owner, stranger):
    for i in range(3):
        for user in (owner, stranger):
            token_create(owner=user, name=f"laptop {i}", scope="write")

    page = owner_client.get(reverse("tokens")).content.decode()

    revoked_by = re.findall(r'action="/tokens/([^/"]+)/revoke"', page)
    owners = ApiToken.objects.filter(owner=owner)
    assert sorted(revoked_by) == sorted(str(token.public_id) for token in owners)
    assert all(uuid.UUID(public_id).version == 4 for public_id in revoked_by)
    token = owners.first()
    assert owner_client.post(f"/tokens/{token.pk}/revoke").status_code == 404
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None


def test_revoking_needs_a_post_with_the_csrf_token(owner):
    issued = token_create(owner=owner, name="kept", scope="write")
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.get(reverse("token_revoke", args=[issued.token.public_id])).status_code == 405
    assert client.post(reverse("token_revoke", args=[issued.token.public_id])).status_code == 403
    assert token_authenticate(issued.secret) is not None


def test_the_connect_page_has_the_real_url_and_a_placeholder(owner_client):
    page = owner_client.get(reverse("connect")).content.decode()
    assert "http://testserver/mcp" in page and "gno_YOUR_TOKEN" in page
    assert "mcp-remote" in page and "serverUrl" in page and "&quot;type&quot;: &quot;http&quot;" in page


@pytest.mark.parametrize("name", ["tokens", "connect"])
def test_the_pages_need_a_signed_in_user(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response.url.startswith(reverse("account_login"))
